#include "services/sandbox/src/views.h"

#include "services/sandbox/src/sandbox_time.h"

namespace omniforge::sandbox {

nlohmann::json ContactJson(const Contact& contact) {
  return {{"id", contact.id},
          {"name", contact.name},
          {"email", contact.email},
          {"phone", contact.phone},
          {"organization", contact.organization}};
}

nlohmann::json IntervalJson(const Interval& interval, const absl::TimeZone& zone) {
  return {{"start", FormatRfc3339(interval.start, zone)},
          {"end", FormatRfc3339(interval.end, zone)}};
}

nlohmann::json EventJson(const Event& event, const absl::TimeZone& zone) {
  return {{"id", event.id},
          {"title", event.title},
          {"start", FormatRfc3339(event.when.start, zone)},
          {"end", FormatRfc3339(event.when.end, zone)},
          {"attendees", event.attendees}};
}

nlohmann::json BusyJson(const BusyBlock& block, const absl::TimeZone& zone) {
  return {{"who", block.email},
          {"start", FormatRfc3339(block.when.start, zone)},
          {"end", FormatRfc3339(block.when.end, zone)}};
}

const char* FolderName(Folder folder) {
  switch (folder) {
    case Folder::kDraft:
      return "drafts";
    case Folder::kSent:
      return "sent";
    case Folder::kInbox:
      return "inbox";
  }
  return "";
}

nlohmann::json MessageJson(const Message& message, const absl::TimeZone& zone) {
  nlohmann::json json = {{"id", message.id},
                         {"folder", FolderName(message.folder)},
                         {"from", message.from},
                         {"to", message.to},
                         {"subject", message.subject},
                         {"body", message.body},
                         {"created_at", FormatRfc3339(message.created_at, zone)}};
  if (message.folder != Folder::kDraft) json["sent_at"] = FormatRfc3339(message.sent_at, zone);
  return json;
}

}  // namespace omniforge::sandbox
