#include "services/orchestrator/testing/fakes.h"

#include "libs/core/ids.h"
#include "services/intent/src/reply.h"
#include "services/intent/src/reply_proto.h"

namespace omniforge::orchestrator::testing {

using nlohmann::json;

core::TimePoint FakeClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

void FakeClock::Advance(std::chrono::microseconds by) {
  absl::MutexLock lock(&mu_);
  now_ += by;
}

absl::StatusOr<FakeMemory::Conversation*> FakeMemory::Owned(const core::Identity& who,
                                                            const std::string& id) {
  if (unreachable_) return absl::UnavailableError("conversation storage is unreachable");
  auto it = conversations_.find(id);
  if (it == conversations_.end() || it->second.tenant_id != who.tenant_id ||
      it->second.user_id != who.user_id) {
    return absl::NotFoundError("conversation " + id + " not found");
  }
  return &it->second;
}

absl::StatusOr<convpb::CreateConversationResponse> FakeMemory::CreateConversation(
    const core::Call& call, const convpb::CreateConversationRequest& request) {
  const core::Identity& who = call.who;
  absl::MutexLock lock(&mu_);
  if (unreachable_) return absl::UnavailableError("conversation storage is unreachable");
  const std::string id = core::NewUuid();
  conversations_[id] = Conversation{who.tenant_id, who.user_id, {}, {}};
  convpb::CreateConversationResponse response;
  response.mutable_conversation()->set_id(id);
  response.mutable_conversation()->set_title(request.title());
  return response;
}

absl::StatusOr<convpb::GetConversationResponse> FakeMemory::GetConversation(
    const core::Call& call, const convpb::GetConversationRequest& request) {
  const core::Identity& who = call.who;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Conversation*> owned = Owned(who, request.conversation_id());
  if (!owned.ok()) return owned.status();
  convpb::GetConversationResponse response;
  response.mutable_conversation()->set_id(request.conversation_id());
  return response;
}

absl::StatusOr<convpb::ListConversationsResponse> FakeMemory::ListConversations(
    const core::Call& call, const convpb::ListConversationsRequest&) {
  const core::Identity& who = call.who;
  absl::MutexLock lock(&mu_);
  if (unreachable_) return absl::UnavailableError("conversation storage is unreachable");
  convpb::ListConversationsResponse response;
  for (const auto& [id, c] : conversations_) {
    if (c.tenant_id == who.tenant_id && c.user_id == who.user_id) {
      response.add_conversations()->set_id(id);
    }
  }
  return response;
}

absl::StatusOr<convpb::AppendMessageResponse> FakeMemory::AppendMessage(
    const core::Call& call, const convpb::AppendMessageRequest& request) {
  const core::Identity& who = call.who;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Conversation*> owned = Owned(who, request.conversation_id());
  if (!owned.ok()) return owned.status();
  Conversation& c = **owned;
  convpb::AppendMessageResponse response;
  if (!request.idempotency_key().empty()) {
    auto seen = c.by_key.find(request.idempotency_key());
    if (seen != c.by_key.end()) {
      *response.mutable_message() = c.messages[seen->second];
      response.set_deduplicated(true);
      return response;
    }
    c.by_key[request.idempotency_key()] = c.messages.size();
  }
  convpb::Message& m = c.messages.emplace_back();
  m.set_id(core::NewUuid());
  m.set_conversation_id(request.conversation_id());
  m.set_seq(static_cast<int64_t>(c.messages.size()));
  m.set_role(request.role());
  m.set_content(request.content());
  m.set_metadata_json(request.metadata_json());
  ++appends_;
  *response.mutable_message() = m;
  return response;
}

absl::StatusOr<convpb::ListMessagesResponse> FakeMemory::ListMessages(
    const core::Call& call, const convpb::ListMessagesRequest& request) {
  const core::Identity& who = call.who;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Conversation*> owned = Owned(who, request.conversation_id());
  if (!owned.ok()) return owned.status();
  convpb::ListMessagesResponse response;
  for (const convpb::Message& m : (*owned)->messages) *response.add_messages() = m;
  return response;
}

absl::StatusOr<convpb::DeleteConversationResponse> FakeMemory::DeleteConversation(
    const core::Call& call, const convpb::DeleteConversationRequest& request) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Conversation*> owned = Owned(call.who, request.conversation_id());
  if (!owned.ok()) return owned.status();
  conversations_.erase(request.conversation_id());
  return convpb::DeleteConversationResponse();
}

absl::StatusOr<convpb::GetContextWindowResponse> FakeMemory::GetContextWindow(
    const core::Call& call, const convpb::GetContextWindowRequest& request) {
  const core::Identity& who = call.who;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Conversation*> owned = Owned(who, request.conversation_id());
  if (!owned.ok()) return owned.status();
  convpb::GetContextWindowResponse response;
  for (const convpb::Message& m : (*owned)->messages) *response.add_messages() = m;
  return response;
}

void FakeMemory::SetUnreachable(bool unreachable) {
  absl::MutexLock lock(&mu_);
  unreachable_ = unreachable;
}

std::vector<convpb::Message> FakeMemory::Messages(const std::string& conversation_id) const {
  absl::MutexLock lock(&mu_);
  auto it = conversations_.find(conversation_id);
  return it == conversations_.end() ? std::vector<convpb::Message>() : it->second.messages;
}

int FakeMemory::appends() const {
  absl::MutexLock lock(&mu_);
  return appends_;
}

FakeUnderstanding::Answer FakeUnderstanding::Always(intentpb::ActionType action,
                                                    std::map<std::string, std::string> entities) {
  return Answer([action, entities = std::move(entities)](const intentpb::AnalyzeIntentRequest&) {
    intentpb::IntentAnalysis analysis;
    analysis.set_action_type(action);
    analysis.set_confidence(0.95f);
    analysis.set_source(intentpb::INTENT_SOURCE_FAST_PATH);
    analysis.mutable_entities()->insert(entities.begin(), entities.end());
    return absl::StatusOr<intentpb::IntentAnalysis>(analysis);
  });
}

FakeUnderstanding::Answer FakeUnderstanding::PicksOptions(Answer otherwise) {
  return [otherwise = std::move(otherwise)](const intentpb::AnalyzeIntentRequest& request)
             -> absl::StatusOr<intentpb::IntentAnalysis> {
    const intentpb::PendingQuestion& question = request.pending().question();
    if (question.kind() != intentpb::QUESTION_KIND_OPTION) return otherwise(request);
    intentpb::IntentAnalysis analysis;
    analysis.set_action_type(intentpb::ACTION_TYPE_UNKNOWN);
    analysis.set_source(intentpb::INTENT_SOURCE_FAST_PATH);
    analysis.mutable_reply()->set_kind(intentpb::REPLY_KIND_ANSWER);
    for (int i = 0; i < question.options_size(); ++i) {
      if (request.message() == question.options(i) || request.message() == std::to_string(i + 1)) {
        analysis.mutable_reply()->set_option(i + 1);
      }
    }
    return analysis;
  };
}

FakeUnderstanding::Answer FakeUnderstanding::DeleteOfAlphaOrBeta() {
  return [](const intentpb::AnalyzeIntentRequest& request) {
    intentpb::IntentAnalysis analysis;
    analysis.set_action_type(intentpb::ACTION_TYPE_MANAGE_PLATFORM);
    analysis.set_confidence(0.95f);
    analysis.set_source(intentpb::INTENT_SOURCE_FAST_PATH);
    const bool beta = request.message().find("beta") != std::string::npos;
    (*analysis.mutable_entities())["agent_name"] = beta ? "beta-digest" : "alpha-reports";
    (*analysis.mutable_entities())["operation"] = "delete";
    return absl::StatusOr<intentpb::IntentAnalysis>(analysis);
  };
}

namespace {

// The request and analysis as the intent service's rules read them (the
// pending context as the service converts it: reply_proto.h).
intent::IntentRequest RulesRequest(const intentpb::AnalyzeIntentRequest& request) {
  intent::IntentRequest out;
  out.message = request.message();
  for (const intentpb::CatalogItem& agent : request.available_agents()) {
    out.agents.push_back({agent.name(), agent.description()});
  }
  out.pending = intent::PendingFromProto(request.pending()).value_or(intent::PendingContext());
  return out;
}

intentpb::ReplyDecision RulesReply(const intentpb::AnalyzeIntentRequest& request,
                                   const intentpb::IntentAnalysis& analysis) {
  intent::IntentAnalysis read;
  read.action = static_cast<intent::Action>(analysis.action_type());
  read.entities.insert(analysis.entities().begin(), analysis.entities().end());
  read.is_ambiguous = analysis.is_ambiguous();
  read.reference = static_cast<intent::Reference>(analysis.reference());
  read.summary_worthy = analysis.summary_worthy();
  intentpb::ReplyDecision out;
  intent::ReplyToProto(intent::ReadReply(RulesRequest(request), read), &out);
  return out;
}

}  // namespace

absl::StatusOr<intentpb::AnalyzeIntentResponse> FakeUnderstanding::AnalyzeIntent(
    const core::Call&, const intentpb::AnalyzeIntentRequest& request) {
  std::function<void()> hook;
  intentpb::AnalyzeIntentResponse response;
  {
    absl::MutexLock lock(&mu_);
    requests_.push_back(request);
    hook = on_call_;
    for (const ::omniforge::llm::v1::ModelCall& made : model_calls_) {
      *response.add_model_calls() = made;
    }
  }
  if (hook) hook();
  absl::StatusOr<intentpb::IntentAnalysis> analysis = answer_(request);
  if (!analysis.ok()) return analysis.status();
  if (analysis->reply().kind() == intentpb::REPLY_KIND_UNSPECIFIED) {
    *analysis->mutable_reply() = RulesReply(request, *analysis);
  }
  *response.mutable_analysis() = *std::move(analysis);
  return response;
}

void FakeUnderstanding::AnswerWithCalls(std::vector<::omniforge::llm::v1::ModelCall> calls) {
  absl::MutexLock lock(&mu_);
  model_calls_ = std::move(calls);
}

std::vector<intentpb::AnalyzeIntentRequest> FakeUnderstanding::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

void FakeUnderstanding::OnCall(std::function<void()> hook) {
  absl::MutexLock lock(&mu_);
  on_call_ = std::move(hook);
}

FakeTools::FakeTools() {
  AddTool("list_agents", execpb::TOOL_RISK_READ);
  AddTool("get_agent", execpb::TOOL_RISK_READ);
  AddTool("list_runs", execpb::TOOL_RISK_READ);
  AddTool("create_agent", execpb::TOOL_RISK_WRITE);
  AddTool("run_agent", execpb::TOOL_RISK_WRITE);
  AddTool("update_agent", execpb::TOOL_RISK_WRITE);
  AddTool("delete_agent", execpb::TOOL_RISK_HIGH);
}

void FakeTools::AddTool(const std::string& name, execpb::ToolRisk risk, Handler handler) {
  absl::MutexLock lock(&mu_);
  execpb::ToolDescriptor& d = catalog_.emplace_back();
  d.set_name(name);
  d.set_description(name + " (fake)");
  d.set_risk(risk);
  if (handler) handlers_[name] = std::move(handler);
}

void FakeTools::SetAgents(json agents) {
  absl::MutexLock lock(&mu_);
  agents_ = std::move(agents);
}

absl::StatusOr<execpb::ListToolsResponse> FakeTools::ListTools(const core::Call&,
                                                               const execpb::ListToolsRequest&) {
  absl::MutexLock lock(&mu_);
  execpb::ListToolsResponse response;
  for (const execpb::ToolDescriptor& d : catalog_) *response.add_tools() = d;
  return response;
}

absl::StatusOr<execpb::InvokeToolResponse> FakeTools::InvokeTool(
    const core::Call&, const execpb::InvokeToolRequest& request) {
  Handler handler;
  std::function<void(const execpb::InvokeToolRequest&)> hook;
  execpb::InvokeToolResponse response;
  {
    absl::MutexLock lock(&mu_);
    calls_.push_back(request);
    hook = on_call_;
    auto it = handlers_.find(request.tool_name());
    if (it != handlers_.end()) handler = it->second;
    if (request.tool_name() == "list_agents") {
      response.set_result_json(json{{"agents", agents_}}.dump());
    } else {
      response.set_result_json(json{{"ok", true}}.dump());
    }
  }
  if (hook) hook(request);
  if (handler) return handler(request);
  return response;
}

std::vector<execpb::InvokeToolRequest> FakeTools::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

std::vector<execpb::InvokeToolRequest> FakeTools::CallsOf(const std::string& tool) const {
  absl::MutexLock lock(&mu_);
  std::vector<execpb::InvokeToolRequest> out;
  for (const execpb::InvokeToolRequest& call : calls_) {
    if (call.tool_name() == tool) out.push_back(call);
  }
  return out;
}

void FakeTools::OnCall(std::function<void(const execpb::InvokeToolRequest&)> hook) {
  absl::MutexLock lock(&mu_);
  on_call_ = std::move(hook);
}

void FakeErrorLog::Record(TurnError error) {
  absl::MutexLock lock(&mu_);
  errors_.push_back(std::move(error));
}

std::vector<TurnError> FakeErrorLog::errors() const {
  absl::MutexLock lock(&mu_);
  return errors_;
}

std::vector<pb::ChatEvent> RecordingSink::Of(pb::ChatEvent::EventCase kind) const {
  std::vector<pb::ChatEvent> out;
  for (const pb::ChatEvent& e : events) {
    if (e.event_case() == kind) out.push_back(e);
  }
  return out;
}

std::vector<pb::ChatErrorCode> RecordingSink::ErrorCodes() const {
  std::vector<pb::ChatErrorCode> codes;
  for (const pb::ChatEvent& e : Of(pb::ChatEvent::kError)) codes.push_back(e.error().code());
  return codes;
}

std::vector<pb::AgentState> RecordingSink::States() const {
  std::vector<pb::AgentState> states;
  for (const pb::ChatEvent& e : Of(pb::ChatEvent::kAgentState)) {
    states.push_back(e.agent_state().state());
  }
  return states;
}

std::string RecordingSink::Text() const {
  std::string text;
  for (const pb::ChatEvent& e : Of(pb::ChatEvent::kText)) text += e.text().delta();
  return text;
}

}  // namespace omniforge::orchestrator::testing
