#include "services/orchestrator/downstream/spool_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "libs/core/ids.h"
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

// A spool's directory is one process's: a second lock on it is refused
// until the first is let go; the file opened for appending is read whole.
TEST(SpoolRecordTest, ASpoolDirectoryIsLockedForOneHolderAndItsFileReadWhole) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("omniforge-spool-lock-" + core::NewUuid()) / "d";
  absl::StatusOr<int> first = spool::LockDirectory("test spool", dir, dir / "x.lock");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<int> second = spool::LockDirectory("test spool", dir, dir / "x.lock");
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  EXPECT_NE(second.status().message().find("test spool"), std::string::npos);
  ::close(*first);
  absl::StatusOr<int> after = spool::LockDirectory("test spool", dir, dir / "x.lock");
  ASSERT_TRUE(after.ok()) << after.status();

  int fd = -1;
  std::string data;
  ASSERT_TRUE(spool::OpenAndRead("test spool", dir / "x.log", fd, data).ok());
  EXPECT_TRUE(data.empty());
  ASSERT_TRUE(spool::WriteAll(fd, spool::Record("payload"), dir / "x.log").ok());
  ::close(fd);
  ASSERT_TRUE(spool::OpenAndRead("test spool", dir / "x.log", fd, data).ok());
  EXPECT_EQ(spool::PayloadAt(data, 0, 1024), "payload");
  ::close(fd);
  ::close(*after);
  std::filesystem::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace omniforge::orchestrator
