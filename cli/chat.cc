#include "cli/chat.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <iostream>
#include <map>

#include "absl/strings/ascii.h"
#include "libs/core/text.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"

namespace omniforge::cli {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace ipb = ::omniforge::intent::v1;
namespace epb = ::omniforge::executor::v1;

const std::map<std::string, ipb::ContextType> kContexts = {
    {"global", ipb::CONTEXT_TYPE_GLOBAL},
    {"project", ipb::CONTEXT_TYPE_PROJECT},
    {"project_create", ipb::CONTEXT_TYPE_PROJECT_CREATE},
    {"task", ipb::CONTEXT_TYPE_TASK},
    {"project_audit", ipb::CONTEXT_TYPE_PROJECT_AUDIT}};

// ANSI styles, on a terminal only.
struct Style {
  bool on = false;
  std::string dim() const { return on ? "\033[2m" : ""; }
  std::string bold() const { return on ? "\033[1m" : ""; }
  std::string yellow() const { return on ? "\033[33m" : ""; }
  std::string red() const { return on ? "\033[31m" : ""; }
  std::string reset() const { return on ? "\033[0m" : ""; }
};

std::string Suffix(const std::string& name, const std::string& prefix) {
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

void Show(const pb::ChatEvent& event, const Style& s) {
  switch (event.event_case()) {
    case pb::ChatEvent::kAgentState:
      std::cout << s.dim() << "· "
                << absl::AsciiStrToLower(
                       Suffix(pb::AgentState_Name(event.agent_state().state()), "AGENT_STATE_"))
                << ": " << event.agent_state().details() << s.reset() << "\n";
      break;
    case pb::ChatEvent::kIntent: {
      const ipb::IntentAnalysis& a = event.intent().analysis();
      std::cout << s.dim() << "· understood: "
                << absl::AsciiStrToLower(
                       Suffix(ipb::ActionType_Name(a.action_type()), "ACTION_TYPE_"))
                << " (" << static_cast<int>(a.confidence() * 100) << "%)";
      for (const auto& [key, value] :
           std::map<std::string, std::string>(a.entities().begin(), a.entities().end())) {
        std::cout << " " << key << "=" << value;
      }
      std::cout << s.reset() << "\n";
      break;
    }
    case pb::ChatEvent::kToolCall:
      std::cout << s.dim() << "→ " << event.tool_call().tool_name() << " "
                << omniforge::core::Shortened(event.tool_call().arguments_json(), 200) << s.reset()
                << "\n";
      break;
    case pb::ChatEvent::kToolResult:
      std::cout << s.dim() << "← " << event.tool_result().tool_name() << ": "
                << (event.tool_result().is_error() ? "failed" : "ok") << " ("
                << static_cast<int>(event.tool_result().duration_ms()) << " ms)" << s.reset()
                << "\n";
      break;
    case pb::ChatEvent::kPreview: {
      const pb::PreviewEvent& p = event.preview();
      std::cout << s.yellow() << "⚠ waiting for your approval ("
                << absl::AsciiStrToLower(Suffix(epb::ToolRisk_Name(p.risk()), "TOOL_RISK_"))
                << "): " << p.tool_name() << " "
                << omniforge::core::Shortened(p.arguments_json(), 300) << s.reset() << "\n";
      break;
    }
    case pb::ChatEvent::kPlanCreated:
    case pb::ChatEvent::kPlanReadyForReview:
    case pb::ChatEvent::kPlanReview:
    case pb::ChatEvent::kStepStart:
    case pb::ChatEvent::kStepComplete:
    case pb::ChatEvent::kExecutorSpawned:
    case pb::ChatEvent::kExecutorMessage:
    case pb::ChatEvent::kExecutorResult: {
      std::string json;
      (void)google::protobuf::util::MessageToJsonString(event, &json);
      std::cout << s.dim() << "· " << json << s.reset() << "\n";
      break;
    }
    case pb::ChatEvent::kText:
      std::cout << s.bold() << "omniforge: " << s.reset() << event.text().delta() << "\n";
      break;
    case pb::ChatEvent::kError:
      std::cout << s.red() << "! " << event.error().message() << s.reset() << "\n";
      break;
    case pb::ChatEvent::kDone:
      std::cout << s.dim() << "· done in " << static_cast<int>(event.done().usage().duration_ms())
                << " ms, " << event.done().usage().tool_calls() << " tool calls"
                << (event.done().is_final() ? "" : "; your turn") << s.reset() << "\n";
      break;
    default:
      break;
  }
}

// One turn; returns the conversation it ran in, or "" on failure.
std::string Turn(pb::ChatService::Stub& stub, const ChatOptions& options,
                 const std::string& conversation_id, const std::string& message,
                 ipb::ContextType context_type, const Style& style) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + options.api_key);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(options.timeout_s));
  pb::StreamChatRequest request;
  request.set_conversation_id(conversation_id);
  request.set_message(message);
  request.set_context_type(context_type);
  auto reader = stub.StreamChat(&context, request);
  std::string conversation = conversation_id;
  pb::ChatEvent event;
  while (reader->Read(&event)) {
    if (event.has_session()) {
      conversation = event.session().conversation_id();
      if (!options.json && event.session().conversation_created()) {
        std::cout << style.dim() << "· conversation " << conversation << style.reset() << "\n";
      }
    }
    if (options.json) {
      std::string json;
      google::protobuf::util::JsonPrintOptions print;
      print.preserve_proto_field_names = true;
      (void)google::protobuf::util::MessageToJsonString(event, &json, print);
      std::cout << json << "\n";
    } else {
      Show(event, style);
    }
    std::cout.flush();
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) {
    std::cerr << "error: " << status.error_message() << " (code " << status.error_code() << ")\n";
    return "";
  }
  return conversation;
}

}  // namespace

int RunChat(const ChatOptions& options) {
  if (options.api_key.empty()) {
    std::cerr << "error: an API key is needed: --api-key or OMNIFORGE_API_KEY (make up writes "
                 "one for the demo user to /tmp/omniforge/demo.key)\n";
    return 2;
  }
  auto context = kContexts.find(options.context);
  if (context == kContexts.end()) {
    std::cerr << "error: --context must be global, project, project_create, task or "
                 "project_audit\n";
    return 2;
  }
  Style style;
  style.on = !options.json && isatty(STDOUT_FILENO) != 0;
  auto stub = pb::ChatService::NewStub(
      grpc::CreateChannel(options.server, grpc::InsecureChannelCredentials()));
  if (!options.message.empty()) {
    return Turn(*stub, options, options.conversation_id, options.message, context->second, style)
                   .empty()
               ? 1
               : 0;
  }
  std::string conversation = options.conversation_id;
  const bool prompt = isatty(STDIN_FILENO) != 0;
  std::string line;
  int failures = 0;
  for (;;) {
    if (prompt) std::cout << style.bold() << "you> " << style.reset() << std::flush;
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line == "/quit" || line == "/exit") break;
    const std::string ran = Turn(*stub, options, conversation, line, context->second, style);
    if (ran.empty()) {
      ++failures;
    } else {
      conversation = ran;
    }
  }
  if (prompt) std::cout << "\n";
  if (!conversation.empty() && !options.json) {
    std::cerr << "resume with: omniforge chat --conversation " << conversation << "\n";
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace omniforge::cli
