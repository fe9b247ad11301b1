// The on-disk framing both orchestrator spools share (the append spool of
// chat messages, append_spool.h, and the spool of background rows,
// storage/row_spool.h): a file is a sequence of records
// [u32 payload length][u32 CRC-32 of the payload][payload], written with
// one write and made durable with fdatasync before anyone is told it is
// kept, rewritten whole (write, fsync, rename, fsync of the directory) to
// drop what left it. Payloads are built with the Put functions and read
// with PayloadReader. Lengths are host-endian: a spool is read by the
// machine that wrote it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace omniforge::orchestrator::spool {

// Length and checksum before each payload.
inline constexpr size_t kHeaderBytes = 8;

uint32_t Crc32(const std::string& data);

void PutU32(std::string& out, uint32_t v);
void PutU64(std::string& out, uint64_t v);
// A length, then the bytes.
void PutBytes(std::string& out, const std::string& bytes);

// Reads a payload written by the Put functions; each read is false once it
// runs short. `data` must outlive the reader.
class PayloadReader final {
 public:
  explicit PayloadReader(const std::string& data) : data_(data) {}
  bool U32(uint32_t& v) { return Fixed(&v, 4); }
  bool U64(uint64_t& v) { return Fixed(&v, 8); }
  bool Bytes(std::string& out);
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  bool Fixed(void* v, size_t n);
  const std::string& data_;
  size_t pos_ = 0;
};

// `payload` framed as a record.
std::string Record(const std::string& payload);
// The payload of the record at `pos` of `data`, when a whole and sound one
// (at most `max_payload` bytes, its checksum right) starts there.
std::optional<std::string> PayloadAt(const std::string& data, size_t pos, uint32_t max_payload);

// INTERNAL "<what> <path>: <strerror(errno)>", prefixed with `spool`.
absl::Status Errno(const std::string& spool, const std::string& what,
                   const std::filesystem::path& path);
// Writes all of `data` to `fd` (retrying short writes and EINTR).
absl::Status WriteAll(int fd, const std::string& data, const std::filesystem::path& path);
// Makes a rename or a new file in `dir` durable.
absl::Status SyncDirectory(const std::filesystem::path& dir);
// Reads the whole file open at `fd`.
absl::Status ReadAll(int fd, const std::filesystem::path& path, std::string& data);
// Creates `dir` and locks `lock` (a file in it) for this process: the open
// descriptor, kept until the spool closes. FAILED_PRECONDITION when another
// process holds it (two processes draining one spool would each send its
// records). `spool` names the spool in errors.
absl::StatusOr<int> LockDirectory(const std::string& spool, const std::filesystem::path& dir,
                                  const std::filesystem::path& lock);
// Opens `path` (created if missing) for appending into `fd`, makes its
// directory entry durable and reads the whole file into `data`.
absl::Status OpenAndRead(const std::string& spool, const std::filesystem::path& path, int& fd,
                         std::string& data);
// Replaces `path` (open at `fd`, opened for append) by `data`: a temporary
// file written and fsynced, renamed over it and the directory fsynced; `fd`
// then refers to the new file.
absl::Status Rewrite(const std::filesystem::path& path, const std::string& data, int& fd);

}  // namespace omniforge::orchestrator::spool
