#include "services/sandbox/src/search.h"

#include <algorithm>

#include "services/sandbox/src/tool_args.h"

namespace omniforge::sandbox {

bool MessageMentions(const Message& message, std::string_view query) {
  if (ContainsIgnoringCase(message.from, query) || ContainsIgnoringCase(message.subject, query) ||
      ContainsIgnoringCase(message.body, query)) {
    return true;
  }
  return std::any_of(message.to.begin(), message.to.end(),
                     [&](const std::string& to) { return ContainsIgnoringCase(to, query); });
}

}  // namespace omniforge::sandbox
