#include "libs/core/metrics.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <variant>

#include "absl/strings/str_cat.h"

namespace omniforge::core {
namespace {

const std::vector<double>& DefaultLatencyBounds() {
  static const auto* const bounds =
      new std::vector<double>{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                              1,      2.5,   5,      10,    20,   30,    60,   90,  120};
  return *bounds;
}

// Misuse of the registry is a programming error that would otherwise produce
// an exposition Prometheus rejects as a whole, losing every metric.
[[noreturn]] void DieMisuse(const std::string& what) {
  std::fprintf(stderr, "omniforge metrics: %s\n", what.c_str());
  std::abort();
}

bool IsValidName(const std::string& name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
                    (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Label sets are stored sorted by name, so {a,b} and {b,a} are one series.
Labels CanonicalLabels(const std::string& metric, Labels labels, bool is_histogram) {
  std::sort(labels.begin(), labels.end());
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& name = labels[i].first;
    if (!IsValidName(name, /*allow_colon=*/false) || name.starts_with("__") ||
        (is_histogram && name == "le")) {
      DieMisuse(absl::StrCat(metric, ": invalid label name \"", name, "\""));
    }
    if (i > 0 && labels[i - 1].first == name) {
      DieMisuse(absl::StrCat(metric, ": duplicate label \"", name, "\""));
    }
  }
  return labels;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

void AppendEscaped(std::string& out, const std::string& s, bool escape_quote) {
  for (const char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (escape_quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// Writes `{k="v",...}` (nothing for an empty set); `le` is the histogram
// bucket label, appended last when given.
void AppendLabels(std::string& out, const Labels& labels, const std::string* le) {
  if (labels.empty() && le == nullptr) return;
  out += '{';
  bool first = true;
  for (const auto& [name, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += name;
    out += "=\"";
    AppendEscaped(out, value, /*escape_quote=*/true);
    out += '"';
  }
  if (le != nullptr) {
    if (!first) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
}

void AppendSample(std::string& out, const std::string& name, const Labels& labels,
                  const std::string* le, const std::string& value) {
  out += name;
  AppendLabels(out, labels, le);
  out += ' ';
  out += value;
  out += '\n';
}

// Histogram bounds: sorted, unique, finite (+Inf is always the last bucket).
std::vector<double> NormalizeBounds(std::vector<double> bounds) {
  std::erase_if(bounds, [](double b) { return !std::isfinite(b); });
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  return bounds;
}

}  // namespace

void Counter::Inc(double v) {
  // A counter only goes up; a negative or NaN increment is dropped rather
  // than corrupting every rate() computed from it.
  if (!(v >= 0)) return;
  value_.fetch_add(v, std::memory_order_relaxed);
}

void Counter::RaiseTo(double total) {
  double now = value_.load(std::memory_order_relaxed);
  while (total > now && !value_.compare_exchange_weak(now, total, std::memory_order_relaxed)) {
  }
}

double Counter::Value() const { return value_.load(std::memory_order_relaxed); }

void Gauge::Set(double v) { value_.store(v, std::memory_order_relaxed); }

void Gauge::Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }

double Gauge::Value() const { return value_.load(std::memory_order_relaxed); }

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(NormalizeBounds(std::move(upper_bounds))),
      buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double v) {
  // NaN belongs to no bucket and would turn the sum into NaN for good.
  if (std::isnan(v)) return;
  const auto bucket =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> counts(bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    counts[i] = running;
  }
  return counts;
}

double Histogram::Sum() const { return sum_.load(std::memory_order_relaxed); }

uint64_t Histogram::Count() const { return count_.load(std::memory_order_relaxed); }

struct MetricsRegistry::Family {
  using Series =
      std::variant<std::unique_ptr<Counter>, std::unique_ptr<Gauge>, std::unique_ptr<Histogram>>;
  const char* type;  // "counter", "gauge" or "histogram".
  std::string help;
  std::vector<double> bounds;  // Histograms only.
  std::map<Labels, Series> series;
};

namespace {

constexpr const char* kCounterType = "counter";
constexpr const char* kGaugeType = "gauge";
constexpr const char* kHistogramType = "histogram";

// Templates so that they can work on the registry's private Family type.
template <typename FamilyT>
FamilyT& FamilyFor(std::map<std::string, std::unique_ptr<FamilyT>>& families,
                   const std::string& name, const std::string& help, const char* type) {
  if (!IsValidName(name, /*allow_colon=*/true)) {
    DieMisuse("invalid metric name \"" + name + "\"");
  }
  std::unique_ptr<FamilyT>& family = families[name];
  if (family == nullptr) {
    family = std::make_unique<FamilyT>();
    family->type = type;
    family->help = help;
  } else if (std::string_view(family->type) != type) {
    DieMisuse(name + " requested as a " + type + " but is a " + family->type);
  }
  return *family;
}

template <typename Metric, typename FamilyT, typename Make>
Metric& SeriesFor(FamilyT& family, const std::string& name, const Labels& labels, Make make) {
  const bool is_histogram = std::string_view(family.type) == kHistogramType;
  auto [it, inserted] = family.series.try_emplace(CanonicalLabels(name, labels, is_histogram));
  if (inserted) it->second = make();
  return *std::get<std::unique_ptr<Metric>>(it->second);
}

}  // namespace

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

Counter& MetricsRegistry::GetCounter(const std::string& name, const std::string& help,
                                     const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  return SeriesFor<Counter>(FamilyFor(families_, name, help, kCounterType), name, labels,
                            [] { return std::make_unique<Counter>(); });
}

Gauge& MetricsRegistry::GetGauge(const std::string& name, const std::string& help,
                                 const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  return SeriesFor<Gauge>(FamilyFor(families_, name, help, kGaugeType), name, labels,
                          [] { return std::make_unique<Gauge>(); });
}

Histogram& MetricsRegistry::GetHistogram(const std::string& name, const std::string& help,
                                         const Labels& labels, std::vector<double> upper_bounds) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& family = FamilyFor(families_, name, help, kHistogramType);
  // Every series of a family shares its buckets (Prometheus aggregates
  // across series by `le`); the first request fixes them.
  const bool explicit_bounds = !upper_bounds.empty();
  std::vector<double> bounds =
      explicit_bounds ? NormalizeBounds(std::move(upper_bounds)) : DefaultLatencyBounds();
  if (family.series.empty()) {
    family.bounds = std::move(bounds);
  } else if (explicit_bounds && bounds != family.bounds) {
    DieMisuse(name + ": histogram requested with different buckets");
  }
  return SeriesFor<Histogram>(family, name, labels,
                              [&family] { return std::make_unique<Histogram>(family.bounds); });
}

void MetricsRegistry::AddCollector(std::function<void()> collect) {
  std::lock_guard<std::mutex> lock(mu_);
  collectors_.push_back(std::move(collect));
}

std::string MetricsRegistry::Render() const {
  std::vector<std::function<void()>> collectors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    collectors = collectors_;
  }
  for (const auto& collect : collectors) collect();
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, family] : families_) {
    out += "# HELP ";
    out += name;
    out += ' ';
    AppendEscaped(out, family->help, /*escape_quote=*/false);
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += family->type;
    out += '\n';
    for (const auto& [labels, series] : family->series) {
      if (const auto* c = std::get_if<std::unique_ptr<Counter>>(&series)) {
        AppendSample(out, name, labels, nullptr, FormatValue((*c)->Value()));
      } else if (const auto* g = std::get_if<std::unique_ptr<Gauge>>(&series)) {
        AppendSample(out, name, labels, nullptr, FormatValue((*g)->Value()));
      } else {
        const Histogram& h = *std::get<std::unique_ptr<Histogram>>(series);
        const std::vector<uint64_t> counts = h.BucketCounts();
        const std::string bucket_name = name + "_bucket";
        for (size_t i = 0; i < counts.size(); ++i) {
          const std::string le =
              i < h.UpperBounds().size() ? FormatValue(h.UpperBounds()[i]) : "+Inf";
          AppendSample(out, bucket_name, labels, &le, std::to_string(counts[i]));
        }
        AppendSample(out, name + "_sum", labels, nullptr, FormatValue(h.Sum()));
        AppendSample(out, name + "_count", labels, nullptr, std::to_string(h.Count()));
      }
    }
  }
  return out;
}

MetricsRegistry& MetricsRegistry::Global() {
  // Never destroyed: threads may still record metrics during exit.
  static auto* const registry = new MetricsRegistry();
  return *registry;
}

struct MetricsHttpServer::Impl {
  explicit Impl(const MetricsRegistry& r) : registry(r) {}

  const MetricsRegistry& registry;
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> listen_returned{false};
};

MetricsHttpServer::MetricsHttpServer(const MetricsRegistry& registry)
    : impl_(std::make_unique<Impl>(registry)) {
  const MetricsRegistry* reg = &registry;
  impl_->server.Get("/metrics", [reg](const httplib::Request&, httplib::Response& res) {
    res.set_content(reg->Render(), "text/plain; version=0.0.4");
  });
  impl_->server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  // httplib's default also sets SO_REUSEPORT, which would let a second
  // process bind the same port and silently take half of the scrapes.
  impl_->server.set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  // Scrapes are rare and cheap; the default pool would start a thread per
  // core for nothing.
  impl_->server.new_task_queue = [] { return new httplib::ThreadPool(2); };
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

int MetricsHttpServer::Start(const std::string& host, int port) {
  if (impl_->thread.joinable()) return -1;
  int bound = port;
  if (port == 0) {
    bound = impl_->server.bind_to_any_port(host);
  } else if (!impl_->server.bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound < 0) return -1;
  impl_->listen_returned = false;
  impl_->thread = std::thread([impl = impl_.get()] {
    impl->server.listen_after_bind();
    impl->listen_returned = true;
  });
  // httplib's stop() is a no-op until the accept loop runs, so a Stop()
  // right after Start() would hang in join without this wait.
  while (!impl_->server.is_running() && !impl_->listen_returned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return bound;
}

void MetricsHttpServer::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

}  // namespace omniforge::core
