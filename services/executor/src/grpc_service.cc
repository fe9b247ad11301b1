#include "services/executor/src/grpc_service.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "libs/core/grpc_unary.h"
#include "libs/core/metrics.h"
#include "services/executor/src/converse_reactor.h"
#include "services/executor/src/local_dialogue.h"

namespace omniforge::executor {
namespace {

constexpr int kMaxListedNames = 500;

pb::ToolRisk ToProto(ToolRisk risk) { return static_cast<pb::ToolRisk>(static_cast<int>(risk)); }

void ToProto(const ToolSpec& spec, pb::ToolDescriptor* out) {
  out->set_name(spec.name);
  out->set_description(spec.description);
  out->set_parameters_json_schema(spec.parameters_schema);
  out->set_risk(ToProto(spec.risk));
  out->set_source(spec.source);
}

// omniforge_executor_tool_calls_total{tool,risk,outcome}: outcome is ok,
// tool_error (is_error), deduplicated or the gRPC code's name.
void CountCall(const std::string& tool, ToolRisk risk, const std::string& outcome) {
  core::MetricsRegistry::Global()
      .GetCounter("omniforge_executor_tool_calls_total", "InvokeTool calls by tool and outcome",
                  {{"tool", tool}, {"risk", std::string(ToolRiskName(risk))}, {"outcome", outcome}})
      .Inc();
}

}  // namespace

ExecutorGrpcService::ExecutorGrpcService(const ToolRuntime& runtime, core::ThreadPool& workers,
                                         DialogueRecorder* recorder, AgentFactory agents)
    : runtime_(runtime), workers_(workers), recorder_(recorder), agents_(std::move(agents)) {
  if (!agents_) {
    agents_ = [&runtime](core::Identity who, std::chrono::system_clock::time_point deadline,
                         EventSink sink) -> std::unique_ptr<ExecutorAgent> {
      return std::make_unique<LocalDialogue>(runtime, std::move(who), deadline, std::move(sink));
    };
  }
}

grpc::ServerUnaryReactor* ExecutorGrpcService::ListTools(grpc::CallbackServerContext* context,
                                                         const Raw* raw, Raw* raw_response) {
  using Req = pb::ListToolsRequest;
  using Resp = pb::ListToolsResponse;
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "ListTools",
      core::Inline<Req, Resp>(
          [this](const core::Identity&, const Req& request, Resp* response) -> absl::Status {
            if (!pb::ToolRisk_IsValid(request.max_risk())) {
              return absl::InvalidArgumentError(
                  absl::StrCat("max_risk: unknown value ", request.max_risk()));
            }
            if (request.names_size() > kMaxListedNames) {
              return absl::InvalidArgumentError(
                  absl::StrCat("names: at most ", kMaxListedNames, " names"));
            }
            std::optional<ToolRisk> max_risk;
            if (request.max_risk() != pb::TOOL_RISK_UNSPECIFIED) {
              max_risk = static_cast<ToolRisk>(static_cast<int>(request.max_risk()));
            }
            const std::vector<std::string> names(request.names().begin(), request.names().end());
            for (const ToolSpec& spec : runtime_.catalog().List(max_risk, names)) {
              ToProto(spec, response->add_tools());
            }
            return absl::OkStatus();
          }));
}

grpc::ServerUnaryReactor* ExecutorGrpcService::InvokeTool(grpc::CallbackServerContext* context,
                                                          const Raw* raw, Raw* raw_response) {
  using Req = pb::InvokeToolRequest;
  using Resp = pb::InvokeToolResponse;
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "InvokeTool",
      core::OnWorker<Req, Resp>(
          workers_, "executor is overloaded; retry",
          [this, context](const core::Identity& who, const Req& request,
                          Resp* response) -> absl::Status {
            auto outcome = runtime_.Invoke(
                who, {request.tool_name(), request.arguments_json(), request.idempotency_key()},
                context->deadline());
            const auto entry = runtime_.catalog().Find(request.tool_name());
            const ToolRisk risk = entry.has_value() ? entry->spec.risk : ToolRisk::kRead;
            if (!outcome.ok()) {
              if (entry.has_value()) {
                CountCall(request.tool_name(), risk,
                          std::string(absl::StatusCodeToString(outcome.status().code())));
              }
              return outcome.status();
            }
            CountCall(request.tool_name(), risk,
                      outcome->deduplicated ? "deduplicated"
                      : outcome->is_error   ? "tool_error"
                                            : "ok");
            response->set_result_json(std::move(outcome->result_json));
            response->set_is_error(outcome->is_error);
            response->set_risk(ToProto(outcome->risk));
            response->mutable_duration()->set_seconds(outcome->duration_us / 1000000);
            response->mutable_duration()->set_nanos(
                static_cast<int32_t>(outcome->duration_us % 1000000) * 1000);
            response->set_deduplicated(outcome->deduplicated);
            response->set_truncated(outcome->truncated);
            return absl::OkStatus();
          }));
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ExecutorGrpcService::Converse(
    grpc::CallbackServerContext* context) {
  return new ConverseReactor(context, agents_, workers_, recorder_);
}

}  // namespace omniforge::executor
