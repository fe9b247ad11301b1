#include "services/orchestrator/approvals/content_risk.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
using nlohmann::json;

// Arguments nested deeper than this are not read (a model's arguments are
// never that deep; a hostile value must not exhaust the stack).
constexpr int kMaxDepth = 32;
// Domains and amounts named in one reason, at most.
constexpr size_t kMaxNamed = 3;

// Whether `name` (lower case) matches `pattern`, where `*` stands for any
// run of characters.
bool GlobMatches(absl::string_view pattern, absl::string_view name) {
  size_t p = 0;
  size_t n = 0;
  size_t star = absl::string_view::npos;
  size_t resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != absl::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool AnyMatches(const std::vector<std::string>& patterns, const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const std::string& pattern : patterns) {
    if (GlobMatches(pattern, lower)) return true;
  }
  return false;
}

// One addressee as written: an address in "Name <address>" form is the
// address; lower-cased and trimmed.
std::string Addressee(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  const size_t open = text.rfind('<');
  const size_t close = text.rfind('>');
  if (open != absl::string_view::npos && close != absl::string_view::npos && close > open) {
    text = absl::StripAsciiWhitespace(text.substr(open + 1, close - open - 1));
  }
  return absl::AsciiStrToLower(text);
}

// The domain of an address, empty when it is not one.
std::string DomainOf(const std::string& address) {
  const size_t at = address.rfind('@');
  if (at == std::string::npos || at + 1 >= address.size()) return "";
  return address.substr(at + 1);
}

// The addressees in a recipient or attendee field's value: a string of
// them separated by commas or semicolons, a list of strings, or objects
// with an email or address (else a name or id). An entry naming nobody
// still counts as one, told apart by `unnamed`.
void CollectAddressees(const json& value, std::set<std::string>& into, int& unnamed,
                       int depth = 0) {
  if (depth > kMaxDepth) return;
  if (value.is_string()) {
    for (absl::string_view part : absl::StrSplit(value.get_ref<const std::string&>(),
                                                 absl::ByAnyChar(",;"), absl::SkipWhitespace())) {
      if (std::string one = Addressee(part); !one.empty()) into.insert(std::move(one));
    }
  } else if (value.is_array()) {
    for (const json& item : value) CollectAddressees(item, into, unnamed, depth + 1);
  } else if (value.is_object()) {
    for (const char* key : {"email", "address", "email_address", "emailAddress", "mail", "name",
                            "display_name", "displayName", "id"}) {
      auto it = value.find(key);
      if (it == value.end()) continue;
      if (it->is_object() || (it->is_string() && !it->get_ref<const std::string&>().empty())) {
        CollectAddressees(*it, into, unnamed, depth + 1);
        return;
      }
    }
    into.insert(absl::StrCat("#unnamed-", ++unnamed));
  }
}

// A money field's amount in words ("250.00 EUR"); empty when it moves no
// money (zero, not a number, absent). `currency` is the field's sibling.
std::string AmountInWords(const json& value, const std::string& currency) {
  double amount = 0;
  if (value.is_number()) {
    amount = value.get<double>();
  } else if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (!absl::SimpleAtod(text, &amount)) {
      // "250 EUR", "$1,200": words with a non-zero digit move money.
      const bool some =
          std::any_of(text.begin(), text.end(), [](char c) { return c >= '1' && c <= '9'; });
      return some ? std::string(absl::StripAsciiWhitespace(text.substr(0, 40))) : "";
    }
  } else if (value.is_object()) {
    // {"value": 250, "currency": "EUR"} and the like.
    std::string inner_currency = currency;
    for (const char* key : {"currency", "currency_code"}) {
      if (auto it = value.find(key); it != value.end() && it->is_string()) {
        inner_currency = it->get<std::string>();
      }
    }
    for (const char* key : {"value", "units", "amount"}) {
      if (auto it = value.find(key); it != value.end() && !it->is_object()) {
        return AmountInWords(*it, inner_currency);
      }
    }
    return "";
  } else {
    return "";
  }
  if (!std::isfinite(amount) || amount == 0) return "";
  std::string words = absl::StrFormat("%.2f", amount);
  if (!currency.empty()) absl::StrAppend(&words, " ", currency.substr(0, 10));
  return words;
}

bool IsSet(const json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_string()) {
    const std::string lower = absl::AsciiStrToLower(value.get_ref<const std::string&>());
    return lower == "true" || lower == "yes";
  }
  return false;
}

// What a walk over the arguments finds for the rules.
struct Findings {
  std::set<std::string> recipients;
  std::set<std::string> attendees;
  int unnamed = 0;
  std::vector<std::string> amounts;
  std::vector<std::string> signing_flags;
};

void Walk(const ContentRiskRules& rules, const json& value, Findings& found, int depth) {
  if (depth > kMaxDepth) return;
  if (value.is_array()) {
    for (const json& item : value) Walk(rules, item, found, depth + 1);
    return;
  }
  if (!value.is_object()) return;
  std::string currency;
  for (const char* key : {"currency", "currency_code"}) {
    if (auto it = value.find(key); it != value.end() && it->is_string()) {
      currency = it->get<std::string>();
    }
  }
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string& key = it.key();
    if (AnyMatches(rules.recipient_fields, key)) {
      CollectAddressees(it.value(), found.recipients, found.unnamed);
      continue;
    }
    if (AnyMatches(rules.attendee_fields, key)) {
      CollectAddressees(it.value(), found.attendees, found.unnamed);
      continue;
    }
    if (AnyMatches(rules.money_fields, key)) {
      std::string amount = AmountInWords(it.value(), currency);
      if (!amount.empty() &&
          std::find(found.amounts.begin(), found.amounts.end(), amount) == found.amounts.end()) {
        found.amounts.push_back(std::move(amount));
      }
    }
    if (AnyMatches(rules.signing_names, key) && IsSet(it.value())) {
      found.signing_flags.push_back(key);
    }
    Walk(rules, it.value(), found, depth + 1);
  }
}

std::string Named(const std::vector<std::string>& names) {
  std::vector<std::string> shown(
      names.begin(),
      names.begin() + static_cast<std::ptrdiff_t>(std::min(names.size(), kMaxNamed)));
  std::string text = absl::StrJoin(shown, ", ");
  if (names.size() > shown.size()) {
    absl::StrAppend(&text, " and ", names.size() - shown.size(), " more");
  }
  return text;
}

bool IsInternal(const std::string& domain, const std::set<std::string>& internal) {
  for (const std::string& mine : internal) {
    if (domain == mine || absl::EndsWith(domain, absl::StrCat(".", mine))) return true;
  }
  return false;
}

// The domains of `found`'s addressees that are not internal, in order.
std::vector<std::string> ExternalDomains(const ContentRiskRules& rules, const Findings& found,
                                         const ContentRiskUser& user) {
  std::set<std::string> internal(rules.internal_domains.begin(), rules.internal_domains.end());
  if (const std::string own = DomainOf(absl::AsciiStrToLower(user.email)); !own.empty()) {
    internal.insert(own);
  }
  std::vector<std::string> outside;
  if (internal.empty()) return outside;
  std::set<std::string> seen;
  for (const std::set<std::string>* addressees : {&found.recipients, &found.attendees}) {
    for (const std::string& address : *addressees) {
      const std::string domain = DomainOf(address);
      if (!domain.empty() && !IsInternal(domain, internal) && seen.insert(domain).second) {
        outside.push_back(domain);
      }
    }
  }
  return outside;
}

// The attendees of `found` who are not the user.
size_t OtherAttendees(const Findings& found, const ContentRiskUser& user) {
  size_t others = 0;
  for (const std::string& attendee : found.attendees) {
    const bool is_user = (!user.email.empty() && attendee == absl::AsciiStrToLower(user.email)) ||
                         (!user.user_id.empty() && attendee == absl::AsciiStrToLower(user.user_id));
    if (!is_user) ++others;
  }
  return others;
}

// The tool's own name: a connected service's tool is <server>__<tool>.
std::string OwnName(const std::string& tool) {
  const size_t split = tool.rfind("__");
  return split == std::string::npos ? tool : tool.substr(split + 2);
}

}  // namespace

ContentRiskUser ContentRiskUserOf(const std::string& user_id) {
  ContentRiskUser user{user_id, ""};
  const size_t at = user_id.find('@');
  if (at != std::string::npos && at > 0 && user_id.find('@', at + 1) == std::string::npos &&
      user_id.find('.', at + 2) != std::string::npos && user_id.back() != '.') {
    user.email = user_id;
  }
  return user;
}

ContentRisk AssessContentRisk(const ContentRiskRules& rules, const std::string& tool,
                              const json& arguments, execpb::ToolRisk risk,
                              const ContentRiskUser& user) {
  ContentRisk out;
  out.risk = risk;
  if (!rules.enabled) return out;
  Findings found;
  Walk(rules, arguments, found, 0);
  const size_t recipients = found.recipients.size();
  if (rules.recipient_limit > 0 && recipients > static_cast<size_t>(rules.recipient_limit)) {
    out.fired.push_back(
        {"recipients", absl::StrCat("sends to ", recipients, " recipients (more than ",
                                    rules.recipient_limit, ")")});
  }
  if (const size_t others = OtherAttendees(found, user); rules.attendees && others > 0) {
    out.fired.push_back(
        {"attendees",
         absl::StrCat("invites ", others, others == 1 ? " person" : " people", " besides you")});
  }
  if (rules.money && !found.amounts.empty()) {
    out.fired.push_back({"money", absl::StrCat("moves money: amount ", Named(found.amounts))});
  }
  if (rules.signing) {
    const std::string own = OwnName(tool);
    if (AnyMatches(rules.signing_names, own)) {
      out.fired.push_back({"signing", absl::StrCat("signs or approves: the tool ", own)});
    } else if (!found.signing_flags.empty()) {
      out.fired.push_back(
          {"signing", absl::StrCat("signs or approves: ", Named(found.signing_flags), " is set")});
    }
  }
  if (rules.external_domains) {
    if (const std::vector<std::string> outside = ExternalDomains(rules, found, user);
        !outside.empty()) {
      out.fired.push_back(
          {"external_domains", absl::StrCat("sends outside your domain: ", Named(outside))});
    }
  }
  if (!out.fired.empty()) out.risk = execpb::TOOL_RISK_HIGH;
  return out;
}

std::string RiskFactorOf(const FiredRule& fired) {
  return absl::StrCat(fired.reason, " (rule: ", fired.rule, ")");
}

namespace {

// A name pattern's error, empty when it is one.
std::string PatternError(const std::string& pattern) {
  if (pattern.empty() || pattern.find_first_not_of('*') == std::string::npos) {
    return "matches every name";
  }
  for (char c : pattern) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
        c != '*') {
      return "may hold only letters, digits, '_', '-', '.' and '*'";
    }
  }
  return "";
}

bool IsDomainName(const std::string& domain) {
  if (domain.empty() || domain.front() == '.' || domain.back() == '.' ||
      domain.find('.') == std::string::npos || domain.find("..") != std::string::npos) {
    return false;
  }
  return std::all_of(domain.begin(), domain.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
  });
}

// The patterns of `key`, lower-cased; the first bad one is added to
// `errors`.
std::vector<std::string> Patterns(const std::string& key, std::vector<std::string> patterns,
                                  std::vector<std::string>& errors) {
  for (std::string& pattern : patterns) {
    pattern = absl::AsciiStrToLower(absl::StripAsciiWhitespace(pattern));
    if (const std::string why = PatternError(pattern); !why.empty()) {
      errors.push_back(absl::StrCat(key, ": '", pattern, "' ", why));
    }
  }
  return patterns;
}

}  // namespace

absl::StatusOr<ContentRiskRules> ReadContentRiskRules(core::ConfigReader& reader) {
  ContentRiskRules rules;
  std::vector<std::string> errors;
  rules.enabled = reader.Bool("approvals.content_risk.enabled", rules.enabled);
  rules.recipient_limit = static_cast<int>(
      reader.Int("approvals.content_risk.recipient_limit", rules.recipient_limit, 0, 1000000));
  rules.recipient_fields = Patterns(
      "approvals.content_risk.recipient_fields",
      reader.StringList("approvals.content_risk.recipient_fields", rules.recipient_fields), errors);
  rules.attendees = reader.Bool("approvals.content_risk.attendees", rules.attendees);
  rules.attendee_fields = Patterns(
      "approvals.content_risk.attendee_fields",
      reader.StringList("approvals.content_risk.attendee_fields", rules.attendee_fields), errors);
  rules.money = reader.Bool("approvals.content_risk.money", rules.money);
  rules.money_fields = Patterns(
      "approvals.content_risk.money_fields",
      reader.StringList("approvals.content_risk.money_fields", rules.money_fields), errors);
  rules.signing = reader.Bool("approvals.content_risk.signing", rules.signing);
  rules.signing_names = Patterns(
      "approvals.content_risk.signing_names",
      reader.StringList("approvals.content_risk.signing_names", rules.signing_names), errors);
  rules.external_domains =
      reader.Bool("approvals.content_risk.external_domains", rules.external_domains);
  rules.internal_domains = reader.StringList("approvals.content_risk.internal_domains", {});
  for (std::string& domain : rules.internal_domains) {
    domain = absl::AsciiStrToLower(absl::StripAsciiWhitespace(domain));
    if (!IsDomainName(domain)) {
      errors.push_back(absl::StrCat("approvals.content_risk.internal_domains: '", domain,
                                    "' is not a domain name (like example.com)"));
    }
  }
  if (!errors.empty()) return absl::InvalidArgumentError("config: " + errors.front());
  return rules;
}

}  // namespace omniforge::orchestrator
