#include "libs/mcp/file_sandbox.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace omniforge::mcp {
namespace {

// Rights and fields newer than the oldest kernel headers this builds with
// (their values are the kernel's ABI).
constexpr uint64_t kRefer = 1ULL << 13;                   // ABI 2
constexpr uint64_t kTruncate = 1ULL << 14;                // ABI 3
constexpr uint64_t kIoctlDev = 1ULL << 15;                // ABI 5
constexpr uint64_t kScopeAbstractUnixSocket = 1ULL << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ULL << 1;              // ABI 6
constexpr uint64_t kAbi1Rights = (1ULL << 13) - 1;        // EXECUTE .. MAKE_SYM

constexpr uint64_t kReadRights =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// The rights that may be given on a file (the others are a directory's).
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                 LANDLOCK_ACCESS_FS_READ_FILE | kTruncate | kIoctlDev;

// landlock_ruleset_attr as of ABI 6; older kernels are given its prefix.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};

constexpr const char* kSystemReadPaths[] = {"/usr",    "/bin", "/sbin", "/lib",  "/lib32", "/lib64",
                                            "/libx32", "/etc", "/opt",  "/proc", "/sys"};

uint64_t HandledRights(int abi) {
  uint64_t rights = kAbi1Rights;
  if (abi >= 2) rights |= kRefer;
  if (abi >= 3) rights |= kTruncate;
  if (abi >= 5) rights |= kIoctlDev;
  return rights;
}

bool IsNpm(const std::string& command) {
  const std::string name = std::filesystem::path(command).filename().string();
  return name == "npx" || name == "npm";
}

void AddIfAbsolute(const std::string& path, std::vector<std::string>& into) {
  std::error_code ignored;
  if (!path.empty() && path.front() == '/' && std::filesystem::exists(path, ignored)) {
    into.push_back(path);
  }
}

// Adds a rule for `path` with `rights` (a file's kept to a file's rights).
// ENOENT is left to the caller; 0 or errno.
int AddRule(int ruleset_fd, const std::string& path, uint64_t rights, uint64_t handled) {
  const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return errno;
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return error;
  }
  if (!S_ISDIR(info.st_mode)) rights &= kFileRights;
  landlock_path_beneath_attr rule{};
  rule.allowed_access = rights & handled;
  rule.parent_fd = fd;
  const long added =
      ::syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  const int error = added == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

}  // namespace

absl::StatusOr<SandboxMode> ParseSandboxMode(std::string_view text) {
  if (text == "best_effort") return SandboxMode::kBestEffort;
  if (text == "required") return SandboxMode::kRequired;
  if (text == "off") return SandboxMode::kOff;
  return absl::InvalidArgumentError(
      absl::StrCat("'", std::string(text), "' is not best_effort, required or off"));
}

FileSandboxPaths SandboxPathsFor(const std::string& command, const std::vector<std::string>& args,
                                 const std::string& cwd, const std::string& home,
                                 const std::vector<std::string>& read_paths,
                                 const std::vector<std::string>& write_paths) {
  FileSandboxPaths paths;
  paths.read.assign(std::begin(kSystemReadPaths), std::end(kSystemReadPaths));
  AddIfAbsolute(command, paths.read);
  for (const std::string& arg : args) {
    AddIfAbsolute(arg, paths.read);
    // A package's script imports its dependencies from beside it.
    if (const size_t at = arg.find("/node_modules/"); at != std::string::npos && arg[0] == '/') {
      AddIfAbsolute(arg.substr(0, at + std::strlen("/node_modules")), paths.read);
    }
  }
  paths.read.insert(paths.read.end(), read_paths.begin(), read_paths.end());
  paths.write = {"/dev"};
  if (!cwd.empty()) paths.write.push_back(cwd);
  if (IsNpm(command) && !home.empty() && home.front() == '/') {
    paths.write.push_back(home + "/.npm");
    AddIfAbsolute(home + "/.npmrc", paths.read);
  }
  paths.write.insert(paths.write.end(), write_paths.begin(), write_paths.end());
  return paths;
}

int LandlockAbi() {
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

absl::StatusOr<std::unique_ptr<FileSandbox>> FileSandbox::Build(const FileSandboxPaths& paths) {
  const int abi = LandlockAbi();
  if (abi <= 0) {
    return absl::FailedPreconditionError(
        "the kernel has no Landlock (Linux 5.13+ with landlock among its LSMs), so the server "
        "cannot be sandboxed");
  }
  RulesetAttr attr;
  attr.handled_access_fs = HandledRights(abi);
  if (abi >= 6) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  const size_t size = abi >= 6   ? sizeof(RulesetAttr)
                      : abi >= 4 ? 2 * sizeof(uint64_t)
                                 : sizeof(uint64_t);
  const int fd = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("landlock_create_ruleset: ", std::strerror(errno)));
  }
  auto sandbox = std::unique_ptr<FileSandbox>(new FileSandbox(fd));
  const size_t system_paths = std::size(kSystemReadPaths);
  for (size_t i = 0; i < paths.read.size(); ++i) {
    const int error = AddRule(fd, paths.read[i], kReadRights, attr.handled_access_fs);
    if (error == ENOENT && i < system_paths) continue;  // a system without /lib32, say
    if (error != 0) {
      return absl::UnavailableError(absl::StrCat("sandbox: cannot allow reading '", paths.read[i],
                                                 "': ", std::strerror(error)));
    }
  }
  for (const std::string& path : paths.write) {
    std::error_code made;
    std::filesystem::create_directories(path, made);
    const int error = AddRule(fd, path, attr.handled_access_fs, attr.handled_access_fs);
    if (error != 0) {
      return absl::UnavailableError(absl::StrCat("sandbox: cannot allow writing '", path, "': ",
                                                 made ? made.message() : std::strerror(error)));
    }
  }
  return sandbox;
}

FileSandbox::~FileSandbox() { ::close(ruleset_fd_); }

int FileSandbox::EnforceInChild() const {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (::syscall(SYS_landlock_restrict_self, ruleset_fd_, 0) != 0) return errno;
  return 0;
}

}  // namespace omniforge::mcp
