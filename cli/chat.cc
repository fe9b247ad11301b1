#include "cli/chat.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cli/chat_view.h"
#include "cli/rpc_error.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"

namespace omniforge::cli {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace ipb = ::omniforge::orchestrator::v1;

const std::map<std::string, ipb::ContextType> kContexts = {
    {"global", ipb::CONTEXT_TYPE_GLOBAL},
    {"project", ipb::CONTEXT_TYPE_PROJECT},
    {"project_create", ipb::CONTEXT_TYPE_PROJECT_CREATE},
    {"task", ipb::CONTEXT_TYPE_TASK},
    {"project_audit", ipb::CONTEXT_TYPE_PROJECT_AUDIT}};

constexpr auto kSpinnerPeriod = std::chrono::milliseconds(100);

// Turns the spinner while a turn's stream is read (terminal output only).
class SpinnerTimer final {
 public:
  explicit SpinnerTimer(ChatView& view) : view_(view) {
    if (view.mode() != ChatOutput::kTerminal) return;
    thread_ = std::thread([this] {
      absl::MutexLock lock(&mu_);
      while (!mu_.AwaitWithTimeout(absl::Condition(&stopped_), absl::FromChrono(kSpinnerPeriod))) {
        view_.Tick();
      }
    });
  }
  SpinnerTimer(const SpinnerTimer&) = delete;
  SpinnerTimer& operator=(const SpinnerTimer&) = delete;
  ~SpinnerTimer() {
    if (!thread_.joinable()) return;
    {
      absl::MutexLock lock(&mu_);
      stopped_ = true;
    }
    thread_.join();
  }

 private:
  ChatView& view_;
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// One turn; returns the conversation it ran in, or "" when the call failed.
std::string Turn(pb::ChatService::Stub& stub, const ChatOptions& options,
                 const std::string& conversation_id, const std::string& message,
                 ipb::ContextType context_type, ChatView& view) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + options.api_key);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(options.timeout_s));
  pb::StreamChatRequest request;
  request.set_conversation_id(conversation_id);
  request.set_message(message);
  request.set_context_type(context_type);
  request.set_entity_id(options.entity_id);
  if (!options.approve.empty()) {
    request.mutable_decision()->set_kind(pb::DECISION_KIND_APPROVE);
    request.mutable_decision()->set_action_id(options.approve);
  } else if (!options.reject.empty()) {
    request.mutable_decision()->set_kind(pb::DECISION_KIND_REJECT);
    request.mutable_decision()->set_action_id(options.reject);
  }
  std::string conversation = conversation_id;
  grpc::Status status;
  {
    SpinnerTimer spinner(view);
    auto reader = stub.StreamChat(&context, request);
    pb::ChatEvent event;
    while (reader->Read(&event)) {
      if (event.has_session()) conversation = event.session().conversation_id();
      view.Show(event);
    }
    status = reader->Finish();
  }
  view.EndTurn();
  if (ReportRpcError(status) != 0) return "";
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
  ChatView view(std::cout, ChooseChatOutput(options.json, isatty(STDOUT_FILENO) != 0,
                                            std::getenv("NO_COLOR")));
  const bool decides = !options.approve.empty() || !options.reject.empty();
  if (decides &&
      (options.conversation_id.empty() || (!options.approve.empty() && !options.reject.empty()))) {
    std::cerr << "error: --approve or --reject (one of them) needs --conversation\n";
    return 2;
  }
  grpc::ChannelArguments channel_args;
  auto stub = pb::ChatService::NewStub(
      core::CreateServiceChannel(options.server, options.security, channel_args));
  if (!options.message.empty() || decides) {
    const std::string ran =
        Turn(*stub, options, options.conversation_id, options.message, context->second, view);
    return ran.empty() ? 1 : 0;
  }

  // A session: each line a turn in the same conversation.
  const bool interactive = isatty(STDIN_FILENO) != 0;
  const bool styled = view.mode() == ChatOutput::kTerminal;
  const std::string prompt = styled ? "\033[1myou>\033[0m " : "you> ";
  std::string conversation = options.conversation_id;
  if (interactive && view.mode() != ChatOutput::kJson) {
    std::cout << "omniforge chat: one message per line; /new starts a new conversation, /quit "
                 "or Ctrl-D leaves.\n";
    if (!conversation.empty()) std::cout << "· continuing conversation " << conversation << "\n";
  }
  std::string line;
  int failures = 0;
  for (;;) {
    if (interactive) std::cout << prompt << std::flush;
    if (!std::getline(std::cin, line)) {
      if (interactive) std::cout << "\n";
      break;
    }
    const std::string message(absl::StripAsciiWhitespace(line));
    if (message.empty()) continue;
    if (message == "/quit" || message == "/exit") break;
    if (message == "/new") {
      if (view.mode() != ChatOutput::kJson)
        std::cout << "· the next message starts a new conversation\n";
      conversation.clear();
      continue;
    }
    const std::string ran = Turn(*stub, options, conversation, message, context->second, view);
    if (ran.empty()) {
      ++failures;
    } else {
      conversation = ran;
    }
  }
  if (!conversation.empty() && view.mode() != ChatOutput::kJson) {
    std::cerr << "conversation " << conversation
              << "; resume it with: omniforge chat --conversation " << conversation << "\n";
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace omniforge::cli
