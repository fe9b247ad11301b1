#include "services/orchestrator/limits/tenant_limits.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <utility>

#include "absl/random/distributions.h"
#include "absl/strings/str_cat.h"
#include "libs/core/config.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"

namespace omniforge::orchestrator {
namespace {

constexpr int64_t kMicrosPerSecond = 1'000'000;
// A turn refused at a cap is worth retrying after about this long: 0.5 to
// 1.5 s, at random, so that callers refused together do not all come back
// together.
constexpr int64_t kTurnCapRetryMinMicros = 500'000;
constexpr int64_t kTurnCapRetrySpreadMicros = 1'000'000;

LimitSettings ReadSettings(core::ConfigReader& c, const std::string& prefix,
                           const LimitSettings& fallback) {
  LimitSettings s;
  auto amount = [&](const char* key, double value) { return c.Double(prefix + key, value); };
  s.key_rate = amount("key_rate", fallback.key_rate);
  s.key_burst = amount("key_burst", fallback.key_burst);
  s.tenant_rate = amount("tenant_rate", fallback.tenant_rate);
  s.tenant_burst = amount("tenant_burst", fallback.tenant_burst);
  s.user_turns = static_cast<int>(c.Int(prefix + "user_turns", fallback.user_turns, 0, 100000));
  s.tenant_turns =
      static_cast<int>(c.Int(prefix + "tenant_turns", fallback.tenant_turns, 0, 1000000));
  s.daily_usd = amount("daily_usd", fallback.daily_usd);
  s.monthly_usd = amount("monthly_usd", fallback.monthly_usd);
  return s;
}

// INVALID_ARGUMENT naming the first rate or amount below 0 (or not a number).
absl::Status CheckAmounts(const LimitSettings& s, const std::string& prefix) {
  const std::pair<const char*, double> amounts[] = {
      {"key_rate", s.key_rate},         {"key_burst", s.key_burst}, {"tenant_rate", s.tenant_rate},
      {"tenant_burst", s.tenant_burst}, {"daily_usd", s.daily_usd}, {"monthly_usd", s.monthly_usd}};
  for (const auto& [key, value] : amounts) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError("config: " + prefix + key + ": must be 0 (none) or more");
    }
  }
  return absl::OkStatus();
}

double BurstOf(double rate, double burst) {
  if (burst > 0) return std::max(burst, 1.0);
  return std::max(2 * rate, 1.0);
}

}  // namespace

// Refills the bucket to `now`; 0 when it holds a token now, else the wait in
// microseconds a refused caller is told. The callers refused lately queue
// up in `waiting` (served at the rate, as tokens come), and each is told
// its place in that queue: hundreds of refused clients retry spread out at
// the rate the bucket can take, not all together when the next token comes.
int64_t TenantLimits::Bucket::Refill(double rate, double burst, int64_t now) {
  const double capacity = BurstOf(rate, burst);
  if (refilled_micros == 0) {
    tokens = capacity;
  } else if (now > refilled_micros) {
    const double came =
        rate * static_cast<double>(now - refilled_micros) / static_cast<double>(kMicrosPerSecond);
    tokens = std::min(capacity, tokens + came);
    waiting = std::max(0.0, waiting - came);
  }
  refilled_micros = std::max(refilled_micros, now);
  if (tokens >= 1) return 0;
  waiting += 1;
  return static_cast<int64_t>(std::ceil((waiting - tokens) / rate * kMicrosPerSecond));
}

namespace {

core::Counter& Refusals(const std::string& tenant, const char* limit) {
  return core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_limit_refusals_total",
      "Public calls and turns refused by a per-tenant limit, by tenant and limit "
      "(key_rate, tenant_rate, user_turns, tenant_turns, budget).",
      {{"tenant", tenant}, {"limit", limit}});
}

// RESOURCE_EXHAUSTED with `reason`, the `limit` reached (as the refusals
// metric names it) and when to try again.
absl::Status Exhausted(const std::string& message, int64_t retry_micros, const char* reason,
                       const char* limit) {
  const auto after = std::chrono::milliseconds(std::max<int64_t>(1, (retry_micros + 999) / 1000));
  return core::WithReason(core::WithRetryAfter(absl::ResourceExhaustedError(absl::StrCat(
                                                   message, "; retry in ",
                                                   absl::SixDigits(after.count() / 1000.0), " s")),
                                               after),
                          reason, {{"limit", limit}});
}

}  // namespace

struct TenantLimits::TenantState {
  explicit TenantState(const std::string& tenant)
      : turns_gauge(core::MetricsRegistry::Global().GetGauge("omniforge_orchestrator_tenant_turns",
                                                             "Turns running now, by tenant.",
                                                             {{"tenant", tenant}})),
        day_gauge(core::MetricsRegistry::Global().GetGauge(
            "omniforge_orchestrator_tenant_spend_usd",
            "LLM spend by tenant as the budgets see it, for the UTC day and month.",
            {{"tenant", tenant}, {"period", "day"}})),
        month_gauge(core::MetricsRegistry::Global().GetGauge(
            "omniforge_orchestrator_tenant_spend_usd",
            "LLM spend by tenant as the budgets see it, for the UTC day and month.",
            {{"tenant", tenant}, {"period", "month"}})),
        local_turns(core::MetricsRegistry::Global().GetCounter(
            "omniforge_orchestrator_budget_local_turns_total",
            "Turns run in local mode because the tenant's LLM budget was spent.",
            {{"tenant", tenant}})) {}

  // Without a ledger, what was seen is the spend: a new UTC day (month)
  // starts it again.
  void RollOver(core::TimePoint now) {
    const int64_t day = core::MicrosOf(StartOfUtcDay(now));
    if (read_day == day) return;
    if (read_day == 0 ||
        StartOfUtcMonth(now) != StartOfUtcMonth(core::TimePointFromMicros(read_day))) {
      seen.month_usd = 0;
      seen_scopes = 0;
    }
    seen.day_usd = 0;
    read_day = day;
  }

  Bucket bucket;
  int turns = 0;
  std::unordered_map<std::string, int> user_turns;
  // The ledger's last answer, when it was read and for which day; what this
  // replica saw spent since that read began.
  Spend ledger;
  int64_t read_micros = 0;
  int64_t read_day = 0;
  bool reading = false;
  Spend seen;
  int64_t seen_scopes = 0;  // turns and steps seen spending this month (no ledger)
  core::Gauge& turns_gauge;
  core::Gauge& day_gauge;
  core::Gauge& month_gauge;
  core::Counter& local_turns;
};

const LimitSettings& LimitsConfig::For(std::string_view tenant) const {
  auto it = tenants.find(tenant);
  return it == tenants.end() ? defaults : it->second;
}

absl::StatusOr<LimitsConfig> ReadLimitsConfig(core::ConfigReader& c) {
  LimitsConfig config;
  config.defaults = ReadSettings(c, "limits.", {});
  if (absl::Status status = CheckAmounts(config.defaults, "limits."); !status.ok()) return status;
  for (const std::string& tenant : c.Keys("limits.tenants")) {
    absl::Status valid = core::ValidateIdentity({tenant, "user"});
    if (!valid.ok()) {
      return absl::InvalidArgumentError("config: limits.tenants." + tenant +
                                        ": not a tenant id: " + std::string(valid.message()));
    }
    const std::string prefix = "limits.tenants." + tenant + ".";
    config.tenants[tenant] = ReadSettings(c, prefix, config.defaults);
    if (absl::Status status = CheckAmounts(config.tenants[tenant], prefix); !status.ok()) {
      return status;
    }
  }
  const std::string over = c.String("limits.over_budget", "refuse");
  if (over == "local") {
    config.over_budget = OverBudget::kLocal;
  } else if (over != "refuse") {
    return absl::InvalidArgumentError("config: limits.over_budget: must be refuse or local, not " +
                                      over);
  }
  config.spend_refresh =
      std::chrono::milliseconds(c.Int("limits.spend_refresh_ms", 10000, 100, 3600000));
  return config;
}

core::TimePoint StartOfUtcDay(core::TimePoint t) {
  const int64_t seconds = core::MicrosOf(t) / kMicrosPerSecond;
  const int64_t day = seconds - ((seconds % 86400) + 86400) % 86400;
  return core::TimePointFromMicros(day * kMicrosPerSecond);
}

core::TimePoint StartOfUtcMonth(core::TimePoint t) {
  const time_t seconds = static_cast<time_t>(core::MicrosOf(t) / kMicrosPerSecond);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  tm.tm_mday = 1;
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  return core::TimePointFromMicros(static_cast<int64_t>(timegm(&tm)) * kMicrosPerSecond);
}

TurnSlot::TurnSlot(TurnSlot&& other) noexcept
    : limits_(std::exchange(other.limits_, nullptr)), who_(std::move(other.who_)) {}

TurnSlot& TurnSlot::operator=(TurnSlot&& other) noexcept {
  if (this != &other) {
    Release();
    limits_ = std::exchange(other.limits_, nullptr);
    who_ = std::move(other.who_);
  }
  return *this;
}

TurnSlot::~TurnSlot() { Release(); }

void TurnSlot::Release() {
  if (limits_ != nullptr) std::exchange(limits_, nullptr)->ReleaseTurn(who_);
}

TenantLimits::TenantLimits(LimitsConfig config, SpendLedger* ledger, const core::Clock& clock)
    : config_(std::move(config)),
      ledger_(ledger),
      clock_(clock),
      budgets_(std::any_of(config_.tenants.begin(), config_.tenants.end(),
                           [](const auto& entry) {
                             return entry.second.daily_usd > 0 || entry.second.monthly_usd > 0;
                           }) ||
               config_.defaults.daily_usd > 0 || config_.defaults.monthly_usd > 0) {}

TenantLimits::~TenantLimits() = default;

TenantLimits::TenantState& TenantLimits::State(std::string_view tenant) {
  auto it = tenants_.find(std::string(tenant));
  if (it == tenants_.end()) {
    it = tenants_.emplace(std::string(tenant), std::make_unique<TenantState>(std::string(tenant)))
             .first;
  }
  return *it->second;
}

absl::Status TenantLimits::AdmitCall(const core::Identity& who, std::string_view key_id) {
  const LimitSettings& limits = config_.For(who.tenant_id);
  if (limits.key_rate <= 0 && limits.tenant_rate <= 0) return absl::OkStatus();
  const int64_t now = clock_.NowMicros();
  absl::MutexLock lock(&mu_);
  TenantState& tenant = State(who.tenant_id);
  int64_t key_wait = 0;
  Bucket* key = nullptr;
  if (limits.key_rate > 0) {
    key = &keys_[std::string(key_id)];
    key_wait = key->Refill(limits.key_rate, limits.key_burst, now);
  }
  int64_t tenant_wait = 0;
  if (limits.tenant_rate > 0) {
    tenant_wait = tenant.bucket.Refill(limits.tenant_rate, limits.tenant_burst, now);
  }
  if (key_wait > 0 || tenant_wait > 0) {
    const bool by_key = key_wait >= tenant_wait;
    Refusals(who.tenant_id, by_key ? "key_rate" : "tenant_rate").Inc();
    return Exhausted(by_key ? absl::StrCat("rate limit of this API key (", limits.key_rate,
                                           " calls per second) reached")
                            : absl::StrCat("rate limit of tenant ", who.tenant_id, " (",
                                           limits.tenant_rate, " calls per second) reached"),
                     std::max(key_wait, tenant_wait), core::kReasonRateLimited,
                     by_key ? "key_rate" : "tenant_rate");
  }
  if (key != nullptr) key->tokens -= 1;
  if (limits.tenant_rate > 0) tenant.bucket.tokens -= 1;
  return absl::OkStatus();
}

absl::StatusOr<TurnSlot> TenantLimits::AdmitTurn(const core::Identity& who) {
  const LimitSettings& limits = config_.For(who.tenant_id);
  absl::MutexLock lock(&mu_);
  TenantState& tenant = State(who.tenant_id);
  int& user = tenant.user_turns[who.user_id];
  const char* refused = nullptr;
  std::string message;
  if (limits.user_turns > 0 && user >= limits.user_turns) {
    refused = "user_turns";
    message = absl::StrCat("user ", who.user_id, " has ", user,
                           " turns running, the most allowed at once");
  } else if (limits.tenant_turns > 0 && tenant.turns >= limits.tenant_turns) {
    refused = "tenant_turns";
    message = absl::StrCat("tenant ", who.tenant_id, " has ", tenant.turns,
                           " turns running, the most allowed at once");
  }
  if (refused != nullptr) {
    if (user == 0) tenant.user_turns.erase(who.user_id);
    Refusals(who.tenant_id, refused).Inc();
    return Exhausted(
        message,
        kTurnCapRetryMinMicros + absl::Uniform<int64_t>(random_, 0, kTurnCapRetrySpreadMicros),
        core::kReasonTooManyTurns, refused);
  }
  ++user;
  ++tenant.turns;
  tenant.turns_gauge.Set(tenant.turns);
  return TurnSlot(this, who);
}

void TenantLimits::ReleaseTurn(const core::Identity& who) {
  absl::MutexLock lock(&mu_);
  TenantState& tenant = State(who.tenant_id);
  auto user = tenant.user_turns.find(who.user_id);
  if (user != tenant.user_turns.end() && --user->second <= 0) tenant.user_turns.erase(user);
  tenant.turns = std::max(0, tenant.turns - 1);
  tenant.turns_gauge.Set(tenant.turns);
}

Spend TenantLimits::KnownSpend(const TenantState& state) const {
  Spend spend = state.ledger;
  spend.day_usd += state.seen.day_usd;
  spend.month_usd += state.seen.month_usd;
  if (ledger_ == nullptr && state.seen_scopes > 0) {
    spend.mean_turn_usd = spend.month_usd / static_cast<double>(state.seen_scopes);
  }
  return spend;
}

Spend TenantLimits::CurrentSpend(const std::string& tenant, TenantState& state) {
  const core::TimePoint now = clock_.Now();
  const int64_t day = core::MicrosOf(StartOfUtcDay(now));
  const bool stale = state.read_day != day ||
                     now - core::TimePointFromMicros(state.read_micros) > config_.spend_refresh;
  if (ledger_ != nullptr && stale && !state.reading) {
    // Read without the lock, so that other tenants' calls do not wait for
    // the database; this tenant's other turns use what was known.
    state.reading = true;
    const Spend before = state.seen;
    state.seen = {};
    mu_.Unlock();
    absl::StatusOr<Spend> read = ledger_->Read(tenant, now);
    mu_.Lock();
    state.reading = false;
    // A failed read is tried again after spend_refresh too, not on every turn.
    state.read_micros = core::MicrosOf(now);
    state.read_day = day;
    if (read.ok()) {
      state.ledger = *read;
    } else {
      state.seen.day_usd += before.day_usd;
      state.seen.month_usd += before.month_usd;
      core::LogWarn("LLM spend not read; the budget uses the spend last read",
                    {{"tenant", tenant}, {"error", std::string(read.status().message())}});
    }
  } else if (ledger_ == nullptr) {
    state.RollOver(now);
  }
  const Spend spend = KnownSpend(state);
  state.day_gauge.Set(spend.day_usd);
  state.month_gauge.Set(spend.month_usd);
  return spend;
}

absl::Status TenantLimits::BudgetVerdict(const core::Identity& who, const LimitSettings& limits,
                                         const Spend& spend) {
  const bool over_day =
      limits.daily_usd > 0 && spend.day_usd + spend.mean_turn_usd > limits.daily_usd;
  const bool over_month =
      limits.monthly_usd > 0 && spend.month_usd + spend.mean_turn_usd > limits.monthly_usd;
  if (!over_day && !over_month) return absl::OkStatus();
  const core::TimePoint now = clock_.Now();
  core::TimePoint next;
  if (over_month) {
    const core::TimePoint month = StartOfUtcMonth(now);
    next = StartOfUtcMonth(month + std::chrono::hours(24 * 32));
  } else {
    next = StartOfUtcDay(now) + std::chrono::hours(24);
  }
  return Exhausted(
      absl::StrCat("the LLM budget of tenant ", who.tenant_id, " for this ",
                   over_month ? "month" : "day", " (",
                   over_month ? limits.monthly_usd : limits.daily_usd, " USD) is spent"),
      core::MicrosOf(next) - core::MicrosOf(now), core::kReasonBudgetExhausted,
      over_month ? "monthly_usd" : "daily_usd");
}

absl::StatusOr<bool> TenantLimits::ModelAllowed(const core::Identity& who) {
  const LimitSettings& limits = config_.For(who.tenant_id);
  if (limits.daily_usd <= 0 && limits.monthly_usd <= 0) return true;
  absl::MutexLock lock(&mu_);
  TenantState& tenant = State(who.tenant_id);
  absl::Status verdict = BudgetVerdict(who, limits, CurrentSpend(who.tenant_id, tenant));
  if (verdict.ok()) return true;
  if (config_.over_budget == OverBudget::kLocal) {
    tenant.local_turns.Inc();
    return false;
  }
  Refusals(who.tenant_id, "budget").Inc();
  return verdict;
}

absl::Status TenantLimits::KnownBudgetRefusal(const core::Identity& who) {
  const LimitSettings& limits = config_.For(who.tenant_id);
  if ((limits.daily_usd <= 0 && limits.monthly_usd <= 0) ||
      config_.over_budget == OverBudget::kLocal) {
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  TenantState& tenant = State(who.tenant_id);
  // Not read yet (or a new day): the turn's own check reads it.
  if (ledger_ != nullptr &&
      (tenant.read_micros == 0 || tenant.read_day != core::MicrosOf(StartOfUtcDay(clock_.Now())))) {
    return absl::OkStatus();
  }
  if (ledger_ == nullptr) tenant.RollOver(clock_.Now());
  absl::Status verdict = BudgetVerdict(who, limits, KnownSpend(tenant));
  if (!verdict.ok()) Refusals(who.tenant_id, "budget").Inc();
  return verdict;
}

void TenantLimits::Spent(const std::string& tenant, double usd) {
  if (!budgets_ || !(usd > 0)) return;
  absl::MutexLock lock(&mu_);
  TenantState& state = State(tenant);
  if (ledger_ == nullptr) state.RollOver(clock_.Now());
  state.seen.day_usd += usd;
  state.seen.month_usd += usd;
  ++state.seen_scopes;
}

}  // namespace omniforge::orchestrator
