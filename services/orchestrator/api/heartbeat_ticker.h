// Ticks the open chat streams so that each can send a heartbeat when its
// turn has been silent for the configured interval (proxies close streams
// idle for too long). One thread for all streams; a stream is ticked until
// its subscription goes. No gRPC here.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace omniforge::orchestrator {

class HeartbeatTicker final {
 public:
  // `interval` 0: never ticks (Subscribe returns null).
  explicit HeartbeatTicker(std::chrono::milliseconds interval);
  ~HeartbeatTicker();
  HeartbeatTicker(const HeartbeatTicker&) = delete;
  HeartbeatTicker& operator=(const HeartbeatTicker&) = delete;

  std::chrono::milliseconds interval() const { return interval_; }

  // Unsubscribes when it goes; once its destructor returned, `tick` is not
  // running and is never called again.
  class Subscription {
   public:
    ~Subscription();
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;

   private:
    friend class HeartbeatTicker;
    Subscription(HeartbeatTicker& ticker, int id) : ticker_(ticker), id_(id) {}
    HeartbeatTicker& ticker_;
    const int id_;
  };
  // `tick` is called from the ticker's thread several times per interval;
  // it must not block. Thread-safe.
  std::unique_ptr<Subscription> Subscribe(std::function<void()> tick);

 private:
  void Loop();

  const std::chrono::milliseconds interval_;
  absl::Mutex mu_;
  // Held while ticks run, so that an unsubscribe waits for its tick.
  absl::Mutex ticking_;
  std::map<int, std::function<void()>> ticks_ ABSL_GUARDED_BY(mu_);
  int next_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace omniforge::orchestrator
