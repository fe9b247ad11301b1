// Background rows (turn errors, model-call usage) outlive an outage of the
// orchestrator's database: a batch the database cannot take is written to a
// local append-only file and fsynced instead of being dropped, and
// TenantRowWriter stores it once the database is back. Each row carries the
// id it is inserted under, and the inserts skip an id that is already
// stored, so a row written again after a crash between the insert and the
// rewrite of the file is stored once.
//
// The file (<dir>/<name>.log, held by <dir>/<name>.lock) has the append
// spool's framing (downstream/spool_record.h); a payload is the record's
// number, the tenant, the number of records the row counts for and the row
// as JSON, sealed like the append spool's messages when master keys are
// given. A spool has its own bound in bytes, apart from the append spool's:
// background rows never take room from chat messages. When it is full the
// newest rows are refused (the caller counts them); the oldest stay.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/seal/key_ring.h"
#include "libs/seal/master_keys.h"

namespace omniforge::orchestrator {

struct RowSpoolOptions {
  // Holds the file and its lock (spool.dir, beside the append spool's).
  std::filesystem::path dir;
  // Names the file: "error_log", "llm_usage".
  std::string name;
  // The file's size limit.
  int64_t max_bytes = 16LL << 20;
  // Seal the rows as the append spool seals messages; in the clear without.
  std::optional<seal::MasterKeySet> master_keys;
};

struct SpooledRow {
  // Given by the spool.
  uint64_t number = 0;
  std::string tenant_id;
  // The row as JSON text, before it is prepared for the database
  // (unsealed).
  std::string row;
  // What the row counts for in the writer's dropped metric.
  uint64_t records = 1;
  int64_t record_bytes = 0;
};

// Thread-safe.
class RowSpool final {
 public:
  // Opens (creates) the spool and reads what an earlier process left: a
  // damaged record is skipped and counted, one cut short at the end dropped.
  // FAILED_PRECONDITION when another process holds it, or a row is sealed
  // under a master key not given; INTERNAL when it cannot be read.
  static absl::StatusOr<std::unique_ptr<RowSpool>> Open(RowSpoolOptions options);
  ~RowSpool();
  RowSpool(const RowSpool&) = delete;
  RowSpool& operator=(const RowSpool&) = delete;

  // Writes the rows from the front of `rows` that fit the bound with one
  // write and one fdatasync, and returns how many; the others (the newest)
  // are not kept. INTERNAL (nothing kept) when the file cannot be written.
  absl::StatusOr<size_t> Add(std::vector<SpooledRow> rows);
  // Up to `max` of the oldest rows.
  std::vector<SpooledRow> Oldest(size_t max) const;
  // Removes rows by number and rewrites the file without them.
  absl::Status Remove(const std::vector<uint64_t>& numbers);

  size_t depth() const;
  int64_t file_bytes() const;
  const std::string& name() const { return options_.name; }

 private:
  explicit RowSpool(RowSpoolOptions options);
  absl::Status Recover();
  std::string Payload(const SpooledRow& row) const;
  // The row of a record's payload; nullopt when it is not one.
  absl::StatusOr<std::optional<SpooledRow>> RowOf(const std::string& payload) const;
  void UpdateGaugesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RowSpoolOptions options_;
  const std::filesystem::path path_;
  std::map<std::string, seal::DataKey> keys_;
  int lock_fd_ = -1;

  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t file_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_number_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, SpooledRow> rows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace omniforge::orchestrator
