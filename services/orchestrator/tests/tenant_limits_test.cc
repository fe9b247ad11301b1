// Per-tenant limits on a clock the test moves: the token buckets of a key
// and a tenant, the caps on turns at once, the LLM spend budgets read from a
// ledger the test plays, and the configuration they are read from.
#include "services/orchestrator/limits/tenant_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "libs/core/config.h"
#include "libs/core/metrics.h"
#include "services/orchestrator/limits/spend_counter.h"
#include "services/orchestrator/testing/fakes.h"

namespace omniforge::orchestrator {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

const core::Identity kAlice{"acme", "alice"};
const core::Identity kBob{"acme", "bob"};
const core::Identity kOther{"globex", "carol"};

double RefusalCount(const std::string& tenant, const std::string& limit) {
  return core::MetricsRegistry::Global()
      .GetCounter("omniforge_orchestrator_limit_refusals_total", "",
                  {{"tenant", tenant}, {"limit", limit}})
      .Value();
}

// A ledger that answers what the test sets, counting its reads.
class ScriptedLedger final : public SpendLedger {
 public:
  absl::StatusOr<Spend> Read(const std::string& tenant, core::TimePoint now) override {
    ++reads;
    last_now = now;
    if (!answer.ok()) return answer.status();
    read_tenants.push_back(tenant);
    return answer;
  }
  absl::StatusOr<Spend> answer = Spend{};
  int reads = 0;
  core::TimePoint last_now;
  std::vector<std::string> read_tenants;
};

class TenantLimitsTest : public ::testing::Test {
 protected:
  testing::FakeClock clock_;
};

TEST_F(TenantLimitsTest, KeyBucketLetsItsBurstThroughThenRefusesWithTheWaitForOneToken) {
  LimitsConfig config;
  config.defaults.key_rate = 2;  // burst 4 by default
  TenantLimits limits(config, nullptr, clock_);
  const double refused_before = RefusalCount("acme", "key_rate");
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(limits.AdmitCall(kAlice, "key-a").ok()) << i;
  const absl::Status refused = limits.AdmitCall(kAlice, "key-a");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("rate limit of this API key"));
  EXPECT_THAT(refused.message(), HasSubstr("retry in 0.5 s"));
  EXPECT_EQ(core::RetryAfter(refused), milliseconds(500));
  EXPECT_EQ(RefusalCount("acme", "key_rate"), refused_before + 1);
  // Another key of the same tenant has a bucket of its own.
  EXPECT_TRUE(limits.AdmitCall(kAlice, "key-b").ok());
  clock_.Advance(milliseconds(500));
  EXPECT_TRUE(limits.AdmitCall(kAlice, "key-a").ok());
  EXPECT_FALSE(limits.AdmitCall(kAlice, "key-a").ok());
  // A long quiet spell refills the bucket to its size, no further.
  clock_.Advance(std::chrono::hours(1));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(limits.AdmitCall(kAlice, "key-a").ok()) << i;
  EXPECT_FALSE(limits.AdmitCall(kAlice, "key-a").ok());
}

TEST_F(TenantLimitsTest, TenantBucketSpansItsKeysAndARefusedCallTakesNoToken) {
  LimitsConfig config;
  config.defaults.key_rate = 100;
  config.defaults.key_burst = 3;
  config.defaults.tenant_rate = 1;
  config.defaults.tenant_burst = 4;
  TenantLimits limits(config, nullptr, clock_);
  EXPECT_TRUE(limits.AdmitCall(kAlice, "key-a").ok());
  EXPECT_TRUE(limits.AdmitCall(kBob, "key-b").ok());
  EXPECT_TRUE(limits.AdmitCall(kAlice, "key-a").ok());
  EXPECT_TRUE(limits.AdmitCall(kBob, "key-b").ok());
  const absl::Status refused = limits.AdmitCall(kAlice, "key-c");
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("rate limit of tenant acme"));
  EXPECT_EQ(core::RetryAfter(refused), milliseconds(1000));
  // Another tenant is not held back.
  EXPECT_TRUE(limits.AdmitCall(kOther, "key-d").ok());
  // key-a spent 2 of its 3 and key-c none: once the tenant has a token,
  // key-a takes it and then key-a's own last one is refused by the tenant.
  clock_.Advance(milliseconds(1000));
  EXPECT_TRUE(limits.AdmitCall(kAlice, "key-a").ok());
  EXPECT_FALSE(limits.AdmitCall(kAlice, "key-a").ok());
  clock_.Advance(milliseconds(1000));
  EXPECT_TRUE(limits.AdmitCall(kAlice, "key-c").ok());
}

TEST_F(TenantLimitsTest, CallersRefusedTogetherAreToldToComeBackOneAfterAnother) {
  LimitsConfig config;
  config.defaults.tenant_rate = 10;
  config.defaults.tenant_burst = 1;
  TenantLimits limits(config, nullptr, clock_);
  ASSERT_TRUE(limits.AdmitCall(kAlice, "key-a").ok());
  std::vector<milliseconds> hints;
  hints.reserve(5);
  for (int i = 0; i < 5; ++i) hints.push_back(*core::RetryAfter(limits.AdmitCall(kBob, "key-b")));
  EXPECT_THAT(hints, ::testing::ElementsAre(milliseconds(100), milliseconds(200), milliseconds(300),
                                            milliseconds(400), milliseconds(500)));
  // Served at the rate: after 300 ms three have had their turn.
  clock_.Advance(milliseconds(300));
  EXPECT_TRUE(limits.AdmitCall(kBob, "key-b").ok());
  EXPECT_EQ(core::RetryAfter(limits.AdmitCall(kBob, "key-b")), milliseconds(300));
}

TEST_F(TenantLimitsTest, NoRatesConfiguredAdmitsEverything) {
  TenantLimits limits(LimitsConfig{}, nullptr, clock_);
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(limits.AdmitCall(kAlice, "key-a").ok());
  std::vector<TurnSlot> slots;
  for (int i = 0; i < 1000; ++i) {
    auto slot = limits.AdmitTurn(kAlice);
    ASSERT_TRUE(slot.ok());
    slots.push_back(*std::move(slot));
  }
  EXPECT_EQ(limits.ModelAllowed(kAlice).value_or(false), true);
}

TEST_F(TenantLimitsTest, TurnCapsPerUserAndPerTenantFreeTheirPlaceWhenTheTurnEnds) {
  LimitsConfig config;
  config.defaults.user_turns = 2;
  config.defaults.tenant_turns = 3;
  TenantLimits limits(config, nullptr, clock_);
  auto a1 = limits.AdmitTurn(kAlice);
  auto a2 = limits.AdmitTurn(kAlice);
  ASSERT_TRUE(a1.ok() && a2.ok());
  auto a3 = limits.AdmitTurn(kAlice);
  ASSERT_EQ(a3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(a3.status().message(), HasSubstr("user alice has 2 turns running"));
  // Told to come back in 0.5 to 1.5 s, not all at the same moment.
  const auto hint = core::RetryAfter(a3.status());
  ASSERT_TRUE(hint.has_value());
  EXPECT_GE(*hint, milliseconds(500));
  EXPECT_LE(*hint, milliseconds(1500));
  std::set<int64_t> hints;
  for (int i = 0; i < 20; ++i)
    hints.insert(core::RetryAfter(limits.AdmitTurn(kAlice).status())->count());
  EXPECT_GT(hints.size(), 10u);
  auto b1 = limits.AdmitTurn(kBob);
  ASSERT_TRUE(b1.ok());
  auto b2 = limits.AdmitTurn(kBob);
  ASSERT_EQ(b2.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(b2.status().message(), HasSubstr("tenant acme has 3 turns running"));
  // The other tenant has places of its own.
  auto c1 = limits.AdmitTurn(kOther);
  EXPECT_TRUE(c1.ok());
  // A slot moved is given back once, by its last holder; the slots it was
  // moved from give back nothing when they go.
  {
    TurnSlot moved = *std::move(a1);
    TurnSlot holder = std::move(moved);
    EXPECT_FALSE(limits.AdmitTurn(kBob).ok());
    holder.Release();
    holder.Release();
  }
  auto b3 = limits.AdmitTurn(kBob);
  ASSERT_TRUE(b3.ok());
  EXPECT_FALSE(limits.AdmitTurn(kBob).ok());  // 3 again: alice 1, bob 2
}

TEST_F(TenantLimitsTest, PerTenantSettingsReplaceTheDefaultsForThatTenantOnly) {
  LimitsConfig config;
  config.defaults.user_turns = 1;
  config.tenants["globex"].user_turns = 3;
  TenantLimits limits(config, nullptr, clock_);
  auto a = limits.AdmitTurn(kAlice);
  EXPECT_FALSE(limits.AdmitTurn(kAlice).ok());
  std::vector<TurnSlot> slots;
  for (int i = 0; i < 3; ++i) {
    auto slot = limits.AdmitTurn(kOther);
    ASSERT_TRUE(slot.ok()) << i;
    slots.push_back(*std::move(slot));
  }
  EXPECT_FALSE(limits.AdmitTurn(kOther).ok());
}

TEST_F(TenantLimitsTest, DailyBudgetRefusesTheTurnThatWouldCrossItUntilTheNextUtcDay) {
  LimitsConfig config;
  config.defaults.daily_usd = 1.0;
  ScriptedLedger ledger;
  ledger.answer = Spend{.day_usd = 0.5, .month_usd = 3.0, .mean_turn_usd = 0.2};
  TenantLimits limits(config, &ledger, clock_);
  EXPECT_EQ(limits.ModelAllowed(kAlice).value_or(false), true);
  EXPECT_EQ(ledger.reads, 1);
  // 0.5 + 0.2 + 0.2 = 0.9 spent: the next turn's expected 0.2 would cross 1.0.
  limits.Spent("acme", 0.2);
  EXPECT_EQ(limits.ModelAllowed(kAlice).value_or(false), true);
  limits.Spent("acme", 0.2);
  const double refused_before = RefusalCount("acme", "budget");
  absl::StatusOr<bool> refused = limits.ModelAllowed(kBob);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("LLM budget of tenant acme for this day"));
  EXPECT_EQ(ledger.reads, 1);  // the spend read is believed for spend_refresh
  EXPECT_EQ(RefusalCount("acme", "budget"), refused_before + 1);
  const core::TimePoint now = clock_.Now();
  const auto next_day = StartOfUtcDay(now) + std::chrono::hours(24);
  // The fake clock stands on a whole second: the wait is exactly to midnight UTC.
  EXPECT_EQ(core::RetryAfter(refused.status()),
            std::chrono::duration_cast<milliseconds>(next_day - now));
  // Another tenant has its own spend.
  ledger.answer = Spend{};
  EXPECT_EQ(limits.ModelAllowed(kOther).value_or(false), true);
  // The next day the ledger is read again and says what that day spent.
  clock_.Advance(next_day - now);
  EXPECT_EQ(limits.ModelAllowed(kAlice).value_or(false), true);
  EXPECT_EQ(ledger.last_now, clock_.Now());
}

TEST_F(TenantLimitsTest, TheSpendKnownRefusesWithoutReadingTheLedger) {
  LimitsConfig config;
  config.defaults.daily_usd = 1.0;
  ScriptedLedger ledger;
  ledger.answer = Spend{.day_usd = 2.0, .month_usd = 2.0, .mean_turn_usd = 0.1};
  TenantLimits limits(config, &ledger, clock_);
  // Not read yet: the turn's own check will read it.
  EXPECT_TRUE(limits.KnownBudgetRefusal(kAlice).ok());
  EXPECT_EQ(ledger.reads, 0);
  EXPECT_FALSE(limits.ModelAllowed(kAlice).ok());
  EXPECT_EQ(ledger.reads, 1);
  const absl::Status known = limits.KnownBudgetRefusal(kBob);
  EXPECT_EQ(known.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(known.message(), HasSubstr("LLM budget of tenant acme"));
  EXPECT_TRUE(core::RetryAfter(known).has_value());
  EXPECT_TRUE(limits.KnownBudgetRefusal(kOther).ok());
  EXPECT_EQ(ledger.reads, 1);
  // In local mode nothing is refused.
  config.over_budget = OverBudget::kLocal;
  TenantLimits local(config, &ledger, clock_);
  EXPECT_EQ(local.ModelAllowed(kAlice).value_or(true), false);
  EXPECT_TRUE(local.KnownBudgetRefusal(kAlice).ok());
}

TEST_F(TenantLimitsTest, OverBudgetInLocalModeLetsTheTurnRunWithoutModelCalls) {
  LimitsConfig config;
  config.defaults.monthly_usd = 10;
  config.over_budget = OverBudget::kLocal;
  ScriptedLedger ledger;
  ledger.answer = Spend{.day_usd = 0, .month_usd = 10.5, .mean_turn_usd = 0.1};
  TenantLimits limits(config, &ledger, clock_);
  absl::StatusOr<bool> allowed = limits.ModelAllowed(kAlice);
  ASSERT_TRUE(allowed.ok());
  EXPECT_FALSE(*allowed);
}

TEST_F(TenantLimitsTest, MonthlyBudgetRefusalWaitsForTheNextMonth) {
  LimitsConfig config;
  config.defaults.monthly_usd = 10;
  config.defaults.daily_usd = 100;
  ScriptedLedger ledger;
  ledger.answer = Spend{.day_usd = 1, .month_usd = 10, .mean_turn_usd = 0.01};
  TenantLimits limits(config, &ledger, clock_);
  absl::StatusOr<bool> refused = limits.ModelAllowed(kAlice);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("for this month (10 USD)"));
  const core::TimePoint now = clock_.Now();  // 2026-09-21: the month ends on 2026-10-01
  EXPECT_EQ(StartOfUtcMonth(now + *core::RetryAfter(refused.status())),
            core::TimePointFromMicros(1'790'812'800'000'000));
}

TEST_F(TenantLimitsTest, SpendIsReadAgainAfterTheRefreshAndALedgerFailureKeepsTheLastRead) {
  LimitsConfig config;
  config.defaults.daily_usd = 1.0;
  config.spend_refresh = milliseconds(10000);
  ScriptedLedger ledger;
  ledger.answer = Spend{.day_usd = 0.95, .month_usd = 0.95, .mean_turn_usd = 0.1};
  TenantLimits limits(config, &ledger, clock_);
  EXPECT_FALSE(limits.ModelAllowed(kAlice).ok());
  clock_.Advance(milliseconds(10001));
  ledger.answer = absl::UnavailableError("database down");
  EXPECT_FALSE(limits.ModelAllowed(kAlice).ok());  // 0.95 still stands
  EXPECT_EQ(ledger.reads, 2);
  EXPECT_FALSE(limits.ModelAllowed(kAlice).ok());
  EXPECT_EQ(ledger.reads, 2) << "a failed read is not tried again on every turn";
  clock_.Advance(milliseconds(10001));
  ledger.answer = Spend{.day_usd = 0.1, .month_usd = 0.1, .mean_turn_usd = 0.1};
  EXPECT_TRUE(limits.ModelAllowed(kAlice).ok());
  EXPECT_EQ(ledger.reads, 3);
}

TEST_F(TenantLimitsTest, WithoutALedgerTheSpendSeenCountsAndANewDayStartsAgain) {
  LimitsConfig config;
  config.defaults.daily_usd = 1.0;
  TenantLimits limits(config, nullptr, clock_);
  EXPECT_TRUE(limits.budgets_enabled());
  // Each turn cost 0.3: the third would bring the day to 1.2.
  limits.Spent("acme", 0.3);
  EXPECT_EQ(limits.ModelAllowed(kAlice).value_or(false), true);
  limits.Spent("acme", 0.3);
  EXPECT_EQ(limits.ModelAllowed(kAlice).value_or(false), true);
  limits.Spent("acme", 0.3);
  EXPECT_FALSE(limits.ModelAllowed(kAlice).ok());
  clock_.Advance(std::chrono::hours(24));
  EXPECT_EQ(limits.ModelAllowed(kAlice).value_or(false), true);
}

TEST_F(TenantLimitsTest, SpendCounterCountsEachScopesCostAndPassesItOn) {
  LimitsConfig config;
  config.defaults.daily_usd = 1.0;
  TenantLimits limits(config, nullptr, clock_);
  class Sink final : public ScopeUsageWriter {
   public:
    void Record(const llm::UsageRecord&) override {}
    void WriteScope(const UsageAttribution&, std::vector<AttributedCall> calls) override {
      written += static_cast<int>(calls.size());
    }
    int written = 0;
  } next;
  SpendCounter counter(limits, &next);
  std::vector<AttributedCall> calls(2);
  calls[0].record.cost_usd = 0.7;
  calls[1].record.cost_usd = 0.4;
  counter.WriteScope({"acme", "alice", "", "", ""}, calls);
  EXPECT_EQ(next.written, 2);
  EXPECT_FALSE(limits.ModelAllowed(kAlice).ok());
  EXPECT_EQ(limits.ModelAllowed(kOther).value_or(false), true);
}

TEST(LimitsConfigTest, ReadsDefaultsPerTenantSettingsAndTheOverBudgetChoice) {
  auto reader = core::ConfigReader::FromString(
      "limits:\n"
      "  key_rate: 5\n"
      "  tenant_rate: 20\n"
      "  user_turns: 4\n"
      "  tenant_turns: 16\n"
      "  daily_usd: 2.5\n"
      "  over_budget: local\n"
      "  tenants:\n"
      "    acme:\n"
      "      tenant_turns: 64\n"
      "      monthly_usd: 300\n",
      [](const std::string& name) -> std::optional<std::string> {
        if (name == "OMNIFORGE_LIMITS_KEY_BURST") return "9";
        return std::nullopt;
      });
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<LimitsConfig> config = ReadLimitsConfig(*reader);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(reader->Finish().ok()) << reader->Finish();
  EXPECT_EQ(config->over_budget, OverBudget::kLocal);
  const LimitSettings& other = config->For("globex");
  EXPECT_EQ(other.key_rate, 5);
  EXPECT_EQ(other.key_burst, 9);
  EXPECT_EQ(other.tenant_rate, 20);
  EXPECT_EQ(other.user_turns, 4);
  EXPECT_EQ(other.tenant_turns, 16);
  EXPECT_EQ(other.daily_usd, 2.5);
  EXPECT_EQ(other.monthly_usd, 0);
  const LimitSettings& acme = config->For("acme");
  EXPECT_EQ(acme.key_rate, 5);  // from the defaults
  EXPECT_EQ(acme.tenant_turns, 64);
  EXPECT_EQ(acme.monthly_usd, 300);
}

TEST(LimitsConfigTest, RefusesAnUnknownOverBudgetAndABadValue) {
  auto reader = core::ConfigReader::FromString("limits:\n  over_budget: later\n");
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<LimitsConfig> config = ReadLimitsConfig(*reader);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("limits.over_budget"));

  reader = core::ConfigReader::FromString("limits:\n  user_turns: -1\n");
  ASSERT_TRUE(reader.ok());
  ASSERT_TRUE(ReadLimitsConfig(*reader).ok());
  EXPECT_THAT(reader->Finish().message(), HasSubstr("limits.user_turns"));
}

TEST(LimitsConfigTest, UtcDayAndMonthStarts) {
  // 2026-09-21T14:13:20Z
  const core::TimePoint t = core::TimePointFromMicros(1'790'000'000'000'000);
  EXPECT_EQ(StartOfUtcDay(t), core::TimePointFromMicros(1'789'948'800'000'000));
  EXPECT_EQ(StartOfUtcMonth(t), core::TimePointFromMicros(1'788'220'800'000'000));
  EXPECT_EQ(StartOfUtcMonth(StartOfUtcMonth(t)), StartOfUtcMonth(t));
}

}  // namespace
}  // namespace omniforge::orchestrator
