// The record format of the append spool's file (append_spool.h), apart from
// the file handling so that it can be tested and fuzzed on its own: a record
// is [u32 payload length][u32 CRC-32 of the payload][payload], integers in
// the machine's byte order (the file never leaves the host), and a payload
// is the record's number, the tenant and user, then either the serialized
// message (in the clear) or a master key id and the sealed message. Pure
// functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "libs/core/identity.h"

namespace omniforge::orchestrator {

// Length and checksum before each payload.
inline constexpr size_t kSpoolRecordHeaderBytes = 8;
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

// CRC-32 (IEEE 802.3, as zlib's crc32).
uint32_t SpoolCrc32(std::string_view data);

// Appends `bytes` with its u32 length before it.
void AppendLengthPrefixed(std::string& out, std::string_view bytes);

// The whole record (header and payload) for `payload`.
std::string EncodeSpoolRecord(const SpoolPayload& payload);

// The record starting at `pos` of `data` when a whole and sound one does:
// its length within bounds and the file, its checksum right and its payload
// well-formed and used up. nullopt for anything else (damaged, cut short,
// `pos` at or past the end).
std::optional<SpoolRecord> DecodeSpoolRecordAt(std::string_view data, size_t pos);

}  // namespace omniforge::orchestrator
