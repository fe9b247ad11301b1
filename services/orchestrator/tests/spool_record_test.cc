#include <gtest/gtest.h>

#include <string>

#include "services/orchestrator/downstream/append_spool_record.h"

namespace omniforge::orchestrator {
namespace {

SpoolPayload Clear(uint64_t number) {
  return SpoolPayload{number, {"acme", "alice"}, std::nullopt, "serialized message"};
}

TEST(SpoolRecordTest, RecordsReadBackAsWritten) {
  SpoolPayload sealed{7, {"globex", "bob"}, "master-2026", std::string("sealed\0bytes", 12)};
  const std::string file = EncodeSpoolRecord(Clear(1)) + EncodeSpoolRecord(sealed);
  const std::optional<SpoolRecord> first = DecodeSpoolRecordAt(file, 0);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->payload.number, 1u);
  EXPECT_EQ(first->payload.who.user_id, "alice");
  EXPECT_FALSE(first->payload.key_id.has_value());
  EXPECT_EQ(first->payload.message, "serialized message");
  const std::optional<SpoolRecord> second = DecodeSpoolRecordAt(file, first->record_bytes);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->payload.key_id, "master-2026");
  EXPECT_EQ(second->payload.message, sealed.message);
  EXPECT_EQ(first->record_bytes + second->record_bytes, file.size());
}

TEST(SpoolRecordTest, DamagedOrCutShortRecordsAreNotRead) {
  const std::string record = EncodeSpoolRecord(Clear(3));
  EXPECT_FALSE(DecodeSpoolRecordAt(record.substr(0, record.size() - 1), 0).has_value());
  std::string flipped = record;
  flipped[record.size() - 2] ^= 0x01;
  EXPECT_FALSE(DecodeSpoolRecordAt(flipped, 0).has_value());
  EXPECT_FALSE(DecodeSpoolRecordAt(record, 1).has_value());
  EXPECT_FALSE(DecodeSpoolRecordAt(record, record.size()).has_value());
  EXPECT_FALSE(DecodeSpoolRecordAt(record, record.size() + 5).has_value());
  // A sound checksum over a payload that is not one (zero bytes).
  EXPECT_FALSE(DecodeSpoolRecordAt(std::string(16, '\0'), 0).has_value());
}

TEST(SpoolRecordTest, ChecksumIsZlibsCrc32) { EXPECT_EQ(spool::Crc32("123456789"), 0xCBF43926u); }

}  // namespace
}  // namespace omniforge::orchestrator
