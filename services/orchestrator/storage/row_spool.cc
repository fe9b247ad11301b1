#include "services/orchestrator/storage/row_spool.h"

#include <unistd.h>

#include <cerrno>

#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "services/orchestrator/downstream/spool_record.h"

namespace omniforge::orchestrator {
namespace {

// A row is a turn's usage (a few KiB) or an error (a 2,000-character
// message); anything far larger is a damaged length.
constexpr uint32_t kMaxPayloadBytes = 4 << 20;

absl::Status Errno(const std::string& what, const std::filesystem::path& path) {
  return spool::Errno("row spool", what, path);
}

// The associated data of a sealed row: it opens in its own spool and record.
std::string SealedAd(const std::string& name, uint64_t number, const std::string& tenant) {
  std::string ad = "omniforge-row-spool|" + name + "|" + std::to_string(number) + "|";
  spool::PutBytes(ad, tenant);
  return ad;
}

core::Counter& CorruptRecordsCounter(const std::string& name) {
  return core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_row_spool_corrupt_records_total",
      "Damaged records skipped in a background row spool at start", {{"spool", name}});
}

}  // namespace

RowSpool::RowSpool(RowSpoolOptions options)
    : options_(std::move(options)), path_(options_.dir / (options_.name + ".log")) {
  if (options_.master_keys.has_value()) {
    keys_ = seal::DerivedKeys(*options_.master_keys, "ofrowsp1");
  }
}

absl::StatusOr<std::unique_ptr<RowSpool>> RowSpool::Open(RowSpoolOptions options) {
  std::unique_ptr<RowSpool> spool(new RowSpool(std::move(options)));
  absl::StatusOr<int> locked = spool::LockDirectory(
      "row spool", spool->options_.dir, spool->options_.dir / (spool->options_.name + ".lock"));
  if (!locked.ok()) return locked.status();
  spool->lock_fd_ = *locked;
  if (absl::Status recovered = spool->Recover(); !recovered.ok()) return recovered;
  return spool;
}

RowSpool::~RowSpool() {
  absl::MutexLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string RowSpool::Payload(const SpooledRow& row) const {
  std::string payload;
  spool::PutU64(payload, row.number);
  spool::PutBytes(payload, row.tenant_id);
  spool::PutU64(payload, row.records);
  if (!options_.master_keys.has_value()) {
    spool::PutBytes(payload, row.row);
    return payload;
  }
  const std::string& key_id = options_.master_keys->current_id;
  spool::PutBytes(payload, key_id);
  spool::PutBytes(payload, seal::KeyRing::Seal(keys_.at(key_id), row.row,
                                               SealedAd(options_.name, row.number, row.tenant_id)));
  return payload;
}

absl::StatusOr<std::optional<SpooledRow>> RowSpool::RowOf(const std::string& payload) const {
  SpooledRow row;
  std::string text;
  spool::PayloadReader reader(payload);
  if (!reader.U64(row.number) || !reader.Bytes(row.tenant_id) || !reader.U64(row.records) ||
      !reader.Bytes(text)) {
    return std::nullopt;
  }
  if (!reader.AtEnd()) {  // sealed: the key id, then the sealed row
    const std::string key_id = std::move(text);
    std::string sealed;
    if (!reader.Bytes(sealed)) return std::nullopt;
    auto key = keys_.find(key_id);
    if (key == keys_.end()) {
      return absl::FailedPreconditionError(
          "row spool " + path_.string() + ": row " + std::to_string(row.number) +
          " is sealed under master key '" + key_id +
          "', which is not configured; it is kept until that key is given");
    }
    auto opened = seal::KeyRing::Open(key->second, sealed,
                                      SealedAd(options_.name, row.number, row.tenant_id));
    if (!opened.ok()) return std::nullopt;
    text = *std::move(opened);
  }
  if (!reader.AtEnd()) return std::nullopt;
  row.row = std::move(text);
  row.record_bytes = static_cast<int64_t>(spool::kHeaderBytes + payload.size());
  return row;
}

absl::Status RowSpool::Recover() {
  absl::MutexLock lock(&mu_);
  std::string data;
  if (absl::Status read = spool::OpenAndRead("row spool", path_, fd_, data); !read.ok()) {
    return read;
  }
  size_t pos = 0;
  size_t end = 0;  // where the last sound record read ends
  int damaged = 0;
  while (pos < data.size()) {
    std::optional<std::string> payload = spool::PayloadAt(data, pos, kMaxPayloadBytes);
    absl::StatusOr<std::optional<SpooledRow>> row =
        payload.has_value() ? RowOf(*payload) : std::optional<SpooledRow>();
    if (!row.ok()) return row.status();
    if (!row->has_value()) {
      ++pos;  // damaged or cut short here: look for the next sound record
      continue;
    }
    if (pos > end) ++damaged;
    SpooledRow& sound = **row;
    next_number_ = std::max(next_number_, sound.number + 1);
    pos += static_cast<size_t>(sound.record_bytes);
    end = pos;
    rows_.emplace(sound.number, std::move(sound));
  }
  file_bytes_ = static_cast<int64_t>(end);
  if (damaged > 0 || end < data.size()) {
    core::LogWarn("row spool: damaged or unfinished records dropped; the sound ones are kept",
                  {{"file", path_.string()}, {"damaged", std::to_string(damaged)}});
    CorruptRecordsCounter(options_.name).Inc(damaged);
    std::string kept;
    for (const auto& [number, row] : rows_) kept += spool::Record(Payload(row));
    if (absl::Status rewritten = spool::Rewrite(path_, kept, fd_); !rewritten.ok()) {
      return rewritten;
    }
    file_bytes_ = static_cast<int64_t>(kept.size());
  }
  UpdateGaugesLocked();
  if (!rows_.empty()) {
    core::LogInfo("row spool: rows left by an earlier process will be stored",
                  {{"file", path_.string()}, {"rows", std::to_string(rows_.size())}});
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> RowSpool::Add(std::vector<SpooledRow> rows) {
  absl::MutexLock lock(&mu_);
  std::string data;
  size_t kept = 0;
  for (SpooledRow& row : rows) {
    row.number = next_number_ + kept;
    std::string record = spool::Record(Payload(row));
    if (file_bytes_ + static_cast<int64_t>(data.size() + record.size()) > options_.max_bytes) {
      break;
    }
    row.record_bytes = static_cast<int64_t>(record.size());
    data += record;
    ++kept;
  }
  if (kept == 0) return 0;
  absl::Status written = spool::WriteAll(fd_, data, path_);
  if (written.ok() && ::fdatasync(fd_) != 0) written = Errno("cannot fsync", path_);
  if (!written.ok()) {
    // A partial record would hide every record written after it.
    if (::ftruncate(fd_, static_cast<off_t>(file_bytes_)) != 0) {
      core::LogError("row spool: cannot cut a failed write", {{"file", path_.string()}});
    }
    return written;
  }
  file_bytes_ += static_cast<int64_t>(data.size());
  next_number_ += kept;
  for (size_t i = 0; i < kept; ++i) rows_.emplace(rows[i].number, std::move(rows[i]));
  UpdateGaugesLocked();
  return kept;
}

std::vector<SpooledRow> RowSpool::Oldest(size_t max) const {
  absl::MutexLock lock(&mu_);
  std::vector<SpooledRow> oldest;
  for (auto it = rows_.begin(); it != rows_.end() && oldest.size() < max; ++it) {
    oldest.push_back(it->second);
  }
  return oldest;
}

absl::Status RowSpool::Remove(const std::vector<uint64_t>& numbers) {
  absl::MutexLock lock(&mu_);
  for (uint64_t number : numbers) rows_.erase(number);
  std::string kept;
  for (const auto& [number, row] : rows_) kept += spool::Record(Payload(row));
  absl::Status rewritten = spool::Rewrite(path_, kept, fd_);
  if (rewritten.ok()) file_bytes_ = static_cast<int64_t>(kept.size());
  UpdateGaugesLocked();
  return rewritten;
}

size_t RowSpool::depth() const {
  absl::MutexLock lock(&mu_);
  return rows_.size();
}

int64_t RowSpool::file_bytes() const {
  absl::MutexLock lock(&mu_);
  return file_bytes_;
}

void RowSpool::UpdateGaugesLocked() {
  core::MetricsRegistry::Global()
      .GetGauge("omniforge_orchestrator_row_spool_depth",
                "Background rows (turn errors, model-call usage) waiting in their spool for the "
                "database",
                {{"spool", options_.name}})
      .Set(static_cast<double>(rows_.size()));
  core::MetricsRegistry::Global()
      .GetGauge("omniforge_orchestrator_row_spool_bytes", "Size of a background row spool file",
                {{"spool", options_.name}})
      .Set(static_cast<double>(file_bytes_));
}

}  // namespace omniforge::orchestrator
