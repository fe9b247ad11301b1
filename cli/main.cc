// omniforge: the command-line client.
//
//   omniforge conversations create [--title T]
//   omniforge conversations list [--page-size N] [--page-token T]
//   omniforge conversations show ID [--limit N]
//   omniforge conversations append ID --role user|assistant|... TEXT [--idempotency-key K]
//   omniforge conversations window ID [--budget N] [--recent N]
//   omniforge conversations delete ID
//   omniforge intent analyze TEXT [--conversation ID] [--agent NAME[=DESCRIPTION]]...
//   omniforge tools list [--max-risk read|write|high]
//   omniforge tools invoke NAME [ARGUMENTS_JSON] [--idempotency-key K]
//   omniforge chat [MESSAGE] [--conversation ID] [--context global|project|...]
//   omniforge actions CONVERSATION_ID [--limit N]
//   omniforge health                      exit 0 when the server is SERVING
//
// `chat` talks to the orchestrator (--chat-server, OMNIFORGE_ADDR) with an API
// key (--api-key, OMNIFORGE_API_KEY) and shows every step of each turn as it
// streams: the agent's state, what was understood, tool calls and results,
// previews waiting for approval, plans, the answer as it is written. With
// MESSAGE it runs one turn; without, it is a session: one turn per line of
// standard input in the same conversation (a prompt on a terminal; /quit or
// end of input ends it). Colour and a spinner only when stdout is a terminal
// and NO_COLOR is unset; with --json one JSON object per event and line.
//
// `actions` lists the approval decisions of one of the caller's
// conversations, newest first (who decided, when, how, on which action and
// digest), from the orchestrator with the same address and API key as chat.
//
// A failed call prints "error: <gRPC code>: <message>" to stderr and exits 1.
//
// `tools` calls the executor service (--executor-server): `invoke` prints the
// tool's result as indented JSON and exits 1 when the tool reported an error.
//
// `intent analyze` sends TEXT to the intent service (--intent-server) with
// the agents given and, with --conversation, the conversation's context
// window as history, and prints the analysis.
//
// Identity: --tenant/--user or OMNIFORGE_TENANT/OMNIFORGE_USER, asserted with
// --identity-key (a signing key the services trust) where they verify
// callers. `identity-key FILE` prints a signing key's public key. --json prints
// the response messages as JSON, one per line, for scripts.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/actions.h"
#include "cli/chat.h"
#include "cli/keys.h"
#include "cli/rpc_error.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "libs/core/client_tls.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/version.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "omniforge/intent/v1/intent_service.grpc.pb.h"

namespace {

using omniforge::cli::ReportRpcError;
namespace pb = omniforge::conversation::v1;
namespace ipb = omniforge::intent::v1;
namespace epb = omniforge::executor::v1;

struct Options {
  std::string server = "127.0.0.1:50051";
  std::string intent_server = "127.0.0.1:50052";
  std::string executor_server = "127.0.0.1:50053";
  std::string tenant = "demo";
  std::string user = "demo-user";
  // A signing key the services trust, for the caller assertions of direct
  // calls to them (services with identity.trusted_keys refuse calls
  // without one).
  std::string identity_key_file;
  std::string identity_key_id = "k1";
  bool json = false;
  int timeout_s = 10;
  // --tls, --tls-ca, --tls-cert, --tls-key, --tls-server-name; `security`
  // is made from them once the command line is read.
  omniforge::core::ClientTlsOptions tls;
  omniforge::core::ChannelSecurity security;
};

// A channel to `address` as the command line asks (plaintext by default).
std::shared_ptr<grpc::Channel> Connect(const Options& options, const std::string& address) {
  grpc::ChannelArguments args;
  return omniforge::core::CreateServiceChannel(address, options.security, args);
}

const std::map<std::string, pb::Role> kRoles = {
    {"user", pb::ROLE_USER}, {"assistant", pb::ROLE_ASSISTANT}, {"system", pb::ROLE_SYSTEM},
    {"tool", pb::ROLE_TOOL}, {"planner", pb::ROLE_PLANNER},     {"executor", pb::ROLE_EXECUTOR}};

std::string RoleName(pb::Role role) {
  for (const auto& [name, value] : kRoles) {
    if (value == role) return name;
  }
  return "unknown";
}

class Client {
 public:
  explicit Client(const Options& options)
      : options_(options),
        stub_(pb::ConversationService::NewStub(Connect(options, options.server))) {}

  // A call to `audience`, the service --server names.
  std::unique_ptr<grpc::ClientContext> Context(
      std::string_view audience = omniforge::core::kConversationAudience) const {
    auto context = std::make_unique<grpc::ClientContext>();
    omniforge::core::AttachIdentity(*context, {options_.tenant, options_.user}, audience);
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(options_.timeout_s));
    return context;
  }

  pb::ConversationService::Stub& stub() { return *stub_; }

 private:
  const Options& options_;
  std::unique_ptr<pb::ConversationService::Stub> stub_;
};

void PrintJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, print);
  std::cout << json << "\n";
}

void PrintConversation(const pb::Conversation& c) {
  std::cout << c.id() << "  " << (c.title().empty() ? "(untitled)" : c.title()) << "  "
            << c.message_count() << " messages, active "
            << google::protobuf::util::TimeUtil::ToString(c.update_time()) << "\n";
}

void PrintMessage(const pb::Message& m) {
  std::cout << "#" << m.seq() << " " << RoleName(m.role()) << ": " << m.content() << "\n";
}

std::string EnumSuffix(const std::string& name, const std::string& prefix) {
  return name.starts_with(prefix) ? name.substr(prefix.size()) : name;
}

void PrintAnalysis(const ipb::IntentAnalysis& a) {
  std::cout << EnumSuffix(ipb::ActionType_Name(a.action_type()), "ACTION_TYPE_") << "  confidence "
            << a.confidence() << "  via "
            << EnumSuffix(ipb::IntentSource_Name(a.source()), "INTENT_SOURCE_") << "  "
            << a.latency_ms() << " ms";
  if (a.cost_usd() > 0) std::cout << "  $" << a.cost_usd();
  std::cout << "\n";
  for (const auto& [key, value] :
       std::map<std::string, std::string>(a.entities().begin(), a.entities().end())) {
    std::cout << "  " << key << ": " << value << "\n";
  }
  for (const ipb::RequestPart& part : a.parts()) {
    std::cout << "  part: " << part.text()
              << (part.agent_name().empty() ? "" : " (" + part.agent_name() + ")") << "\n";
  }
  if (a.reference() != ipb::REFERENCE_KIND_UNSPECIFIED) {
    std::cout << "  refers to the conversation: "
              << EnumSuffix(ipb::ReferenceKind_Name(a.reference()), "REFERENCE_KIND_") << "\n";
  }
  std::cout << "  " << a.reasoning() << "\n";
  if (a.is_ambiguous()) std::cout << "  ambiguous; would ask: " << a.clarifying_question() << "\n";
}

const std::map<std::string, epb::ToolRisk> kRisks = {
    {"read", epb::TOOL_RISK_READ}, {"write", epb::TOOL_RISK_WRITE}, {"high", epb::TOOL_RISK_HIGH}};

void PrintTool(const epb::ToolDescriptor& tool) {
  std::cout << tool.name() << "  " << EnumSuffix(epb::ToolRisk_Name(tool.risk()), "TOOL_RISK_")
            << "  " << tool.source() << "\n  " << tool.description() << "\n";
}

// The result indented when it is JSON, as received otherwise.
std::string Indented(const std::string& json) {
  const auto parsed = nlohmann::json::parse(json, nullptr, false);
  return parsed.is_discarded() ? json : parsed.dump(2);
}

// What the conversation, intent and tools subcommands read from the command
// line; only one subcommand runs, so they share the fields they have in common.
struct Arguments {
  std::string id, title, role = "user", text, page_token, idempotency_key;
  int page_size = 20, limit = 50, budget = 0, recent = 0;
  std::vector<std::string> agents;
  std::string conversation_id;
  std::string max_risk, tool_name, arguments = "{}";
};

// The subcommands, to tell after parsing which one the command line named.
struct Commands {
  CLI::App* health = nullptr;
  CLI::App* chat = nullptr;
  CLI::App* actions = nullptr;
  CLI::App* create = nullptr;
  CLI::App* list = nullptr;
  CLI::App* show = nullptr;
  CLI::App* append = nullptr;
  CLI::App* window = nullptr;
  CLI::App* remove = nullptr;
  CLI::App* analyze = nullptr;
  CLI::App* tools_list = nullptr;
  CLI::App* tools_invoke = nullptr;
  CLI::App* identity_key = nullptr;
  CLI::App* assert_identity = nullptr;
};

void AddGlobalOptions(CLI::App& app, Options& options) {
  app.add_option("--server", options.server, "conversation service address")
      ->envname("OMNIFORGE_CONVERSATION_ADDR");
  app.add_option("--intent-server", options.intent_server, "intent service address")
      ->envname("OMNIFORGE_INTENT_ADDR");
  app.add_option("--executor-server", options.executor_server, "executor service address")
      ->envname("OMNIFORGE_EXECUTOR_ADDR");
  app.add_option("--tenant", options.tenant, "tenant id")->envname("OMNIFORGE_TENANT");
  app.add_option("--user", options.user, "user id")->envname("OMNIFORGE_USER");
  app.add_option("--identity-key", options.identity_key_file,
                 "signing key file for caller assertions (64 hex digits; a key the services "
                 "trust)")
      ->envname("OMNIFORGE_IDENTITY_KEY_FILE");
  app.add_option("--identity-key-id", options.identity_key_id, "that key's id (default k1)")
      ->envname("OMNIFORGE_IDENTITY_KEY_ID");
  app.add_option("--timeout", options.timeout_s, "seconds per call");
  app.add_flag("--json", options.json, "print responses as JSON");
  app.add_flag("--tls", options.tls.system_roots,
               "TLS, the server verified against the system's certificate authorities");
  app.add_option("--tls-ca", options.tls.ca_file,
                 "TLS, the server verified against this CA certificate (PEM)")
      ->envname("OMNIFORGE_TLS_CA_FILE");
  app.add_option("--tls-cert", options.tls.cert_file,
                 "client certificate (PEM), for a server that requires one (mutual TLS)")
      ->envname("OMNIFORGE_TLS_CERT_FILE");
  app.add_option("--tls-key", options.tls.key_file, "the client certificate's key (PEM)")
      ->envname("OMNIFORGE_TLS_KEY_FILE");
  app.add_option("--tls-server-name", options.tls.server_name,
                 "the name the server's certificate must have (default: the address's host)");
  app.require_subcommand(1);
}

CLI::App* AddChatCommand(CLI::App& app, omniforge::cli::ChatOptions& chat_options) {
  auto* chat = app.add_subcommand("chat", "chat with omniforge (the orchestrator)");
  chat->add_option("message", chat_options.message,
                   "one message; without it, one message per line of standard input");
  chat->add_option("--conversation", chat_options.conversation_id, "continue this conversation");
  chat->add_option("--context", chat_options.context,
                   "global, project, project_create, task or project_audit");
  chat->add_option("--entity", chat_options.entity_id,
                   "the project or task the message is about (its id)");
  chat->add_option("--approve", chat_options.approve,
                   "approve exactly the pending action or plan with this id (its preview's "
                   "action id); needs --conversation");
  chat->add_option("--reject", chat_options.reject,
                   "drop the pending action or plan with this id; needs --conversation");
  chat->add_option("--api-key", chat_options.api_key, "API key")->envname("OMNIFORGE_API_KEY");
  chat->add_option("--chat-server", chat_options.server, "orchestrator address")
      ->envname("OMNIFORGE_ADDR");
  return chat;
}

CLI::App* AddActionsCommand(CLI::App& app, omniforge::cli::ActionsOptions& actions_options) {
  auto* actions = app.add_subcommand(
      "actions", "the approval decisions of a conversation, newest first (orchestrator)");
  actions->add_option("conversation", actions_options.conversation_id, "conversation id")
      ->required();
  actions->add_option("--limit", actions_options.limit,
                      "decisions to show, 1 to 500 (default 100)");
  actions->add_option("--api-key", actions_options.api_key, "API key")
      ->envname("OMNIFORGE_API_KEY");
  actions->add_option("--chat-server", actions_options.server, "orchestrator address")
      ->envname("OMNIFORGE_ADDR");
  return actions;
}

// `keys create|list|rotate|revoke`; sets `which` to the subcommands.
struct KeysCommands {
  CLI::App* create = nullptr;
  CLI::App* list = nullptr;
  CLI::App* rotate = nullptr;
  CLI::App* revoke = nullptr;
};

KeysCommands AddKeysCommands(CLI::App& app, omniforge::cli::KeysOptions& o) {
  auto* keys = app.add_subcommand(
      "keys", "API keys managed at runtime (the orchestrator's admin API, with an admin key)");
  keys->require_subcommand(1);
  keys->add_option("--admin-key", o.admin_key, "admin key")->envname("OMNIFORGE_ADMIN_KEY");
  keys->add_option("--admin-server", o.server, "the orchestrator's admin address (admin.port)")
      ->envname("OMNIFORGE_ADMIN_ADDR");
  KeysCommands c;
  c.create = keys->add_subcommand("create", "make a key and print it (shown once)");
  c.create->add_option("--tenant", o.tenant, "the tenant it acts for")->required();
  c.create->add_option("--user", o.user, "the user a user key acts for");
  c.create->add_flag("--gateway", o.gateway,
                     "a gateway key: names the user of each call in x-omniforge-on-behalf-of");
  c.create->add_option("--label", o.label, "a note, at most 200 characters");
  c.create->add_option("--expires", o.expires, "when it stops working: RFC 3339 or a date");
  c.list = keys->add_subcommand("list", "a tenant's keys (never their secrets)");
  c.list->add_option("--tenant", o.tenant, "the tenant")->required();
  c.list->add_flag("--all", o.include_revoked, "revoked keys too");
  c.rotate = keys->add_subcommand("rotate", "give a key a new secret and print it");
  c.rotate->add_option("key_id", o.key_id, "the key's id")->required();
  c.rotate->add_option("--tenant", o.tenant, "the key's tenant")->required();
  c.rotate->add_option("--grace", o.grace_s, "seconds the old secret keeps working (default 0)");
  c.revoke = keys->add_subcommand("revoke", "revoke a key (refused everywhere within a second)");
  c.revoke->add_option("key_id", o.key_id, "the key's id")->required();
  c.revoke->add_option("--tenant", o.tenant, "the key's tenant")->required();
  return c;
}

int RunKeysCommand(const KeysCommands& c, const omniforge::cli::KeysOptions& o) {
  if (c.create->parsed()) return omniforge::cli::RunKeysCreate(o);
  if (c.list->parsed()) return omniforge::cli::RunKeysList(o);
  if (c.rotate->parsed()) return omniforge::cli::RunKeysRotate(o);
  return omniforge::cli::RunKeysRevoke(o);
}

void AddConversationCommands(CLI::App& app, Arguments& args, Commands& commands) {
  auto* conversations = app.add_subcommand("conversations", "conversation memory");
  conversations->require_subcommand(1);
  auto* create = conversations->add_subcommand("create", "start a conversation");
  create->add_option("--title", args.title, "title");
  auto* list = conversations->add_subcommand("list", "list conversations, most recent first");
  list->add_option("--page-size", args.page_size, "conversations per page");
  list->add_option("--page-token", args.page_token, "token from a previous page");
  auto* show = conversations->add_subcommand("show", "show a conversation and its messages");
  show->add_option("id", args.id, "conversation id")->required();
  show->add_option("--limit", args.limit, "newest messages to show");
  auto* append = conversations->add_subcommand("append", "append a message");
  append->add_option("id", args.id, "conversation id")->required();
  append->add_option("text", args.text, "message text")->required();
  append->add_option("--role", args.role, "user, assistant, system, tool, planner or executor");
  append->add_option("--idempotency-key", args.idempotency_key, "retry key");
  auto* window = conversations->add_subcommand("window", "show the context window");
  window->add_option("id", args.id, "conversation id")->required();
  window->add_option("--budget", args.budget, "token budget (default 2000)");
  window->add_option("--recent", args.recent, "recent exchanges always kept (default 3)");
  auto* remove = conversations->add_subcommand("delete", "delete a conversation");
  remove->add_option("id", args.id, "conversation id")->required();
  commands.create = create;
  commands.list = list;
  commands.show = show;
  commands.append = append;
  commands.window = window;
  commands.remove = remove;
}

CLI::App* AddIntentCommands(CLI::App& app, Arguments& args) {
  auto* intent = app.add_subcommand("intent", "intent analysis");
  intent->require_subcommand(1);
  auto* analyze = intent->add_subcommand("analyze", "what does a message want?");
  analyze->add_option("text", args.text, "the user's message")->required();
  analyze->add_option("--agent", args.agents, "an agent the user has: NAME or NAME=DESCRIPTION");
  analyze->add_option("--conversation", args.conversation_id,
                      "read the history from this conversation's context window");
  return analyze;
}

void AddToolCommands(CLI::App& app, Arguments& args, Commands& commands) {
  auto* tools = app.add_subcommand("tools", "the executor's tools");
  tools->require_subcommand(1);
  auto* tools_list = tools->add_subcommand("list", "list the tools");
  tools_list->add_option("--max-risk", args.max_risk,
                         "only tools up to this risk: read, write, high");
  auto* tools_invoke = tools->add_subcommand("invoke", "run a tool");
  tools_invoke->add_option("name", args.tool_name, "tool name")->required();
  tools_invoke->add_option("arguments", args.arguments, "arguments as a JSON object (default {})");
  tools_invoke->add_option("--idempotency-key", args.idempotency_key, "retry key");
  commands.tools_list = tools_list;
  commands.tools_invoke = tools_invoke;
}

int CheckHealth(const Options& options, const Client& client) {
  auto stub = grpc::health::v1::Health::NewStub(Connect(options, options.server));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  auto context = client.Context();
  if (int rc = ReportRpcError(stub->Check(context.get(), request, &response))) return rc;
  const bool serving = response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
  std::cout << (serving ? "SERVING" : "NOT_SERVING") << "\n";
  return serving ? 0 : 1;
}

int CreateConversation(const Options& options, Client& client, const Arguments& args) {
  pb::CreateConversationRequest request;
  request.set_title(args.title);
  pb::CreateConversationResponse response;
  if (int rc = ReportRpcError(
          client.stub().CreateConversation(client.Context().get(), request, &response)))
    return rc;
  if (options.json)
    PrintJson(response);
  else
    std::cout << response.conversation().id() << "\n";
  return 0;
}

int ListConversations(const Options& options, Client& client, const Arguments& args) {
  pb::ListConversationsRequest request;
  request.set_page_size(args.page_size);
  request.set_page_token(args.page_token);
  pb::ListConversationsResponse response;
  if (int rc = ReportRpcError(
          client.stub().ListConversations(client.Context().get(), request, &response)))
    return rc;
  if (options.json) {
    PrintJson(response);
  } else {
    for (const auto& c : response.conversations()) PrintConversation(c);
    if (!response.next_page_token().empty()) {
      std::cout << "more: --page-token " << response.next_page_token() << "\n";
    }
  }
  return 0;
}

int ShowConversation(const Options& options, Client& client, const Arguments& args) {
  pb::GetConversationRequest get;
  get.set_conversation_id(args.id);
  pb::GetConversationResponse conversation;
  if (int rc =
          ReportRpcError(client.stub().GetConversation(client.Context().get(), get, &conversation)))
    return rc;
  pb::ListMessagesRequest request;
  request.set_conversation_id(args.id);
  request.set_limit(args.limit);
  pb::ListMessagesResponse messages;
  if (int rc =
          ReportRpcError(client.stub().ListMessages(client.Context().get(), request, &messages)))
    return rc;
  if (options.json) {
    PrintJson(conversation);
    PrintJson(messages);
  } else {
    PrintConversation(conversation.conversation());
    for (const auto& m : messages.messages()) PrintMessage(m);
  }
  return 0;
}

int AppendMessage(const Options& options, Client& client, const Arguments& args) {
  auto found = kRoles.find(args.role);
  if (found == kRoles.end()) {
    std::cerr << "error: unknown role '" << args.role << "'\n";
    return 2;
  }
  pb::AppendMessageRequest request;
  request.set_conversation_id(args.id);
  request.set_role(found->second);
  request.set_content(args.text);
  request.set_idempotency_key(args.idempotency_key);
  pb::AppendMessageResponse response;
  if (int rc =
          ReportRpcError(client.stub().AppendMessage(client.Context().get(), request, &response)))
    return rc;
  if (options.json) {
    PrintJson(response);
  } else {
    PrintMessage(response.message());
    if (response.deduplicated()) std::cout << "(already stored under this idempotency key)\n";
  }
  return 0;
}

int ShowContextWindow(const Options& options, Client& client, const Arguments& args) {
  pb::GetContextWindowRequest request;
  request.set_conversation_id(args.id);
  request.set_token_budget(args.budget);
  request.set_min_recent_exchanges(args.recent);
  pb::GetContextWindowResponse response;
  if (int rc = ReportRpcError(
          client.stub().GetContextWindow(client.Context().get(), request, &response)))
    return rc;
  if (options.json) {
    PrintJson(response);
  } else {
    for (const auto& m : response.messages()) PrintMessage(m);
    std::cout << response.messages_size() << " messages, " << response.total_tokens() << " tokens ("
              << response.token_estimator() << ")"
              << (response.truncated() ? ", older messages left out" : "") << "\n";
  }
  return 0;
}

int DeleteConversation(const Options& options, Client& client, const Arguments& args) {
  pb::DeleteConversationRequest request;
  request.set_conversation_id(args.id);
  pb::DeleteConversationResponse response;
  if (int rc = ReportRpcError(
          client.stub().DeleteConversation(client.Context().get(), request, &response)))
    return rc;
  if (!options.json) std::cout << "deleted " << args.id << "\n";
  return 0;
}

// Adds the user and assistant messages of the conversation's context window to
// the request as its history.
int AddHistory(Client& client, const std::string& conversation_id,
               ipb::AnalyzeIntentRequest& request) {
  pb::GetContextWindowRequest window_request;
  window_request.set_conversation_id(conversation_id);
  pb::GetContextWindowResponse window_response;
  if (int rc = ReportRpcError(
          client.stub().GetContextWindow(client.Context().get(), window_request, &window_response)))
    return rc;
  for (const auto& m : window_response.messages()) {
    if (m.role() != pb::ROLE_USER && m.role() != pb::ROLE_ASSISTANT) continue;
    auto* turn = request.add_history();
    turn->set_role(m.role() == pb::ROLE_USER ? ipb::TURN_ROLE_USER : ipb::TURN_ROLE_ASSISTANT);
    turn->set_content(m.content());
  }
  return 0;
}

int AnalyzeIntent(const Options& options, Client& client, const Arguments& args) {
  ipb::AnalyzeIntentRequest request;
  request.set_message(args.text);
  for (const std::string& agent : args.agents) {
    auto* item = request.add_available_agents();
    const size_t eq = agent.find('=');
    item->set_name(agent.substr(0, eq));
    if (eq != std::string::npos) item->set_description(agent.substr(eq + 1));
  }
  if (!args.conversation_id.empty()) {
    if (int rc = AddHistory(client, args.conversation_id, request)) return rc;
  }
  auto stub = ipb::IntentService::NewStub(Connect(options, options.intent_server));
  ipb::AnalyzeIntentResponse response;
  if (int rc = ReportRpcError(stub->AnalyzeIntent(
          client.Context(omniforge::core::kIntentAudience).get(), request, &response)))
    return rc;
  if (options.json) {
    PrintJson(response);
  } else {
    PrintAnalysis(response.analysis());
  }
  return 0;
}

int ListTools(const Options& options, const Client& client, epb::ExecutorService::Stub& stub,
              const Arguments& args) {
  epb::ListToolsRequest request;
  if (!args.max_risk.empty()) {
    auto found = kRisks.find(args.max_risk);
    if (found == kRisks.end()) {
      std::cerr << "error: --max-risk must be read, write or high\n";
      return 2;
    }
    request.set_max_risk(found->second);
  }
  epb::ListToolsResponse response;
  if (int rc = ReportRpcError(stub.ListTools(
          client.Context(omniforge::core::kExecutorAudience).get(), request, &response)))
    return rc;
  if (options.json) {
    PrintJson(response);
  } else {
    for (const auto& tool : response.tools()) PrintTool(tool);
  }
  return 0;
}

// Exits 1 when the tool reported an error.
int InvokeTool(const Options& options, const Client& client, epb::ExecutorService::Stub& stub,
               const Arguments& args) {
  epb::InvokeToolRequest request;
  request.set_tool_name(args.tool_name);
  request.set_arguments_json(args.arguments);
  request.set_idempotency_key(args.idempotency_key);
  epb::InvokeToolResponse response;
  if (int rc = ReportRpcError(stub.InvokeTool(
          client.Context(omniforge::core::kExecutorAudience).get(), request, &response)))
    return rc;
  if (options.json) {
    PrintJson(response);
  } else {
    std::cout << Indented(response.result_json()) << "\n";
    std::cerr << EnumSuffix(epb::ToolRisk_Name(response.risk()), "TOOL_RISK_") << " tool, "
              << google::protobuf::util::TimeUtil::ToString(response.duration())
              << (response.is_error() ? ", the tool reported an error" : "")
              << (response.deduplicated() ? ", recorded result of an earlier call" : "")
              << (response.truncated() ? ", result cut at the size limit" : "") << "\n";
  }
  return response.is_error() ? 1 : 0;
}

// Runs the subcommand the command line named, other than chat and actions.
// With --identity-key, this process's calls carry caller assertions signed
// with it. 0, or 2 after saying why the key cannot be used.
int SignCallsWith(const Options& options) {
  if (options.identity_key_file.empty()) return 0;
  auto key = omniforge::core::ReadSigningKeyFile(options.identity_key_file);
  if (!key.ok() || !omniforge::core::IsValidKeyId(options.identity_key_id)) {
    std::cerr << "omniforge: --identity-key: "
              << (key.ok() ? "the key id is not 1..32 characters of [A-Za-z0-9_-]"
                           : std::string(key.status().message()))
              << "\n";
    return 2;
  }
  omniforge::core::SetCallerSigner(std::make_unique<omniforge::core::AssertionSigner>(
      "cli", options.identity_key_id, *std::move(key), omniforge::core::SystemClock()));
  return 0;
}

// `omniforge identity-key FILE`: the public key of a signing key, for the
// services' identity.trusted_keys.
int PrintIdentityPublicKey(const std::string& path) {
  auto key = omniforge::core::ReadSigningKeyFile(path);
  if (!key.ok()) {
    std::cerr << "omniforge: " << key.status().message() << "\n";
    return 2;
  }
  std::cout << omniforge::core::PublicKeyHex(**key) << "\n";
  return 0;
}

// `omniforge --identity-key FILE assert AUDIENCE`: the x-omniforge-assertion
// value other clients (buf curl, grpcurl) send.
int PrintAssertion(const Options& options, const std::string& audience) {
  if (options.identity_key_file.empty()) {
    std::cerr << "omniforge: assert needs --identity-key\n";
    return 2;
  }
  std::cout << omniforge::core::CallerAssertion({options.tenant, options.user}, audience) << "\n";
  return 0;
}

int RunCommand(const Commands& commands, const Options& options, const Arguments& args) {
  Client client(options);
  if (commands.health->parsed()) return CheckHealth(options, client);
  if (commands.create->parsed()) return CreateConversation(options, client, args);
  if (commands.list->parsed()) return ListConversations(options, client, args);
  if (commands.show->parsed()) return ShowConversation(options, client, args);
  if (commands.append->parsed()) return AppendMessage(options, client, args);
  if (commands.window->parsed()) return ShowContextWindow(options, client, args);
  if (commands.analyze->parsed()) return AnalyzeIntent(options, client, args);
  if (commands.tools_list->parsed() || commands.tools_invoke->parsed()) {
    auto stub = epb::ExecutorService::NewStub(Connect(options, options.executor_server));
    if (commands.tools_list->parsed()) return ListTools(options, client, *stub, args);
    return InvokeTool(options, client, *stub, args);
  }
  if (commands.remove->parsed()) return DeleteConversation(options, client, args);
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"omniforge command-line client"};
  app.set_version_flag("--version", std::string("omniforge ") + omniforge::core::Version());
  Options options;
  AddGlobalOptions(app, options);
  Commands commands;
  commands.health = app.add_subcommand("health", "check that the server is serving");
  omniforge::cli::ChatOptions chat_options;
  commands.chat = AddChatCommand(app, chat_options);
  omniforge::cli::ActionsOptions actions_options;
  commands.actions = AddActionsCommand(app, actions_options);
  omniforge::cli::KeysOptions keys_options;
  const KeysCommands keys = AddKeysCommands(app, keys_options);
  Arguments args;
  AddConversationCommands(app, args, commands);
  commands.analyze = AddIntentCommands(app, args);
  AddToolCommands(app, args, commands);
  std::string identity_key_file;
  commands.identity_key =
      app.add_subcommand("identity-key",
                         "print the public key of a caller-assertion signing key (for the "
                         "services' identity.trusted_keys)");
  commands.identity_key->add_option("file", identity_key_file, "the signing key file")->required();
  std::string audience;
  commands.assert_identity =
      app.add_subcommand("assert",
                         "print a caller assertion for --tenant/--user to AUDIENCE (conversation, "
                         "intent or executor), signed with --identity-key, for other gRPC clients' "
                         "x-omniforge-assertion");
  commands.assert_identity->add_option("audience", audience, "the service it is for")
      ->required()
      ->check(CLI::IsMember({"conversation", "intent", "executor"}));
  CLI11_PARSE(app, argc, argv);
  auto security = omniforge::core::MakeChannelSecurity(options.tls);
  if (!security.ok()) {
    std::cerr << "omniforge: " << security.status().message() << "\n";
    return 2;
  }
  options.security = *security;
  chat_options.security = *security;
  actions_options.security = *security;
  keys_options.security = *security;

  if (commands.chat->parsed()) {
    chat_options.json = options.json;
    return omniforge::cli::RunChat(chat_options);
  }
  if (commands.actions->parsed()) {
    actions_options.json = options.json;
    actions_options.timeout_s = options.timeout_s;
    return omniforge::cli::RunActions(actions_options);
  }
  if (keys.create->parsed() || keys.list->parsed() || keys.rotate->parsed() ||
      keys.revoke->parsed()) {
    keys_options.json = options.json;
    keys_options.timeout_s = options.timeout_s;
    return RunKeysCommand(keys, keys_options);
  }
  if (commands.identity_key->parsed()) return PrintIdentityPublicKey(identity_key_file);
  if (int rc = SignCallsWith(options)) return rc;
  if (commands.assert_identity->parsed()) return PrintAssertion(options, audience);
  return RunCommand(commands, options, args);
}

}  // namespace

// What the client cannot handle (out of memory, a library's exception) ends
// it with a message and status 1 instead of an abort.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "omniforge: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "omniforge: unexpected error\n";
  }
  return 1;
}
