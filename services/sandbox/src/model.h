// What the sandbox email, calendar and contacts servers keep for a tenant:
// contacts (with the busy time of each, standing for their calendars),
// the tenant's own calendar events, and email messages (drafts, sent mail,
// an inbox). Times are core::TimePoint (UTC); the tools read and write them
// as RFC 3339 in the sandbox's time zone.
#pragma once

#include <string>
#include <vector>

#include "libs/core/clock.h"

namespace omniforge::sandbox {

struct Contact {
  std::string id;
  std::string name;
  std::string email;  // unique per tenant, stored lower-case
  std::string phone;
  std::string organization;
};

// A span of time; `start` < `end`.
struct Interval {
  core::TimePoint start;
  core::TimePoint end;
};

inline bool Overlaps(const Interval& a, const Interval& b) {
  return a.start < b.end && b.start < a.end;
}

// A time a contact is not free (their calendar, as far as the sandbox knows it).
struct BusyBlock {
  std::string email;
  Interval when;
};

// An event of the tenant's own calendar.
struct Event {
  std::string id;
  std::string title;
  Interval when;
  std::vector<std::string> attendees;  // email addresses
};

enum class Folder { kDraft, kSent, kInbox };

struct Message {
  std::string id;
  Folder folder = Folder::kDraft;
  std::string from;
  std::vector<std::string> to;
  std::string subject;
  std::string body;
  core::TimePoint created_at;
  core::TimePoint sent_at;  // sent and received mail; the epoch for drafts
};

// A tenant's starting state (seed.h).
struct SeedData {
  std::vector<Contact> contacts;
  std::vector<BusyBlock> busy;
  std::vector<Event> events;
  std::vector<Message> messages;
};

// Whether a new event can be booked: the tenant's events and the attendees'
// busy blocks it overlaps. Booked only when both are empty.
struct BookingOutcome {
  bool booked = false;
  std::vector<Event> conflicting_events;
  std::vector<BusyBlock> conflicting_busy;
};

}  // namespace omniforge::sandbox
