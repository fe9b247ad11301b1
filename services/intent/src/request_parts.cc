#include "services/intent/src/request_parts.h"

#include <cctype>
#include <utility>

#include "libs/words/lists.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

// More parts than this are material (a list pasted in), not a request.
constexpr size_t kMaxParts = 12;

std::string Trimmed(std::string_view text) {
  const auto junk = [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0 || c == '?' || c == '.' || c == '!' ||
           c == ',' || c == ';';
  };
  while (!text.empty() && junk(text.back())) text.remove_suffix(1);
  while (!text.empty() && junk(text.front())) text.remove_prefix(1);
  return std::string(text);
}

size_t WordCount(std::string_view text) {
  size_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

// The first part without the words that frame the request ("can one of my
// agents chase ..." -> "chase ...", "could you post ..." -> "post ...").
std::string WithoutFrame(const std::string& part) {
  const std::string lower = Lowercase(part);
  std::string text = part;
  for (const words::Entry& frame : words::Entries("request_frames")) {
    const size_t at = lower.find(frame.text);
    if (at != std::string::npos && WordCount(std::string_view(lower).substr(0, at)) <= 4) {
      text = part.substr(at + frame.text.size());
      break;
    }
  }
  for (const words::Entry& lead : words::Entries("request_leads")) {
    if (Lowercase(text).rfind(lead.text, 0) == 0) text = text.substr(lead.text.size());
  }
  return Trimmed(text);
}

// Where the next joint of the parts starts in `lower` from `from`, and its
// length; npos when there is none.
std::pair<size_t, size_t> NextJoint(const std::string& lower, size_t from) {
  std::pair<size_t, size_t> best{std::string::npos, 0};
  for (const words::Entry& joint : words::Entries("request_joints")) {
    const size_t at = lower.find(joint.text, from);
    if (at < best.first) best = {at, joint.text.size()};
  }
  return best;
}

}  // namespace

std::vector<std::string> RequestParts(std::string_view message) {
  const std::string lower = Lowercase(message);
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= message.size()) {
    auto [at, length] = NextJoint(lower, start);
    std::string part = Trimmed(message.substr(start, at == std::string::npos ? at : at - start));
    if (parts.empty()) part = WithoutFrame(part);
    // "invoices and payments": a clause of one word belongs to the one before.
    if (!parts.empty() && WordCount(part) < 2) {
      parts.back() = Trimmed(parts.back() + " and " + part);
    } else if (!part.empty()) {
      parts.push_back(part);
    }
    if (at == std::string::npos) break;
    start = at + length;
  }
  return parts;
}

std::vector<RequestPart> PartsWithAgents(std::string_view message,
                                         const std::vector<CatalogItem>& agents) {
  std::vector<std::string> texts = RequestParts(message);
  std::vector<RequestPart> parts;
  if (texts.size() < 2 || texts.size() > kMaxParts) return parts;
  parts.reserve(texts.size());
  for (std::string& text : texts) {
    std::string agent = MatchCatalogItem(text, agents).value_or("");
    parts.push_back({std::move(text), std::move(agent)});
  }
  return parts;
}

}  // namespace omniforge::intent
