// SandboxStore in memory: the fake for tests, and the store of a sandbox
// server started without a database (its state ends with the process).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/sandbox/src/store.h"

namespace omniforge::sandbox {

class MemorySandboxStore final : public SandboxStore {
 public:
  absl::StatusOr<bool> SeedOnce(const std::string& tenant, const SeedData& seed) override;
  absl::StatusOr<std::vector<Contact>> ListContacts(const std::string& tenant) override;
  absl::Status AddContact(const std::string& tenant, const Contact& contact) override;
  absl::StatusOr<std::vector<BusyBlock>> ListBusy(const std::string& tenant,
                                                  const std::vector<std::string>& emails,
                                                  const Interval& window) override;
  absl::StatusOr<std::vector<Event>> ListEvents(const std::string& tenant,
                                                const Interval& window) override;
  absl::StatusOr<BookingOutcome> BookEvent(const std::string& tenant, const Event& event) override;
  absl::StatusOr<Event> DeleteEvent(const std::string& tenant, const std::string& id) override;
  absl::Status AddMessage(const std::string& tenant, const Message& message) override;
  absl::StatusOr<Message> GetMessage(const std::string& tenant, const std::string& id) override;
  absl::StatusOr<Message> SendDraft(const std::string& tenant, const std::string& id,
                                    core::TimePoint sent_at) override;
  absl::StatusOr<std::vector<Message>> ListFolder(const std::string& tenant, Folder folder,
                                                  int limit) override;
  absl::StatusOr<std::vector<Message>> SearchMessages(const std::string& tenant,
                                                      const std::string& query, int limit) override;

 private:
  struct TenantState {
    std::vector<Contact> contacts;
    std::vector<BusyBlock> busy;
    std::vector<Event> events;
    std::vector<Message> messages;
  };

  absl::Mutex mu_;
  std::set<std::string> seeded_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, TenantState> tenants_ ABSL_GUARDED_BY(mu_);
};

}  // namespace omniforge::sandbox
