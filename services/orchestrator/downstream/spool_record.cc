#include "services/orchestrator/downstream/spool_record.h"

#include <array>
#include <cstring>
#include <utility>

namespace omniforge::orchestrator {
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

void PutU32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void PutU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

// Reads a payload written by the Put functions; false once it runs short.
class PayloadReader final {
 public:
  explicit PayloadReader(std::string_view data) : data_(data) {}
  bool U32(uint32_t& v) { return Fixed(&v, 4); }
  bool U64(uint64_t& v) { return Fixed(&v, 8); }
  bool Bytes(std::string& out) {
    uint32_t n = 0;
    if (!U32(n) || data_.size() - pos_ < n) return false;
    out.assign(data_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  bool Fixed(void* v, size_t n) {
    if (data_.size() - pos_ < n) return false;
    std::memcpy(v, data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  const std::string_view data_;
  size_t pos_ = 0;
};

std::optional<SpoolPayload> DecodePayload(std::string_view bytes) {
  SpoolPayload payload;
  PayloadReader reader(bytes);
  if (!reader.U64(payload.number) || !reader.Bytes(payload.who.tenant_id) ||
      !reader.Bytes(payload.who.user_id) || !reader.Bytes(payload.message)) {
    return std::nullopt;
  }
  if (!reader.AtEnd()) {  // sealed: the key id, then the sealed message
    payload.key_id = std::move(payload.message);
    if (!reader.Bytes(payload.message)) return std::nullopt;
  }
  if (!reader.AtEnd()) return std::nullopt;
  return payload;
}

}  // namespace

uint32_t SpoolCrc32(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char byte : data) c = CrcTable()[(c ^ byte) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void AppendLengthPrefixed(std::string& out, std::string_view bytes) {
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out += bytes;
}

std::string EncodeSpoolRecord(const SpoolPayload& payload) {
  std::string body;
  PutU64(body, payload.number);
  AppendLengthPrefixed(body, payload.who.tenant_id);
  AppendLengthPrefixed(body, payload.who.user_id);
  if (payload.key_id.has_value()) AppendLengthPrefixed(body, *payload.key_id);
  AppendLengthPrefixed(body, payload.message);
  std::string record;
  record.reserve(kSpoolRecordHeaderBytes + body.size());
  PutU32(record, static_cast<uint32_t>(body.size()));
  PutU32(record, SpoolCrc32(body));
  return record + body;
}

std::optional<SpoolRecord> DecodeSpoolRecordAt(std::string_view data, size_t pos) {
  if (pos > data.size() || data.size() - pos < kSpoolRecordHeaderBytes) return std::nullopt;
  uint32_t length = 0;
  uint32_t crc = 0;
  std::memcpy(&length, data.data() + pos, 4);
  std::memcpy(&crc, data.data() + pos + 4, 4);
  if (length > kMaxSpoolPayloadBytes || data.size() - pos - kSpoolRecordHeaderBytes < length) {
    return std::nullopt;
  }
  const std::string_view body = data.substr(pos + kSpoolRecordHeaderBytes, length);
  if (SpoolCrc32(body) != crc) return std::nullopt;
  std::optional<SpoolPayload> payload = DecodePayload(body);
  if (!payload.has_value()) return std::nullopt;
  return SpoolRecord{*std::move(payload), kSpoolRecordHeaderBytes + length};
}

}  // namespace omniforge::orchestrator
