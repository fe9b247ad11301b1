// The metrics an operator's dashboards read, scraped from the four real
// service binaries after turns that run a plan: the conventional gRPC server
// and client series of each hop, the time to a turn's first event and first
// token, the process metrics and the build info of every service; and every
// metric the Kubernetes monitoring component's dashboard and alert rules
// query is one the services serve.
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "tests/support/chat_turn.h"
#include "tests/support/metrics_text.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;

using Turn = testing::ChatTurn;
using testing::Sample;

std::string Unary(const std::string& service, const std::string& method) {
  return absl::StrCat(R"(grpc_method=")", method, R"(",grpc_service=")", service,
                      R"(",grpc_type="unary")");
}

std::string ReadSource(const std::string& relative) {
  std::ifstream in(absl::StrCat(OMNIFORGE_SOURCE_DIR, "/", relative));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class MetricsEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("omniforge-metrics-" + core::NewUuid());
    std::filesystem::create_directories(dir_);
    keys_ = testing::WriteApiKeyFile(dir_ / "api_keys", {{"acme", "watcher"}}, "metrics e2e");
    ASSERT_EQ(keys_.size(), 1u);
    testing::ServiceStack::ExtraEnv extra;
    // Plans are kept in the orchestrator's database.
    extra.orchestrator = testing::DatabaseEnv(db_, "orchestrator");
    ASSERT_EQ(stack_.Start(db_, (dir_ / "api_keys").string(), extra), std::nullopt);
    stub_ = pb::ChatService::NewStub(
        grpc::CreateChannel(stack_.orchestrator().address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Turn Send(const pb::StreamChatRequest& request) {
    return testing::StreamTurn(*stub_, request, keys_[0]);
  }

  // A plan drafted, then approved and run: the orchestrator calls the
  // intent, conversation and executor services. Returns the events of both.
  std::vector<pb::ChatEvent> RunAPlan() {
    pb::StreamChatRequest draft_request;
    draft_request.set_message("Set up a project for the spring campaign launch");
    draft_request.set_context_type(pb::CONTEXT_TYPE_PROJECT_CREATE);
    const Turn draft = Send(draft_request);
    EXPECT_TRUE(draft.status.ok()) << draft.status.error_message();
    if (draft.events.empty()) return {};
    pb::StreamChatRequest run_request;
    run_request.set_message("looks good, run it");
    run_request.set_conversation_id(draft.events.front().session().conversation_id());
    const Turn run = Send(run_request);
    EXPECT_TRUE(run.status.ok()) << run.status.error_message();
    std::vector<pb::ChatEvent> events = draft.events;
    events.insert(events.end(), run.events.begin(), run.events.end());
    return events;
  }

  static std::string Scrape(const testing::ServerProcess& service) {
    httplib::Client http("127.0.0.1", service.metrics_port());
    http.set_read_timeout(5);
    auto result = http.Get("/metrics");
    EXPECT_TRUE(result && result->status == 200);
    return result ? result->body : "";
  }

  testing::TestDatabase db_;
  std::filesystem::path dir_;
  std::vector<std::string> keys_;
  testing::ServiceStack stack_{{OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN}};
  std::unique_ptr<pb::ChatService::Stub> stub_;
};

TEST_F(MetricsEndToEndTest, EachHopOfATurnIsCountedOnBothSides) {
  const std::vector<pb::ChatEvent> events = RunAPlan();
  ASSERT_FALSE(events.empty());
  const std::string orchestrator = Scrape(stack_.orchestrator());

  // The public call: two turns, every event a message sent.
  const std::string chat =
      R"(grpc_method="StreamChat",grpc_service="omniforge.orchestrator.v1.ChatService",)"
      R"(grpc_type="server_stream")";
  EXPECT_EQ(Sample(orchestrator, absl::StrCat("grpc_server_started_total{", chat, "}")), 2);
  EXPECT_EQ(
      Sample(orchestrator, absl::StrCat("grpc_server_handled_total{grpc_code=\"OK\",", chat, "}")),
      2);
  EXPECT_EQ(Sample(orchestrator, absl::StrCat("grpc_server_msg_sent_total{", chat, "}")),
            static_cast<double>(events.size()));
  EXPECT_EQ(Sample(orchestrator, absl::StrCat("grpc_server_handling_seconds_count{", chat, "}")),
            2);

  // The orchestrator's calls to the other services, and each service's own
  // count of the same calls.
  const std::string analyze = Unary("omniforge.intent.v1.IntentService", "AnalyzeIntent");
  const auto asked = Sample(
      orchestrator, absl::StrCat("grpc_client_handled_total{grpc_code=\"OK\",", analyze, "}"));
  ASSERT_TRUE(asked.has_value()) << orchestrator;
  EXPECT_GE(*asked, 1);
  EXPECT_EQ(Sample(Scrape(stack_.intent()),
                   absl::StrCat("grpc_server_handled_total{grpc_code=\"OK\",", analyze, "}")),
            asked);
  const std::string append =
      Unary("omniforge.conversation.v1.ConversationService", "AppendMessage");
  const auto appended = Sample(
      orchestrator, absl::StrCat("grpc_client_handled_total{grpc_code=\"OK\",", append, "}"));
  ASSERT_TRUE(appended.has_value()) << orchestrator;
  EXPECT_GE(*appended, 4) << "both turns' messages and answers";
  EXPECT_EQ(Sample(Scrape(stack_.conversation()),
                   absl::StrCat("grpc_server_handled_total{grpc_code=\"OK\",", append, "}")),
            appended);
  EXPECT_GE(
      Sample(orchestrator,
             R"(grpc_client_started_total{grpc_method="Converse",)"
             R"(grpc_service="omniforge.executor.v1.ExecutorService",grpc_type="bidi_stream"})")
          .value_or(0),
      1)
      << "the plan's steps talk to executor agents";

  // What the user waited for: the first event before the first token,
  // both before the turn's end.
  const auto first_event =
      Sample(orchestrator, "omniforge_orchestrator_time_to_first_event_seconds_count");
  const auto first_token =
      Sample(orchestrator, "omniforge_orchestrator_time_to_first_token_seconds_count");
  EXPECT_EQ(first_event, 2);
  ASSERT_TRUE(first_token.has_value());
  EXPECT_GE(*first_token, 1);
  const double event_sum =
      Sample(orchestrator, "omniforge_orchestrator_time_to_first_event_seconds_sum").value_or(-1);
  const double turn_sum =
      Sample(orchestrator, absl::StrCat("grpc_server_handling_seconds_sum{", chat, "}"))
          .value_or(-1);
  EXPECT_GT(event_sum, 0);
  EXPECT_LT(event_sum, turn_sum);
}

TEST_F(MetricsEndToEndTest, EveryServiceSaysItsBuildAndProcess) {
  const std::map<std::string, testing::ServerProcess*> services = {
      {"conversation", &stack_.conversation()},
      {"intent", &stack_.intent()},
      {"executor", &stack_.executor()},
      {"orchestrator", &stack_.orchestrator()}};
  const std::regex build_info(
      R"re(omniforge_build_info\{service="([a-z]+)",version="[^"]+"\} 1)re");
  for (const auto& [name, process] : services) {
    SCOPED_TRACE(name);
    const std::string text = Scrape(*process);
    std::smatch match;
    ASSERT_TRUE(std::regex_search(text, match, build_info)) << text.substr(0, 2000);
    EXPECT_EQ(match[1], name);
    EXPECT_GT(Sample(text, "process_resident_memory_bytes").value_or(0), 1 << 20);
    EXPECT_GE(Sample(text, "process_cpu_seconds_total").value_or(-1), 0);
    EXPECT_GE(Sample(text, "process_threads").value_or(0), 2);
    EXPECT_GE(Sample(text, "process_open_fds").value_or(0), 4);
  }
}

TEST_F(MetricsEndToEndTest, TheDashboardAndAlertsQueryOnlyServedMetrics) {
  RunAPlan();
  std::set<std::string> served;
  std::set<std::string> labels;  // a query names these too (grpc_method, ...)
  const std::regex type_line(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) )");
  const std::regex label(R"([{,]([a-zA-Z_][a-zA-Z0-9_]*)=")");
  for (testing::ServerProcess* process :
       {&stack_.conversation(), &stack_.intent(), &stack_.executor(), &stack_.orchestrator()}) {
    const std::string text = Scrape(*process);
    for (std::sregex_iterator it(text.begin(), text.end(), type_line), end; it != end; ++it) {
      served.insert((*it)[1]);
    }
    for (std::sregex_iterator it(text.begin(), text.end(), label), end; it != end; ++it) {
      labels.insert((*it)[1]);
    }
  }
  ASSERT_TRUE(labels.contains("grpc_method"));
  const std::regex metric(R"(\b((?:grpc|process|omniforge)_[a-z0-9_]+))");
  const std::regex histogram_part(R"(_(bucket|sum|count)$)");
  size_t queried = 0;
  for (const char* file : {"deploy/k8s/components/monitoring/dashboard.json",
                           "deploy/k8s/components/monitoring/prometheusrule.yaml"}) {
    const std::string text = ReadSource(file);
    ASSERT_FALSE(text.empty()) << file;
    for (std::sregex_iterator it(text.begin(), text.end(), metric), end; it != end; ++it) {
      const std::string name = (*it)[1];
      if (labels.contains(name)) continue;
      const std::string family = std::regex_replace(name, histogram_part, "");
      ++queried;
      EXPECT_TRUE(served.contains(name) || served.contains(family))
          << file << " queries " << name << ", which no service serves";
    }
  }
  EXPECT_GE(queried, 10u);
}

}  // namespace
}  // namespace omniforge::orchestrator
