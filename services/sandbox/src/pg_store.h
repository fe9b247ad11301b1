// SandboxStore on PostgreSQL (schema `sandbox`, migrations in
// services/sandbox/migrations): every statement runs in a transaction of
// the tenant (pg::WithTenantTransaction), under row-level security.
#pragma once

#include "libs/pg/pool.h"
#include "services/sandbox/src/store.h"

namespace omniforge::sandbox {

class PgSandboxStore final : public SandboxStore {
 public:
  // `pool` must outlive the store.
  explicit PgSandboxStore(pg::PgPool& pool) : pool_(pool) {}

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
  pg::PgPool& pool_;
};

}  // namespace omniforge::sandbox
