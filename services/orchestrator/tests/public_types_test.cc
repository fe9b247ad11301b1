// The public API's own types against the services' types they show: every
// enum value and every analysis field keeps its number, name and type, so a
// value crosses unchanged in meaning; and what a client reads of its
// history carries none of the orchestrator's routing metadata.
#include "services/orchestrator/api/public_types.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <string>

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace convpb = ::omniforge::conversation::v1;
namespace execpb = ::omniforge::executor::v1;
namespace intentpb = ::omniforge::intent::v1;
using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;

// The part of a value's name after its enum's prefix: TOOL_RISK_READ -> READ.
std::string Suffix(const std::string& name, const std::string& prefix) {
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

// Every value of `shown` is a value of `inner` with the same number and the
// same meaning (name after the prefix), and the other way round.
void ExpectSameValues(const EnumDescriptor& shown, const std::string& shown_prefix,
                      const EnumDescriptor& inner, const std::string& inner_prefix) {
  SCOPED_TRACE(shown.full_name());
  ASSERT_EQ(shown.value_count(), inner.value_count());
  for (int i = 0; i < shown.value_count(); ++i) {
    const auto* value = shown.value(i);
    const auto* same = inner.FindValueByNumber(value->number());
    ASSERT_NE(same, nullptr) << value->name();
    EXPECT_EQ(Suffix(value->name(), shown_prefix), Suffix(same->name(), inner_prefix));
  }
}

void ExpectSameFields(const Descriptor& shown, const Descriptor& inner) {
  SCOPED_TRACE(shown.full_name());
  ASSERT_EQ(shown.field_count(), inner.field_count());
  for (int i = 0; i < shown.field_count(); ++i) {
    const FieldDescriptor* field = shown.field(i);
    const FieldDescriptor* same = inner.FindFieldByNumber(field->number());
    ASSERT_NE(same, nullptr) << field->name();
    EXPECT_EQ(field->name(), same->name());
    EXPECT_EQ(field->type(), same->type()) << field->name();
    EXPECT_EQ(field->label(), same->label()) << field->name();
    if (field->enum_type() != nullptr) {
      ExpectSameValues(*field->enum_type(), "", *same->enum_type(), "");
    }
    if (field->message_type() != nullptr && !field->is_map()) {
      ExpectSameFields(*field->message_type(), *same->message_type());
    }
  }
}

TEST(PublicTypesTest, EnumsKeepTheServicesNumbersAndMeanings) {
  ExpectSameValues(*pb::ToolRisk_descriptor(), "", *execpb::ToolRisk_descriptor(), "");
  ExpectSameValues(*pb::TaskStatus_descriptor(), "", *execpb::TaskStatus_descriptor(), "");
  ExpectSameValues(*pb::ExecutorErrorCode_descriptor(), "EXECUTOR_",
                   *execpb::ErrorCode_descriptor(), "");
  ExpectSameValues(*pb::ContextType_descriptor(), "", *intentpb::ContextType_descriptor(), "");
}

TEST(PublicTypesTest, TheAnalysisHasTheIntentServicesFieldsOneForOne) {
  ExpectSameFields(*pb::IntentAnalysis::descriptor(), *intentpb::IntentAnalysis::descriptor());
}

TEST(PublicTypesTest, AnAnalysisCrossesWhole) {
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(intentpb::ACTION_TYPE_UPDATE_AGENT);
  analysis.set_confidence(0.75F);
  (*analysis.mutable_entities())["agent_name"] = "weekly-digest";
  analysis.set_is_ambiguous(true);
  analysis.set_alternative_action(intentpb::ACTION_TYPE_EXECUTE_TASK);
  analysis.set_clarifying_question("Change it, or run it?");
  analysis.set_source(intentpb::INTENT_SOURCE_LOCAL_MODEL);
  analysis.set_reference(intentpb::REFERENCE_KIND_PRONOUN);
  analysis.mutable_clarification()->add_missing(intentpb::MISSING_SLOT_CHANGE);
  analysis.mutable_reply()->set_kind(intentpb::REPLY_KIND_NEW_REQUEST);
  analysis.add_parts()->set_text("pause it");

  const pb::IntentAnalysis shown = PublicAnalysis(analysis);
  // The JSON a gateway sees is the same, name for name.
  std::string inner_json;
  std::string shown_json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(analysis, &inner_json).ok());
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(shown, &shown_json).ok());
  EXPECT_EQ(shown_json, inner_json);
  EXPECT_EQ(shown.action_type(), pb::ACTION_TYPE_UPDATE_AGENT);
  EXPECT_EQ(shown.entities().at("agent_name"), "weekly-digest");
  EXPECT_EQ(shown.clarification().missing(0), pb::MISSING_SLOT_CHANGE);
}

TEST(PublicTypesTest, AFieldTheIntentServiceAddsIsNotShown) {
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(intentpb::ACTION_TYPE_QUERY_INFO);
  // A field number the public type does not have, as a newer intent service
  // would send.
  analysis.GetReflection()->MutableUnknownFields(&analysis)->AddVarint(99, 7);
  const pb::IntentAnalysis shown = PublicAnalysis(analysis);
  EXPECT_EQ(shown.action_type(), pb::ACTION_TYPE_QUERY_INFO);
  EXPECT_TRUE(shown.GetReflection()->GetUnknownFields(shown).empty());
}

TEST(PublicTypesTest, AMessageShowsItsTurnAndMaskingButNoRoutingMetadata) {
  convpb::Message stored;
  stored.set_id("m1");
  stored.set_conversation_id("c1");
  stored.set_seq(2);
  stored.set_role(convpb::ROLE_ASSISTANT);
  stored.set_content("Done.");
  stored.set_token_count(3);
  auto& fields = *stored.mutable_metadata()->mutable_fields();
  fields["turn_id"].set_string_value("t-1");
  fields["flow_id"].set_string_value("f-1");
  fields["action_type"].set_string_value("ACTION_TYPE_CREATE_AGENT");
  fields["secrets_detected"].mutable_list_value()->add_values()->set_string_value("openai");

  const pb::Message shown = PublicMessage(stored);
  EXPECT_EQ(shown.id(), "m1");
  EXPECT_EQ(shown.seq(), 2);
  EXPECT_EQ(shown.role(), pb::ROLE_ASSISTANT);
  EXPECT_EQ(shown.content(), "Done.");
  EXPECT_EQ(shown.turn_id(), "t-1");
  EXPECT_TRUE(shown.secrets_masked());
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(shown, &json).ok());
  EXPECT_THAT(json, ::testing::Not(::testing::HasSubstr("flow_id")));
  EXPECT_THAT(json, ::testing::Not(::testing::HasSubstr("f-1")));
  EXPECT_THAT(json, ::testing::Not(::testing::HasSubstr("CREATE_AGENT")));

  convpb::Message dialogue = stored;
  dialogue.set_role(convpb::ROLE_PLANNER);
  dialogue.mutable_metadata()->clear_fields();
  EXPECT_EQ(PublicMessage(dialogue).role(), pb::ROLE_UNSPECIFIED);
  EXPECT_FALSE(PublicMessage(dialogue).secrets_masked());
}

TEST(PublicTypesTest, AConversationShowsNeitherTenantNorUser) {
  convpb::Conversation stored;
  stored.set_id("c1");
  stored.set_tenant_id("acme");
  stored.set_user_id("alice");
  stored.set_title("Reports");
  stored.set_message_count(4);
  (*stored.mutable_metadata()->mutable_fields())["source"].set_string_value("chat");
  const pb::Conversation shown = PublicConversation(stored);
  EXPECT_EQ(shown.id(), "c1");
  EXPECT_EQ(shown.title(), "Reports");
  EXPECT_EQ(shown.message_count(), 4);
  std::string json;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(shown, &json).ok());
  EXPECT_THAT(json, ::testing::Not(::testing::HasSubstr("acme")));
  EXPECT_THAT(json, ::testing::Not(::testing::HasSubstr("alice")));
}

TEST(PublicTypesTest, RiskAndOutcomeValuesCrossByNumber) {
  EXPECT_EQ(PublicRisk(execpb::TOOL_RISK_HIGH), pb::TOOL_RISK_HIGH);
  EXPECT_EQ(PublicTaskStatus(execpb::TASK_STATUS_PARTIAL), pb::TASK_STATUS_PARTIAL);
  EXPECT_EQ(PublicExecutorError(execpb::ERROR_CODE_WRITE_NOT_APPROVED),
            pb::EXECUTOR_ERROR_CODE_WRITE_NOT_APPROVED);
  EXPECT_EQ(InternalContextType(pb::CONTEXT_TYPE_PROJECT_AUDIT),
            intentpb::CONTEXT_TYPE_PROJECT_AUDIT);
  EXPECT_EQ(PublicContextType(intentpb::CONTEXT_TYPE_TASK), pb::CONTEXT_TYPE_TASK);
  // A value a newer executor sends that the public API does not know.
  EXPECT_EQ(PublicRisk(static_cast<execpb::ToolRisk>(42)), pb::TOOL_RISK_UNSPECIFIED);
}

}  // namespace
}  // namespace omniforge::orchestrator
