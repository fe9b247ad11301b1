// Process metrics, exposed in the Prometheus text format.
//
// Counters, gauges and histograms are created once (by name plus label
// values) and then updated lock-free from any thread. Render() produces the
// text exposition (format 0.0.4) with HELP and TYPE lines.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace omniforge::core {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter final {
 public:
  void Inc(double v = 1.0);
  // For a counter that mirrors a total kept elsewhere (the kernel's count of
  // CPU time): moves it up to `total`, never down.
  void RaiseTo(double total);
  double Value() const;

 private:
  std::atomic<double> value_{0.0};
};

class Gauge final {
 public:
  void Set(double v);
  void Add(double v);
  double Value() const;

 private:
  std::atomic<double> value_{0.0};
};

class Histogram final {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);
  // Cumulative counts per bucket (the +Inf bucket last), sum and count.
  std::vector<uint64_t> BucketCounts() const;
  double Sum() const;
  uint64_t Count() const;
  const std::vector<double>& UpperBounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0.0};
  std::atomic<uint64_t> count_{0};
};

// Owns every metric of a process. Lookups take a mutex; keep the returned
// reference (valid for the registry's lifetime) on hot paths.
class MetricsRegistry final {
 public:
  // Declared here, defined where Family is complete.
  MetricsRegistry();
  ~MetricsRegistry();

  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});
  // Default buckets are latency seconds from 0.5 ms to 120 s (a chat turn
  // may run 90 s).
  Histogram& GetHistogram(const std::string& name, const std::string& help,
                          const Labels& labels = {}, std::vector<double> upper_bounds = {});
  // Runs `collect` before every Render (outside the registry's lock), to
  // set metrics read from elsewhere (the process's CPU time, memory, ...).
  void AddCollector(std::function<void()> collect);
  std::string Render() const;

  // The process-wide registry.
  static MetricsRegistry& Global();

 private:
  struct Family;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_;
  std::vector<std::function<void()>> collectors_;
};

// Serves GET /metrics (and GET /healthz) over HTTP on host:port in a
// background thread. Port 0 picks a free port.
class MetricsHttpServer final {
 public:
  explicit MetricsHttpServer(const MetricsRegistry& registry);
  ~MetricsHttpServer();
  // Returns the bound port, or -1 when binding failed.
  int Start(const std::string& host, int port);
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace omniforge::core
