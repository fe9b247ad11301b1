// Reading small files whole (configuration, keys, certificates).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace omniforge::core {

// The file's bytes. NOT_FOUND when it does not exist, INVALID_ARGUMENT for a
// directory (which would otherwise read as empty), the errno status for any
// other failure; every message starts with the path.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace omniforge::core
