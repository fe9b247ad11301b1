// What a mailbox search matches, shared by the stores: the PostgreSQL store
// cannot ask the database (the columns are sealed), so both match here,
// after reading, and answer alike.
#pragma once

#include <string_view>

#include "services/sandbox/src/model.h"

namespace omniforge::sandbox {

// Whether the message's sender, a recipient, its subject or its body
// contains `query`, ignoring ASCII case.
bool MessageMentions(const Message& message, std::string_view query);

}  // namespace omniforge::sandbox
