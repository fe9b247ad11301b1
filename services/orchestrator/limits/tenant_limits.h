// Per-tenant limits at the public API, so that one tenant (or one key) can
// neither starve the others nor run up the provider bill:
//   - a token bucket per API key and one per tenant over every public call;
//   - a cap on the turns running at once per user and per tenant;
//   - a daily and a monthly LLM spend budget per tenant, read from the usage
//     rows (SpendLedger) and kept current with the turns this replica ends.
// A call over a rate or a cap is refused with RESOURCE_EXHAUSTED and a retry
// hint (core::WithRetryAfter); a turn over the budget is refused the same way or runs in
// local mode (no model calls), as the configuration says. Each limit counts
// its refusals per tenant (omniforge_orchestrator_limit_refusals_total).
//
// The counts live in this replica: with N replicas behind a balancer, a
// tenant gets up to N times each rate and cap (configure per replica).
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/clock.h"
#include "libs/core/identity.h"
#include "libs/core/retry_hint.h"

namespace omniforge::core {
class ConfigReader;
}

namespace omniforge::orchestrator {

// One tenant's limits; 0 is no limit.
struct LimitSettings {
  // Public calls (each StreamChat and each read) per second per API key,
  // and the bucket's size: how many may come at once after a quiet spell
  // (0: twice the rate, at least 1).
  double key_rate = 0;
  double key_burst = 0;
  // The same over all of a tenant's keys.
  double tenant_rate = 0;
  double tenant_burst = 0;
  // Turns running at once.
  int user_turns = 0;
  int tenant_turns = 0;
  // LLM spend in US dollars by the price table, per UTC day and month.
  double daily_usd = 0;
  double monthly_usd = 0;
};

// What a turn that would cross the spend budget does.
enum class OverBudget {
  kRefuse,  // RESOURCE_EXHAUSTED, retry when the day (or month) turns
  kLocal,   // it runs in local mode: no model calls, the user is told
};

struct LimitsConfig {
  LimitSettings defaults;
  // Per tenant, in full (read with the defaults as fallbacks).
  std::map<std::string, LimitSettings, std::less<>> tenants;
  OverBudget over_budget = OverBudget::kRefuse;
  // How long a tenant's spend read from the ledger is believed; the cost
  // of the turns this replica ends in between is added to it.
  std::chrono::milliseconds spend_refresh{10000};

  const LimitSettings& For(std::string_view tenant) const;
};

// Reads `limits.*`: the defaults, `limits.tenants.<tenant>.*` and
// `limits.over_budget` (refuse | local). INVALID_ARGUMENT for a bad value.
absl::StatusOr<LimitsConfig> ReadLimitsConfig(core::ConfigReader& config);

// A tenant's LLM spend so far, from the usage rows.
struct Spend {
  double day_usd = 0;    // since the start of the UTC day of `now`
  double month_usd = 0;  // since the start of its UTC month
  // The mean cost of the turns (and plan steps) of the month that called a
  // model: what the next one is expected to cost.
  double mean_turn_usd = 0;
};

class SpendLedger {
 public:
  virtual ~SpendLedger() = default;
  virtual absl::StatusOr<Spend> Read(const std::string& tenant, core::TimePoint now) = 0;
};

// The start of the UTC day and month that hold `t`.
core::TimePoint StartOfUtcDay(core::TimePoint t);
core::TimePoint StartOfUtcMonth(core::TimePoint t);

class TenantLimits;

// A running turn's place under the caps; given back when destroyed.
class TurnSlot final {
 public:
  TurnSlot() = default;
  TurnSlot(TurnSlot&& other) noexcept;
  TurnSlot& operator=(TurnSlot&& other) noexcept;
  ~TurnSlot();
  void Release();

 private:
  friend class TenantLimits;
  TurnSlot(TenantLimits* limits, core::Identity who) : limits_(limits), who_(std::move(who)) {}
  TenantLimits* limits_ = nullptr;
  core::Identity who_;
};

class TenantLimits final {
 public:
  // `ledger` may be null (budgets then count only what this replica saw
  // since it started); it and `clock` must outlive this.
  TenantLimits(LimitsConfig config, SpendLedger* ledger = nullptr,
               const core::Clock& clock = core::SystemClock());
  ~TenantLimits();
  TenantLimits(const TenantLimits&) = delete;
  TenantLimits& operator=(const TenantLimits&) = delete;

  // One public call by `who` with the key `key_id`: takes a token from the
  // key's bucket and the tenant's, or neither (RESOURCE_EXHAUSTED, retry
  // hint: when the emptier bucket has a token again).
  absl::Status AdmitCall(const core::Identity& who, std::string_view key_id);

  // A place for a turn under the user's and the tenant's caps, or
  // RESOURCE_EXHAUSTED (retry hint: 0.5 to 1.5 s, at random).
  absl::StatusOr<TurnSlot> AdmitTurn(const core::Identity& who);

  // Whether a turn of `who` may call a model: true within the budget;
  // false when it would cross it and the configuration says local mode;
  // RESOURCE_EXHAUSTED (retry hint: the next UTC day or month) when it says
  // refuse. A ledger that cannot be read does not stop turns: the spend
  // last read stands (logged).
  absl::StatusOr<bool> ModelAllowed(const core::Identity& who);

  // The refusal ModelAllowed would give, from the spend known now and
  // without reading the ledger, so that a call can be refused before it
  // changes anything (a newer message suspends the conversation's running
  // turn); OK within the budget, in local mode, or when the spend is not
  // known yet (the turn's ModelAllowed reads it).
  absl::Status KnownBudgetRefusal(const core::Identity& who);

  // A model call's cost for `tenant`, as the turn or step that made it ends:
  // counted until the ledger is read again.
  void Spent(const std::string& tenant, double usd);

  bool budgets_enabled() const { return budgets_; }

 private:
  friend class TurnSlot;
  struct Bucket {
    double tokens = 0;
    int64_t refilled_micros = 0;
    double waiting = 0;  // callers refused lately, not yet served at the rate
    // To `now`; 0 when a token is there, else the wait a refused caller is told.
    int64_t Refill(double rate, double burst, int64_t now);
  };
  struct TenantState;

  TenantState& State(std::string_view tenant) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseTurn(const core::Identity& who);
  // OK, or the refusal of a turn with `spend` under `limits`.
  absl::Status BudgetVerdict(const core::Identity& who, const LimitSettings& limits,
                             const Spend& spend);
  // The ledger's last answer with what this replica saw since.
  Spend KnownSpend(const TenantState& state) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Spend as of now: the ledger's, read again when older than spend_refresh.
  Spend CurrentSpend(const std::string& tenant, TenantState& state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LimitsConfig config_;
  SpendLedger* const ledger_;
  const core::Clock& clock_;
  const bool budgets_;  // some tenant has a budget

  absl::Mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<TenantState>> tenants_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, Bucket> keys_ ABSL_GUARDED_BY(mu_);
  absl::BitGen random_ ABSL_GUARDED_BY(mu_);  // spreads the retry hints of the caps
};

}  // namespace omniforge::orchestrator
