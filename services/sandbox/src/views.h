// The JSON the sandbox tools answer with for contacts, events, busy time
// and messages; times in RFC 3339 in the sandbox's time zone.
#pragma once

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "services/sandbox/src/model.h"

namespace omniforge::sandbox {

// {"id", "name", "email", "phone", "organization"}
nlohmann::json ContactJson(const Contact& contact);
// {"start", "end"}
nlohmann::json IntervalJson(const Interval& interval, const absl::TimeZone& zone);
// {"id", "title", "start", "end", "attendees"}
nlohmann::json EventJson(const Event& event, const absl::TimeZone& zone);
// {"who": email, "start", "end"}
nlohmann::json BusyJson(const BusyBlock& block, const absl::TimeZone& zone);
// {"id", "folder", "from", "to", "subject", "body", "created_at"[, "sent_at"]}
nlohmann::json MessageJson(const Message& message, const absl::TimeZone& zone);
const char* FolderName(Folder folder);

}  // namespace omniforge::sandbox
