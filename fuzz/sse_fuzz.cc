// Feeds the SSE parser (libs/llm/sse.h) a byte stream whole, one byte at a
// time and in chunks of varying sizes, and checks that the cuts change
// nothing: the same events, last event id and retry, in the same order.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "libs/llm/sse.h"

namespace {

using omniforge::llm::SseEvent;
using omniforge::llm::SseParser;

struct Outcome {
  std::vector<SseEvent> events;
  std::vector<std::string> ids;  // last_event_id() as each event arrived
  long long retry_ms = -1;
  std::string last_event_id;

  bool operator==(const Outcome&) const = default;
};

// Parses `stream` cut into chunks of the sizes `chunk_size(i)` gives.
template <typename ChunkSize>
Outcome Parse(std::string_view stream, ChunkSize chunk_size) {
  Outcome outcome;
  SseParser* self = nullptr;
  SseParser parser([&](const SseEvent& event) {
    OMNIFORGE_FUZZ_CHECK(!event.type.empty());
    outcome.events.push_back(event);
    outcome.ids.push_back(self->last_event_id());
    return true;
  });
  self = &parser;
  size_t pos = 0;
  for (size_t i = 0; pos < stream.size(); ++i) {
    const size_t size = std::min(chunk_size(i), stream.size() - pos);
    OMNIFORGE_FUZZ_CHECK(parser.Feed(stream.substr(pos, size)));
    pos += size;
  }
  outcome.retry_ms = parser.retry_ms();
  outcome.last_event_id = parser.last_event_id();
  OMNIFORGE_FUZZ_CHECK(outcome.retry_ms >= -1 && outcome.retry_ms <= 3'600'000);
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view stream(reinterpret_cast<const char*>(data), size);
  const Outcome whole = Parse(stream, [&](size_t) { return stream.size(); });
  const Outcome bytes = Parse(stream, [](size_t) { return size_t{1}; });
  OMNIFORGE_FUZZ_CHECK(bytes == whole);
  const size_t phase = size % 7;
  const Outcome chunks = Parse(stream, [phase](size_t i) { return 1 + (i + phase) * 5 % 13; });
  OMNIFORGE_FUZZ_CHECK(chunks == whole);

  // A callback that stops the parser gets exactly one event.
  size_t seen = 0;
  SseParser stopping([&](const SseEvent&) {
    ++seen;
    return false;
  });
  const bool running = stopping.Feed(stream);
  OMNIFORGE_FUZZ_CHECK(seen == (whole.events.empty() ? 0u : 1u));
  OMNIFORGE_FUZZ_CHECK(running == whole.events.empty());
  return 0;
}
