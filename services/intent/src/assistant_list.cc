#include "services/intent/src/assistant_list.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The number a line opens with ("12. x", "3) y", "#2 z") and where its text
// starts, or -1.
std::pair<int, size_t> LeadingNumber(std::string_view line) {
  size_t at = line.starts_with("#") ? 1 : 0;
  size_t end = at;
  while (end < line.size() && end < at + 3 && IsDigit(line[end])) ++end;
  if (end == at || end >= line.size()) return {-1, 0};
  const bool marked = line[end] == '.' || line[end] == ')' || line[end] == ':' || at == 1;
  if (!marked || (line[end] == '.' && end + 1 < line.size() && IsDigit(line[end + 1]))) {
    return {-1, 0};  // "3.5 hours" is no entry
  }
  return {std::stoi(std::string(line.substr(at, end - at))), end + (at == 1 ? 0 : 1)};
}

// Where the text of a bulleted line starts, or npos.
size_t AfterBullet(std::string_view line) {
  for (std::string_view bullet : {"- ", "* ", "• ", "· ", "– ", "— ", "+ "}) {
    if (line.starts_with(bullet)) return bullet.size();
  }
  return std::string_view::npos;
}

// Entries on lines of their own: numbered (ordered by number), bulleted,
// or table rows.
std::vector<std::string> LineItems(std::string_view text) {
  std::vector<std::pair<int, std::string>> numbered;
  std::vector<std::string> bulleted;
  std::vector<std::string> rows;
  for (std::string_view line : SplitAny(text, "\n")) {
    line = TrimWhitespace(line);
    if (line.empty()) continue;
    if (const auto [number, from] = LeadingNumber(line); number >= 0) {
      numbered.emplace_back(number, std::string(TrimWhitespace(line.substr(from))));
    } else if (const size_t from = AfterBullet(line); from != std::string_view::npos) {
      bulleted.emplace_back(TrimWhitespace(line.substr(from)));
    } else if (line.find('|') != std::string_view::npos &&
               line.find_first_not_of("|-: ") != std::string_view::npos) {
      rows.emplace_back(TrimWhitespace(line.substr(0, line.find('|'))));
    }
  }
  if (numbered.size() >= 2) {
    std::stable_sort(numbered.begin(), numbered.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    out.reserve(numbered.size());
    for (auto& [number, item] : numbered) out.push_back(std::move(item));
    return out;
  }
  if (bulleted.size() >= 2) return bulleted;
  if (rows.size() >= 2) return rows;
  return {};
}

// Entries numbered inline: "1) x, 2) y, 3) z", "1. x 2. y".
std::vector<std::string> InlineNumbered(std::string_view text) {
  std::vector<size_t> starts;
  std::vector<size_t> ends;
  for (size_t i = 0; i < text.size(); ++i) {
    if (i > 0 && text[i - 1] != ' ' && text[i - 1] != ':') continue;
    const auto [number, from] = LeadingNumber(text.substr(i));
    if (number != static_cast<int>(starts.size()) + 1) continue;
    ends.push_back(i);
    starts.push_back(i + from);
  }
  if (starts.size() < 2) return {};
  std::vector<std::string> out;
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? ends[k + 1] : text.size();
    std::string_view item = TrimWhitespace(text.substr(starts[k], end - starts[k]));
    while (!item.empty() && (item.back() == ',' || item.back() == ';' || item.back() == '.')) {
      item.remove_suffix(1);
    }
    out.emplace_back(TrimWhitespace(item));
  }
  return out;
}

// Entries in one sentence: "x, y and z", "x; y; z", "x, then y, and
// finally z", after the sentence's colon when it has one.
std::vector<std::string> SentenceItems(std::string_view text) {
  std::vector<std::string> best;
  for (std::string_view sentence : SplitAny(text, "\n.!?")) {
    if (const size_t colon = sentence.rfind(':'); colon != std::string_view::npos) {
      sentence = sentence.substr(colon + 1);
    }
    // Each joint becomes a separator.
    std::string marked;
    for (size_t i = 0; i < sentence.size();) {
      size_t joint_size = 0;
      for (std::string_view joint : {" and finally ", " and then ", " then ", " and ", " or "}) {
        if (sentence.substr(i).starts_with(joint)) {
          joint_size = joint.size();
          break;
        }
      }
      if (joint_size > 0) {
        marked.push_back(';');
        i += joint_size;
      } else {
        marked.push_back(sentence[i++]);
      }
    }
    std::vector<std::string> items;
    for (std::string_view part : SplitAny(marked, ",;")) {
      part = TrimWhitespace(part);
      if (!part.empty()) items.emplace_back(part);
    }
    if (items.size() > best.size()) best = std::move(items);
  }
  return best.size() >= 2 ? best : std::vector<std::string>{};
}

// The entries of a list set out as one (lines of its own, numbers
// inline), or empty. Several readers of one request read the same
// assistant turn (the context, the clarify decision): each thread keeps
// its last answer. The reference holds until the thread's next call.
const std::vector<std::string>& SetOutItems(std::string_view text) {
  thread_local std::string last_text;
  thread_local std::vector<std::string> last_items;
  thread_local bool filled = false;
  if (filled && last_text == text) return last_items;
  last_items = LineItems(text);
  if (last_items.empty()) last_items = InlineNumbered(text);
  last_text.assign(text);
  filled = true;
  return last_items;
}

}  // namespace

std::vector<std::string> ListItems(std::string_view text) {
  if (const std::vector<std::string>& items = SetOutItems(text); !items.empty()) return items;
  return SentenceItems(text);
}

std::vector<std::string> ListedAgents(std::string_view text,
                                      const std::vector<CatalogItem>& agents) {
  // Prose lists its entries in the order it names them, and may go on in
  // the next sentence ("Live: x and y. There's also z, but it is paused").
  const std::vector<std::string>& items = SetOutItems(text);
  if (items.empty()) {
    std::vector<std::string> named = CatalogItemsInOrder(text, agents);
    if (named.size() < 2) named.clear();
    return named;
  }
  std::vector<std::string> out;
  for (const std::string& item : items) {
    const std::vector<std::string> named = CatalogItemsInOrder(item, agents);
    if (named.empty() || std::find(out.begin(), out.end(), named.front()) != out.end()) continue;
    out.push_back(named.front());
  }
  if (out.size() < 2) return {};
  return out;
}

}  // namespace omniforge::intent
