#include "libs/core/files.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace omniforge::core {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  if (ec) return absl::ErrnoToStatus(ec.value(), path);
  if (std::filesystem::is_directory(status)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::ErrnoToStatus(errno, path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace omniforge::core
