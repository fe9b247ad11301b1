#include "services/executor/src/converse_reactor.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include "libs/core/grpc_identity.h"
#include "libs/core/grpc_status.h"
#include "libs/core/grpc_trace.h"
#include "libs/core/grpc_unary.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/core/text.h"
#include "libs/llm/model_call_proto.h"

namespace omniforge::executor {
namespace {

namespace pb = ::omniforge::executor::v1;

void SetDuration(int64_t micros, google::protobuf::Duration* out) {
  out->set_seconds(micros / 1000000);
  out->set_nanos(static_cast<int32_t>(micros % 1000000) * 1000);
}

void ToProto(const PartialResult& r, pb::PartialResult* out) {
  out->set_tool_name(r.tool_name);
  out->set_result_json(r.result_json);
  out->set_is_error(r.is_error);
  out->set_risk(static_cast<pb::ToolRisk>(static_cast<int>(r.risk)));
}

pb::ConverseResponse ToProto(const DialogueEvent& e, const std::string& step_id,
                             const std::string& dialogue_id) {
  pb::ConverseResponse out;
  out.set_step_id(step_id);
  out.set_dialogue_conversation_id(dialogue_id);
  out.set_turn(e.turn);
  for (const llm::UsageRecord& call : e.model_calls) llm::ToProto(call, out.add_model_calls());
  switch (e.kind) {
    case DialogueEvent::Kind::kProgress: {
      auto* p = out.mutable_progress_update();
      p->set_message(e.message);
      p->set_tool_name(e.tool_name);
      p->set_arguments_json(e.arguments_json);
      p->set_fraction(e.fraction);
      break;
    }
    case DialogueEvent::Kind::kPartialResult:
      ToProto(e.partial, out.mutable_partial_result());
      break;
    case DialogueEvent::Kind::kQuestion: {
      auto* q = out.mutable_question();
      q->set_question_id(e.question_id);
      q->set_text(e.question);
      for (const auto& option : e.options) q->add_options(option);
      break;
    }
    case DialogueEvent::Kind::kComplete: {
      auto* c = out.mutable_task_complete();
      c->set_status(e.partial_success ? pb::TASK_STATUS_PARTIAL : pb::TASK_STATUS_SUCCESS);
      c->set_summary(e.summary);
      c->set_result_json(e.result_json);
      c->set_confidence(e.confidence);
      for (const auto& l : e.limitations) c->add_limitations(l);
      for (const auto& call : e.tool_calls) {
        auto* record = c->add_tool_calls();
        record->set_tool_name(call.tool_name);
        record->set_arguments_json(call.arguments_json);
        record->set_is_error(call.is_error);
        SetDuration(call.duration_us, record->mutable_duration());
      }
      break;
    }
    case DialogueEvent::Kind::kError: {
      auto* err = out.mutable_error();
      err->set_code(static_cast<pb::ErrorCode>(static_cast<int>(e.error)));
      err->set_message(e.message);
      err->set_retryable(e.retryable);
      for (const auto& r : e.partial_results) ToProto(r, err->add_partial_results());
      break;
    }
  }
  return out;
}

Assignment FromProto(const pb::TaskAssignment& a) {
  Assignment out;
  out.task = a.task();
  out.goal = a.goal();
  out.allowed_tools.assign(a.allowed_tools().begin(), a.allowed_tools().end());
  out.writes_approved = a.writes_approved();
  out.approved_targets_only = a.approved_targets_only();
  out.max_turns = a.max_turns();
  out.parent_conversation_id = a.parent_conversation_id();
  out.step_id = a.step_id();
  out.inputs_json = a.inputs_json();
  out.idempotency_key = a.idempotency_key();
  for (const auto& call : a.tool_calls()) {
    out.tool_calls.push_back({call.tool_name(), call.arguments_json()});
  }
  return out;
}

constexpr size_t kMaxRecordedBytes = 60000;  // the conversation service takes 64 KiB

std::string Capped(std::string text) {
  if (text.size() <= kMaxRecordedBytes) return text;
  text.resize(core::Utf8Prefix(text, kMaxRecordedBytes).size());
  return text + " [cut]";
}

std::string ErrorCodeName(DialogueError code) {
  return pb::ErrorCode_Name(static_cast<pb::ErrorCode>(static_cast<int>(code)));
}

// What an executor event looks like as a stored message.
std::pair<std::string, nlohmann::json> AsMessage(const DialogueEvent& e) {
  nlohmann::json meta = {{"turn", e.turn}};
  switch (e.kind) {
    case DialogueEvent::Kind::kProgress:
      meta["type"] = "progress_update";
      if (!e.tool_name.empty()) meta["tool_name"] = e.tool_name;
      return {e.message, meta};
    case DialogueEvent::Kind::kPartialResult:
      meta["type"] = "partial_result";
      meta["tool_name"] = e.partial.tool_name;
      meta["is_error"] = e.partial.is_error;
      return {e.partial.result_json, meta};
    case DialogueEvent::Kind::kQuestion:
      meta["type"] = "question";
      meta["question_id"] = e.question_id;
      meta["options"] = e.options;
      return {e.question, meta};
    case DialogueEvent::Kind::kComplete:
      meta["type"] = "task_complete";
      meta["status"] = "completed";
      meta["confidence"] = e.confidence;
      return {e.summary + "\n" + e.result_json, meta};
    case DialogueEvent::Kind::kError:
      meta["type"] = "error";
      meta["status"] = e.error == DialogueError::kCancelled ? "cancelled" : "failed";
      meta["code"] = ErrorCodeName(e.error);
      return {e.message, meta};
  }
  return {"", meta};
}

DialogueRecorder::Outcome OutcomeOf(const DialogueEvent& final_event) {
  if (final_event.kind == DialogueEvent::Kind::kComplete) {
    return DialogueRecorder::Outcome::kCompleted;
  }
  return final_event.error == DialogueError::kCancelled ? DialogueRecorder::Outcome::kCancelled
                                                        : DialogueRecorder::Outcome::kFailed;
}

// Parses a read message; the reader is gone before the buffer is reused.
bool ParseRequest(grpc::ByteBuffer& raw, pb::ConverseRequest& message) {
  grpc::ProtoBufferReader reader(&raw);
  return message.ParseFromZeroCopyStream(&reader);
}

void LogUnrecordedEnd(const std::string& dialogue_id, const absl::Status& status) {
  core::LogWarn("agent dialogue status not stored",
                {{"dialogue_id", dialogue_id}, {"error", std::string(status.message())}});
}

}  // namespace

ConverseReactor::ConverseReactor(grpc::CallbackServerContext* context, const AgentFactory& agents,
                                 core::ThreadPool& workers, DialogueRecorder* recorder)
    : workers_(workers), recorder_(recorder) {
  auto who = core::IdentityFromContext(*context);
  if (!who.ok()) {
    finished_ = true;
    Finish(core::ToGrpcStatus(who.status()));
    return;
  }
  who_ = *who;
  core::IncomingTrace incoming = core::TraceFromContext(*context);
  span_ = trace::Span::StartUnder("Converse", trace::SpanKind::kServer, incoming.parent);
  span_.SetAttribute("rpc.method", "Converse");
  ambient_ = core::UnaryAmbient(span_, std::move(incoming), who_);
  dialogue_ =
      agents(*std::move(who), context->deadline(), [this](const DialogueEvent& e) { Enqueue(e); });
  StartRead(&incoming_);
}

void ConverseReactor::OnReadDone(bool ok) {
  std::lock_guard lock(mu_);
  if (!ok) {
    inbox_.emplace_back(std::nullopt);
    Schedule();
    return;
  }
  Request message;
  if (!ParseRequest(incoming_, message)) {
    // Bytes that are no ConverseRequest (a string field that is not UTF-8):
    // the step stops, as for a cancel, and the call says why.
    if (dialogue_ != nullptr) dialogue_->RequestCancel();
    if (!finished_) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "request is not a valid " + Request::descriptor()->full_name() +
                              ": every string field must be valid UTF-8"));
    }
    return;
  }
  incoming_.Clear();
  // A cancel takes effect at the next safe point even while a tool runs.
  if (message.has_cancel() && dialogue_ != nullptr) dialogue_->RequestCancel();
  inbox_.emplace_back(std::move(message));
  Schedule();
  if (!finished_) StartRead(&incoming_);
}

void ConverseReactor::Schedule() {
  if (processing_ || dialogue_ == nullptr) return;
  processing_ = true;
  ++refs_;
  if (!workers_.Submit([this] { Process(); })) {
    processing_ = false;
    --refs_;
    if (!finished_) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "executor is overloaded; retry"));
    }
  }
}

void ConverseReactor::Process() {
  const core::ScopedAmbient ambient(ambient_);
  for (;;) {
    std::optional<Request> message;
    {
      std::lock_guard lock(mu_);
      if (inbox_.empty() || finished_) {
        inbox_.clear();
        processing_ = false;
        break;
      }
      message = std::move(inbox_.front());
      inbox_.pop_front();
    }
    Handle(message);
  }
  Release();
}

void ConverseReactor::Handle(const std::optional<Request>& message) {
  ExecutorAgent& d = *dialogue_;
  if (d.finished()) return;
  if (!message.has_value()) {
    if (!d.started()) {
      d.ProtocolError("the stream ended before a task_assignment");
      return;
    }
    // The planner's side ended while the agent waits for an answer: it
    // closed the stream or its call was cancelled (gRPC may report either
    // first). No answer will come, so the step ends cancelled either way.
    d.RequestCancel();
    if (!d.ApplyCancel()) {
      d.ProtocolError("the planner closed the stream without answering the question");
    }
    return;
  }
  switch (message->message_case()) {
    case Request::kTaskAssignment:
      if (d.started()) {
        d.ProtocolError("only the first message may be a task_assignment");
        return;
      }
      {
        const auto& a = message->task_assignment();
        step_id_ = a.step_id();
        if (recorder_ != nullptr && !a.parent_conversation_id().empty()) {
          auto opened =
              recorder_->Open(who_, a.parent_conversation_id(),
                              "Step " + a.step_id() + ": " + a.task().substr(0, 200),
                              nlohmann::json({{"step_id", a.step_id()}, {"goal", a.goal()}})
                                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
          if (opened.ok()) {
            dialogue_id_ = *opened;
          } else {
            core::LogWarn(
                "agent dialogue not stored",
                {{"step_id", a.step_id()}, {"error", std::string(opened.status().message())}});
          }
        }
        nlohmann::json calls = nlohmann::json::array();
        for (const auto& call : a.tool_calls()) {
          calls.push_back(
              {{"tool_name", call.tool_name()}, {"arguments_json", call.arguments_json()}});
        }
        Record(DialogueRecorder::Speaker::kPlanner, a.task(),
               {{"type", "task_assignment"},
                {"step_id", a.step_id()},
                {"writes_approved", a.writes_approved()},
                {"approved_targets_only", a.approved_targets_only()},
                {"max_turns", a.max_turns()},
                {"allowed_tools",
                 std::vector<std::string>(a.allowed_tools().begin(), a.allowed_tools().end())},
                {"tool_calls", calls}});
        d.Start(FromProto(a));
        return;
      }
    case Request::kClarification:
      if (!d.started()) {
        d.ProtocolError("the first message must be a task_assignment");
        return;
      }
      Record(DialogueRecorder::Speaker::kPlanner, message->clarification().answer(),
             {{"type", "clarification"}, {"question_id", message->clarification().question_id()}});
      d.Answer(message->clarification().question_id(), message->clarification().answer());
      return;
    case Request::kCancel:
      Record(DialogueRecorder::Speaker::kPlanner, "cancel: " + message->cancel().reason(),
             {{"type", "cancel"}});
      d.ApplyCancel();
      return;
    case Request::MESSAGE_NOT_SET:
      d.ProtocolError("a message with none of task_assignment, clarification or cancel");
      return;
  }
}

void ConverseReactor::Record(DialogueRecorder::Speaker speaker, const std::string& content,
                             const nlohmann::json& metadata) {
  if (dialogue_id_.empty()) return;
  const std::string key = dialogue_id_ + ":" + std::to_string(recorded_++);
  absl::Status stored = recorder_->Append(
      who_, dialogue_id_, speaker, Capped(content),
      metadata.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), key);
  if (!stored.ok()) {
    core::LogWarn("agent dialogue message not stored",
                  {{"dialogue_id", dialogue_id_}, {"error", std::string(stored.message())}});
  }
}

void ConverseReactor::RecordEnd(DialogueRecorder::Outcome outcome) {
  if (dialogue_id_.empty() || ended_) return;
  ended_ = true;
  if (absl::Status stored = recorder_->End(who_, dialogue_id_, outcome); !stored.ok()) {
    LogUnrecordedEnd(dialogue_id_, stored);
  }
}

void ConverseReactor::Enqueue(const DialogueEvent& event) {
  if (event.final()) {
    // omniforge_executor_dialogues_total{outcome}: completed, or the error code.
    core::MetricsRegistry::Global()
        .GetCounter("omniforge_executor_dialogues_total", "Converse dialogues by how they ended",
                    {{"outcome", event.kind == DialogueEvent::Kind::kComplete
                                     ? std::string("completed")
                                     : ErrorCodeName(event.error)}})
        .Inc();
  }
  if (!dialogue_id_.empty()) {
    auto [content, metadata] = AsMessage(event);
    Record(DialogueRecorder::Speaker::kExecutor, content, metadata);
    if (event.final()) RecordEnd(OutcomeOf(event));
  }
  std::lock_guard lock(mu_);
  if (finished_) return;
  outbox_.push_back(ToProto(event, step_id_, dialogue_id_));
  if (event.final()) final_queued_ = true;
  MaybeWrite();
}

void ConverseReactor::MaybeWrite() {
  if (writing_ || finished_) return;
  if (!outbox_.empty()) {
    writing_ = true;
    bool own_buffer = false;
    writing_message_.Clear();  // the serializer writes a large message into an empty buffer only
    (void)grpc::SerializationTraits<Response>::Serialize(outbox_.front(), &writing_message_,
                                                         &own_buffer);
    outbox_.pop_front();
    StartWrite(&writing_message_);
  } else if (final_queued_) {
    finished_ = true;
    Finish(grpc::Status::OK);
  }
}

void ConverseReactor::OnWriteDone(bool ok) {
  std::lock_guard lock(mu_);
  writing_ = false;
  if (!ok) {
    outbox_.clear();
    if (!finished_) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the planner went away"));
    }
    return;
  }
  MaybeWrite();
}

void ConverseReactor::OnCancel() {
  if (dialogue_ != nullptr) dialogue_->RequestCancel();
  std::lock_guard lock(mu_);
  if (!finished_) {
    finished_ = true;
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the planner cancelled the call"));
  }
}

void ConverseReactor::OnDone() { Release(); }

void ConverseReactor::Release() {
  bool last = false;
  {
    std::lock_guard lock(mu_);
    last = --refs_ == 0;
  }
  if (!last) return;
  // The stream ended (the planner cancelled the call or went away) while the
  // stored dialogue was still open, e.g. waiting for an answer: no worker
  // runs any more, so the dialogue is closed as cancelled from here, off the
  // gRPC thread this may be on.
  if (!dialogue_id_.empty() && !ended_) {
    const bool queued = workers_.Submit([recorder = recorder_, who = who_, id = dialogue_id_] {
      if (absl::Status stored = recorder->End(who, id, DialogueRecorder::Outcome::kCancelled);
          !stored.ok()) {
        LogUnrecordedEnd(id, stored);
      }
    });
    if (!queued)
      LogUnrecordedEnd(dialogue_id_, absl::ResourceExhaustedError("executor overloaded"));
  }
  delete this;
}

}  // namespace omniforge::executor
