#include "services/orchestrator/downstream/append_spool.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/time/time.h"
#include "libs/core/clock.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/seal/key_ring.h"
#include "services/orchestrator/downstream/append_spool_record.h"
#include "services/orchestrator/downstream/spool_record.h"

namespace omniforge::orchestrator {
namespace {

constexpr char kFileName[] = "appends.log";
constexpr char kLockName[] = "lock";
using spool::PutBytes;

// The associated data of a record's sealed message: it opens in its own
// record only.
std::string SealedAd(uint64_t number, const core::Identity& who) {
  std::string ad = "omniforge-spool|" + std::to_string(number) + "|";
  PutBytes(ad, who.tenant_id);
  PutBytes(ad, who.user_id);
  return ad;
}

absl::Status Errno(const std::string& what, const std::filesystem::path& path) {
  return spool::Errno("append spool", what, path);
}

// Messages that storage will never take however often they are retried;
// every other failure of a spooled message is retried.
bool RefusedForGood(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return true;
    default:
      return false;
  }
}

// One queue per conversation, however its id is spelled.
std::string QueueKey(const core::Identity& who, const std::string& conversation_id) {
  return who.tenant_id + "\n" + who.user_id + "\n" + core::CanonicalId(conversation_id);
}

// The caller part (tenant and user) of a queue key.
std::string IdentityOf(const std::string& queue_key) {
  return queue_key.substr(0, queue_key.rfind('\n'));
}

// Messages per drain call: 256 (the conversation service's group commit
// writes as many in one transaction), and at most 2 MiB of records, well
// inside gRPC's 4 MiB message limit.
constexpr size_t kDrainBatchMessages = 256;
constexpr int64_t kDrainBatchBytes = 2LL << 20;

core::Counter& DrainCallsCounter() {
  static core::Counter& c = core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_spool_drain_calls_total",
      "Calls the append spool's drain made to conversation storage (each carries up to 256 "
      "messages)");
  return c;
}

core::Counter& SpooledCounter() {
  static core::Counter& c = core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_spooled_appends_total",
      "Messages written to the append spool because conversation storage was unreachable");
  return c;
}
// Damaged records skipped when the spool was read at start.
core::Counter& CorruptRecordsCounter() {
  static core::Counter& c = core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_spool_corrupt_records_total",
      "Damaged records skipped in the append spool at start; the records after them were kept");
  return c;
}

core::Counter& DrainedCounter(const std::string& outcome) {
  return core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_spool_drained_appends_total",
      "Spooled messages that left the spool: stored, or refused for good by storage",
      {{"outcome", outcome}});
}

// What became of message `i` of a batch that storage answered `response`
// (a result missing from the answer counts as not stored, to be retried).
absl::Status OutcomeOf(const absl::StatusOr<convpb::AppendMessagesResponse>& response, size_t i) {
  if (!response.ok()) return response.status();
  if (i >= static_cast<size_t>(response->results_size())) {
    return absl::UnavailableError("conversation storage answered no result for the message");
  }
  const convpb::AppendMessagesResult& result = response->results(static_cast<int>(i));
  if (result.error_code() == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(result.error_code()), result.error_message());
}

}  // namespace

bool IsStorageUnreachable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

AppendSpool::AppendSpool(Memory& memory, AppendSpoolOptions options)
    : memory_(memory), options_(std::move(options)), path_(options_.dir / kFileName) {
  if (!options_.master_keys.has_value()) return;
  spool_keys_ = seal::DerivedKeys(*options_.master_keys, "ofspool1");
}

absl::StatusOr<std::unique_ptr<AppendSpool>> AppendSpool::Open(Memory& memory,
                                                               AppendSpoolOptions options) {
  std::unique_ptr<AppendSpool> spool(new AppendSpool(memory, std::move(options)));
  absl::StatusOr<int> locked =
      spool::LockDirectory("append spool", spool->options_.dir, spool->options_.dir / kLockName);
  if (!locked.ok()) return locked.status();
  spool->lock_fd_ = *locked;
  if (absl::Status recovered = spool->Recover(); !recovered.ok()) return recovered;
  return spool;
}

std::string AppendSpool::EncodedRecord(uint64_t number, const core::Identity& who,
                                       const convpb::AppendMessageRequest& request) const {
  SpoolPayload payload{.number = number, .who = who, .key_id = std::nullopt, .message = {}};
  if (!options_.master_keys.has_value()) {
    payload.message = request.SerializeAsString();
    return EncodeSpoolRecord(payload);
  }
  const std::string& key_id = options_.master_keys->current_id;
  payload.key_id = key_id;
  payload.message = seal::KeyRing::Seal(spool_keys_.at(key_id), request.SerializeAsString(),
                                        SealedAd(number, who));
  return EncodeSpoolRecord(payload);
}

absl::StatusOr<std::string> AppendSpool::OpenMessage(uint64_t number, const core::Identity& who,
                                                     const std::string& key_id,
                                                     const std::string& sealed) const {
  auto key = spool_keys_.find(key_id);
  if (key == spool_keys_.end()) {
    return absl::FailedPreconditionError(
        "append spool " + path_.string() + ": message " + std::to_string(number) +
        " is sealed under master key '" + key_id +
        "', which is not configured (encryption.master_key_file, "
        "encryption.previous_master_key_files); it is kept until that key is given");
  }
  auto opened = seal::KeyRing::Open(key->second, sealed, SealedAd(number, who));
  if (!opened.ok()) {
    return absl::DataLossError("append spool " + path_.string() + ": message " +
                               std::to_string(number) + " does not open with master key '" +
                               key_id + "'");
  }
  return opened;
}

absl::StatusOr<std::optional<AppendSpool::Entry>> AppendSpool::RecordAt(const std::string& data,
                                                                        size_t pos) const {
  std::optional<SpoolRecord> record = DecodeSpoolRecordAt(data, pos);
  if (!record.has_value()) return std::nullopt;
  Entry entry;
  entry.number = record->payload.number;
  entry.who = record->payload.who;
  std::string request = std::move(record->payload.message);
  if (record->payload.key_id.has_value()) {
    auto opened = OpenMessage(entry.number, entry.who, *record->payload.key_id, request);
    if (!opened.ok()) return opened.status();
    request = *std::move(opened);
  }
  if (!entry.request.ParseFromString(request)) return std::nullopt;
  entry.record_bytes = static_cast<int64_t>(record->record_bytes);
  return entry;
}

absl::Status AppendSpool::Recover() {
  absl::MutexLock lock(&mu_);
  std::string data;
  if (absl::Status read = spool::OpenAndRead("append spool", path_, fd_, data); !read.ok()) {
    return read;
  }
  size_t pos = 0;
  size_t end = 0;  // where the last sound record read ends
  int damaged = 0;
  while (pos < data.size()) {
    absl::StatusOr<std::optional<Entry>> record = RecordAt(data, pos);
    if (!record.ok()) return record.status();
    if (!record->has_value()) {
      ++pos;  // damaged or cut short here: look for the next sound record
      continue;
    }
    if (pos > end) {
      ++damaged;
      core::LogWarn("append spool: skipping a damaged record; the records after it are kept",
                    {{"file", path_.string()},
                     {"offset", std::to_string(end)},
                     {"bytes", std::to_string(pos - end)}});
    }
    Entry& entry = **record;
    next_number_ = std::max(next_number_, entry.number + 1);
    queues_[QueueKey(entry.who, entry.request.conversation_id())].push_back(entry.number);
    pos += static_cast<size_t>(entry.record_bytes);
    end = pos;
    entries_.emplace(entry.number, std::move(entry));
  }
  if (end < data.size()) {
    // Only the last write can be cut short by a crash: its fsync never
    // returned, so its turn never went on and nobody was told it was kept.
    core::LogWarn("append spool: dropping an unfinished record at the end of the file",
                  {{"file", path_.string()},
                   {"offset", std::to_string(end)},
                   {"bytes", std::to_string(data.size() - end)}});
  }
  file_bytes_ = static_cast<int64_t>(end);
  if (damaged > 0) {
    CorruptRecordsCounter().Inc(damaged);
    // The damaged bytes go: the file is written again with what was kept.
    if (absl::Status compacted = CompactLocked(); !compacted.ok()) return compacted;
  } else if (end < data.size() &&
             (::ftruncate(fd_, static_cast<off_t>(end)) != 0 || ::fsync(fd_) != 0)) {
    return Errno("cannot truncate", path_);
  }
  UpdateGaugesLocked();
  if (!entries_.empty()) {
    core::LogInfo("append spool: messages left by an earlier process will be stored",
                  {{"file", path_.string()}, {"messages", std::to_string(entries_.size())}});
  }
  return absl::OkStatus();
}

AppendSpool::~AppendSpool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  if (drainer_.joinable()) drainer_.join();
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

absl::Status AppendSpool::WriteLocked(Entry& entry) {
  entry.number = next_number_;
  const std::string record = EncodedRecord(entry.number, entry.who, entry.request);
  const auto size = static_cast<int64_t>(record.size());
  if (file_bytes_ + size > options_.max_bytes) {
    return core::WithReason(
        absl::ResourceExhaustedError(
            "conversation storage is unreachable and the orchestrator's append spool is full (" +
            std::to_string(file_bytes_) + " of " + std::to_string(options_.max_bytes) +
            " bytes in " + path_.string() + "); messages are not accepted until storage is back"),
        core::kReasonStorageBacklogFull);
  }
  absl::Status written = spool::WriteAll(fd_, record, path_);
  if (written.ok() && ::fdatasync(fd_) != 0) written = Errno("cannot fsync", path_);
  if (!written.ok()) {
    // A partial record would hide every record written after it.
    if (::ftruncate(fd_, static_cast<off_t>(file_bytes_)) != 0) {
      core::LogError("append spool: cannot cut a failed write", {{"file", path_.string()}});
    }
    return written;
  }
  file_bytes_ += size;
  entry.record_bytes = size;
  ++next_number_;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<convpb::AppendMessageResponse>> AppendSpool::Append(
    const core::Call& call, const convpb::AppendMessageRequest& request) {
  const core::Identity& who = call.who;
  convpb::AppendMessageRequest keyed = request;
  // The key makes the drainer's retries safe: an append that landed after
  // its deadline passed is not stored twice.
  if (keyed.idempotency_key().empty()) keyed.set_idempotency_key("spool:" + core::NewUuid());
  const std::string key = QueueKey(who, keyed.conversation_id());
  bool queued = false;
  {
    absl::MutexLock lock(&mu_);
    queued = queues_.count(key) > 0;
  }
  if (!queued) {
    absl::StatusOr<convpb::AppendMessageResponse> stored = memory_.AppendMessage(call, keyed);
    if (stored.ok()) return std::optional<convpb::AppendMessageResponse>(*std::move(stored));
    if (!IsStorageUnreachable(stored.status())) return stored.status();
  }
  uint64_t number = 0;
  size_t depth = 0;
  {
    absl::MutexLock lock(&mu_);
    Entry entry{0, who, std::move(keyed), 0};
    if (absl::Status written = WriteLocked(entry); !written.ok()) return written;
    number = entry.number;
    queues_[key].push_back(number);
    entries_.emplace(number, std::move(entry));
    depth = entries_.size();
    UpdateGaugesLocked();
  }
  SpooledCounter().Inc();
  core::LogWarn("message kept in the append spool until conversation storage takes it",
                {{"component", "orchestrator"},
                 {"conversation_id", request.conversation_id()},
                 {"spooled", std::to_string(depth)}});
  wake_.SignalAll();
  if (queued) {
    // Storage may be back: the caller waits for the messages ahead of its
    // own (up to its deadline) and then has its message stored.
    std::unique_lock<core::TimedMutex> drain(drain_mu_, std::defer_lock);
    const auto wait = std::max(std::chrono::microseconds(0),
                               call.deadline - core::TimePointFromMicros(core::NowMicros()));
    ++turns_waiting_;
    const bool locked = drain.try_lock_for(wait);
    --turns_waiting_;
    if (locked) {
      size_t removed = 0;
      bool unreachable = false;
      std::optional<convpb::AppendMessageResponse> stored =
          DrainConversationLocked(key, call.deadline, number, removed, unreachable);
      if (removed > 0) {
        absl::MutexLock lock(&mu_);
        if (absl::Status compacted = CompactLocked(); !compacted.ok()) {
          core::LogError("append spool: cannot compact", {{"error", compacted.ToString()}});
        }
      }
      if (stored) return stored;
    }
  }
  return std::optional<convpb::AppendMessageResponse>();
}

std::optional<convpb::AppendMessageResponse> AppendSpool::DrainBatchLocked(
    const std::vector<std::string>& keys, core::TimePoint deadline, uint64_t wanted,
    size_t& removed, bool& unreachable) {
  // The batch: each conversation's messages oldest first, as many as fit.
  std::vector<std::pair<std::string, uint64_t>> sent;  // (queue key, entry number)
  convpb::AppendMessagesRequest request;
  core::Identity who;
  {
    absl::MutexLock lock(&mu_);
    int64_t bytes = 0;
    for (const std::string& key : keys) {
      auto queue = queues_.find(key);
      if (queue == queues_.end()) continue;
      for (uint64_t number : queue->second) {
        const Entry& entry = entries_.at(number);
        if (sent.size() == kDrainBatchMessages ||
            (!sent.empty() && bytes + entry.record_bytes > kDrainBatchBytes)) {
          break;
        }
        who = entry.who;
        *request.add_messages() = entry.request;
        sent.emplace_back(key, number);
        bytes += entry.record_bytes;
      }
    }
  }
  if (sent.empty()) return std::nullopt;
  const core::TimePoint now = core::TimePointFromMicros(core::NowMicros());
  if (now >= deadline) {
    unreachable = true;
    return std::nullopt;
  }
  // Not cancelled: a spooled message was acknowledged and must be stored.
  const core::Call call = core::Call{who, deadline}.Within(now, options_.call_timeout);
  DrainCallsCounter().Inc();
  absl::StatusOr<convpb::AppendMessagesResponse> response = memory_.AppendMessages(call, request);
  if (!response.ok() && !RefusedForGood(response.status())) {
    unreachable = true;
    return std::nullopt;
  }
  std::optional<convpb::AppendMessageResponse> wanted_response;
  std::vector<uint64_t> done;
  for (size_t i = 0; i < sent.size(); ++i) {
    const absl::Status status = OutcomeOf(response, i);
    if (status.ok() && sent[i].second == wanted) {
      wanted_response = response->results(static_cast<int>(i)).appended();
    }
    if (!status.ok() && !RefusedForGood(status)) {
      unreachable = true;  // kept, and the conversation's later ones after it
      continue;
    }
    if (status.ok()) {
      DrainedCounter("stored").Inc();
    } else {
      // Retrying cannot help (the conversation was deleted, or is not the
      // caller's): keeping it would hold back the conversation for good.
      DrainedCounter("refused").Inc();
      core::LogError("spooled message dropped: conversation storage refuses it",
                     {{"component", "orchestrator"},
                      {"conversation_id", request.messages(static_cast<int>(i)).conversation_id()},
                      {"error", std::string(status.message())}});
    }
    done.push_back(i);
  }
  absl::MutexLock lock(&mu_);
  for (size_t i : done) {
    auto queue = queues_.find(sent[i].first);
    std::deque<uint64_t>& numbers = queue->second;
    numbers.erase(std::find(numbers.begin(), numbers.end(), sent[i].second));
    if (numbers.empty()) queues_.erase(queue);
    entries_.erase(sent[i].second);
    ++removed;
  }
  UpdateGaugesLocked();
  return wanted_response;
}

std::optional<convpb::AppendMessageResponse> AppendSpool::DrainConversationLocked(
    const std::string& key, core::TimePoint deadline, uint64_t wanted, size_t& removed,
    bool& unreachable) {
  std::optional<convpb::AppendMessageResponse> wanted_response;
  while (!unreachable) {
    {
      absl::MutexLock lock(&mu_);
      if (queues_.count(key) == 0) break;
    }
    std::optional<convpb::AppendMessageResponse> stored =
        DrainBatchLocked({key}, deadline, wanted, removed, unreachable);
    if (stored) wanted_response = std::move(stored);
  }
  return wanted_response;
}

size_t AppendSpool::DrainOnce() {
  size_t removed = 0;
  while (true) {
    // A turn waiting to store its own conversation's messages goes first:
    // it waits for one batch at most, not for the whole backlog.
    while (turns_waiting_.load() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::lock_guard<core::TimedMutex> drain(drain_mu_);
    // One identity's conversations per call (a call acts for one caller).
    std::vector<std::string> keys;
    {
      absl::MutexLock lock(&mu_);
      if (queues_.empty()) break;
      const std::string identity = IdentityOf(queues_.begin()->first);
      for (auto it = queues_.begin(); it != queues_.end() && IdentityOf(it->first) == identity;
           ++it) {
        keys.push_back(it->first);
      }
    }
    bool unreachable = false;
    const size_t before = removed;
    DrainBatchLocked(keys, core::TimePoint::max(), /*wanted=*/0, removed, unreachable);
    // One service stores every conversation: the others would fail alike.
    if (unreachable || removed == before) break;
  }
  if (removed > 0) {
    absl::MutexLock lock(&mu_);
    if (absl::Status compacted = CompactLocked(); !compacted.ok()) {
      core::LogError("append spool: cannot compact", {{"error", compacted.ToString()}});
    }
    core::LogInfo("spooled messages stored", {{"component", "orchestrator"},
                                              {"stored", std::to_string(removed)},
                                              {"still_spooled", std::to_string(entries_.size())}});
  }
  return removed;
}

absl::Status AppendSpool::CompactLocked() {
  if (entries_.empty()) {
    if (::ftruncate(fd_, 0) != 0 || ::fsync(fd_) != 0) return Errno("cannot truncate", path_);
    file_bytes_ = 0;
    UpdateGaugesLocked();
    return absl::OkStatus();
  }
  std::string data;
  for (const auto& [number, entry] : entries_) {
    data += EncodedRecord(number, entry.who, entry.request);
  }
  if (absl::Status rewritten = spool::Rewrite(path_, data, fd_); !rewritten.ok()) return rewritten;
  file_bytes_ = static_cast<int64_t>(data.size());
  UpdateGaugesLocked();
  return absl::OkStatus();
}

void AppendSpool::UpdateGaugesLocked() {
  static core::Gauge& depth = core::MetricsRegistry::Global().GetGauge(
      "omniforge_orchestrator_spool_depth",
      "Messages waiting in the append spool for conversation storage");
  static core::Gauge& bytes = core::MetricsRegistry::Global().GetGauge(
      "omniforge_orchestrator_spool_bytes", "Size of the append spool file");
  depth.Set(static_cast<double>(entries_.size()));
  bytes.Set(static_cast<double>(file_bytes_));
}

void AppendSpool::StartDrainer() {
  drainer_ = std::thread([this] { DrainLoop(); });
}

void AppendSpool::DrainLoop() {
  mu_.Lock();
  std::chrono::milliseconds backoff = options_.min_backoff;
  // What an earlier process left is tried at once.
  auto next = std::chrono::steady_clock::now();
  while (!stopping_) {
    if (entries_.empty()) {
      while (!stopping_ && entries_.empty()) wake_.Wait(&mu_);
      if (stopping_) break;
      // Storage just failed the append that woke us: give it a moment.
      backoff = options_.min_backoff;
      next = std::chrono::steady_clock::now() + backoff;
    }
    for (auto left = next - std::chrono::steady_clock::now(); !stopping_ && left > left.zero();
         left = next - std::chrono::steady_clock::now()) {
      wake_.WaitWithTimeout(&mu_, absl::FromChrono(left));
    }
    if (stopping_) break;
    mu_.Unlock();
    const size_t removed = DrainOnce();
    mu_.Lock();
    backoff = removed > 0 ? options_.min_backoff : std::min(backoff * 2, options_.max_backoff);
    next = std::chrono::steady_clock::now() + backoff;
  }
  mu_.Unlock();
}

size_t AppendSpool::depth() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

int64_t AppendSpool::file_bytes() const {
  absl::MutexLock lock(&mu_);
  return file_bytes_;
}

}  // namespace omniforge::orchestrator
