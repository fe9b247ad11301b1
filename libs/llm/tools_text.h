// Internal to omniforge_llm_wire: the tools of a request body, encoded once
// per tool list. A planner offers the same catalog (names, descriptions and
// parameter schemas, some 15 KB of JSON) on every model call, and checking
// and writing it out again is a good part of encoding a request.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "libs/llm/chat.h"

namespace omniforge::llm::wire_internal {

// Keeps the encodings of the last `max_lists` distinct tool lists. A list
// is the same when every tool's name, description and schema text are
// equal, in the same order. Thread-safe.
class ToolsTextMemo final {
 public:
  explicit ToolsTextMemo(size_t max_lists = 16) : max_lists_(max_lists) {}

  // Appends the encoding of `tools` to `out`: the kept one for an equal
  // list, else what `encode` appends (kept only when it succeeds; on an
  // error `out` may hold part of it, and the error is returned).
  absl::Status AppendTo(std::string& out, const std::vector<ToolSpec>& tools,
                        const std::function<absl::Status(std::string&)>& encode);

 private:
  struct Entry {
    std::vector<ToolSpec> tools;
    std::string text;
  };

  const size_t max_lists_;
  absl::Mutex mu_;
  std::deque<Entry> entries_ ABSL_GUARDED_BY(mu_);  // newest first
};

}  // namespace omniforge::llm::wire_internal
