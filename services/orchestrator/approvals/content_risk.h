// Risk by content: rules over a call's arguments that make a call HIGH
// whatever its tool's own risk (an email to many people, a meeting that
// invites others, a payment, a signature, an address outside the user's
// domain). A rule only ever raises risk; the gate then asks as it does for
// HIGH (approval_gate.h), and the preview says which rule fired and why.
//
// The rules are data (`approvals.content_risk` in the orchestrator's
// config); each matches argument fields by name at any depth, with `*` in
// a name pattern standing for any run of characters:
//
//   approvals:
//     content_risk:
//       enabled: true
//       recipient_limit: 10     # more distinct recipients than this; 0: off
//       recipient_fields: [to, cc, bcc, recipients, recipient]
//       attendees: true         # anyone invited besides the user
//       attendee_fields: [attendees, participants, guests, invitees]
//       money: true             # a non-zero amount
//       money_fields: [amount, "*_amount", price, total, payment]
//       signing: true           # a signing tool, or a signing flag set
//       signing_names: [sign, "sign_*", "*_sign", "*_sign_*", "approve_payment*", ...]
//       external_domains: true  # an address outside the internal domains
//       internal_domains: [acme.com]
//
// Pure functions and value types: no I/O, thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/config.h"
#include "omniforge/executor/v1/executor_service.pb.h"

namespace omniforge::orchestrator {

struct ContentRiskRules {
  bool enabled = true;
  // More distinct addresses than this across the recipient fields; 0: off.
  int recipient_limit = 10;
  std::vector<std::string> recipient_fields = {"to", "cc", "bcc", "recipients", "recipient"};
  // Anyone in an attendee field besides the user.
  bool attendees = true;
  std::vector<std::string> attendee_fields = {"attendees", "participants", "guests", "invitees"};
  // A non-zero amount in a money field.
  bool money = true;
  std::vector<std::string> money_fields = {"amount", "*_amount", "price", "total", "payment"};
  // A tool so named (after a connected service's `server__` prefix), or an
  // argument so named that is set (true, "yes").
  bool signing = true;
  std::vector<std::string> signing_names = {"sign",     "sign_*",           "*_sign",
                                            "*_sign_*", "approve_payment*", "*_approve_payment*"};
  // An address in a recipient or attendee field outside these domains (and
  // their subdomains) and the user's own. With none configured and no
  // domain known for the user, the rule cannot tell and does not fire.
  bool external_domains = true;
  std::vector<std::string> internal_domains;
};

// Who asks: an attendee who is the user is not "another person", and the
// user's email domain counts as internal.
struct ContentRiskUser {
  std::string user_id;
  std::string email;  // empty when unknown
};

// The user of `user_id`; its email is the id itself when the id is an
// address (name@domain.tld).
ContentRiskUser ContentRiskUserOf(const std::string& user_id);

// One rule that fired on a call.
struct FiredRule {
  std::string rule;    // recipients, attendees, money, signing, external_domains
  std::string reason;  // in words: "sends to 14 recipients (more than 10)"
};

struct ContentRisk {
  // HIGH when a rule fired, else the risk given (never lower).
  ::omniforge::executor::v1::ToolRisk risk = ::omniforge::executor::v1::TOOL_RISK_UNSPECIFIED;
  std::vector<FiredRule> fired;
};

// The rules of `rules` that fire on `tool` called with `arguments` (any
// JSON: a value that is not what a rule expects is ignored, never an
// error) for `user`, and the risk `risk` raised by them.
ContentRisk AssessContentRisk(const ContentRiskRules& rules, const std::string& tool,
                              const nlohmann::json& arguments,
                              ::omniforge::executor::v1::ToolRisk risk,
                              const ContentRiskUser& user);

// A fired rule as a preview's risk factor:
// "sends to 14 recipients (more than 10) (rule: recipients)".
std::string RiskFactorOf(const FiredRule& fired);

// Reads `approvals.content_risk.*`. INVALID_ARGUMENT naming the key for a
// name pattern that is empty, only `*`, or has characters other than
// letters, digits, `_`, `-`, `.` and `*`, and for an internal domain that
// is not a domain name (like example.com). Wrong types and a negative
// recipient_limit are reported by the reader's Finish().
absl::StatusOr<ContentRiskRules> ReadContentRiskRules(core::ConfigReader& reader);

}  // namespace omniforge::orchestrator
