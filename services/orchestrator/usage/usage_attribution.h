// Whom a model call serves: the turn sets it around its model calls on its
// own thread, and the usage sink (usage_recorder.h) reads it when the LLM
// client reports the call, on that same thread.
//
// A scope also collects the calls reported inside it, so that they are
// stored together, as one row, when the scope ends. Scopes nest: a call
// belongs to the innermost scope of its thread, and each scope hands over
// its own calls only (a plan step run inside a turn is stored apart from
// the turn's other calls).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "libs/llm/usage.h"

namespace omniforge::orchestrator {

struct UsageAttribution {
  std::string tenant_id;
  std::string user_id;
  std::string conversation_id;
  std::string turn_id;
  std::string context_type;
};

// A model call reported inside a scope.
struct AttributedCall {
  llm::UsageRecord record;
  int64_t reported_micros = 0;  // when the client reported it (Unix epoch, UTC)
};

// Takes the calls of a scope when it ends. Called on the scope's thread, from
// its destructor: it must not block for long nor throw.
class ScopeUsageWriter {
 public:
  virtual ~ScopeUsageWriter() = default;
  virtual void WriteScope(const UsageAttribution& who, std::vector<AttributedCall> calls) = 0;
};

// Attributes the model calls this thread makes while it lives, and hands
// them to their writer when it ends (nothing when no call was made). The
// writer must outlive the scopes it records into. `attribution` must
// outlive the scope.
class ScopedUsageAttribution final {
 public:
  explicit ScopedUsageAttribution(const UsageAttribution& attribution);
  ~ScopedUsageAttribution();
  ScopedUsageAttribution(const ScopedUsageAttribution&) = delete;
  ScopedUsageAttribution& operator=(const ScopedUsageAttribution&) = delete;

 private:
  friend const UsageAttribution* CurrentUsageAttribution();
  friend bool AddToUsageScope(const llm::UsageRecord& record, int64_t reported_micros,
                              ScopeUsageWriter& writer);

  // Hands the collected calls to their writer and starts afresh.
  void Flush();

  const UsageAttribution& attribution_;
  ScopedUsageAttribution* const enclosing_;
  ScopeUsageWriter* writer_ = nullptr;
  std::vector<AttributedCall> calls_;
};

// This thread's attribution (its innermost scope's), or null outside any
// scope.
const UsageAttribution* CurrentUsageAttribution();

// Adds a call to this thread's innermost scope, for `writer` to store when
// the scope ends. False, and nothing kept, outside any scope. A scope has one
// writer: should another add to it, the calls collected so far go to the
// first one at once.
bool AddToUsageScope(const llm::UsageRecord& record, int64_t reported_micros,
                     ScopeUsageWriter& writer);

}  // namespace omniforge::orchestrator
