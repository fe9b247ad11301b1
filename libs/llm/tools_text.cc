#include "libs/llm/tools_text.h"

#include <algorithm>

namespace omniforge::llm::wire_internal {
namespace {

bool SameTools(const std::vector<ToolSpec>& a, const std::vector<ToolSpec>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const ToolSpec& x, const ToolSpec& y) {
                      return x.name == y.name && x.description == y.description &&
                             x.parameters_schema == y.parameters_schema;
                    });
}

}  // namespace

absl::Status ToolsTextMemo::AppendTo(std::string& out, const std::vector<ToolSpec>& tools,
                                     const std::function<absl::Status(std::string&)>& encode) {
  {
    absl::MutexLock lock(&mu_);
    for (const Entry& entry : entries_) {
      if (SameTools(entry.tools, tools)) {
        out += entry.text;
        return absl::OkStatus();
      }
    }
  }
  std::string text;
  if (absl::Status encoded = encode(text); !encoded.ok()) {
    out += text;
    return encoded;
  }
  out += text;
  absl::MutexLock lock(&mu_);
  for (const Entry& entry : entries_) {
    if (SameTools(entry.tools, tools)) return absl::OkStatus();  // kept meanwhile
  }
  entries_.push_front({tools, std::move(text)});
  if (entries_.size() > max_lists_) entries_.pop_back();
  return absl::OkStatus();
}

}  // namespace omniforge::llm::wire_internal
