#include "services/sandbox/src/seed.h"

#include "services/sandbox/src/sandbox_time.h"

namespace omniforge::sandbox {
namespace {

std::vector<Contact> SeedContacts() {
  return {
      {"contact-john-smith", "John Smith", "john.smith@example.com", "+1 555 0101",
       "Northwind Traders"},
      {"contact-john-doe", "John Doe", "john.doe@example.net", "+1 555 0102", "Contoso"},
      {"contact-sarah-chen", "Sarah Chen", "sarah.chen@example.com", "+1 555 0103",
       "Northwind Traders"},
      {"contact-priya-patel", "Priya Patel", "priya.patel@example.org", "+44 20 7946 0104",
       "Fabrikam"},
      {"contact-miguel-alvarez", "Miguel Alvarez", "miguel.alvarez@example.com", "+34 91 555 0105",
       "Tailspin Toys"},
  };
}

}  // namespace

SeedData MakeSeed(core::TimePoint now, const absl::TimeZone& zone) {
  const core::TimePoint yesterday = StartOfDay(now, zone, -1);
  const core::TimePoint tomorrow = StartOfDay(now, zone, 1);
  const core::TimePoint day_after = StartOfDay(now, zone, 2);
  auto at = [&](core::TimePoint day, int hour, int minute) {
    return AtTime(day, zone, hour, minute);
  };
  SeedData seed;
  seed.contacts = SeedContacts();
  seed.busy = {
      {"priya.patel@example.org", {at(tomorrow, 12, 0), at(tomorrow, 13, 0)}},
      {"john.smith@example.com", {at(tomorrow, 13, 0), at(tomorrow, 14, 0)}},
      {"sarah.chen@example.com", {at(tomorrow, 15, 0), at(tomorrow, 15, 30)}},
      {"john.doe@example.net", {at(tomorrow, 16, 0), at(tomorrow, 17, 0)}},
  };
  seed.events = {
      {"event-standup",
       "Team standup",
       {at(tomorrow, 9, 30), at(tomorrow, 9, 45)},
       {"sarah.chen@example.com", "priya.patel@example.org"}},
      {"event-design-review",
       "Design review",
       {at(tomorrow, 14, 0), at(tomorrow, 15, 0)},
       {"sarah.chen@example.com"}},
      {"event-priya-one-on-one",
       "1:1 with Priya",
       {at(day_after, 10, 0), at(day_after, 10, 30)},
       {"priya.patel@example.org"}},
  };
  seed.messages = {
      {"message-travel",
       Folder::kSent,
       kSandboxUserEmail,
       {"john.doe@example.net"},
       "Re: Conference travel",
       "Booked the 8:40 train; see you at the venue.",
       at(yesterday, 9, 0),
       at(yesterday, 9, 0)},
      {"message-contract",
       Folder::kInbox,
       "john.smith@example.com",
       {kSandboxUserEmail},
       "Contract draft v2",
       "Here is the second draft of the contract with your comments in.",
       at(yesterday, 11, 20),
       at(yesterday, 11, 20)},
      {"message-agenda",
       Folder::kInbox,
       "sarah.chen@example.com",
       {kSandboxUserEmail},
       "Agenda for the design review",
       "Tomorrow at 14:00: onboarding flow, empty states, then open questions.",
       at(yesterday, 16, 5),
       at(yesterday, 16, 5)},
  };
  return seed;
}

}  // namespace omniforge::sandbox
