#include "services/orchestrator/downstream/append_spool_record.h"

#include <utility>

namespace omniforge::orchestrator {

std::string EncodeSpoolRecord(const SpoolPayload& payload) {
  std::string body;
  spool::PutU64(body, payload.number);
  spool::PutBytes(body, payload.who.tenant_id);
  spool::PutBytes(body, payload.who.user_id);
  if (payload.key_id.has_value()) spool::PutBytes(body, *payload.key_id);
  spool::PutBytes(body, payload.message);
  return spool::Record(body);
}

std::optional<SpoolRecord> DecodeSpoolRecordAt(const std::string& data, size_t pos) {
  std::optional<std::string> body = spool::PayloadAt(data, pos, kMaxSpoolPayloadBytes);
  if (!body.has_value()) return std::nullopt;
  SpoolRecord record;
  SpoolPayload& payload = record.payload;
  spool::PayloadReader reader(*body);
  if (!reader.U64(payload.number) || !reader.Bytes(payload.who.tenant_id) ||
      !reader.Bytes(payload.who.user_id) || !reader.Bytes(payload.message)) {
    return std::nullopt;
  }
  if (!reader.AtEnd()) {  // sealed: the key id, then the sealed message
    payload.key_id = std::move(payload.message);
    payload.message.clear();
    if (!reader.Bytes(payload.message)) return std::nullopt;
  }
  if (!reader.AtEnd()) return std::nullopt;
  record.record_bytes = spool::kHeaderBytes + body->size();
  return record;
}

}  // namespace omniforge::orchestrator
