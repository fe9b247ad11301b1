// Risk by content: each rule fires on what its arguments say and not
// otherwise, at any depth, on lists and on comma-separated text; odd
// arguments never crash it; its config is read and a malformed rule refused.
#include "services/orchestrator/approvals/content_risk.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/core/config.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const ContentRiskUser kAlice = ContentRiskUserOf("alice@acme.com");

ContentRiskRules Internal(std::vector<std::string> domains) {
  ContentRiskRules rules;
  rules.internal_domains = std::move(domains);
  return rules;
}

ContentRisk Assess(const json& arguments, const std::string& tool = "send_email",
                   const ContentRiskRules& rules = Internal({"acme.com"}),
                   const ContentRiskUser& user = kAlice,
                   execpb::ToolRisk risk = execpb::TOOL_RISK_WRITE) {
  return AssessContentRisk(rules, tool, arguments, risk, user);
}

std::vector<std::string> Rules(const ContentRisk& risk) {
  std::vector<std::string> names;
  for (const FiredRule& fired : risk.fired) names.push_back(fired.rule);
  return names;
}

std::vector<std::string> Addresses(int count, const std::string& domain = "acme.com") {
  std::vector<std::string> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) out.push_back("p" + std::to_string(i) + "@" + domain);
  return out;
}

TEST(ContentRiskTest, MoreRecipientsThanTheLimitAcrossToCcAndBccIsHigh) {
  const ContentRisk many = Assess(
      {{"to", Addresses(8)}, {"cc", {"x1@acme.com", "x2@acme.com"}}, {"bcc", "x3@acme.com"}});
  EXPECT_EQ(many.risk, execpb::TOOL_RISK_HIGH);
  ASSERT_THAT(Rules(many), ElementsAre("recipients"));
  EXPECT_EQ(many.fired[0].reason, "sends to 11 recipients (more than 10)");
  EXPECT_EQ(RiskFactorOf(many.fired[0]),
            "sends to 11 recipients (more than 10) (rule: recipients)");

  // Ten, or the same address twice, is not more than ten.
  std::vector<std::string> ten = Addresses(10);
  ten.emplace_back("P0@ACME.com");
  const ContentRisk at_limit = Assess({{"to", ten}});
  EXPECT_EQ(at_limit.risk, execpb::TOOL_RISK_WRITE);
  EXPECT_THAT(at_limit.fired, IsEmpty());
}

TEST(ContentRiskTest, CommaSeparatedTextAndNamedAddressesCountAsLists) {
  std::string to;
  for (const std::string& address : Addresses(14)) to += "Person <" + address + ">, ";
  const ContentRisk risk = Assess({{"message", {{"to", to}}}});
  ASSERT_THAT(Rules(risk), ElementsAre("recipients"));
  EXPECT_EQ(risk.fired[0].reason, "sends to 14 recipients (more than 10)");
  EXPECT_THAT(Assess({{"to", "a@acme.com; b@acme.com"}}).fired, IsEmpty());
}

TEST(ContentRiskTest, AttendeesBesidesTheUserAreHighAndTheUserAloneIsNot) {
  const json event = {
      {"event",
       {{"title", "sync"},
        {"attendees", json::array({{{"email", "alice@acme.com"}},
                                   {{"email", "bob@acme.com"}},
                                   {{"emailAddress", {{"address", "carol@acme.com"}}}}})}}}};
  const ContentRisk others = Assess(event, "create_event");
  ASSERT_THAT(Rules(others), ElementsAre("attendees"));
  EXPECT_EQ(others.fired[0].reason, "invites 2 people besides you");

  const ContentRisk alone =
      Assess({{"attendees", json::array({{{"email", "Alice@acme.com"}}})}}, "create_event");
  EXPECT_EQ(alone.risk, execpb::TOOL_RISK_WRITE);
  EXPECT_THAT(alone.fired, IsEmpty());

  ContentRiskRules off = Internal({"acme.com"});
  off.attendees = false;
  EXPECT_THAT(Assess(event, "create_event", off).fired, IsEmpty());
}

TEST(ContentRiskTest, AnAmountMovesMoneyWithItsCurrencyAndZeroDoesNot) {
  const ContentRisk paid =
      Assess({{"invoice", {{"amount", 250}, {"currency", "EUR"}}}}, "create_invoice");
  ASSERT_THAT(Rules(paid), ElementsAre("money"));
  EXPECT_EQ(paid.fired[0].reason, "moves money: amount 250.00 EUR");
  EXPECT_EQ(Assess({{"payment", {{"value", "99.5"}, {"currency_code", "USD"}}}}, "pay")
                .fired.at(0)
                .reason,
            "moves money: amount 99.50 USD");
  EXPECT_EQ(Assess({{"total_amount", "$1,200"}}, "order").fired.at(0).reason,
            "moves money: amount $1,200");
  EXPECT_THAT(Assess({{"amount", 0}, {"price", "0.00"}, {"total", "none"}}, "order").fired,
              IsEmpty());
  EXPECT_THAT(Assess({{"amounts_seen", 5}, {"count", 300}}, "order").fired, IsEmpty());
}

TEST(ContentRiskTest, ASigningToolOrASetSigningFlagIsHigh) {
  const ContentRisk tool = Assess({{"document", "nda.pdf"}}, "docs__sign_document");
  ASSERT_THAT(Rules(tool), ElementsAre("signing"));
  EXPECT_EQ(tool.fired[0].reason, "signs or approves: the tool sign_document");
  EXPECT_EQ(Assess({{"options", {{"approve_payment", true}}}}, "update_order").fired.at(0).reason,
            "signs or approves: approve_payment is set");
  EXPECT_THAT(
      Assess({{"approve_payment", false}, {"signature", "Best, Alice"}}, "send_email").fired,
      IsEmpty());
  EXPECT_THAT(Assess(json::object(), "assign_task").fired, IsEmpty()) << "not a signature";
}

TEST(ContentRiskTest, AnAddressOutsideTheInternalOrTheUsersDomainIsHigh) {
  const ContentRisk outside =
      Assess({{"to", {"bob@acme.com", "eve@example.org", "joe@mail.acme.com"}}});
  ASSERT_THAT(Rules(outside), ElementsAre("external_domains"));
  EXPECT_EQ(outside.fired[0].reason, "sends outside your domain: example.org");
  // The user's own domain counts without any configured.
  EXPECT_THAT(Rules(Assess({{"to", "eve@example.org"}}, "send_email", ContentRiskRules())),
              ElementsAre("external_domains"));
  EXPECT_THAT(Assess({{"to", "bob@acme.com"}}, "send_email", ContentRiskRules()).fired, IsEmpty());
  // No domain known at all: the rule cannot tell.
  EXPECT_THAT(
      Assess({{"to", "eve@example.org"}}, "send_email", ContentRiskRules(), ContentRiskUserOf("u1"))
          .fired,
      IsEmpty());
}

TEST(ContentRiskTest, SeveralRulesFireTogetherAndNeverLowerARisk) {
  const ContentRisk both = Assess({{"to", Addresses(12, "example.org")}}, "send_email",
                                  Internal({"acme.com"}), kAlice, execpb::TOOL_RISK_READ);
  EXPECT_EQ(both.risk, execpb::TOOL_RISK_HIGH);
  EXPECT_THAT(Rules(both), ElementsAre("recipients", "external_domains"));
  const ContentRisk high = Assess({{"to", "a@acme.com"}}, "delete_mail", Internal({"acme.com"}),
                                  kAlice, execpb::TOOL_RISK_HIGH);
  EXPECT_EQ(high.risk, execpb::TOOL_RISK_HIGH);
  ContentRiskRules disabled = Internal({"acme.com"});
  disabled.enabled = false;
  EXPECT_THAT(Assess({{"to", Addresses(40, "example.org")}}, "send_email", disabled).fired,
              IsEmpty());
}

TEST(ContentRiskTest, MalformedArgumentsAreReadAsFarAsTheyGoWithoutCrashing) {
  for (const json& odd :
       {json(), json("to: everyone"), json(42), json::array({1, "x", nullptr}),
        json{{"to", nullptr}}, json{{"to", 7}}, json{{"amount", json::array()}},
        json{{"to", json::array({json::array(), true})}}, json{{"price", {{"note", "free"}}}}}) {
    const ContentRisk risk = Assess(odd);
    EXPECT_EQ(risk.risk, execpb::TOOL_RISK_WRITE) << odd.dump();
    EXPECT_THAT(risk.fired, IsEmpty()) << odd.dump();
  }
  json deep = {{"to", Addresses(20)}};
  for (int i = 0; i < 1000; ++i) {
    json wrapper = json::array();
    wrapper.push_back(std::move(deep));
    deep = std::move(wrapper);
  }
  EXPECT_THAT(Assess(deep).fired, IsEmpty()) << "past the depth it reads, nothing";
  // An attendee entry naming nobody is still someone else.
  EXPECT_THAT(Rules(Assess({{"attendees", json::array({{{"x", 1}}})}}, "create_event")),
              ElementsAre("attendees"));
}

TEST(ContentRiskConfigTest, DefaultsAndEveryKeyAreRead) {
  auto empty = core::ConfigReader::FromString("");
  ASSERT_TRUE(empty.ok());
  absl::StatusOr<ContentRiskRules> defaults = ReadContentRiskRules(*empty);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->recipient_limit, 10);
  EXPECT_TRUE(defaults->attendees && defaults->money && defaults->signing &&
              defaults->external_domains);
  EXPECT_THAT(defaults->internal_domains, IsEmpty());

  auto reader = core::ConfigReader::FromString(
      "approvals:\n  content_risk:\n    recipient_limit: 3\n    recipient_fields: [To, "
      "\"*_emails\"]\n    attendees: false\n    money: false\n    signing: false\n"
      "    external_domains: true\n    internal_domains: [Acme.COM, corp.example]\n"
      "    attendee_fields: [guests]\n    money_fields: [fee]\n    signing_names: [notarize]\n");
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<ContentRiskRules> rules = ReadContentRiskRules(*reader);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_TRUE(reader->Finish().ok()) << reader->Finish();
  EXPECT_EQ(rules->recipient_limit, 3);
  EXPECT_THAT(rules->recipient_fields, ElementsAre("to", "*_emails"));
  EXPECT_THAT(rules->internal_domains, ElementsAre("acme.com", "corp.example"));
  EXPECT_THAT(Rules(AssessContentRisk(*rules, "notify", {{"cc_emails", Addresses(4)}},
                                      execpb::TOOL_RISK_WRITE, kAlice)),
              ElementsAre("recipients"));
  EXPECT_THAT(AssessContentRisk(*rules, "pay", {{"amount", 5}, {"attendees", {"bob@acme.com"}}},
                                execpb::TOOL_RISK_WRITE, kAlice)
                  .fired,
              IsEmpty());

  auto by_env = core::ConfigReader::FromString("", [](const std::string& name) {
    return name == "OMNIFORGE_APPROVALS_CONTENT_RISK_INTERNAL_DOMAINS"
               ? std::optional<std::string>("acme.com,example.net")
               : std::nullopt;
  });
  ASSERT_TRUE(by_env.ok());
  EXPECT_THAT(ReadContentRiskRules(*by_env)->internal_domains,
              ElementsAre("acme.com", "example.net"));
}

TEST(ContentRiskConfigTest, AMalformedRuleIsRefusedNamingItsKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"internal_domains: [acme]", "approvals.content_risk.internal_domains: 'acme'"},
      {"internal_domains: [\"@acme.com\"]", "is not a domain name"},
      {"recipient_fields: [\"*\"]", "approvals.content_risk.recipient_fields: '*' matches every"},
      {"money_fields: [\"\"]", "approvals.content_risk.money_fields"},
      {"signing_names: [\"sign me\"]", "approvals.content_risk.signing_names: 'sign me' may hold"},
  };
  for (const auto& [yaml, message] : cases) {
    auto reader = core::ConfigReader::FromString("approvals:\n  content_risk:\n    " + yaml + "\n");
    ASSERT_TRUE(reader.ok()) << yaml;
    absl::StatusOr<ContentRiskRules> rules = ReadContentRiskRules(*reader);
    ASSERT_FALSE(rules.ok()) << yaml;
    EXPECT_EQ(rules.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(rules.status().message()), HasSubstr(message)) << yaml;
  }
  // Types, ranges and misspelt keys are the reader's: refused at Finish,
  // as for every key.
  const std::vector<std::pair<std::string, std::string>> typed = {
      {"recipient_limit: -1", "approvals.content_risk.recipient_limit"},
      {"recipient_limit: many", "approvals.content_risk.recipient_limit"},
      {"attendees: 3", "approvals.content_risk.attendees"},
      {"recipient_limt: 5", "approvals.content_risk.recipient_limt"},
  };
  for (const auto& [yaml, key] : typed) {
    auto reader = core::ConfigReader::FromString("approvals:\n  content_risk:\n    " + yaml + "\n");
    ASSERT_TRUE(reader.ok()) << yaml;
    EXPECT_TRUE(ReadContentRiskRules(*reader).ok()) << yaml;
    const absl::Status finished = reader->Finish();
    EXPECT_EQ(finished.code(), absl::StatusCode::kInvalidArgument) << yaml;
    EXPECT_THAT(std::string(finished.message()), HasSubstr(key)) << yaml;
  }
}

}  // namespace
}  // namespace omniforge::orchestrator
