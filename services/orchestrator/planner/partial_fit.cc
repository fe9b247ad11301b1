#include "services/orchestrator/planner/partial_fit.h"

#include <algorithm>
#include <cctype>

#include "libs/core/text.h"

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;

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

std::optional<PartialFit> FindPartialFit(const intentpb::IntentAnalysis& intent,
                                         const std::vector<AgentInfo>& agents) {
  if (intent.parts_size() < 2 || agents.empty()) return std::nullopt;
  std::optional<PartialFit> best;
  for (const AgentInfo& agent : agents) {
    PartialFit fit{agent, {}, {}, {}};
    for (const intentpb::RequestPart& part : intent.parts()) {
      if (part.agent_name() == agent.name) {
        fit.covered.push_back(part.text());
        continue;
      }
      fit.uncovered.push_back(part.text());
      const bool elsewhere =
          std::any_of(agents.begin(), agents.end(),
                      [&part](const AgentInfo& other) { return other.name == part.agent_name(); });
      if (elsewhere) fit.elsewhere.emplace_back(part.text(), part.agent_name());
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
