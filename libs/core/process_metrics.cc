#include "libs/core/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "libs/core/version.h"

namespace omniforge::core {
namespace {

std::string ReadAll(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// /proc/stat's btime: when the system booted, in seconds since the epoch.
double BootTimeSeconds() {
  std::istringstream stat(ReadAll("/proc/stat"));
  std::string line;
  while (std::getline(stat, line)) {
    double btime = 0;
    if (line.starts_with("btime ") && absl::SimpleAtod(line.substr(6), &btime)) return btime;
  }
  return 0;
}

double OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  double count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count - 1;  // the directory's own descriptor
}

double MaxFds() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<double>(limit.rlim_cur);
}

struct ProcessGauges {
  Counter* cpu;
  Gauge* resident;
  Gauge* virtual_bytes;
  Gauge* open_fds;
  Gauge* max_fds;
  Gauge* threads;
  Gauge* start_time;
};

ProcessGauges MakeGauges(MetricsRegistry& r) {
  return {
      &r.GetCounter("process_cpu_seconds_total", "User and system CPU time spent, in seconds."),
      &r.GetGauge("process_resident_memory_bytes", "Resident memory size in bytes."),
      &r.GetGauge("process_virtual_memory_bytes", "Virtual memory size in bytes."),
      &r.GetGauge("process_open_fds", "Number of open file descriptors."),
      &r.GetGauge("process_max_fds", "Maximum number of open file descriptors."),
      &r.GetGauge("process_threads", "Number of OS threads in the process."),
      &r.GetGauge("process_start_time_seconds",
                  "Start time of the process since the Unix epoch, in seconds."),
  };
}

}  // namespace

std::optional<ProcessStat> ParseProcStat(std::string_view stat, double boot_time_seconds,
                                         double ticks_per_second, double page_bytes) {
  // The command name (field 2) is in parentheses and may hold spaces and
  // parentheses itself: the fields after it start after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return std::nullopt;
  const absl::string_view rest(stat.data() + close + 1, stat.size() - close - 1);
  const std::vector<absl::string_view> fields = absl::StrSplit(rest, ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state); field N is fields[N - 3].
  auto field = [&fields](size_t n, double* out) {
    return n - 3 < fields.size() && absl::SimpleAtod(fields[n - 3], out);
  };
  double utime = 0;
  double stime = 0;
  double threads = 0;
  double start_ticks = 0;
  double vsize = 0;
  double rss_pages = 0;
  if (!field(14, &utime) || !field(15, &stime) || !field(20, &threads) ||
      !field(22, &start_ticks) || !field(23, &vsize) || !field(24, &rss_pages)) {
    return std::nullopt;
  }
  ProcessStat out;
  out.cpu_seconds = (utime + stime) / ticks_per_second;
  out.start_time_seconds = boot_time_seconds + start_ticks / ticks_per_second;
  out.virtual_bytes = vsize;
  out.resident_bytes = rss_pages * page_bytes;
  out.threads = threads;
  return out;
}

void RegisterProcessMetrics(MetricsRegistry& registry, const std::string& service) {
  static std::mutex mu;
  static auto* const registered = new std::set<const MetricsRegistry*>();
  {
    const std::lock_guard lock(mu);
    if (!registered->insert(&registry).second) return;
  }
  registry
      .GetGauge("omniforge_build_info", "The build: its service and version; always 1.",
                {{"service", service}, {"version", Version()}})
      .Set(1);
  const ProcessGauges gauges = MakeGauges(registry);
  const double boot = BootTimeSeconds();
  const auto ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const auto page = static_cast<double>(sysconf(_SC_PAGESIZE));
  registry.AddCollector([gauges, boot, ticks, page] {
    if (auto stat = ParseProcStat(ReadAll("/proc/self/stat"), boot, ticks, page)) {
      gauges.cpu->RaiseTo(stat->cpu_seconds);
      gauges.resident->Set(stat->resident_bytes);
      gauges.virtual_bytes->Set(stat->virtual_bytes);
      gauges.threads->Set(stat->threads);
      gauges.start_time->Set(stat->start_time_seconds);
    }
    gauges.open_fds->Set(OpenFds());
    gauges.max_fds->Set(MaxFds());
  });
}

}  // namespace omniforge::core
