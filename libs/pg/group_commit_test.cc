#include "libs/pg/group_commit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

namespace omniforge::pg {
namespace {

struct Item {
  int value;
  std::function<void(absl::Status)> done;
};

TEST(GroupCommitQueueTest, ConcurrentItemsShareBatchesAndAllComplete) {
  std::atomic<int> batches{0};
  std::atomic<int> largest{0};
  std::mutex gate;
  std::unique_lock hold(gate);  // the first batch waits until the rest is queued
  GroupCommitQueue<Item> queue(
      1, 64, 1000,
      [&](std::vector<Item>& batch) {
        std::lock_guard wait(gate);
        ++batches;
        largest = std::max<int>(largest, batch.size());
        for (Item& item : batch) item.done(absl::OkStatus());
      },
      [](Item& item, const absl::Status& why) { item.done(why); });
  std::vector<std::future<absl::Status>> results;
  for (int i = 0; i < 20; ++i) {
    auto promise = std::make_shared<std::promise<absl::Status>>();
    results.push_back(promise->get_future());
    queue.Submit({i, [promise](const absl::Status& s) { promise->set_value(s); }});
  }
  hold.unlock();
  for (auto& r : results) EXPECT_TRUE(r.get().ok());
  EXPECT_LT(batches.load(), 20);
  EXPECT_GT(largest.load(), 1);
}

TEST(GroupCommitQueueTest, AFullQueueRejectsAtOnce) {
  // Declared before the queue: its destructor completes what is queued.
  std::vector<absl::Status> statuses(4);
  std::mutex mu;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> first_taken;
  std::atomic<bool> signalled{false};
  GroupCommitQueue<Item> queue(
      1, 1, 2,
      [&](std::vector<Item>& batch) {
        if (!signalled.exchange(true)) first_taken.set_value();
        released.wait();
        for (Item& item : batch) item.done(absl::OkStatus());
      },
      [](Item& item, const absl::Status& why) { item.done(why); });
  auto record = [&](int i) {
    return [&, i](const absl::Status& s) {
      std::lock_guard lock(mu);
      statuses[i] = s;
    };
  };
  queue.Submit({0, record(0)});
  first_taken.get_future().wait();  // item 0 is being committed, queue empty
  queue.Submit({1, record(1)});
  queue.Submit({2, record(2)});
  queue.Submit({3, record(3)});  // the queue holds two: this one is refused
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(statuses[3].code(), absl::StatusCode::kResourceExhausted);
  }
  release.set_value();
}

TEST(GroupCommitQueueTest, ACommitterHandsTheTurnOnOnceOnlyItsCommitIsLeft) {
  // The first batch says it has executed, then waits in its "commit" until
  // the second batch has been taken: that can only happen if the turn
  // passed on while the first one was still committing.
  std::promise<void> second_started;
  std::atomic<int> taken{0};
  std::atomic<bool> overlapped{false};
  std::vector<std::future<absl::Status>> results;
  {
    GroupCommitQueue<Item> queue(
        2, 1, 100,
        [&](std::vector<Item>& batch, const std::function<void()>& executed) {
          const int n = taken++;
          executed();
          if (n == 0) {
            overlapped = second_started.get_future().wait_for(std::chrono::seconds(10)) ==
                         std::future_status::ready;
          } else if (n == 1) {
            second_started.set_value();
          }
          for (Item& item : batch) item.done(absl::OkStatus());
        },
        [](Item& item, const absl::Status& why) { item.done(why); });
    for (int i = 0; i < 2; ++i) {
      auto promise = std::make_shared<std::promise<absl::Status>>();
      results.push_back(promise->get_future());
      queue.Submit({i, [promise](const absl::Status& s) { promise->set_value(s); }});
    }
    for (auto& r : results) EXPECT_TRUE(r.get().ok());
  }
  EXPECT_TRUE(overlapped);
}

TEST(GroupCommitQueueTest, BatchesThatDoNotHandTheTurnOnNeverOverlap) {
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::vector<std::future<absl::Status>> results;
  {
    GroupCommitQueue<Item> queue(
        4, 1, 1000,
        [&](std::vector<Item>& batch) {
          most = std::max(most.load(), ++running);
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          --running;
          for (Item& item : batch) item.done(absl::OkStatus());
        },
        [](Item& item, const absl::Status& why) { item.done(why); });
    for (int i = 0; i < 20; ++i) {
      auto promise = std::make_shared<std::promise<absl::Status>>();
      results.push_back(promise->get_future());
      queue.Submit({i, [promise](const absl::Status& s) { promise->set_value(s); }});
    }
    for (auto& r : results) EXPECT_TRUE(r.get().ok());
  }
  EXPECT_EQ(most.load(), 1);
}

TEST(GroupCommitQueueTest, ItemsThatArriveWhileTheCommitterLingersShareOneBatch) {
  std::mutex mu;
  std::vector<size_t> batch_sizes;
  std::promise<void> all_written;
  int written = 0;
  GroupCommitQueue<Item> queue(
      1, 64, 1000,
      [&](std::vector<Item>& batch) {
        std::lock_guard lock(mu);
        batch_sizes.push_back(batch.size());
        written += static_cast<int>(batch.size());
        if (written == 5) all_written.set_value();
      },
      [](Item&, const absl::Status&) {}, std::chrono::milliseconds(300));
  // The first wakes the committer; the other four come while it lingers.
  for (int i = 0; i < 5; ++i) queue.Submit({i, nullptr});
  all_written.get_future().wait();
  std::lock_guard lock(mu);
  EXPECT_EQ(batch_sizes, std::vector<size_t>{5});
}

TEST(GroupCommitQueueTest, DestructionWritesWhatIsLingering) {
  std::atomic<int> written{0};
  {
    GroupCommitQueue<Item> queue(
        1, 64, 1000, [&](std::vector<Item>& batch) { written += static_cast<int>(batch.size()); },
        [](Item&, const absl::Status&) {}, std::chrono::milliseconds(100));
    for (int i = 0; i < 3; ++i) queue.Submit({i, nullptr});
  }
  EXPECT_EQ(written.load(), 3);
}

}  // namespace
}  // namespace omniforge::pg
