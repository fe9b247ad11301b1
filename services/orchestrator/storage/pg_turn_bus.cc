#include "services/orchestrator/storage/pg_turn_bus.h"

#include <chrono>
#include <cstdlib>
#include <pqxx/pqxx>
#include <thread>

#include "absl/strings/numbers.h"
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/pg/array_literal.h"
#include "libs/seal/sealed_text.h"

namespace omniforge::orchestrator {
namespace {

constexpr char kChannel[] = "omniforge_turns";
// The purpose the bus's key is derived for, and what a sealed payload is
// bound to.
constexpr char kBusKeyPurpose[] = "ofbus001";
constexpr char kBusAd[] = "omniforge-turn-bus";
// A sealed signal older than this (by its sender's clock) is dropped, so a
// payload captured from the channel cannot be replayed later.
constexpr int64_t kMaxSignalAgeMillis = 60000;

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The text of a sealed payload, opened with the bus's keys (by master key
// id); nullopt when it does not open or is too old.
std::optional<std::string> OpenWith(const std::map<std::string, seal::DataKey>& keys,
                                    const std::string& payload) {
  const size_t bar = payload.find('|');
  if (bar == std::string::npos) return std::nullopt;
  auto key = keys.find(payload.substr(0, bar));
  if (key == keys.end()) return std::nullopt;
  const std::string_view sealed = std::string_view(payload).substr(bar + 1);
  if (!seal::IsSealedText(sealed)) return std::nullopt;
  auto opened = seal::OpenTextWith(key->second, sealed, kBusAd);
  if (!opened.ok()) return std::nullopt;
  const size_t sent_end = opened->find('|');
  int64_t sent = 0;
  if (sent_end == std::string::npos || !absl::SimpleAtoi(opened->substr(0, sent_end), &sent) ||
      std::abs(NowMillis() - sent) > kMaxSignalAgeMillis) {
    return std::nullopt;
  }
  return opened->substr(sent_end + 1);
}
// Signals waiting to be sent; beyond this they are dropped (the database is
// out of reach, and a turn's signals are worth nothing minutes later).
constexpr size_t kMaxOutbox = 10000;
constexpr size_t kMaxBatch = 200;
// How long signals gather before they are sent: every turn publishes two
// (started, ended), and each statement that sends them wakes every
// replica's listener, this one's included. A few milliseconds are nothing
// next to the time between a user's messages, and under load one statement
// carries the signals of several turns.
constexpr std::chrono::milliseconds kLinger{5};

class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, std::function<void(const std::string&)> deliver)
      : pqxx::notification_receiver(conn, kChannel), deliver_(std::move(deliver)) {}
  void operator()(const std::string& payload, int) override { deliver_(payload); }

 private:
  std::function<void(const std::string&)> deliver_;
};

}  // namespace

std::optional<std::string> OpenTurnBusPayload(const seal::MasterKeySet& keys,
                                              const std::string& payload) {
  return OpenWith(seal::DerivedKeys(keys, kBusKeyPurpose), payload);
}

PgTurnBus::PgTurnBus(std::string dsn, std::optional<seal::MasterKeySet> keys)
    : dsn_(std::move(dsn)), origin_(core::NewUuid()) {
  if (keys.has_value()) {
    current_key_id_ = keys->current_id;
    keys_ = seal::DerivedKeys(*keys, kBusKeyPurpose);
  }
  listener_ = std::thread([this] { Listen(); });
  sender_ = std::thread([this] { Send(); });
}

PgTurnBus::~PgTurnBus() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.SignalAll();
  listener_.join();
  sender_.join();
}

std::string PgTurnBus::Sealed(const std::string& text) const {
  if (keys_.empty()) return text;
  // Sealed with the time it was sent.
  return current_key_id_ + "|" +
         seal::SealText(keys_.at(current_key_id_), std::to_string(NowMillis()) + "|" + text,
                        kBusAd);
}

std::optional<std::string> PgTurnBus::Opened(const std::string& payload) const {
  if (keys_.empty()) return payload;
  return OpenWith(keys_, payload);
}

void PgTurnBus::Publish(const TurnSignal& signal) {
  std::string text = Sealed(TurnSignalToText(signal, origin_));
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || outbox_.size() >= kMaxOutbox) return;
    outbox_.push_back(std::move(text));
  }
  changed_.SignalAll();
}

void PgTurnBus::Subscribe(std::function<void(const TurnSignal&)> on_signal) {
  absl::MutexLock lock(&deliver_mu_);  // waits for a signal being delivered
  on_signal_ = std::move(on_signal);
}

bool PgTurnBus::WaitListening(std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  while (!listening_ && !stopping_ && !changed_.WaitWithDeadline(&mu_, deadline)) {
  }
  return listening_;
}

bool PgTurnBus::Pause(std::chrono::milliseconds duration) {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + absl::FromChrono(duration);
  while (!stopping_ && !changed_.WaitWithDeadline(&mu_, deadline)) {
  }
  return !stopping_;
}

void PgTurnBus::Deliver(const std::string& payload) {
  static core::Counter& rejected = core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_turn_bus_rejected_total",
      "Turn bus payloads dropped because they do not open with this replica's keys");
  const std::optional<std::string> text = Opened(payload);
  if (!text) {
    rejected.Inc();
    return;
  }
  std::string origin;
  std::optional<TurnSignal> signal = TurnSignalFromText(*text, &origin);
  if (!signal || origin == origin_) return;  // our own, or not a signal
  absl::MutexLock lock(&deliver_mu_);
  if (on_signal_) on_signal_(*signal);
}

void PgTurnBus::Listen() {
  bool warned = false;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    try {
      pqxx::connection conn(dsn_);
      Receiver receiver(conn, [this](const std::string& payload) { Deliver(payload); });
      {
        absl::MutexLock lock(&mu_);
        listening_ = true;
      }
      changed_.SignalAll();
      if (warned) core::LogInfo("turn bus listening again", {{"component", "orchestrator"}});
      warned = false;
      for (;;) {
        {
          absl::MutexLock lock(&mu_);
          if (stopping_) return;
        }
        conn.await_notification(0, 200000);  // wakes to look at stopping_
      }
    } catch (const std::exception& e) {
      {
        absl::MutexLock lock(&mu_);
        listening_ = false;
      }
      if (!warned) {
        core::LogWarn("turn bus cannot listen; turns on other replicas are out of reach",
                      {{"component", "orchestrator"}, {"error", e.what()}});
        warned = true;
      }
      if (!Pause(std::chrono::seconds(1))) return;
    }
  }
}

void PgTurnBus::Send() {
  std::unique_ptr<pqxx::connection> conn;
  for (;;) {
    std::vector<std::string> batch;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && outbox_.empty()) changed_.Wait(&mu_);
      if (stopping_) return;
    }
    // Asleep rather than waiting on changed_, which every Publish wakes.
    std::this_thread::sleep_for(kLinger);
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      while (!outbox_.empty() && batch.size() < kMaxBatch) {
        batch.push_back(std::move(outbox_.front()));
        outbox_.pop_front();
      }
    }
    pg::ArrayLiteral payloads;
    for (const std::string& payload : batch) payloads.Add(payload);
    try {
      if (conn == nullptr || !conn->is_open()) conn = std::make_unique<pqxx::connection>(dsn_);
      pqxx::nontransaction tx(*conn);
      tx.exec_params("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p", kChannel,
                     payloads.Text());
    } catch (const std::exception& e) {
      conn.reset();
      core::LogWarn("turn signals not sent", {{"component", "orchestrator"},
                                              {"signals", std::to_string(batch.size())},
                                              {"error", e.what()}});
      if (!Pause(std::chrono::seconds(1))) return;
    }
  }
}

}  // namespace omniforge::orchestrator
