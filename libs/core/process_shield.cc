#include "libs/core/process_shield.h"

#include <sys/prctl.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace omniforge::core {

absl::Status ShieldProcessFromChildren() {
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return absl::InternalError(std::string("prctl(PR_SET_DUMPABLE, 0): ") + std::strerror(errno));
  }
  return absl::OkStatus();
}

bool ProcessIsDumpable() { return ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1; }

}  // namespace omniforge::core
