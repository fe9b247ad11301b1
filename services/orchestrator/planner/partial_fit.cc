#include "services/orchestrator/planner/partial_fit.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "libs/core/text.h"
#include "services/intent/entities/entities.h"

namespace omniforge::orchestrator {
namespace {

std::string Trimmed(std::string text) {
  const auto junk = [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0 || c == '?' || c == '.' || c == '!' ||
           c == ',' || c == ';';
  };
  while (!text.empty() && junk(text.back())) text.pop_back();
  size_t start = 0;
  while (start < text.size() && junk(text[start])) ++start;
  return text.substr(start);
}

size_t WordCount(const std::string& text) {
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
  const std::string lower = absl::AsciiStrToLower(part);
  std::string text = part;
  for (const char* frame :
       {"one of my agents ", "one of our agents ", "any of my agents ", "any of our agents ",
        "an agent to ", "an agent that ", "my agents ", "our agents ", "you ", "someone ",
        "something ", "anything ", "anyone "}) {
    const size_t at = lower.find(frame);
    if (at != std::string::npos && WordCount(lower.substr(0, at)) <= 4) {
      text = part.substr(at + std::string(frame).size());
      break;
    }
  }
  for (const char* lead : {"to ", "please ", "also "}) {
    if (absl::AsciiStrToLower(text).rfind(lead, 0) == 0) {
      text = text.substr(std::string(lead).size());
    }
  }
  return Trimmed(text);
}

// Where the next joint of the parts starts in `lower` from `from`, and its
// length; npos when there is none.
std::pair<size_t, size_t> NextJoint(const std::string& lower, size_t from) {
  std::pair<size_t, size_t> best{std::string::npos, 0};
  for (const char* joint :
       {" and also ", " and then ", " as well as ", " plus ", ", and ", " and "}) {
    const size_t at = lower.find(joint, from);
    if (at < best.first) best = {at, std::string(joint).size()};
  }
  return best;
}

std::string Quoted(const std::string& name) { return "'" + name + "'"; }

std::string Listed(const std::vector<std::string>& parts) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + ("\"" + parts[i] + "\"");
  }
  return text;
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : " and ") + part;
  return text;
}

// What the agent does, as a clause ("it reminds customers about overdue
// invoices"); empty without a description.
std::string Does(const AgentInfo& agent) {
  if (agent.description.empty()) return "";
  std::string does = Trimmed(core::Shortened(agent.description, 120));
  if (does.empty()) return "";
  does[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(does[0])));
  return " (it " + does + ")";
}

}  // namespace

bool IsOptionEntity(const std::string& key) {
  return key == kOptionAgent || key == kOptionChange || key == kRequestedTask;
}

std::vector<std::string> RequestParts(const std::string& message) {
  const std::string lower = absl::AsciiStrToLower(message);
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

std::optional<PartialFit> FindPartialFit(const std::string& message,
                                         const std::vector<AgentInfo>& agents) {
  const std::vector<std::string> parts = RequestParts(message);
  if (parts.size() < 2 || agents.empty()) return std::nullopt;
  std::vector<intent::CatalogItem> catalog;
  catalog.reserve(agents.size());
  for (const AgentInfo& agent : agents) catalog.push_back({agent.name, agent.description});
  std::vector<std::string> named;  // per part: the agent it names, or empty
  named.reserve(parts.size());
  for (const std::string& part : parts) {
    named.push_back(intent::MatchCatalogItem(part, catalog).value_or(""));
  }
  std::optional<PartialFit> best;
  for (const AgentInfo& agent : agents) {
    PartialFit fit{agent, {}, {}, {}};
    for (size_t i = 0; i < parts.size(); ++i) {
      if (named[i] == agent.name) {
        fit.covered.push_back(parts[i]);
      } else {
        fit.uncovered.push_back(parts[i]);
        if (!named[i].empty()) fit.elsewhere.emplace_back(parts[i], named[i]);
      }
    }
    if (fit.covered.empty()) continue;
    // One agent does it all, or the agents do it between them.
    if (fit.uncovered.size() == fit.elsewhere.size()) return std::nullopt;
    if (!best || fit.covered.size() > best->covered.size()) best = std::move(fit);
  }
  return best;
}

Move OfferPartialFit(const PolicyInput& in, const PartialFit& fit) {
  const std::string agent = Quoted(fit.agent.name);
  const std::string rest = Joined(fit.uncovered);
  std::string text = agent + " partly fits: it covers " + Listed(fit.covered) + Does(fit.agent) +
                     ", but not " + Listed(fit.uncovered) + ".";
  for (const auto& [part, other] : fit.elsewhere) {
    text += " " + Quoted(other) + " covers \"" + part + "\".";
  }
  text += fit.elsewhere.empty() ? " None of your agents does that part."
                                : " None of your agents does the rest.";
  const bool two = fit.covered.size() + fit.uncovered.size() == 2;
  text += "\nHow would you like to go on?";
  text += "\n1. Run " + agent + " anyway: only " + Listed(fit.covered) + " gets done.";
  text += "\n2. Create a new agent that does " + std::string(two ? "both" : "all of it") + ": " +
          Joined(fit.covered) + " and " + rest + ".";
  text += "\n3. Change " + agent + " so that it also does this: " + rest + ".";
  text += "\nAnswer with a number, or tell me what to do instead.";
  Move move;
  move.clarifying = true;
  move.asked = kAskedOption;
  move.reply = std::move(text);
  move.action_type = in.intent.action_type();
  move.entities.insert(in.intent.entities().begin(), in.intent.entities().end());
  move.entities[kOptionAgent] = fit.agent.name;
  move.entities[kOptionChange] = rest;
  move.entities[kRequestedTask] = Joined(fit.covered) + " and " + rest;
  return move;
}

}  // namespace omniforge::orchestrator
