// The process's own metrics, read from /proc at every scrape, in the names
// Prometheus client libraries use: process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_threads,
// process_start_time_seconds; and omniforge_build_info{service,version}.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "libs/core/metrics.h"

namespace omniforge::core {

// What /proc/self/stat says of the process (proc(5)).
struct ProcessStat {
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // since the epoch
  double virtual_bytes = 0;
  double resident_bytes = 0;
  double threads = 0;
};

// Parses a /proc/<pid>/stat line; `boot_time_seconds` is /proc/stat's btime,
// `ticks_per_second` and `page_bytes` the system's. nullopt: malformed.
std::optional<ProcessStat> ParseProcStat(std::string_view stat, double boot_time_seconds,
                                         double ticks_per_second, double page_bytes);

// Registers the process metrics and the build info in `registry` (once per
// registry; later calls do nothing).
void RegisterProcessMetrics(MetricsRegistry& registry, const std::string& service);

}  // namespace omniforge::core
