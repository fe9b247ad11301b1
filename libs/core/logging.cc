#include "libs/core/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/ambient.h"
#include "libs/core/secrets.h"

namespace omniforge::core {
namespace {

struct LoggerState {
  absl::Mutex mu;
  std::string service ABSL_GUARDED_BY(mu);
  void (*sink)(const std::string& line) ABSL_GUARDED_BY(mu) = nullptr;
  std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};
  std::shared_ptr<spdlog::logger> stderr_logger;
};

LoggerState& State() {
  // Never destroyed, so threads that log during exit stay safe.
  static auto* const state = [] {
    auto* s = new LoggerState();
    // Not registered with spdlog's global registry: the name cannot clash
    // with a library's logger, and our own level filter applies first.
    s->stderr_logger = std::make_shared<spdlog::logger>(
        "omniforge", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    s->stderr_logger->set_pattern("%v");
    s->stderr_logger->set_level(spdlog::level::trace);
    return s;
  }();
  return *state;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::string NowRfc3339() {
  const auto now = std::chrono::system_clock::now();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

bool IsReservedKey(const std::string& key) {
  return key == "ts" || key == "level" || key == "service" || key == "msg";
}

// `fields` and, after them, the thread's trace and turn fields (ambient.h)
// that `fields` does not set itself.
LogFields WithAmbient(const LogFields& fields) {
  const Ambient& ambient = CurrentAmbient();
  if (!ambient.span.valid() && ambient.log == nullptr) return fields;
  LogFields all = fields;
  auto add = [&all](const char* key, const std::string& value) {
    if (value.empty()) return;
    for (const auto& field : all) {
      if (field.first == key) return;
    }
    all.emplace_back(key, value);
  };
  if (ambient.span.valid()) {
    add("trace_id", TraceIdHex(ambient.span));
    add("span_id", SpanIdHex(ambient.span));
  }
  if (ambient.log != nullptr) {
    add("turn_id", ambient.log->turn_id);
    add("conversation_id", ambient.log->conversation_id);
    add("tenant", ambient.log->tenant);
  }
  return all;
}

}  // namespace

void InitLogging(const std::string& service, const std::string& level) {
  LogLevel min = LogLevel::kInfo;
  if (level == "debug") {
    min = LogLevel::kDebug;
  } else if (level == "warn") {
    min = LogLevel::kWarn;
  } else if (level == "error") {
    min = LogLevel::kError;
  }
  LoggerState& state = State();
  absl::MutexLock lock(&state.mu);
  state.service = service;
  state.min_level = static_cast<int>(min);
}

std::string LoggingService() {
  LoggerState& state = State();
  absl::MutexLock lock(&state.mu);
  return state.service;
}

void SetLogSinkForTesting(void (*sink)(const std::string& line)) {
  LoggerState& state = State();
  absl::MutexLock lock(&state.mu);
  state.sink = sink;
}

std::string FormatLogLine(LogLevel level, std::string_view service, std::string_view msg,
                          const LogFields& fields) {
  nlohmann::ordered_json line;
  line["ts"] = NowRfc3339();
  line["level"] = LevelName(level);
  line["service"] = std::string(service);
  line["msg"] = RedactSecrets(msg);
  for (const auto& [key, value] : fields) {
    // A field must not overwrite the envelope: "msg" becomes "_msg".
    line[IsReservedKey(key) ? "_" + key : key] = RedactSecrets(value);
  }
  // Log text comes from anywhere (user input, peers); a bad byte becomes
  // U+FFFD instead of an exception that would lose the line.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Log(LogLevel level, std::string_view msg, const LogFields& fields) {
  LoggerState& state = State();
  if (static_cast<int>(level) < state.min_level.load()) return;
  std::string service;
  {
    absl::MutexLock lock(&state.mu);
    service = state.service;
  }
  const std::string line = FormatLogLine(level, service, msg, WithAmbient(fields));
  absl::MutexLock lock(&state.mu);
  if (state.sink != nullptr) {
    state.sink(line);
  } else {
    state.stderr_logger->info(line);
  }
}

}  // namespace omniforge::core
