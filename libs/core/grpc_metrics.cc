#include "libs/core/grpc_metrics.h"

#include <array>
#include <atomic>
#include <chrono>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace omniforge::core {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::InterceptorBatchMethods;

constexpr size_t kCodes = 17;  // OK .. UNAUTHENTICATED

const char* TypeLabel(int type) {
  // The RpcType order both ServerRpcInfo::Type and ClientRpcInfo::Type keep.
  switch (type) {
    case 0:
      return "unary";
    case 1:
      return "client_stream";
    case 2:
      return "server_stream";
    case 3:
      return "bidi_stream";
    default:
      return "unknown";
  }
}

// The series of one method on one side (server or client), looked up once
// per method; the handled counters are made per code on first use.
class MethodSeries final {
 public:
  MethodSeries(MetricsRegistry& registry, std::string_view side, const char* full_method, int type)
      : registry_(registry), side_(side) {
    const std::string_view full = full_method == nullptr ? "" : full_method;
    const size_t slash = full.rfind('/');
    const bool named = full.size() > 1 && full[0] == '/' && slash != 0 &&
                       slash != std::string_view::npos && slash + 1 < full.size();
    labels_ = {{"grpc_type", TypeLabel(type)},
               {"grpc_service", named ? std::string(full.substr(1, slash - 1)) : "unknown"},
               {"grpc_method", named ? std::string(full.substr(slash + 1)) : "unknown"}};
    started_ = &registry.GetCounter(Name("started_total"), Help("started"), labels_);
    received_ =
        &registry.GetCounter(Name("msg_received_total"), Help("messages received in"), labels_);
    sent_ = &registry.GetCounter(Name("msg_sent_total"), Help("messages sent in"), labels_);
    handling_ = &registry.GetHistogram(
        Name("handling_seconds"),
        absl::StrCat("Time from the start of an RPC to its status, on the ", side_, "."), labels_);
    for (auto& handled : handled_) handled.store(nullptr, std::memory_order_relaxed);
  }

  Counter& started() { return *started_; }
  Counter& received() { return *received_; }
  Counter& sent() { return *sent_; }

  void Handled(grpc::StatusCode code, std::chrono::steady_clock::duration took) {
    handling_->Observe(std::chrono::duration<double>(took).count());
    const auto index = static_cast<size_t>(code);
    if (index >= kCodes) return;
    Counter* counter = handled_[index].load(std::memory_order_acquire);
    if (counter == nullptr) {
      Labels labels = labels_;
      labels.emplace_back("grpc_code", GrpcCodeLabel(code));
      counter =
          &registry_.GetCounter(Name("handled_total"), Help("completed, by status code,"), labels);
      handled_[index].store(counter, std::memory_order_release);
    }
    counter->Inc();
  }

 private:
  std::string Name(absl::string_view what) const { return absl::StrCat("grpc_", side_, "_", what); }
  std::string Help(absl::string_view what) const {
    return absl::StrCat("RPCs (or their stream messages) ", what, " on the ", side_, ".");
  }

  MetricsRegistry& registry_;
  std::string side_;
  Labels labels_;
  Counter* started_;
  Counter* received_;
  Counter* sent_;
  Histogram* handling_;
  std::array<std::atomic<Counter*>, kCodes> handled_;
};

// Every method's series on one side, made on the method's first call and
// kept for the life of the process (the methods are a fixed set).
class SeriesBook final {
 public:
  SeriesBook(MetricsRegistry& registry, std::string_view side) : registry_(registry), side_(side) {}

  MethodSeries& For(const char* full_method, int type) {
    const std::string key = absl::StrCat(type, full_method == nullptr ? "" : full_method);
    absl::MutexLock lock(&mu_);
    std::unique_ptr<MethodSeries>& series = series_[key];
    if (series == nullptr) {
      series = std::make_unique<MethodSeries>(registry_, side_, full_method, type);
    }
    return *series;
  }

 private:
  MetricsRegistry& registry_;
  std::string side_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<MethodSeries>> series_ ABSL_GUARDED_BY(mu_);
};

class ServerMetrics final : public grpc::experimental::Interceptor {
 public:
  explicit ServerMetrics(MethodSeries& series)
      : series_(series), start_(std::chrono::steady_clock::now()) {
    series_.started().Inc();
  }

  void Intercept(InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      series_.received().Inc();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      series_.sent().Inc();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      series_.Handled(methods->GetSendStatus().error_code(),
                      std::chrono::steady_clock::now() - start_);
    }
    methods->Proceed();
  }

 private:
  MethodSeries& series_;
  std::chrono::steady_clock::time_point start_;
};

class ServerMetricsFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ServerMetricsFactory(MetricsRegistry& registry) : book_(registry, "server") {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new ServerMetrics(book_.For(info->method(), static_cast<int>(info->type())));
  }

 private:
  SeriesBook book_;
};

class ClientMetrics final : public grpc::experimental::Interceptor {
 public:
  explicit ClientMetrics(MethodSeries& series)
      : series_(series), start_(std::chrono::steady_clock::now()) {
    series_.started().Inc();
  }

  void Intercept(InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      series_.sent().Inc();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      series_.received().Inc();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_STATUS)) {
      const grpc::Status* status = methods->GetRecvStatus();
      series_.Handled(status == nullptr ? grpc::StatusCode::UNKNOWN : status->error_code(),
                      std::chrono::steady_clock::now() - start_);
    }
    methods->Proceed();
  }

 private:
  MethodSeries& series_;
  std::chrono::steady_clock::time_point start_;
};

class ClientMetricsFactory final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit ClientMetricsFactory(std::shared_ptr<SeriesBook> book) : book_(std::move(book)) {}

  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    return new ClientMetrics(book_->For(info->method(), static_cast<int>(info->type())));
  }

 private:
  std::shared_ptr<SeriesBook> book_;
};

}  // namespace

const char* GrpcCodeLabel(grpc::StatusCode code) {
  static constexpr std::array<const char*, kCodes> kLabels = {
      "OK",       "Canceled",       "Unknown",          "InvalidArgument",   "DeadlineExceeded",
      "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
      "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
      "DataLoss", "Unauthenticated"};
  const auto index = static_cast<size_t>(code);
  return index < kCodes ? kLabels[index] : "Unknown";
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeServerMetricsFactory(
    MetricsRegistry& registry) {
  return std::make_unique<ServerMetricsFactory>(registry);
}

std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
ClientMetricsInterceptors(MetricsRegistry& registry) {
  // Every channel of a registry shares one book of series.
  static absl::Mutex mu(absl::kConstInit);
  static auto* const books =
      new absl::flat_hash_map<MetricsRegistry*, std::shared_ptr<SeriesBook>>();
  std::shared_ptr<SeriesBook> book;
  {
    absl::MutexLock lock(&mu);
    std::shared_ptr<SeriesBook>& shared = (*books)[&registry];
    if (shared == nullptr) shared = std::make_shared<SeriesBook>(registry, "client");
    book = shared;
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<ClientMetricsFactory>(std::move(book)));
  return out;
}

}  // namespace omniforge::core
