// Reading a Prometheus text exposition (a /metrics scrape) in tests.
#pragma once

#include <optional>
#include <sstream>
#include <string>

namespace omniforge::testing {

// The value of the sample named exactly `series` (name and labels), if any.
inline std::optional<double> Sample(const std::string& exposition, const std::string& series) {
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

}  // namespace omniforge::testing
