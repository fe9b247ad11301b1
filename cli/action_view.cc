#include "cli/action_view.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_replace.h"

namespace omniforge::cli {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace epb = ::omniforge::orchestrator::v1;
using google::protobuf::util::TimeUtil;

// "ACTION_OUTCOME_AUTO_APPROVED" -> "auto approved".
std::string Words(const std::string& enum_name, const std::string& prefix) {
  const std::string name =
      enum_name.starts_with(prefix) ? enum_name.substr(prefix.size()) : enum_name;
  return absl::StrReplaceAll(absl::AsciiStrToLower(name), {{"_", " "}});
}

void ShowDecision(std::ostream& out, const pb::ActionDecision& d) {
  out << TimeUtil::ToString(TimeUtil::MillisecondsToTimestamp(d.decided_at_unix_ms())) << "  "
      << Words(pb::ActionOutcome_Name(d.outcome()), "ACTION_OUTCOME_") << "  "
      << (d.tool_name().empty() ? "(no tool)" : d.tool_name());
  if (d.risk() != epb::TOOL_RISK_UNSPECIFIED) {
    out << " (" << Words(epb::ToolRisk_Name(d.risk()), "TOOL_RISK_") << " risk)";
  }
  out << "  by " << d.decided_by() << " via " << d.via() << "\n";
  if (!d.summary().empty()) out << "    " << d.summary() << "\n";
  out << "    action " << d.action_id();
  if (!d.digest().empty()) out << "  digest " << d.digest();
  if (!d.turn_id().empty()) out << "  turn " << d.turn_id();
  out << "\n";
}

}  // namespace

void ShowDecisions(std::ostream& out, const pb::ListActionsResponse& response, bool json) {
  if (json) {
    std::string text;
    google::protobuf::util::JsonPrintOptions print;
    print.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(response, &text, print);
    out << text << "\n";
    return;
  }
  if (response.decisions().empty()) {
    out << "no approval decisions in this conversation\n";
    return;
  }
  for (const pb::ActionDecision& d : response.decisions()) ShowDecision(out, d);
}

}  // namespace omniforge::cli
