#include "services/sandbox/src/memory_store.h"

#include <algorithm>

#include "services/sandbox/src/search.h"

namespace omniforge::sandbox {
namespace {

std::vector<Message> NewestFirst(std::vector<Message> messages, int limit) {
  std::stable_sort(messages.begin(), messages.end(), [](const Message& a, const Message& b) {
    const core::TimePoint at = a.folder == Folder::kDraft ? a.created_at : a.sent_at;
    const core::TimePoint bt = b.folder == Folder::kDraft ? b.created_at : b.sent_at;
    return at > bt;
  });
  if (messages.size() > static_cast<size_t>(limit)) messages.resize(limit);
  return messages;
}

}  // namespace

absl::StatusOr<bool> MemorySandboxStore::SeedOnce(const std::string& tenant, const SeedData& seed) {
  absl::MutexLock lock(&mu_);
  if (!seeded_.insert(tenant).second) return false;
  TenantState& state = tenants_[tenant];
  state.contacts = seed.contacts;
  state.busy = seed.busy;
  state.events = seed.events;
  state.messages = seed.messages;
  return true;
}

absl::StatusOr<std::vector<Contact>> MemorySandboxStore::ListContacts(const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  std::vector<Contact> contacts = tenants_[tenant].contacts;
  std::stable_sort(contacts.begin(), contacts.end(),
                   [](const Contact& a, const Contact& b) { return a.name < b.name; });
  return contacts;
}

absl::Status MemorySandboxStore::AddContact(const std::string& tenant, const Contact& contact) {
  absl::MutexLock lock(&mu_);
  std::vector<Contact>& contacts = tenants_[tenant].contacts;
  for (const Contact& existing : contacts) {
    if (existing.email == contact.email) {
      return absl::AlreadyExistsError("a contact with email " + contact.email + " exists");
    }
  }
  contacts.push_back(contact);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<BusyBlock>> MemorySandboxStore::ListBusy(
    const std::string& tenant, const std::vector<std::string>& emails, const Interval& window) {
  absl::MutexLock lock(&mu_);
  std::vector<BusyBlock> found;
  for (const BusyBlock& block : tenants_[tenant].busy) {
    if (Overlaps(block.when, window) &&
        std::find(emails.begin(), emails.end(), block.email) != emails.end()) {
      found.push_back(block);
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const BusyBlock& a, const BusyBlock& b) {
    return a.when.start < b.when.start;
  });
  return found;
}

absl::StatusOr<std::vector<Event>> MemorySandboxStore::ListEvents(const std::string& tenant,
                                                                  const Interval& window) {
  absl::MutexLock lock(&mu_);
  std::vector<Event> found;
  for (const Event& event : tenants_[tenant].events) {
    if (Overlaps(event.when, window)) found.push_back(event);
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const Event& a, const Event& b) { return a.when.start < b.when.start; });
  return found;
}

absl::StatusOr<BookingOutcome> MemorySandboxStore::BookEvent(const std::string& tenant,
                                                             const Event& event) {
  absl::MutexLock lock(&mu_);
  TenantState& state = tenants_[tenant];
  BookingOutcome outcome;
  for (const Event& existing : state.events) {
    if (Overlaps(existing.when, event.when)) outcome.conflicting_events.push_back(existing);
  }
  for (const BusyBlock& block : state.busy) {
    if (Overlaps(block.when, event.when) &&
        std::find(event.attendees.begin(), event.attendees.end(), block.email) !=
            event.attendees.end()) {
      outcome.conflicting_busy.push_back(block);
    }
  }
  outcome.booked = outcome.conflicting_events.empty() && outcome.conflicting_busy.empty();
  if (outcome.booked) state.events.push_back(event);
  return outcome;
}

absl::StatusOr<Event> MemorySandboxStore::DeleteEvent(const std::string& tenant,
                                                      const std::string& id) {
  absl::MutexLock lock(&mu_);
  std::vector<Event>& events = tenants_[tenant].events;
  auto it = std::find_if(events.begin(), events.end(), [&](const Event& e) { return e.id == id; });
  if (it == events.end()) return absl::NotFoundError("no event " + id);
  Event deleted = *it;
  events.erase(it);
  return deleted;
}

absl::Status MemorySandboxStore::AddMessage(const std::string& tenant, const Message& message) {
  absl::MutexLock lock(&mu_);
  tenants_[tenant].messages.push_back(message);
  return absl::OkStatus();
}

absl::StatusOr<Message> MemorySandboxStore::GetMessage(const std::string& tenant,
                                                       const std::string& id) {
  absl::MutexLock lock(&mu_);
  for (const Message& message : tenants_[tenant].messages) {
    if (message.id == id) return message;
  }
  return absl::NotFoundError("no message " + id);
}

absl::StatusOr<Message> MemorySandboxStore::SendDraft(const std::string& tenant,
                                                      const std::string& id,
                                                      core::TimePoint sent_at) {
  absl::MutexLock lock(&mu_);
  for (Message& message : tenants_[tenant].messages) {
    if (message.id != id) continue;
    if (message.folder != Folder::kDraft) {
      return absl::FailedPreconditionError("message " + id + " is not a draft (already sent)");
    }
    message.folder = Folder::kSent;
    message.sent_at = sent_at;
    return message;
  }
  return absl::NotFoundError("no message " + id);
}

absl::StatusOr<std::vector<Message>> MemorySandboxStore::ListFolder(const std::string& tenant,
                                                                    Folder folder, int limit) {
  absl::MutexLock lock(&mu_);
  std::vector<Message> found;
  for (const Message& message : tenants_[tenant].messages) {
    if (message.folder == folder) found.push_back(message);
  }
  return NewestFirst(std::move(found), limit);
}

absl::StatusOr<std::vector<Message>> MemorySandboxStore::SearchMessages(const std::string& tenant,
                                                                        const std::string& query,
                                                                        int limit) {
  absl::MutexLock lock(&mu_);
  std::vector<Message> found;
  for (const Message& message : tenants_[tenant].messages) {
    if (message.folder != Folder::kDraft && MessageMentions(message, query))
      found.push_back(message);
  }
  return NewestFirst(std::move(found), limit);
}

}  // namespace omniforge::sandbox
