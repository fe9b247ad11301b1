#include "libs/trace/otlp_exporter.h"

#include <curl/curl.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"

namespace omniforge::trace {
namespace {

using json = nlohmann::json;

json StringAttribute(const std::string& key, const std::string& value) {
  return {{"key", key}, {"value", {{"stringValue", value}}}};
}

json SpanJson(const SpanRecord& span) {
  json out = {{"traceId", core::TraceIdHex(span.context)},
              {"spanId", core::SpanIdHex(span.context)},
              {"name", span.name},
              {"kind", static_cast<int>(span.kind)},
              {"startTimeUnixNano", std::to_string(span.start_unix_nanos)},
              {"endTimeUnixNano", std::to_string(span.end_unix_nanos)}};
  const bool root = std::all_of(span.parent_span_id.begin(), span.parent_span_id.end(),
                                [](uint8_t b) { return b == 0; });
  if (!root) {
    core::SpanContext parent;
    parent.span_id = span.parent_span_id;
    out["parentSpanId"] = core::SpanIdHex(parent);
  }
  json attributes = json::array();
  for (const auto& [key, value] : span.attributes)
    attributes.push_back(StringAttribute(key, value));
  out["attributes"] = std::move(attributes);
  // STATUS_CODE_ERROR = 2; unset (0) otherwise.
  out["status"] =
      span.error ? json{{"code", 2}, {"message", span.status_message}} : json{{"code", 0}};
  return out;
}

std::string TracesUrl(const std::string& endpoint) {
  if (absl::EndsWith(endpoint, "/v1/traces")) return endpoint;
  std::string base = endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return absl::StrCat(base, "/v1/traces");
}

size_t Discard(char* /*data*/, size_t size, size_t count, void* /*user*/) { return size * count; }

void CountDropped(const char* reason, uint64_t spans) {
  core::MetricsRegistry::Global()
      .GetCounter("omniforge_trace_spans_dropped_total",
                  "Finished spans not exported, by reason (queue_full, export_failed).",
                  {{"reason", reason}})
      .Inc(static_cast<double>(spans));
}

}  // namespace

std::string OtlpJson(const std::vector<SpanRecord>& spans, const std::string& service_name) {
  json list = json::array();
  for (const SpanRecord& span : spans) list.push_back(SpanJson(span));
  json body = {
      {"resourceSpans",
       json::array(
           {{{"resource",
              {{"attributes", json::array({StringAttribute("service.name", service_name)})}}},
             {"scopeSpans",
              json::array({{{"scope", {{"name", "omniforge"}}}, {"spans", std::move(list)}}})}}})}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

OtlpHttpExporter::OtlpHttpExporter(OtlpOptions options)
    : options_(std::move(options)), url_(TracesUrl(options_.endpoint)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  sender_ = std::thread([this] { Run(); });
}

OtlpHttpExporter::~OtlpHttpExporter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.Signal();
  sender_.join();
}

void OtlpHttpExporter::Export(SpanRecord record) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || queue_.size() >= options_.max_queue_spans) {
      ++dropped_;
      CountDropped("queue_full", 1);
      return;
    }
    queue_.push_back(std::move(record));
    ++queued_total_;
    if (queue_.size() < options_.max_batch_spans) return;
  }
  wake_.Signal();
}

bool OtlpHttpExporter::Flush(std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  const uint64_t target = queued_total_;
  flush_now_ = true;
  wake_.Signal();
  const absl::Time until = absl::Now() + absl::FromChrono(timeout);
  while (done_total_ < target) {
    if (wake_.WaitWithDeadline(&mu_, until) && done_total_ < target) return false;
  }
  return true;
}

uint64_t OtlpHttpExporter::exported() const {
  absl::MutexLock lock(&mu_);
  return exported_;
}

uint64_t OtlpHttpExporter::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

void OtlpHttpExporter::Run() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    const absl::Time until = absl::Now() + absl::FromChrono(options_.flush_interval);
    while (!stopping_ && !flush_now_ && queue_.size() < options_.max_batch_spans) {
      if (wake_.WaitWithDeadline(&mu_, until)) break;
    }
    flush_now_ = false;
    while (!queue_.empty()) {
      std::vector<SpanRecord> batch;
      while (!queue_.empty() && batch.size() < options_.max_batch_spans) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      mu_.Unlock();
      const bool sent = Send(batch);
      if (!sent) CountDropped("export_failed", batch.size());
      mu_.Lock();
      (sent ? exported_ : dropped_) += batch.size();
      done_total_ += batch.size();
      if (sent) {
        core::MetricsRegistry::Global()
            .GetCounter("omniforge_trace_spans_exported_total", "Spans the collector accepted.")
            .Inc(static_cast<double>(batch.size()));
      }
    }
    wake_.SignalAll();  // Flush waiters
    if (stopping_) return;
  }
}

bool OtlpHttpExporter::Send(const std::vector<SpanRecord>& batch) const {
  const std::string body = OtlpJson(batch, options_.service_name);
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return false;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, url_.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Discard);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.export_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.export_timeout.count()));
  const CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK || status < 200 || status >= 300) {
    core::LogWarn(
        "spans not exported",
        {{"component", "tracing"},
         {"endpoint", url_},
         {"error", code != CURLE_OK ? curl_easy_strerror(code) : absl::StrCat("HTTP ", status)},
         {"spans", std::to_string(batch.size())}});
    return false;
  }
  return true;
}

}  // namespace omniforge::trace
