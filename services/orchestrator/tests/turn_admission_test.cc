// The fairness bounds at StreamChat's door, without a server: how many
// turns of one conversation and of one user are let in at once, what a
// refusal says, and that places come back when turns end.
#include "services/orchestrator/limits/turn_admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "libs/core/error_reason.h"
#include "libs/core/metrics.h"
#include "libs/core/retry_hint.h"

namespace omniforge::orchestrator {
namespace {

using ::testing::HasSubstr;

const core::Identity kAlice{"fair-acme", "alice"};
const core::Identity kBob{"fair-acme", "bob"};

double Refusals(const std::string& tenant, const std::string& limit) {
  return core::MetricsRegistry::Global()
      .GetCounter("omniforge_orchestrator_limit_refusals_total", "",
                  {{"tenant", tenant}, {"limit", limit}})
      .Value();
}

void ExpectRefusal(const absl::Status& status, const std::string& limit, const std::string& key) {
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_EQ(core::ReasonOf(status), "TOO_MANY_TURNS");
  EXPECT_EQ(core::ReasonMetadataOf(status).at("limit"), limit);
  EXPECT_THAT(std::string(status.message()), HasSubstr(key));
  const auto retry = core::RetryAfter(status);
  ASSERT_TRUE(retry.has_value());
  EXPECT_GE(*retry, std::chrono::milliseconds(500));
  EXPECT_LE(*retry, std::chrono::milliseconds(1500));
}

TEST(TurnAdmissionTest, AConversationRunsOneTurnWithItsQueueBehindAndRefusesTheNext) {
  TurnAdmission admission({.max_queued_per_conversation = 2, .max_in_flight_per_user = 100});
  const double refused_before = Refusals(kAlice.tenant_id, "conversation_queue");
  std::vector<AdmissionTicket> held;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<AdmissionTicket> ticket = admission.Admit(kAlice, "conversation-1");
    ASSERT_TRUE(ticket.ok()) << i << ": " << ticket.status();
    held.push_back(*std::move(ticket));
  }
  absl::StatusOr<AdmissionTicket> over = admission.Admit(kAlice, "conversation-1");
  ExpectRefusal(over.status(), "conversation_queue", "turn.max_queued_per_conversation (2)");
  EXPECT_EQ(Refusals(kAlice.tenant_id, "conversation_queue"), refused_before + 1);
  // A refusal holds nothing; another conversation of the same user is let in.
  EXPECT_EQ(admission.InFlightOnConversation("conversation-1"), 3);
  EXPECT_TRUE(admission.Admit(kAlice, "conversation-2").ok());
  EXPECT_EQ(admission.InFlightOfUser(kAlice), 3) << "conversation-2's ticket was dropped";

  // A turn that ends gives its place back.
  held.pop_back();
  EXPECT_EQ(admission.InFlightOnConversation("conversation-1"), 2);
  EXPECT_TRUE(admission.Admit(kAlice, "conversation-1").ok());
}

TEST(TurnAdmissionTest, AUsersTurnsOverAllConversationsAreBoundedAndOtherUsersAreNot) {
  TurnAdmission admission({.max_queued_per_conversation = 8, .max_in_flight_per_user = 3});
  const double refused_before = Refusals(kAlice.tenant_id, "user_in_flight");
  std::vector<AdmissionTicket> held;
  // A turn that starts a conversation has no conversation yet: the user's
  // bound only.
  for (const char* conversation : {"a", "b", ""}) {
    absl::StatusOr<AdmissionTicket> ticket = admission.Admit(kAlice, conversation);
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    held.push_back(*std::move(ticket));
  }
  ExpectRefusal(admission.Admit(kAlice, "c").status(), "user_in_flight",
                "turn.max_in_flight_per_user (3)");
  ExpectRefusal(admission.Admit(kAlice, "").status(), "user_in_flight", "alice");
  EXPECT_EQ(Refusals(kAlice.tenant_id, "user_in_flight"), refused_before + 2);
  EXPECT_EQ(admission.InFlightOnConversation("c"), 0);
  EXPECT_TRUE(admission.Admit(kBob, "c").ok());

  held.clear();
  EXPECT_EQ(admission.InFlightOfUser(kAlice), 0);
  EXPECT_EQ(admission.InFlightOnConversation("a"), 0);
}

TEST(TurnAdmissionTest, ATicketGivesItsPlaceBackOnceWhereverItIsMoved) {
  TurnAdmission admission({.max_queued_per_conversation = 0, .max_in_flight_per_user = 1});
  absl::StatusOr<AdmissionTicket> first = admission.Admit(kAlice, "conversation");
  ASSERT_TRUE(first.ok());
  AdmissionTicket moved = *std::move(first);
  AdmissionTicket assigned;
  assigned = std::move(moved);
  EXPECT_EQ(admission.InFlightOfUser(kAlice), 1);
  EXPECT_FALSE(admission.Admit(kAlice, "conversation").ok());
  assigned.Release();
  assigned.Release();
  EXPECT_EQ(admission.InFlightOfUser(kAlice), 0);
  EXPECT_EQ(admission.InFlightOnConversation("conversation"), 0);
  EXPECT_TRUE(admission.Admit(kAlice, "conversation").ok());
}

TEST(TurnAdmissionTest, ConcurrentCallersNeverGetMoreThanTheBound) {
  constexpr int kBound = 5;  // one running and four waiting
  TurnAdmission admission(
      {.max_queued_per_conversation = kBound - 1, .max_in_flight_per_user = 64});
  std::atomic<int> in_flight{0};
  std::atomic<int> most{0};
  std::atomic<int> admitted{0};
  constexpr int kCallers = 8;
  std::vector<std::thread> callers;
  callers.reserve(kCallers);
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        absl::StatusOr<AdmissionTicket> ticket = admission.Admit(kAlice, "busy");
        if (!ticket.ok()) continue;
        ++admitted;
        const int now = ++in_flight;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --in_flight;
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_LE(most.load(), kBound);
  EXPECT_GT(admitted.load(), 0);
  EXPECT_EQ(admission.InFlightOnConversation("busy"), 0);
  EXPECT_EQ(admission.InFlightOfUser(kAlice), 0);
}

}  // namespace
}  // namespace omniforge::orchestrator
