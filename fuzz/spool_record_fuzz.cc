// The append spool's recovery reader (services/orchestrator/downstream):
// walks a file image the way AppendSpool::Recover does (a sound record is
// taken whole, anything else skipped a byte at a time) and checks that a
// record read back encodes to exactly the bytes it was read from, that it
// lies within the file, and that a message in the clear parses as the
// AppendMessageRequest it is meant to be (and serializes to a message
// that parses again), or is refused, without harm.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz/fuzz_check.h"
#include "omniforge/conversation/v1/conversation_service.pb.h"
#include "services/orchestrator/downstream/append_spool_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace orchestrator = omniforge::orchestrator;
  const std::string file(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  while (pos < file.size()) {
    const std::optional<orchestrator::SpoolRecord> record =
        orchestrator::DecodeSpoolRecordAt(file, pos);
    if (!record.has_value()) {
      ++pos;
      continue;
    }
    OMNIFORGE_FUZZ_CHECK(record->record_bytes >= orchestrator::kSpoolRecordHeaderBytes);
    OMNIFORGE_FUZZ_CHECK(record->record_bytes <= file.size() - pos);
    OMNIFORGE_FUZZ_CHECK(orchestrator::EncodeSpoolRecord(record->payload) ==
                         file.substr(pos, record->record_bytes));
    if (!record->payload.key_id.has_value()) {
      omniforge::conversation::v1::AppendMessageRequest request;
      if (request.ParseFromString(record->payload.message)) {
        omniforge::conversation::v1::AppendMessageRequest again;
        OMNIFORGE_FUZZ_CHECK(again.ParseFromString(request.SerializeAsString()));
      }
    }
    pos += record->record_bytes;
  }
  OMNIFORGE_FUZZ_CHECK(!orchestrator::DecodeSpoolRecordAt(file, file.size()).has_value());
  OMNIFORGE_FUZZ_CHECK(!orchestrator::DecodeSpoolRecordAt(file, file.size() + 1).has_value());
  return 0;
}
