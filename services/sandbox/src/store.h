// Storage of the sandbox servers' state, one tenant at a time.
//
// Every method reads and writes only `tenant`'s rows. Inputs are already
// validated by the tools (sandbox_tools.h). Errors: UNAVAILABLE when the
// database cannot be reached, INTERNAL for anything else it refuses, and
// the codes each method names. Implementations are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "services/sandbox/src/model.h"

namespace omniforge::sandbox {

class SandboxStore {
 public:
  virtual ~SandboxStore() = default;

  // Stores `seed` as the tenant's state unless the tenant was seeded before
  // (even if it has since changed or emptied it). Returns whether it did.
  virtual absl::StatusOr<bool> SeedOnce(const std::string& tenant, const SeedData& seed) = 0;

  // Contacts by name.
  virtual absl::StatusOr<std::vector<Contact>> ListContacts(const std::string& tenant) = 0;
  // ALREADY_EXISTS when a contact has the same email.
  virtual absl::Status AddContact(const std::string& tenant, const Contact& contact) = 0;

  // The busy blocks of the contacts with these emails that overlap `window`,
  // by start.
  virtual absl::StatusOr<std::vector<BusyBlock>> ListBusy(const std::string& tenant,
                                                          const std::vector<std::string>& emails,
                                                          const Interval& window) = 0;

  // The tenant's events overlapping `window`, by start.
  virtual absl::StatusOr<std::vector<Event>> ListEvents(const std::string& tenant,
                                                        const Interval& window) = 0;
  // Books `event` when it overlaps none of the tenant's events and none of
  // its attendees' busy blocks, checked and written atomically (two
  // bookings of the same time cannot both succeed); else reports the
  // overlaps and writes nothing.
  virtual absl::StatusOr<BookingOutcome> BookEvent(const std::string& tenant,
                                                   const Event& event) = 0;
  // NOT_FOUND when the tenant has no such event.
  virtual absl::StatusOr<Event> DeleteEvent(const std::string& tenant, const std::string& id) = 0;

  virtual absl::Status AddMessage(const std::string& tenant, const Message& message) = 0;
  // NOT_FOUND when the tenant has no such message.
  virtual absl::StatusOr<Message> GetMessage(const std::string& tenant, const std::string& id) = 0;
  // Moves a draft to the sent folder, sent at `sent_at`. NOT_FOUND when the
  // tenant has no such message; FAILED_PRECONDITION when it is not a draft
  // (already sent).
  virtual absl::StatusOr<Message> SendDraft(const std::string& tenant, const std::string& id,
                                            core::TimePoint sent_at) = 0;
  // Messages of `folder`, newest first, at most `limit`.
  virtual absl::StatusOr<std::vector<Message>> ListFolder(const std::string& tenant, Folder folder,
                                                          int limit) = 0;
  // Sent and received messages whose sender, recipients, subject or body
  // contain `query` (case-insensitive), newest first, at most `limit`.
  virtual absl::StatusOr<std::vector<Message>> SearchMessages(const std::string& tenant,
                                                              const std::string& query,
                                                              int limit) = 0;
};

}  // namespace omniforge::sandbox
