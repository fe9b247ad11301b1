#include "services/orchestrator/downstream/window_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "services/conversation/src/context_window.h"

namespace omniforge::orchestrator {
namespace {

namespace convpb = conversation::v1;

const core::Identity kAlice{"acme", "alice"};
const core::Identity kBob{"acme", "bob"};

convpb::Message Msg(int64_t seq, convpb::Role role, int tokens) {
  convpb::Message m;
  m.set_id("m" + std::to_string(seq));
  m.set_conversation_id("c1");
  m.set_seq(seq);
  m.set_role(role);
  m.set_content(std::string(static_cast<size_t>(tokens) * 4, 'x'));
  m.set_token_count(tokens);
  m.set_metadata_json("{}");
  return m;
}

// The window the conversation service would answer for `all` (oldest
// first), by its own assembler.
std::vector<int64_t> ServiceWindow(const std::vector<convpb::Message>& all, int budget) {
  conversation::ContextWindowAssembler assembler({.token_budget = budget});
  size_t offered = 0;
  // NOLINTNEXTLINE(modernize-loop-convert): clang 14 cannot compile libstdc++ 12's views::reverse
  for (auto m = all.rbegin(); m != all.rend(); ++m) {
    conversation::Message message;
    message.seq = m->seq();
    message.role = static_cast<conversation::Role>(m->role());
    message.token_count = m->token_count();
    ++offered;
    if (!assembler.Offer(std::move(message))) break;
  }
  std::vector<int64_t> seqs;
  for (const auto& m : std::move(assembler).Finish(offered < all.size()).messages) {
    seqs.push_back(m.seq);
  }
  return seqs;
}

std::vector<int64_t> Seqs(const convpb::GetContextWindowResponse& window) {
  std::vector<int64_t> seqs;
  for (const auto& m : window.messages()) seqs.push_back(m.seq());
  return seqs;
}

// Turn after turn of random sizes, the kept window is the one the service
// would read: the same messages, in the same order.
TEST(WindowCacheTest, KeptWindowsAreTheServicesWindowsTurnAfterTurn) {
  constexpr int kBudget = 300;
  WindowCache cache({.token_budget = kBudget});
  std::mt19937 random(7);
  std::uniform_int_distribution<int> tokens(1, 120);
  std::vector<convpb::Message> all;
  convpb::GetContextWindowResponse window;  // before the first turn: empty
  for (int turn = 0; turn < 60; ++turn) {
    const convpb::Message user =
        Msg(static_cast<int64_t>(all.size()) + 1, convpb::ROLE_USER, tokens(random));
    if (turn > 0) {
      auto kept = cache.Take(kAlice, "c1", user);
      ASSERT_TRUE(kept.has_value()) << "turn " << turn;
      window = *kept;
    }
    EXPECT_EQ(Seqs(window), ServiceWindow(all, kBudget)) << "turn " << turn;
    all.push_back(user);
    const convpb::Message reply =
        Msg(static_cast<int64_t>(all.size()) + 1, convpb::ROLE_ASSISTANT, tokens(random));
    all.push_back(reply);
    cache.Advance(kAlice, "c1", window, user, reply);
  }
  EXPECT_GT(cache.bytes(), 0u);
}

TEST(WindowCacheTest, AnythingWrittenInBetweenDropsTheWindow) {
  WindowCache cache({});
  convpb::GetContextWindowResponse none;
  cache.Advance(kAlice, "c1", none, Msg(1, convpb::ROLE_USER, 5),
                Msg(2, convpb::ROLE_ASSISTANT, 5));
  ASSERT_TRUE(cache.Has(kAlice, "c1"));
  // Another writer stored seq 3: this turn's message is 4.
  EXPECT_FALSE(cache.Take(kAlice, "c1", Msg(4, convpb::ROLE_USER, 5)).has_value());
  EXPECT_FALSE(cache.Has(kAlice, "c1"));
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST(WindowCacheTest, AWindowIsKeptOnlyForMessagesStoredInARow) {
  WindowCache cache({});
  convpb::GetContextWindowResponse history;
  *history.add_messages() = Msg(1, convpb::ROLE_USER, 5);
  *history.add_messages() = Msg(2, convpb::ROLE_ASSISTANT, 5);
  // The history ends at 2 but the turn's message is 4: not kept.
  cache.Advance(kAlice, "c1", history, Msg(4, convpb::ROLE_USER, 5),
                Msg(5, convpb::ROLE_ASSISTANT, 5));
  EXPECT_FALSE(cache.Has(kAlice, "c1"));
  // The reply is not right after the message: not kept either.
  cache.Advance(kAlice, "c1", history, Msg(3, convpb::ROLE_USER, 5),
                Msg(5, convpb::ROLE_ASSISTANT, 5));
  EXPECT_FALSE(cache.Has(kAlice, "c1"));
  cache.Advance(kAlice, "c1", history, Msg(3, convpb::ROLE_USER, 5),
                Msg(4, convpb::ROLE_ASSISTANT, 5));
  ASSERT_TRUE(cache.Has(kAlice, "c1"));
  auto kept = cache.Take(kAlice, "c1", Msg(5, convpb::ROLE_USER, 5));
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(Seqs(*kept), (std::vector<int64_t>{1, 2, 3, 4}));
}

// Read looks at the kept window without taking it; the version it tells is
// the one Take tells for the same window, and a window kept later has
// another.
TEST(WindowCacheTest, ReadLeavesTheWindowAndTakeTellsWhichOneItWas) {
  WindowCache cache({});
  auto seqs_read = [&](const core::Identity& who) {
    std::optional<WindowCache::Kept> kept = cache.Read(who, "c1");
    return kept ? std::make_pair(std::optional<uint64_t>(kept->version), Seqs(*kept->window))
                : std::make_pair(std::optional<uint64_t>(), std::vector<int64_t>());
  };
  EXPECT_FALSE(seqs_read(kAlice).first.has_value());

  convpb::GetContextWindowResponse none;
  cache.Advance(kAlice, "c1", none, Msg(1, convpb::ROLE_USER, 5),
                Msg(2, convpb::ROLE_ASSISTANT, 5));
  const auto [first, first_seqs] = seqs_read(kAlice);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first_seqs, (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(seqs_read(kBob).first.has_value());
  EXPECT_TRUE(cache.Has(kAlice, "c1"));

  // Replaced before the turn takes it: the versions differ.
  convpb::GetContextWindowResponse history;
  *history.add_messages() = Msg(1, convpb::ROLE_USER, 5);
  *history.add_messages() = Msg(2, convpb::ROLE_ASSISTANT, 5);
  cache.Advance(kAlice, "c1", history, Msg(3, convpb::ROLE_USER, 5),
                Msg(4, convpb::ROLE_ASSISTANT, 5));
  const auto [second, second_seqs] = seqs_read(kAlice);
  ASSERT_TRUE(second.has_value());
  EXPECT_NE(*second, *first);
  EXPECT_EQ(second_seqs, (std::vector<int64_t>{1, 2, 3, 4}));

  uint64_t taken = 0;
  auto kept = cache.Take(kAlice, "c1", Msg(5, convpb::ROLE_USER, 5), &taken);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(taken, *second);
  EXPECT_EQ(Seqs(*kept), second_seqs);
  EXPECT_FALSE(seqs_read(kAlice).first.has_value());
}

// A window being read when the turn takes it stays whole for its reader:
// Take copies it then, and moves it out once nobody else holds it.
TEST(WindowCacheTest, AWindowStillBeingReadIsCopiedByTake) {
  WindowCache cache({});
  convpb::GetContextWindowResponse none;
  cache.Advance(kAlice, "c1", none, Msg(1, convpb::ROLE_USER, 5),
                Msg(2, convpb::ROLE_ASSISTANT, 5));
  std::optional<WindowCache::Kept> reading = cache.Read(kAlice, "c1");
  ASSERT_TRUE(reading.has_value());
  auto taken = cache.Take(kAlice, "c1", Msg(3, convpb::ROLE_USER, 5));
  ASSERT_TRUE(taken.has_value());
  taken->mutable_messages()->Clear();  // the turn trims what it took
  EXPECT_EQ(Seqs(*reading->window), (std::vector<int64_t>{1, 2}));

  cache.Advance(kAlice, "c1", none, Msg(1, convpb::ROLE_USER, 5),
                Msg(2, convpb::ROLE_ASSISTANT, 5));
  std::shared_ptr<const convpb::GetContextWindowResponse> read = cache.Read(kAlice, "c1")->window;
  const convpb::Message* first = &read->messages(0);
  read.reset();
  taken = cache.Take(kAlice, "c1", Msg(3, convpb::ROLE_USER, 5));
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(Seqs(*taken), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(&taken->messages(0), first);  // moved, not copied
}

TEST(WindowCacheTest, AnotherUserOrTenantGetsNothing) {
  WindowCache cache({});
  convpb::GetContextWindowResponse none;
  cache.Advance(kAlice, "c1", none, Msg(1, convpb::ROLE_USER, 5),
                Msg(2, convpb::ROLE_ASSISTANT, 5));
  EXPECT_FALSE(cache.Has(kBob, "c1"));
  EXPECT_FALSE(cache.Has({"other-tenant", "alice"}, "c1"));
  EXPECT_FALSE(cache.Take(kBob, "c1", Msg(3, convpb::ROLE_USER, 5)).has_value());
  // Bob's attempt dropped it: Alice's next turn reads her window.
  EXPECT_FALSE(cache.Has(kAlice, "c1"));
}

TEST(WindowCacheTest, TheLeastRecentlyUsedGoFirstWithinTheBytes) {
  convpb::GetContextWindowResponse none;
  // One conversation's window is about 1 KiB here (two 500-byte messages).
  WindowCache cache({.max_bytes = 3000});
  for (const char* c : {"c1", "c2"}) {
    cache.Advance(kAlice, c, none, Msg(1, convpb::ROLE_USER, 125),
                  Msg(2, convpb::ROLE_ASSISTANT, 125));
  }
  ASSERT_TRUE(cache.Has(kAlice, "c1"));
  ASSERT_TRUE(cache.Has(kAlice, "c2"));
  EXPECT_LE(cache.bytes(), 3000u);
  // A turn takes c1's window out and hands the next one back.
  auto kept = cache.Take(kAlice, "c1", Msg(3, convpb::ROLE_USER, 5));
  ASSERT_TRUE(kept.has_value());
  EXPECT_FALSE(cache.Has(kAlice, "c1"));
  cache.Advance(kAlice, "c1", *kept, Msg(3, convpb::ROLE_USER, 5),
                Msg(4, convpb::ROLE_ASSISTANT, 5));
  // c3 needs room: c2, used least recently, goes.
  cache.Advance(kAlice, "c3", none, Msg(1, convpb::ROLE_USER, 125),
                Msg(2, convpb::ROLE_ASSISTANT, 125));
  EXPECT_TRUE(cache.Has(kAlice, "c1"));
  EXPECT_FALSE(cache.Has(kAlice, "c2"));
  EXPECT_TRUE(cache.Has(kAlice, "c3"));
  EXPECT_LE(cache.bytes(), 3000u);
  // Turned off: nothing is kept.
  WindowCache off({.max_bytes = 0});
  off.Advance(kAlice, "c1", none, Msg(1, convpb::ROLE_USER, 5), Msg(2, convpb::ROLE_ASSISTANT, 5));
  EXPECT_FALSE(off.Has(kAlice, "c1"));
}

}  // namespace
}  // namespace omniforge::orchestrator
