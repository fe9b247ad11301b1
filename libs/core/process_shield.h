// Keeps the processes this service starts (MCP servers, helpers) away from
// its memory: a child running as the same user could otherwise read
// /proc/<our pid>/environ (database password, provider keys), /proc/<pid>/mem
// or attach with ptrace.
#pragma once

#include "absl/status/status.h"

namespace omniforge::core {

// Marks this process not dumpable (prctl PR_SET_DUMPABLE 0): /proc/<pid>/
// files that expose memory or the environment become root-owned, and only
// a process with CAP_SYS_PTRACE (root, in practice) may read them or
// ptrace us. It also turns core dumps off. Call once at the very start of
// main, before any thread or child exists. INTERNAL when the kernel refuses.
// Thread-safe (it only touches this process's own flag).
absl::Status ShieldProcessFromChildren();

// Whether this process is dumpable now (tests).
bool ProcessIsDumpable();

}  // namespace omniforge::core
