// The turn bus on PostgreSQL between replicas: signals sealed with the
// orchestrator's master key reach the other replicas whole, travel with no
// id in the clear and hold ids only once opened, and a signal that does not
// open with a replica's keys (forged by anything that may NOTIFY, or sealed
// under another master key) is dropped.
#include "services/orchestrator/storage/pg_turn_bus.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "libs/seal/key_ring.h"
#include "libs/seal/sealed_text.h"
#include "libs/seal/test_keys.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

// What a subscriber received.
class Received {
 public:
  std::function<void(const TurnSignal&)> Sink() {
    return [this](const TurnSignal& s) {
      absl::MutexLock lock(&mu_);
      signals_.push_back(s);
    };
  }
  // The signals once `count` arrived or 5 s passed.
  std::vector<TurnSignal> Wait(size_t count) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        if (signals_.size() >= count || std::chrono::steady_clock::now() >= until) {
          return signals_;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  absl::Mutex mu_;
  std::vector<TurnSignal> signals_ ABSL_GUARDED_BY(mu_);
};

const std::string kConversation = TurnConversationDigest("acme", "alice", "c-1");

// The end of a turn that set aside the flow `flow_id`.
TurnSignal Ended(const std::string& flow_id) {
  return {TurnSignal::Kind::kEnded, kConversation, "turn-1", flow_id};
}

class PgTurnBusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { db_ = new testing::TestDatabase(); }
  static void TearDownTestSuite() {
    delete db_;
    db_ = nullptr;
  }
  static testing::TestDatabase* db_;
};
testing::TestDatabase* PgTurnBusTest::db_ = nullptr;

TEST_F(PgTurnBusTest, ASealedSignalReachesTheOtherReplicaWholeAndHoldsIdsOnly) {
  pqxx::connection watcher(db_->dsn());
  std::vector<std::string> seen;
  struct Watch final : pqxx::notification_receiver {
    Watch(pqxx::connection_base& c, std::vector<std::string>& out)
        : pqxx::notification_receiver(c, "omniforge_turns"), out(out) {}
    void operator()(const std::string& payload, int) override { out.push_back(payload); }
    std::vector<std::string>& out;
  } watch(watcher, seen);

  const seal::MasterKeySet keys = seal::TestMasterKeys("primary", '1');
  PgTurnBus sender(db_->service_dsn("orchestrator"), keys);
  PgTurnBus receiver(db_->service_dsn("orchestrator"), keys);
  ASSERT_TRUE(sender.WaitListening(std::chrono::seconds(5)));
  ASSERT_TRUE(receiver.WaitListening(std::chrono::seconds(5)));
  Received got;
  receiver.Subscribe(got.Sink());
  sender.Publish(Ended("flow-1"));
  const std::vector<TurnSignal> signals = got.Wait(1);
  ASSERT_EQ(signals.size(), 1u);
  EXPECT_EQ(signals[0].kind, TurnSignal::Kind::kEnded);
  EXPECT_EQ(signals[0].conversation, kConversation);
  EXPECT_EQ(signals[0].turn_id, "turn-1");
  EXPECT_EQ(signals[0].set_aside_flow_id, "flow-1");

  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       seen.empty() && std::chrono::steady_clock::now() < until;) {
    watcher.await_notification(0, 100000);
  }
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].find("turn-1"), std::string::npos) << "sealed: " << seen[0];
  EXPECT_EQ(seen[0].find(kConversation), std::string::npos) << seen[0];
  // Opened with the bus's key (as an operator with the master key would),
  // the signal is its ids and nothing more.
  const std::optional<std::string> opened = OpenTurnBusPayload(keys, seen[0]);
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ(nlohmann::json::parse(*opened), (nlohmann::json{{"kind", "ended"},
                                                            {"conversation", kConversation},
                                                            {"turn_id", "turn-1"},
                                                            {"origin", sender.origin()},
                                                            {"set_aside", "flow-1"}}));
  EXPECT_FALSE(OpenTurnBusPayload(seal::TestMasterKeys("primary", '2'), seen[0]))
      << "another master key does not open it";
  receiver.Subscribe(nullptr);
}

TEST_F(PgTurnBusTest, AForgedOrForeignSignalIsDroppedAndARotatedKeyStillOpens) {
  PgTurnBus receiver(db_->service_dsn("orchestrator"),
                     seal::TestMasterKeys("new", '2', {{"old", '1'}}));
  PgTurnBus foreign(db_->service_dsn("orchestrator"), seal::TestMasterKeys("primary", '9'));
  PgTurnBus rotated_from(db_->service_dsn("orchestrator"), seal::TestMasterKeys("old", '1'));
  for (PgTurnBus* bus : {&receiver, &foreign, &rotated_from}) {
    ASSERT_TRUE(bus->WaitListening(std::chrono::seconds(5)));
  }
  Received got;
  receiver.Subscribe(got.Sink());
  // A cancel of every turn of the conversation, as plain text from another
  // service's role (any role may NOTIFY), and one sealed under another
  // master key.
  TurnSignal cancel;
  cancel.kind = TurnSignal::Kind::kCancel;
  cancel.conversation = kConversation;
  {
    pqxx::connection conn(db_->service_dsn("executor"));
    pqxx::nontransaction tx(conn);
    tx.exec_params("SELECT pg_notify('omniforge_turns', $1)", TurnSignalToText(cancel, "forger"));
  }
  foreign.Publish(cancel);
  // Then a signal under the previous master key, which the receiver still has.
  rotated_from.Publish(Ended("flow-before-the-rotation"));
  got.Wait(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // any stray signal lands
  const std::vector<TurnSignal> all = got.Wait(1);
  ASSERT_EQ(all.size(), 1u) << "only the replica's signal is delivered";
  EXPECT_EQ(all[0].kind, TurnSignal::Kind::kEnded);
  EXPECT_EQ(all[0].set_aside_flow_id, "flow-before-the-rotation");
  receiver.Subscribe(nullptr);
}

// A payload sealed as a replica seals one (the bus's format: the master
// key's id, then the signal's text after the time it was sent, sealed with
// the key derived for the bus), sent `age` ago.
std::string ReplicaPayload(const seal::MasterKeySet& keys, const TurnSignal& signal,
                           std::chrono::milliseconds age) {
  const auto sent = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch()) -
                    age;
  const seal::DataKey key{1, seal::DerivedKey(keys.current, "ofbus001")};
  return keys.current_id + "|" +
         seal::SealText(key, std::to_string(sent.count()) + "|" + TurnSignalToText(signal, "a"),
                        "omniforge-turn-bus");
}

TEST_F(PgTurnBusTest, ACapturedPayloadReplayedAfterAMinuteIsDropped) {
  const seal::MasterKeySet keys = seal::TestMasterKeys("primary", '4');
  PgTurnBus receiver(db_->service_dsn("orchestrator"), keys);
  ASSERT_TRUE(receiver.WaitListening(std::chrono::seconds(5)));
  Received got;
  receiver.Subscribe(got.Sink());
  {
    pqxx::connection conn(db_->dsn());
    pqxx::nontransaction tx(conn);
    tx.exec_params("SELECT pg_notify('omniforge_turns', $1)",
                   ReplicaPayload(keys, Ended("flow-replayed"), std::chrono::minutes(5)));
    tx.exec_params("SELECT pg_notify('omniforge_turns', $1)",
                   ReplicaPayload(keys, Ended("flow-fresh"), std::chrono::milliseconds(0)));
  }
  got.Wait(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::vector<TurnSignal> all = got.Wait(1);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].set_aside_flow_id, "flow-fresh");
  receiver.Subscribe(nullptr);
}

}  // namespace
}  // namespace omniforge::orchestrator
