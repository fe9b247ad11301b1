#include "services/orchestrator/downstream/spool_record.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace omniforge::orchestrator::spool {
namespace {

const std::array<uint32_t, 256>& CrcTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint32_t Crc32(const std::string& data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char byte : data) c = CrcTable()[(c ^ byte) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void PutU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void PutU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void PutBytes(std::string& out, const std::string& bytes) {
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out += bytes;
}

bool PayloadReader::Bytes(std::string& out) {
  uint32_t n = 0;
  if (!U32(n) || data_.size() - pos_ < n) return false;
  out.assign(data_, pos_, n);
  pos_ += n;
  return true;
}

bool PayloadReader::Fixed(void* v, size_t n) {
  if (data_.size() - pos_ < n) return false;
  std::memcpy(v, data_.data() + pos_, n);
  pos_ += n;
  return true;
}

std::string Record(const std::string& payload) {
  std::string record;
  PutU32(record, static_cast<uint32_t>(payload.size()));
  PutU32(record, Crc32(payload));
  return record + payload;
}

std::optional<std::string> PayloadAt(const std::string& data, size_t pos, uint32_t max_payload) {
  if (pos > data.size() || data.size() - pos < kHeaderBytes) return std::nullopt;
  uint32_t length = 0;
  uint32_t crc = 0;
  std::memcpy(&length, data.data() + pos, 4);
  std::memcpy(&crc, data.data() + pos + 4, 4);
  if (length > max_payload || data.size() - pos - kHeaderBytes < length) return std::nullopt;
  std::string payload = data.substr(pos + kHeaderBytes, length);
  if (Crc32(payload) != crc) return std::nullopt;
  return payload;
}

absl::Status Errno(const std::string& spool, const std::string& what,
                   const std::filesystem::path& path) {
  return absl::InternalError(spool + ": " + what + " " + path.string() + ": " +
                             std::strerror(errno));
}

absl::Status WriteAll(int fd, const std::string& data, const std::filesystem::path& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("spool", "cannot write", path);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status SyncDirectory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("spool", "cannot open", dir);
  const int synced = ::fsync(fd);
  ::close(fd);
  return synced == 0 ? absl::OkStatus() : Errno("spool", "cannot fsync", dir);
}

absl::Status ReadAll(int fd, const std::filesystem::path& path, std::string& data) {
  std::array<char, 1 << 16> buffer;
  while (true) {
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(data.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("spool", "cannot read", path);
    if (n == 0) return absl::OkStatus();
    data.append(buffer.data(), static_cast<size_t>(n));
  }
}

absl::StatusOr<int> LockDirectory(const std::string& spool, const std::filesystem::path& dir,
                                  const std::filesystem::path& lock) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    return absl::InternalError(spool + ": cannot create " + dir.string() + ": " + error.message());
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Errno(spool, "cannot open", lock);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int locked_errno = errno;
    absl::Status status = Errno(spool, "cannot lock", lock);
    ::close(fd);
    if (locked_errno != EWOULDBLOCK) return status;
    return absl::FailedPreconditionError(spool + ": " + lock.string() +
                                         " is held by another orchestrator process; give each "
                                         "process its own spool.dir");
  }
  return fd;
}

absl::Status OpenAndRead(const std::string& spool, const std::filesystem::path& path, int& fd,
                         std::string& data) {
  fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno(spool, "cannot open", path);
  if (absl::Status synced = SyncDirectory(path.parent_path()); !synced.ok()) return synced;
  return ReadAll(fd, path, data);
}

absl::Status Rewrite(const std::filesystem::path& path, const std::string& data, int& fd) {
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  const int out = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) return Errno("spool", "cannot open", temporary);
  absl::Status written = WriteAll(out, data, temporary);
  if (written.ok() && ::fsync(out) != 0) written = Errno("spool", "cannot fsync", temporary);
  ::close(out);
  if (!written.ok()) return written;
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    return Errno("spool", "cannot rename", temporary);
  }
  if (absl::Status synced = SyncDirectory(path.parent_path()); !synced.ok()) return synced;
  const int reopened = ::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (reopened < 0) return Errno("spool", "cannot open", path);
  ::close(fd);
  fd = reopened;
  return absl::OkStatus();
}

}  // namespace omniforge::orchestrator::spool
