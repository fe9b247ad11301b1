#include "services/sandbox/src/pg_store.h"

#include "nlohmann/json.hpp"

namespace omniforge::sandbox {
namespace {

using Json = nlohmann::json;

// Microseconds since the epoch, as a parameter and as a column.
#define SANDBOX_TS(n) "('epoch'::timestamptz + $" #n " * interval '1 microsecond')"
#define SANDBOX_US(col) "(extract(epoch FROM " col ") * 1000000)::bigint"

constexpr char kEventColumns[] =
    "id, title, " SANDBOX_US("starts_at") ", " SANDBOX_US("ends_at") ", attendees::text";
constexpr char kMessageColumns[] =
    "id, folder, sender, recipients::text, subject, body, " SANDBOX_US(
        "created_at") ", coalesce(" SANDBOX_US("sent_at") ", 0)";

std::string JsonList(const std::vector<std::string>& items) {
  return Json(items).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::vector<std::string> ListFromJson(const std::string& text) {
  const Json parsed = Json::parse(text, nullptr, false);
  std::vector<std::string> items;
  if (!parsed.is_array()) return items;
  for (const Json& item : parsed) {
    if (item.is_string()) items.push_back(item.get<std::string>());
  }
  return items;
}

core::TimePoint At(const pqxx::field& field) {
  return core::TimePointFromMicros(field.as<int64_t>());
}

Event EventFrom(const pqxx::row& row) {
  return {row[0].as<std::string>(),
          row[1].as<std::string>(),
          {At(row[2]), At(row[3])},
          ListFromJson(row[4].as<std::string>())};
}

Message MessageFrom(const pqxx::row& row) {
  Message message;
  message.id = row[0].as<std::string>();
  message.folder = static_cast<Folder>(row[1].as<int>());
  message.from = row[2].as<std::string>();
  message.to = ListFromJson(row[3].as<std::string>());
  message.subject = row[4].as<std::string>();
  message.body = row[5].as<std::string>();
  message.created_at = At(row[6]);
  message.sent_at = At(row[7]);
  return message;
}

// Whether the contact was added (false: its email was taken).
bool InsertContact(pqxx::work& tx, const std::string& tenant, const Contact& c) {
  return tx.exec_params(
               "INSERT INTO sandbox.contacts (tenant_id, id, name, email, phone, organization)"
               " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
               tenant, c.id, c.name, c.email, c.phone, c.organization)
             .affected_rows() == 1;
}

void InsertEvent(pqxx::work& tx, const std::string& tenant, const Event& e) {
  tx.exec_params(
      "INSERT INTO sandbox.events (tenant_id, id, title, starts_at, ends_at, attendees)"
      " VALUES ($1, $2, $3, " SANDBOX_TS(4) ", " SANDBOX_TS(5) ", $6::jsonb)",
      tenant, e.id, e.title, core::MicrosOf(e.when.start), core::MicrosOf(e.when.end),
      JsonList(e.attendees));
}

void InsertMessage(pqxx::work& tx, const std::string& tenant, const Message& m) {
  const std::optional<int64_t> sent =
      m.folder == Folder::kDraft ? std::nullopt : std::optional<int64_t>(core::MicrosOf(m.sent_at));
  tx.exec_params(
      "INSERT INTO sandbox.messages (tenant_id, id, folder, sender, recipients, subject,"
      " body, created_at, sent_at) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, " SANDBOX_TS(
          8) ", " SANDBOX_TS(9) ")",
      tenant, m.id, static_cast<int>(m.folder), m.from, JsonList(m.to), m.subject, m.body,
      core::MicrosOf(m.created_at), sent);
}

void InsertSeed(pqxx::work& tx, const std::string& tenant, const SeedData& seed) {
  for (const Contact& contact : seed.contacts) InsertContact(tx, tenant, contact);
  for (const BusyBlock& block : seed.busy) {
    tx.exec_params(
        "INSERT INTO sandbox.busy_blocks (tenant_id, email, starts_at, ends_at)"
        " VALUES ($1, $2, " SANDBOX_TS(3) ", " SANDBOX_TS(4) ")",
        tenant, block.email, core::MicrosOf(block.when.start), core::MicrosOf(block.when.end));
  }
  for (const Event& event : seed.events) InsertEvent(tx, tenant, event);
  for (const Message& message : seed.messages) InsertMessage(tx, tenant, message);
}

std::vector<Event> EventsOverlapping(pqxx::work& tx, const std::string& tenant,
                                     const Interval& window) {
  std::vector<Event> events;
  for (const auto& row :
       tx.exec_params(std::string("SELECT ") + kEventColumns +
                          " FROM sandbox.events WHERE tenant_id = $1 AND starts_at < " SANDBOX_TS(
                              3) " AND ends_at > " SANDBOX_TS(2) " ORDER BY starts_at, id",
                      tenant, core::MicrosOf(window.start), core::MicrosOf(window.end))) {
    events.push_back(EventFrom(row));
  }
  return events;
}

std::vector<BusyBlock> BusyOverlapping(pqxx::work& tx, const std::string& tenant,
                                       const std::vector<std::string>& emails,
                                       const Interval& window) {
  std::vector<BusyBlock> blocks;
  for (const auto& row : tx.exec_params(
           "SELECT email, " SANDBOX_US("starts_at") ", " SANDBOX_US(
               "ends_at") " FROM sandbox.busy_blocks WHERE tenant_id = $1"
                          " AND email IN (SELECT jsonb_array_elements_text($2::jsonb))"
                          " AND starts_at < " SANDBOX_TS(4) " AND ends_at > " SANDBOX_TS(
                              3) " ORDER BY starts_at, email",
           tenant, JsonList(emails), core::MicrosOf(window.start), core::MicrosOf(window.end))) {
    blocks.push_back({row[0].as<std::string>(), {At(row[1]), At(row[2])}});
  }
  return blocks;
}

std::vector<Message> Messages(const pqxx::result& rows) {
  std::vector<Message> messages;
  for (const auto& row : rows) messages.push_back(MessageFrom(row));
  return messages;
}

}  // namespace

absl::StatusOr<bool> PgSandboxStore::SeedOnce(const std::string& tenant, const SeedData& seed) {
  bool seeded = false;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    seeded = tx.exec_params(
                   "INSERT INTO sandbox.tenants (tenant_id) VALUES ($1)"
                   " ON CONFLICT DO NOTHING",
                   tenant)
                 .affected_rows() == 1;
    if (seeded) InsertSeed(tx, tenant, seed);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return seeded;
}

absl::StatusOr<std::vector<Contact>> PgSandboxStore::ListContacts(const std::string& tenant) {
  std::vector<Contact> contacts;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    for (const auto& row :
         tx.exec_params("SELECT id, name, email, phone, organization FROM sandbox.contacts"
                        " WHERE tenant_id = $1 ORDER BY name, id",
                        tenant)) {
      contacts.push_back({row[0].as<std::string>(), row[1].as<std::string>(),
                          row[2].as<std::string>(), row[3].as<std::string>(),
                          row[4].as<std::string>()});
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return contacts;
}

absl::Status PgSandboxStore::AddContact(const std::string& tenant, const Contact& contact) {
  return pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    if (!InsertContact(tx, tenant, contact)) {
      return absl::AlreadyExistsError("a contact with email " + contact.email + " exists");
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<BusyBlock>> PgSandboxStore::ListBusy(
    const std::string& tenant, const std::vector<std::string>& emails, const Interval& window) {
  std::vector<BusyBlock> blocks;
  if (emails.empty()) return blocks;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    blocks = BusyOverlapping(tx, tenant, emails, window);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return blocks;
}

absl::StatusOr<std::vector<Event>> PgSandboxStore::ListEvents(const std::string& tenant,
                                                              const Interval& window) {
  std::vector<Event> events;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    events = EventsOverlapping(tx, tenant, window);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return events;
}

absl::StatusOr<BookingOutcome> PgSandboxStore::BookEvent(const std::string& tenant,
                                                         const Event& event) {
  BookingOutcome outcome;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    // The tenant's row is the lock that orders its bookings.
    tx.exec_params("INSERT INTO sandbox.tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING",
                   tenant);
    tx.exec_params("SELECT 1 FROM sandbox.tenants WHERE tenant_id = $1 FOR UPDATE", tenant);
    outcome.conflicting_events = EventsOverlapping(tx, tenant, event.when);
    if (!event.attendees.empty()) {
      outcome.conflicting_busy = BusyOverlapping(tx, tenant, event.attendees, event.when);
    }
    outcome.booked = outcome.conflicting_events.empty() && outcome.conflicting_busy.empty();
    if (outcome.booked) InsertEvent(tx, tenant, event);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return outcome;
}

absl::StatusOr<Event> PgSandboxStore::DeleteEvent(const std::string& tenant,
                                                  const std::string& id) {
  std::optional<Event> deleted;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    const pqxx::result rows = tx.exec_params(
        std::string("DELETE FROM sandbox.events WHERE tenant_id = $1 AND id = $2 RETURNING ") +
            kEventColumns,
        tenant, id);
    if (rows.empty()) return absl::NotFoundError("no event " + id);
    deleted = EventFrom(rows[0]);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return *deleted;
}

absl::Status PgSandboxStore::AddMessage(const std::string& tenant, const Message& message) {
  return pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    InsertMessage(tx, tenant, message);
    return absl::OkStatus();
  });
}

absl::StatusOr<Message> PgSandboxStore::GetMessage(const std::string& tenant,
                                                   const std::string& id) {
  std::optional<Message> found;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    const pqxx::result rows = tx.exec_params(std::string("SELECT ") + kMessageColumns +
                                                 " FROM sandbox.messages"
                                                 " WHERE tenant_id = $1 AND id = $2",
                                             tenant, id);
    if (rows.empty()) return absl::NotFoundError("no message " + id);
    found = MessageFrom(rows[0]);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return *found;
}

absl::StatusOr<Message> PgSandboxStore::SendDraft(const std::string& tenant, const std::string& id,
                                                  core::TimePoint sent_at) {
  std::optional<Message> sent;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    const pqxx::result rows =
        tx.exec_params(std::string("UPDATE sandbox.messages SET folder = 1, sent_at = " SANDBOX_TS(
                           3) " WHERE tenant_id = $1 AND id = $2 AND folder = 0 RETURNING ") +
                           kMessageColumns,
                       tenant, id, core::MicrosOf(sent_at));
    if (!rows.empty()) {
      sent = MessageFrom(rows[0]);
      return absl::OkStatus();
    }
    const bool exists =
        !tx.exec_params("SELECT 1 FROM sandbox.messages WHERE tenant_id = $1 AND id = $2", tenant,
                        id)
             .empty();
    return exists
               ? absl::FailedPreconditionError("message " + id + " is not a draft (already sent)")
               : absl::NotFoundError("no message " + id);
  });
  if (!status.ok()) return status;
  return *sent;
}

absl::StatusOr<std::vector<Message>> PgSandboxStore::ListFolder(const std::string& tenant,
                                                                Folder folder, int limit) {
  std::vector<Message> messages;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    messages =
        Messages(tx.exec_params(std::string("SELECT ") + kMessageColumns +
                                    " FROM sandbox.messages WHERE tenant_id = $1 AND folder = $2"
                                    " ORDER BY coalesce(sent_at, created_at) DESC, id LIMIT $3",
                                tenant, static_cast<int>(folder), limit));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return messages;
}

absl::StatusOr<std::vector<Message>> PgSandboxStore::SearchMessages(const std::string& tenant,
                                                                    const std::string& query,
                                                                    int limit) {
  std::vector<Message> messages;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    messages = Messages(tx.exec_params(
        std::string("SELECT ") + kMessageColumns +
            " FROM sandbox.messages WHERE tenant_id = $1 AND folder <> 0"
            " AND strpos(lower(sender || ' ' || recipients::text || ' ' || subject || ' ' ||"
            " body), lower($2)) > 0"
            " ORDER BY coalesce(sent_at, created_at) DESC, id LIMIT $3",
        tenant, query, limit));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return messages;
}

}  // namespace omniforge::sandbox
