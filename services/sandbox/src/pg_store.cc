#include "services/sandbox/src/pg_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "libs/seal/sealed_text.h"
#include "nlohmann/json.hpp"
#include "services/sandbox/src/search.h"

namespace omniforge::sandbox {
namespace {

using Json = nlohmann::json;

// Microseconds since the epoch, as a parameter and as a column.
#define SANDBOX_TS(n) "('epoch'::timestamptz + $" #n " * interval '1 microsecond')"
#define SANDBOX_US(col) "(extract(epoch FROM " col ") * 1000000)::bigint"

// The tables whose fields are sealed; each names the associated data of its
// values (seal::SealedAd), so a value moved to another table does not open.
constexpr char kContacts[] = "sandbox.contacts";
constexpr char kBusyBlocks[] = "sandbox.busy_blocks";
constexpr char kEvents[] = "sandbox.events";
constexpr char kMessages[] = "sandbox.messages";

constexpr char kContactColumns[] = "id, name, email, phone, organization";
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

// Opens the sealed fields of one tenant's rows inside its transaction. A
// field that does not open reads as empty; status() keeps the first error,
// which the caller returns (so nothing half-read is answered).
class RowReader {
 public:
  RowReader(seal::KeyRing& keys, pqxx::work& tx, const std::string& tenant)
      : keys_(keys), tx_(tx), tenant_(tenant) {}

  Contact ContactFrom(const pqxx::row& row) {
    const std::string id = row[0].as<std::string>();
    seal::RowOpener open(keys_, tx_, kContacts, tenant_, id);
    Contact contact{id, open.Text("name", row[1].c_str()), open.Text("email", row[2].c_str()),
                    open.Text("phone", row[3].c_str()), open.Text("organization", row[4].c_str())};
    Keep(open.status());
    return contact;
  }

  // Busy blocks have no id: their values are bound to the table and tenant.
  BusyBlock BusyFrom(const pqxx::row& row) {
    seal::RowOpener open(keys_, tx_, kBusyBlocks, tenant_, "");
    BusyBlock block{open.Text("email", row[0].c_str()), {At(row[1]), At(row[2])}};
    Keep(open.status());
    return block;
  }

  Event EventFrom(const pqxx::row& row) {
    const std::string id = row[0].as<std::string>();
    seal::RowOpener open(keys_, tx_, kEvents, tenant_, id);
    Event event{id,
                open.Text("title", row[1].c_str()),
                {At(row[2]), At(row[3])},
                ListFromJson(open.Json("attendees", row[4].c_str(), "[]"))};
    Keep(open.status());
    return event;
  }

  Message MessageFrom(const pqxx::row& row) {
    Message message;
    message.id = row[0].as<std::string>();
    seal::RowOpener open(keys_, tx_, kMessages, tenant_, message.id);
    message.folder = static_cast<Folder>(row[1].as<int>());
    message.from = open.Text("sender", row[2].c_str());
    message.to = ListFromJson(open.Json("recipients", row[3].c_str(), "[]"));
    message.subject = open.Text("subject", row[4].c_str());
    message.body = open.Text("body", row[5].c_str());
    message.created_at = At(row[6]);
    message.sent_at = At(row[7]);
    Keep(open.status());
    return message;
  }

  std::vector<Message> Messages(const pqxx::result& rows) {
    std::vector<Message> messages;
    for (const auto& row : rows) messages.push_back(MessageFrom(row));
    return messages;
  }

  const absl::Status& status() const { return status_; }

 private:
  void Keep(const absl::Status& status) {
    if (status_.ok()) status_ = status;
  }

  seal::KeyRing& keys_;
  pqxx::work& tx_;
  const std::string& tenant_;
  absl::Status status_;
};

void InsertContact(pqxx::work& tx, const seal::DataKey& key, const std::string& tenant,
                   const Contact& c) {
  const seal::RowSealer seal(key, kContacts, tenant, c.id);
  tx.exec_params(
      "INSERT INTO sandbox.contacts (tenant_id, id, name, email, phone, organization)"
      " VALUES ($1, $2, $3, $4, $5, $6)",
      tenant, c.id, seal.Text("name", c.name), seal.Text("email", c.email),
      seal.Text("phone", c.phone), seal.Text("organization", c.organization));
}

void InsertBusy(pqxx::work& tx, const seal::DataKey& key, const std::string& tenant,
                const BusyBlock& block) {
  const seal::RowSealer seal(key, kBusyBlocks, tenant, "");
  tx.exec_params(
      "INSERT INTO sandbox.busy_blocks (tenant_id, email, starts_at, ends_at)"
      " VALUES ($1, $2, " SANDBOX_TS(3) ", " SANDBOX_TS(4) ")",
      tenant, seal.Text("email", block.email), core::MicrosOf(block.when.start),
      core::MicrosOf(block.when.end));
}

void InsertEvent(pqxx::work& tx, const seal::DataKey& key, const std::string& tenant,
                 const Event& e) {
  const seal::RowSealer seal(key, kEvents, tenant, e.id);
  tx.exec_params(
      "INSERT INTO sandbox.events (tenant_id, id, title, starts_at, ends_at, attendees)"
      " VALUES ($1, $2, $3, " SANDBOX_TS(4) ", " SANDBOX_TS(5) ", $6::jsonb)",
      tenant, e.id, seal.Text("title", e.title), core::MicrosOf(e.when.start),
      core::MicrosOf(e.when.end), seal.Json("attendees", JsonList(e.attendees)));
}

void InsertMessage(pqxx::work& tx, const seal::DataKey& key, const std::string& tenant,
                   const Message& m) {
  const seal::RowSealer seal(key, kMessages, tenant, m.id);
  const std::optional<int64_t> sent =
      m.folder == Folder::kDraft ? std::nullopt : std::optional<int64_t>(core::MicrosOf(m.sent_at));
  tx.exec_params(
      "INSERT INTO sandbox.messages (tenant_id, id, folder, sender, recipients, subject,"
      " body, created_at, sent_at) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, " SANDBOX_TS(
          8) ", " SANDBOX_TS(9) ")",
      tenant, m.id, static_cast<int>(m.folder), seal.Text("sender", m.from),
      seal.Json("recipients", JsonList(m.to)), seal.Text("subject", m.subject),
      seal.Text("body", m.body), core::MicrosOf(m.created_at), sent);
}

void InsertSeed(pqxx::work& tx, const seal::DataKey& key, const std::string& tenant,
                const SeedData& seed) {
  for (const Contact& contact : seed.contacts) InsertContact(tx, key, tenant, contact);
  for (const BusyBlock& block : seed.busy) InsertBusy(tx, key, tenant, block);
  for (const Event& event : seed.events) InsertEvent(tx, key, tenant, event);
  for (const Message& message : seed.messages) InsertMessage(tx, key, tenant, message);
}

// Takes the lock of the tenant's row (made when missing), which orders the
// writes that must check the tenant's rows first: bookings, new contacts.
void LockTenant(pqxx::work& tx, const std::string& tenant) {
  tx.exec_params("INSERT INTO sandbox.tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING",
                 tenant);
  tx.exec_params("SELECT 1 FROM sandbox.tenants WHERE tenant_id = $1 FOR UPDATE", tenant);
}

std::vector<Contact> AllContacts(pqxx::work& tx, RowReader& read, const std::string& tenant) {
  std::vector<Contact> contacts;
  for (const auto& row :
       tx.exec_params(std::string("SELECT ") + kContactColumns +
                          " FROM sandbox.contacts WHERE tenant_id = $1 ORDER BY id",
                      tenant)) {
    contacts.push_back(read.ContactFrom(row));
  }
  return contacts;
}

std::vector<Event> EventsOverlapping(pqxx::work& tx, RowReader& read, const std::string& tenant,
                                     const Interval& window) {
  std::vector<Event> events;
  for (const auto& row :
       tx.exec_params(std::string("SELECT ") + kEventColumns +
                          " FROM sandbox.events WHERE tenant_id = $1 AND starts_at < " SANDBOX_TS(
                              3) " AND ends_at > " SANDBOX_TS(2) " ORDER BY starts_at, id",
                      tenant, core::MicrosOf(window.start), core::MicrosOf(window.end))) {
    events.push_back(read.EventFrom(row));
  }
  return events;
}

// The database finds the blocks by time; their emails are matched once
// opened.
std::vector<BusyBlock> BusyOverlapping(pqxx::work& tx, RowReader& read, const std::string& tenant,
                                       const std::vector<std::string>& emails,
                                       const Interval& window) {
  std::vector<BusyBlock> blocks;
  for (const auto& row :
       tx.exec_params("SELECT email, " SANDBOX_US("starts_at") ", " SANDBOX_US(
                          "ends_at") " FROM sandbox.busy_blocks WHERE tenant_id = $1"
                                     " AND starts_at < " SANDBOX_TS(3) " AND ends_at > " SANDBOX_TS(
                                         2) " ORDER BY starts_at",
                      tenant, core::MicrosOf(window.start), core::MicrosOf(window.end))) {
    BusyBlock block = read.BusyFrom(row);
    if (std::find(emails.begin(), emails.end(), block.email) != emails.end()) {
      blocks.push_back(std::move(block));
    }
  }
  std::stable_sort(blocks.begin(), blocks.end(), [](const BusyBlock& a, const BusyBlock& b) {
    return a.when.start < b.when.start || (a.when.start == b.when.start && a.email < b.email);
  });
  return blocks;
}

// A table whose fields are sealed, for SealPlainRows: how its rows are
// named within the tenant, and its sealed text and jsonb columns.
struct SealedTable {
  const char* table;
  // A column, or an expression: busy blocks have no id, and their one
  // sealed column is updated once, by the ctid read before the update.
  const char* row_id;
  bool ad_names_row;  // whether the associated data names the row
  std::vector<std::string> text_columns;
  std::vector<std::string> json_columns;
};

const std::vector<SealedTable>& SealedTables() {
  static const auto* tables = new std::vector<SealedTable>{
      {kContacts, "id", true, {"name", "email", "phone", "organization"}, {}},
      {kBusyBlocks, "ctid::text", false, {"email"}, {}},
      {kEvents, "id", true, {"title"}, {"attendees"}},
      {kMessages, "id", true, {"sender", "subject", "body"}, {"recipients"}},
  };
  return *tables;
}

bool IsSealedJson(const std::string& json_text) {
  const Json parsed = Json::parse(json_text, nullptr, false);
  return parsed.is_string() && seal::IsSealedText(parsed.get<std::string>());
}

// Seals the plain fields of `table`'s rows of `tenant`, one column at a
// time; returns how many rows changed.
int SealPlainRowsOf(pqxx::work& tx, const seal::DataKey& key, const std::string& tenant,
                    const SealedTable& table) {
  std::string columns = table.row_id;
  for (const std::string& column : table.text_columns) columns += ", " + column;
  for (const std::string& column : table.json_columns) columns += ", " + column + "::text";
  const std::string where = std::string(" WHERE tenant_id = $1 AND ") + table.row_id + " = $2";
  int changed = 0;
  for (const auto& row : tx.exec_params(
           "SELECT " + columns + " FROM " + table.table + " WHERE tenant_id = $1 FOR UPDATE",
           tenant)) {
    const std::string id = row[0].as<std::string>();
    const seal::RowSealer seal(key, table.table, tenant, table.ad_names_row ? id : "");
    bool plain = false;
    int i = 1;
    for (const std::string& column : table.text_columns) {
      const std::string stored = row[i++].as<std::string>();
      if (stored.empty() || seal::IsSealedText(stored)) continue;
      tx.exec_params(absl::StrCat("UPDATE ", table.table, " SET ", column, " = $3", where), tenant,
                     id, seal.Text(column, stored));
      plain = true;
    }
    for (const std::string& column : table.json_columns) {
      const std::string stored = row[i++].as<std::string>();
      if (IsSealedJson(stored)) continue;
      tx.exec_params(absl::StrCat("UPDATE ", table.table, " SET ", column, " = $3::jsonb", where),
                     tenant, id, seal.Json(column, stored));
      plain = true;
    }
    if (plain) ++changed;
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> PgSandboxStore::SeedOnce(const std::string& tenant, const SeedData& seed) {
  // The key first: with one connection, the key ring cannot read it while
  // the tenant's transaction holds it.
  auto key = keys_.ActiveKey(tenant);
  if (!key.ok()) return key.status();
  bool seeded = false;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    seeded = tx.exec_params(
                   "INSERT INTO sandbox.tenants (tenant_id) VALUES ($1)"
                   " ON CONFLICT DO NOTHING",
                   tenant)
                 .affected_rows() == 1;
    if (seeded) InsertSeed(tx, *key, tenant, seed);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return seeded;
}

absl::StatusOr<std::vector<Contact>> PgSandboxStore::ListContacts(const std::string& tenant) {
  std::vector<Contact> contacts;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    RowReader read(keys_, tx, tenant);
    contacts = AllContacts(tx, read, tenant);
    return read.status();
  });
  if (!status.ok()) return status;
  std::stable_sort(contacts.begin(), contacts.end(),
                   [](const Contact& a, const Contact& b) { return a.name < b.name; });
  return contacts;
}

absl::Status PgSandboxStore::AddContact(const std::string& tenant, const Contact& contact) {
  auto key = keys_.ActiveKey(tenant);
  if (!key.ok()) return key.status();
  return pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    // Under the tenant's lock, so two adds of one email cannot both pass.
    LockTenant(tx, tenant);
    RowReader read(keys_, tx, tenant);
    for (const Contact& existing : AllContacts(tx, read, tenant)) {
      if (existing.email == contact.email) {
        return absl::AlreadyExistsError("a contact with email " + contact.email + " exists");
      }
    }
    if (!read.status().ok()) return read.status();
    InsertContact(tx, *key, tenant, contact);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<BusyBlock>> PgSandboxStore::ListBusy(
    const std::string& tenant, const std::vector<std::string>& emails, const Interval& window) {
  std::vector<BusyBlock> blocks;
  if (emails.empty()) return blocks;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    RowReader read(keys_, tx, tenant);
    blocks = BusyOverlapping(tx, read, tenant, emails, window);
    return read.status();
  });
  if (!status.ok()) return status;
  return blocks;
}

absl::StatusOr<std::vector<Event>> PgSandboxStore::ListEvents(const std::string& tenant,
                                                              const Interval& window) {
  std::vector<Event> events;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    RowReader read(keys_, tx, tenant);
    events = EventsOverlapping(tx, read, tenant, window);
    return read.status();
  });
  if (!status.ok()) return status;
  return events;
}

absl::StatusOr<BookingOutcome> PgSandboxStore::BookEvent(const std::string& tenant,
                                                         const Event& event) {
  auto key = keys_.ActiveKey(tenant);
  if (!key.ok()) return key.status();
  BookingOutcome outcome;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    LockTenant(tx, tenant);
    RowReader read(keys_, tx, tenant);
    outcome.conflicting_events = EventsOverlapping(tx, read, tenant, event.when);
    if (!event.attendees.empty()) {
      outcome.conflicting_busy = BusyOverlapping(tx, read, tenant, event.attendees, event.when);
    }
    if (!read.status().ok()) return read.status();
    outcome.booked = outcome.conflicting_events.empty() && outcome.conflicting_busy.empty();
    if (outcome.booked) InsertEvent(tx, *key, tenant, event);
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
    RowReader read(keys_, tx, tenant);
    deleted = read.EventFrom(rows[0]);
    return read.status();
  });
  if (!status.ok()) return status;
  return *deleted;
}

absl::Status PgSandboxStore::AddMessage(const std::string& tenant, const Message& message) {
  auto key = keys_.ActiveKey(tenant);
  if (!key.ok()) return key.status();
  return pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    InsertMessage(tx, *key, tenant, message);
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
    RowReader read(keys_, tx, tenant);
    found = read.MessageFrom(rows[0]);
    return read.status();
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
      RowReader read(keys_, tx, tenant);
      sent = read.MessageFrom(rows[0]);
      return read.status();
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
    RowReader read(keys_, tx, tenant);
    messages = read.Messages(
        tx.exec_params(std::string("SELECT ") + kMessageColumns +
                           " FROM sandbox.messages WHERE tenant_id = $1"
                           " AND folder = $2"
                           " ORDER BY coalesce(sent_at, created_at) DESC, id LIMIT $3",
                       tenant, static_cast<int>(folder), limit));
    return read.status();
  });
  if (!status.ok()) return status;
  return messages;
}

// The tenant's sent and received mail is read newest first and matched once
// opened: the database cannot search sealed text.
absl::StatusOr<std::vector<Message>> PgSandboxStore::SearchMessages(const std::string& tenant,
                                                                    const std::string& query,
                                                                    int limit) {
  std::vector<Message> messages;
  if (limit <= 0) return messages;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    RowReader read(keys_, tx, tenant);
    for (const auto& row : tx.exec_params(std::string("SELECT ") + kMessageColumns +
                                              " FROM sandbox.messages WHERE tenant_id = $1"
                                              " AND folder <> 0"
                                              " ORDER BY coalesce(sent_at, created_at) DESC, id",
                                          tenant)) {
      Message message = read.MessageFrom(row);
      if (!read.status().ok()) return read.status();
      if (!MessageMentions(message, query)) continue;
      messages.push_back(std::move(message));
      if (messages.size() >= static_cast<size_t>(limit)) break;
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return messages;
}

absl::StatusOr<int> PgSandboxStore::SealPlainRows(const std::string& tenant) {
  // A tenant never seeded has no rows: no key is made for it (the
  // executor's tool-listing session, `_catalog`, is one).
  bool seeded = false;
  absl::Status looked = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    seeded = !tx.exec_params("SELECT 1 FROM sandbox.tenants WHERE tenant_id = $1", tenant).empty();
    return absl::OkStatus();
  });
  if (!looked.ok()) return looked;
  if (!seeded) return 0;
  auto key = keys_.ActiveKey(tenant);
  if (!key.ok()) return key.status();
  int changed = 0;
  absl::Status status = pg::WithTenantTransaction(pool_, tenant, [&](pqxx::work& tx) {
    changed = 0;
    for (const SealedTable& table : SealedTables()) {
      changed += SealPlainRowsOf(tx, *key, tenant, table);
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return changed;
}

}  // namespace omniforge::sandbox
