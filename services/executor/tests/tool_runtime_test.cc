// Unit tests of the tool runtime: the catalog, argument validation, result
// caps, deadlines and idempotency, on a fake provider and an in-memory ledger.
#include "services/executor/src/tool_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>

#include "services/executor/src/platform_tools.h"
#include "services/executor/src/tool_catalog.h"

namespace omniforge::executor {
namespace {

using ::testing::HasSubstr;

constexpr char kEchoSchema[] = R"({"type": "object", "properties": {
    "text": {"type": "string"}, "times": {"type": "integer", "minimum": 1, "maximum": 5},
    "mode": {"type": "string", "enum": ["plain", "loud"]}},
  "required": ["text"], "additionalProperties": false})";

const core::Identity kAlice{"acme", "alice"};

// Echoes its arguments; counts calls; can be told to fail or to produce a
// large result.
class FakeProvider final : public ToolProvider {
 public:
  explicit FakeProvider(std::vector<ToolSpec> specs) : specs_(std::move(specs)) {}

  absl::StatusOr<std::vector<ToolSpec>> ListTools() override { return specs_; }
  // What the next ListTools returns, as a server whose tools changed.
  void Offer(std::vector<ToolSpec> specs) { specs_ = std::move(specs); }

  absl::StatusOr<ToolResult> Invoke(const ToolCall& call) override {
    ++calls;
    last_deadline = call.deadline;
    if (!fail_with.ok()) return fail_with;
    if (result_bytes > 0) return ToolResult{"\"" + std::string(result_bytes, 'x') + "\"", false};
    if (call.arguments.value("mode", "") == "loud") {
      return ToolResult::Error("too_loud", "cannot shout");
    }
    return ToolResult::Ok({{"echo", call.arguments}, {"user", call.who.user_id}});
  }

  std::atomic<int> calls = 0;
  absl::Status fail_with;
  size_t result_bytes = 0;
  std::chrono::system_clock::time_point last_deadline;

 private:
  std::vector<ToolSpec> specs_;
};

class MemoryLedger final : public InvocationLedger {
 public:
  absl::StatusOr<std::optional<RecordedResult>> Claim(
      const InvocationKey& key, std::chrono::system_clock::time_point) override {
    std::lock_guard lock(mu_);
    auto [it, fresh] = rows_.try_emplace(Id(key), Row{key.tool_name, key.arguments_hash});
    if (fresh) return std::nullopt;
    if (it->second.tool != key.tool_name || it->second.hash != key.arguments_hash) {
      return absl::FailedPreconditionError("idempotency_key: used for another call");
    }
    if (!it->second.result) return absl::AbortedError("still running");
    return it->second.result;
  }
  absl::Status Complete(const InvocationKey& key, const RecordedResult& result) override {
    std::lock_guard lock(mu_);
    rows_[Id(key)].result = result;
    return absl::OkStatus();
  }
  absl::Status Release(const InvocationKey& key) override {
    std::lock_guard lock(mu_);
    rows_.erase(Id(key));
    ++released;
    return absl::OkStatus();
  }
  int released = 0;

 private:
  struct Row {
    std::string tool, hash;
    std::optional<RecordedResult> result;
  };
  static std::string Id(const InvocationKey& k) {
    return k.who.tenant_id + "/" + k.who.user_id + "/" + k.idempotency_key;
  }
  std::mutex mu_;
  std::map<std::string, Row> rows_;
};

ToolSpec Echo(std::string name = "echo", ToolRisk risk = ToolRisk::kRead) {
  return {std::move(name), "Echoes its arguments.", kEchoSchema, risk, "fake"};
}

auto Later() { return std::chrono::system_clock::now() + std::chrono::seconds(10); }

class ToolRuntimeTest : public ::testing::Test {
 protected:
  ToolRuntimeTest() : provider_({Echo(), Echo("wipe", ToolRisk::kHigh)}) {
    EXPECT_TRUE(catalog_.AddProvider(provider_).ok());
  }
  absl::StatusOr<InvokeOutcome> Invoke(const std::string& tool, const std::string& args,
                                       const std::string& key = "") {
    return runtime_.Invoke(kAlice, {tool, args, key}, Later());
  }

  FakeProvider provider_;
  ToolCatalog catalog_;
  MemoryLedger ledger_;
  ToolRuntimeOptions options_{.max_argument_bytes = 1024, .max_result_bytes = 2048};
  ToolRuntime runtime_{catalog_, &ledger_, options_};
};

TEST(ToolCatalogTest, RejectsBadDescriptorsAndAddsNothing) {
  struct Case {
    ToolSpec spec;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {{"has space", "d", kEchoSchema, ToolRisk::kRead, "s"}, "[A-Za-z0-9_-]"},
      {{std::string(65, 'a'), "d", kEchoSchema, ToolRisk::kRead, "s"}, "1 to 64"},
      {{"ok", "", kEchoSchema, ToolRisk::kRead, "s"}, "description is empty"},
      {{"ok", "d", R"({"type": "string"})", ToolRisk::kRead, "s"}, "type \"object\""},
      {{"ok", "d", "not json", ToolRisk::kRead, "s"}, "type \"object\""},
  };
  for (const Case& c : cases) {
    FakeProvider provider({Echo("fine"), c.spec});
    ToolCatalog catalog;
    absl::Status status = catalog.AddProvider(provider);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << c.spec.name;
    EXPECT_THAT(status.message(), HasSubstr(c.problem));
    EXPECT_EQ(catalog.size(), 0u);
  }
}

TEST(ToolCatalogTest, NamesAreUniqueAcrossProviders) {
  FakeProvider first({Echo("echo")});
  FakeProvider second({Echo("other"), Echo("echo")});
  ToolCatalog catalog;
  ASSERT_TRUE(catalog.AddProvider(first).ok());
  absl::Status status = catalog.AddProvider(second);
  EXPECT_THAT(status.message(), HasSubstr("already taken"));
  EXPECT_EQ(catalog.size(), 1u);
  EXPECT_FALSE(catalog.Find("other").has_value());
}

TEST(ToolCatalogTest, AReloadReplacesOneProvidersToolsOrChangesNothing) {
  FakeProvider first({Echo("echo")});
  FakeProvider second({Echo("search"), Echo("send")});
  ToolCatalog catalog;
  ASSERT_TRUE(catalog.AddProvider(first).ok());
  ASSERT_TRUE(catalog.AddProvider(second).ok());
  second.Offer({Echo("search"), Echo("schedule")});
  ASSERT_TRUE(catalog.Reload(second).ok());
  EXPECT_TRUE(catalog.Find("schedule").has_value());
  EXPECT_FALSE(catalog.Find("send").has_value());
  EXPECT_TRUE(catalog.Find("echo").has_value());
  // A new list that takes another provider's name is refused whole.
  second.Offer({Echo("archive"), Echo("echo")});
  EXPECT_THAT(catalog.Reload(second).message(), HasSubstr("already taken"));
  EXPECT_FALSE(catalog.Find("archive").has_value());
  EXPECT_TRUE(catalog.Find("schedule").has_value());
  EXPECT_EQ(catalog.Find("echo")->provider, &first);
  EXPECT_EQ(catalog.size(), 3u);
}

TEST(ToolCatalogTest, ListsByRiskAndNameSorted) {
  FakeProvider provider({Echo("zeta", ToolRisk::kWrite), Echo("alpha", ToolRisk::kRead),
                         Echo("omega", ToolRisk::kHigh)});
  ToolCatalog catalog;
  ASSERT_TRUE(catalog.AddProvider(provider).ok());
  auto names = [](const std::vector<ToolSpec>& specs) {
    std::vector<std::string> out;
    out.reserve(specs.size());
    for (const auto& s : specs) out.push_back(s.name);
    return out;
  };
  EXPECT_THAT(names(catalog.List()), ::testing::ElementsAre("alpha", "omega", "zeta"));
  EXPECT_THAT(names(catalog.List(ToolRisk::kRead)), ::testing::ElementsAre("alpha"));
  EXPECT_THAT(names(catalog.List(ToolRisk::kWrite)), ::testing::ElementsAre("alpha", "zeta"));
  EXPECT_THAT(names(catalog.List(std::nullopt, {"omega", "nope"})),
              ::testing::ElementsAre("omega"));
}

TEST(PlatformToolSpecsTest, EveryBuiltinToolIsValidWithTheRightRisk) {
  FakeProvider provider(PlatformToolSpecs());
  ToolCatalog catalog;
  ASSERT_TRUE(catalog.AddProvider(provider).ok());
  EXPECT_EQ(catalog.size(), 23u);
  std::map<std::string, ToolRisk> risk;
  for (const auto& spec : catalog.List()) {
    risk[spec.name] = spec.risk;
    EXPECT_EQ(spec.source, "builtin");
  }
  EXPECT_EQ(risk["delete_agent"], ToolRisk::kHigh);
  for (const char* read :
       {"list_agents", "get_agent", "list_skills", "list_runs", "get_run", "search_projects",
        "get_project_details", "list_tasks", "list_project_templates", "get_settings"}) {
    EXPECT_EQ(risk[read], ToolRisk::kRead) << read;
  }
  for (const char* write :
       {"create_agent", "update_agent", "pause_agent", "resume_agent", "run_agent", "create_skill",
        "create_project", "update_task", "create_project_template", "create_context_document",
        "update_settings", "mark_notices_seen"}) {
    EXPECT_EQ(risk[write], ToolRisk::kWrite) << write;
  }
}

TEST_F(ToolRuntimeTest, RunsAValidCallAndReportsRiskAndDuration) {
  auto out = Invoke("wipe", R"({"text": "hi", "times": 2})");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(nlohmann::json::parse(out->result_json)["echo"]["times"], 2);
  EXPECT_FALSE(out->is_error);
  EXPECT_EQ(out->risk, ToolRisk::kHigh);
  EXPECT_GE(out->duration_us, 0);
  EXPECT_FALSE(out->deduplicated);
  EXPECT_EQ(provider_.calls, 1);
}

TEST_F(ToolRuntimeTest, EmptyArgumentsMeanAnEmptyObject) {
  auto out = Invoke("echo", "");
  EXPECT_TRUE(absl::IsInvalidArgument(out.status()));
  EXPECT_THAT(out.status().message(), HasSubstr("missing required property \"text\""));
}

TEST_F(ToolRuntimeTest, BadArgumentsNameTheFieldAndNeverReachTheTool) {
  struct Case {
    std::string args, expected;
  };
  const std::vector<Case> cases = {
      {R"({"text": 3})", "$.text: expected string, got integer"},
      {R"({"text": "a", "times": 9})", "$.times: 9 is more than the maximum 5"},
      {R"({"text": "a", "mode": "quiet"})", "$.mode: \"quiet\" is not one of"},
      {R"({"text": "a", "colour": "red"})", "$: unexpected property \"colour\""},
      {R"({})", "$: missing required property \"text\""},
      {R"(["text"])", "must be a JSON object"},
      {R"({"text": )", "are not valid JSON"},
      {std::string(2000, ' '), "more than the limit of 1024"},
  };
  for (const Case& c : cases) {
    auto out = Invoke("echo", c.args);
    EXPECT_TRUE(absl::IsInvalidArgument(out.status())) << c.args;
    EXPECT_THAT(out.status().message(), HasSubstr(c.expected)) << c.args;
  }
  EXPECT_EQ(provider_.calls, 0);
}

TEST_F(ToolRuntimeTest, UnknownToolIsNotFound) {
  auto out = Invoke("nope", "{}");
  EXPECT_TRUE(absl::IsNotFound(out.status()));
  EXPECT_THAT(out.status().message(), HasSubstr("nope"));
}

TEST_F(ToolRuntimeTest, ToolErrorsAreResultsForTheModel) {
  auto out = Invoke("echo", R"({"text": "a", "mode": "loud"})");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->is_error);
  EXPECT_EQ(nlohmann::json::parse(out->result_json)["error"]["code"], "too_loud");
}

TEST_F(ToolRuntimeTest, LargeResultsAreCutAndMarked) {
  provider_.result_bytes = 10000;
  auto out = Invoke("echo", R"({"text": "a"})");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->truncated);
  EXPECT_LE(out->result_json.size(), 2048u);
  const auto result = nlohmann::json::parse(out->result_json);
  EXPECT_EQ(result["truncated"], true);
  EXPECT_EQ(result["original_bytes"], 10002);
  EXPECT_TRUE(result["text"].get<std::string>().starts_with("\"xxx"));
}

TEST_F(ToolRuntimeTest, CallerDeadlineIsPassedDownAndAPassedOneRunsNothing) {
  const auto deadline = Later();
  ASSERT_TRUE(runtime_.Invoke(kAlice, {"echo", R"({"text": "a"})", ""}, deadline).ok());
  EXPECT_EQ(provider_.last_deadline, deadline);
  auto late = runtime_.Invoke(kAlice, {"echo", R"({"text": "a"})", "k"},
                              std::chrono::system_clock::now() - std::chrono::milliseconds(1));
  EXPECT_TRUE(absl::IsDeadlineExceeded(late.status()));
  EXPECT_EQ(provider_.calls, 1);
}

TEST_F(ToolRuntimeTest, RetryWithTheSameKeyReplaysTheResult) {
  auto first = Invoke("echo", R"({"text": "a", "times": 1})", "key-1");
  ASSERT_TRUE(first.ok());
  // Same arguments in another key order: the same call.
  auto again = Invoke("echo", R"({"times": 1, "text": "a"})", "key-1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->deduplicated);
  EXPECT_EQ(again->result_json, first->result_json);
  EXPECT_EQ(provider_.calls, 1);

  auto other_args = Invoke("echo", R"({"text": "b"})", "key-1");
  EXPECT_TRUE(absl::IsFailedPrecondition(other_args.status()));
  auto other_tool = Invoke("wipe", R"({"text": "a", "times": 1})", "key-1");
  EXPECT_TRUE(absl::IsFailedPrecondition(other_tool.status()));
  EXPECT_EQ(provider_.calls, 1);

  auto too_long = Invoke("echo", R"({"text": "a"})", std::string(129, 'k'));
  EXPECT_TRUE(absl::IsInvalidArgument(too_long.status()));
  EXPECT_THAT(too_long.status().message(), HasSubstr("idempotency_key"));
}

TEST_F(ToolRuntimeTest, AFailedCallReleasesItsKeySoARetryRuns) {
  provider_.fail_with = absl::UnavailableError("backend down");
  EXPECT_TRUE(absl::IsUnavailable(Invoke("echo", R"({"text": "a"})", "k").status()));
  EXPECT_EQ(ledger_.released, 1);
  provider_.fail_with = absl::OkStatus();
  auto retry = Invoke("echo", R"({"text": "a"})", "k");
  ASSERT_TRUE(retry.ok());
  EXPECT_FALSE(retry->deduplicated);
  EXPECT_EQ(provider_.calls, 2);
}

TEST_F(ToolRuntimeTest, ToolErrorsAreRecordedAndReplayedToo) {
  ASSERT_TRUE(Invoke("echo", R"({"text": "a", "mode": "loud"})", "k").ok());
  auto again = Invoke("echo", R"({"text": "a", "mode": "loud"})", "k");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->deduplicated);
  EXPECT_TRUE(again->is_error);
  EXPECT_EQ(provider_.calls, 1);
}

TEST(HashArgumentsTest, StableAndDistinct) {
  EXPECT_EQ(HashArguments("{\"a\":1}"), HashArguments("{\"a\":1}"));
  EXPECT_NE(HashArguments("{\"a\":1}"), HashArguments("{\"a\":2}"));
  EXPECT_EQ(HashArguments("{}").size(), 32u);
}

}  // namespace
}  // namespace omniforge::executor
