// Whom a model call serves: the turn sets it around its model calls on its
// own thread, and the usage sink (usage_recorder.h) reads it when the LLM
// client reports the call, on that same thread.
#pragma once

#include <string>

namespace omniforge::orchestrator {

struct UsageAttribution {
  std::string tenant_id;
  std::string user_id;
  std::string conversation_id;
  std::string turn_id;
  std::string context_type;
};

// Attributes the model calls this thread makes while it lives.
class ScopedUsageAttribution final {
 public:
  explicit ScopedUsageAttribution(const UsageAttribution& attribution);
  ~ScopedUsageAttribution();
  ScopedUsageAttribution(const ScopedUsageAttribution&) = delete;
  ScopedUsageAttribution& operator=(const ScopedUsageAttribution&) = delete;

 private:
  const UsageAttribution* previous_;
};

// This thread's attribution, or null outside any scope.
const UsageAttribution* CurrentUsageAttribution();

}  // namespace omniforge::orchestrator
