// SandboxStore on PostgreSQL (schema `sandbox`, migrations in
// services/sandbox/migrations): every statement runs in a transaction of
// the tenant (pg::WithTenantTransaction), under row-level security.
//
// What users and models wrote (contacts' names, emails, phones and
// organizations, busy blocks' emails, events' titles and attendees,
// messages' senders, recipients, subjects and bodies) is sealed with the
// tenant's data key (seal::KeyRing over `sandbox.tenant_keys`); ids, times
// and folders stay readable. The database therefore cannot compare those
// fields: searches, the email filter of busy time and the uniqueness of a
// contact's email read the tenant's rows and match once opened, which
// suits the sandbox's small per-tenant state (docs/sandbox.md). Rows from
// before sealing (plain text) read as they are; SealPlainRows seals them.
// Beyond the codes of store.h: DATA_LOSS when a sealed value does not open
// (tampered, moved to another row or tenant, or its key is gone).
#pragma once

#include <string>

#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "services/sandbox/src/store.h"

namespace omniforge::sandbox {

// The table of the tenants' data keys.
inline constexpr char kSandboxKeys[] = "sandbox.tenant_keys";

class PgSandboxStore final : public SandboxStore {
 public:
  // `pool` and `keys` (over kSandboxKeys, on the same database) must
  // outlive the store.
  PgSandboxStore(pg::PgPool& pool, seal::KeyRing& keys) : pool_(pool), keys_(keys) {}

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

  // Seals every field of `tenant`'s rows that an earlier version stored in
  // plain text, in one transaction; returns how many rows changed (0 once
  // all are sealed). Safe to run again and beside the tools.
  absl::StatusOr<int> SealPlainRows(const std::string& tenant);

 private:
  pg::PgPool& pool_;
  seal::KeyRing& keys_;
};

}  // namespace omniforge::sandbox
