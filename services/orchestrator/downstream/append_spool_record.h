// What one record of the append spool's file (append_spool.h) holds, apart
// from the file handling so that it can be tested and fuzzed on its own. The
// framing is spool_record.h's ([u32 length][u32 CRC-32][payload]); the
// payload is the record's number, the tenant and user, then either the
// serialized message (in the clear) or a master key id and the sealed
// message. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "libs/core/identity.h"
#include "services/orchestrator/downstream/spool_record.h"

namespace omniforge::orchestrator {

// Length and checksum before each payload.
inline constexpr size_t kSpoolRecordHeaderBytes = spool::kHeaderBytes;
// A record's payload is at most a 64 KiB message with 16 KiB of metadata
// and the identity; anything far larger is a damaged length.
inline constexpr uint32_t kMaxSpoolPayloadBytes = 1 << 20;

// What one record holds.
struct SpoolPayload {
  uint64_t number = 0;
  core::Identity who;
  // The master key the message is sealed under; nullopt: in the clear.
  std::optional<std::string> key_id;
  // The serialized AppendMessageRequest, or its sealed form.
  std::string message;
};

// A record read back from the file.
struct SpoolRecord {
  SpoolPayload payload;
  size_t record_bytes = 0;  // header and payload
};

// The whole record (header and payload) for `payload`.
std::string EncodeSpoolRecord(const SpoolPayload& payload);

// The record starting at `pos` of `data` when a whole and sound one does:
// its length within bounds and the file, its checksum right and its payload
// well-formed and used up. nullopt for anything else (damaged, cut short,
// `pos` at or past the end).
std::optional<SpoolRecord> DecodeSpoolRecordAt(const std::string& data, size_t pos);

}  // namespace omniforge::orchestrator
