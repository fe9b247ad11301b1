// JSON logs, one object per line on stderr, with secrets redacted.
//
// Every log line is {"ts":"<RFC3339 UTC ms>","level":"info","service":"...",
// "msg":"...", <fields>}. String values and the message pass through
// RedactSecrets() before they are written, so a credential that slips into a
// log call is masked. Lines written under a trace or turn context
// (ambient.h) also carry trace_id, span_id, turn_id, conversation_id and
// tenant, where known. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace omniforge::core {

// A structured field; values are always strings in the output.
using LogField = std::pair<std::string, std::string>;
using LogFields = std::vector<LogField>;

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// Configures the process logger once at start-up: the service name stamped on
// every line and the minimum level ("debug", "info", "warn", "error";
// anything else means info).
void InitLogging(const std::string& service, const std::string& level);

// The service name InitLogging was given ("" before it).
std::string LoggingService();

// Sends output to a callback instead of stderr (tests). Pass nullptr to
// restore stderr.
void SetLogSinkForTesting(void (*sink)(const std::string& line));

void Log(LogLevel level, std::string_view msg, const LogFields& fields = {});
inline void LogDebug(std::string_view m, const LogFields& f = {}) { Log(LogLevel::kDebug, m, f); }
inline void LogInfo(std::string_view m, const LogFields& f = {}) { Log(LogLevel::kInfo, m, f); }
inline void LogWarn(std::string_view m, const LogFields& f = {}) { Log(LogLevel::kWarn, m, f); }
inline void LogError(std::string_view m, const LogFields& f = {}) { Log(LogLevel::kError, m, f); }

// Formats one line exactly as Log would (no trailing newline). Exposed for tests.
std::string FormatLogLine(LogLevel level, std::string_view service, std::string_view msg,
                          const LogFields& fields);

}  // namespace omniforge::core
