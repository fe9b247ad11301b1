// The API key file (libs/core/api_keys.h): parses the input as a key file,
// plain and as an admin file, and presents every key-shaped word in it. Then
// takes each of the first lines as `<tenant> <user> [<expiry seconds>]
// [label...]` for GenerateApiKey and checks the round trip: the line it
// writes parses back as one key, the key it returns authenticates as that
// tenant and user until the expiry and is refused as expired from then on.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "libs/core/api_keys.h"

namespace {

namespace core = omniforge::core;

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    const size_t end = std::min(text.find(separator), text.size());
    if (end > 0) parts.push_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return parts;
}

void CheckPresentedKeys(std::string_view text, const core::ApiKeyStore& store) {
  for (std::string_view line : Split(text, '\n')) {
    OMNIFORGE_FUZZ_CHECK(core::PresentedApiKey(line, line).size() <= line.size());
    for (std::string_view word : Split(line, ' ')) {
      const std::string_view id = core::ApiKeyIdOf(word);
      if (id.empty()) continue;
      const auto who = store.AuthenticateAt(word, 0);
      OMNIFORGE_FUZZ_CHECK(who.ok() ? store.Has(id) : absl::IsUnauthenticated(who.status()));
    }
  }
}

constexpr int64_t kMaxSeconds = 9'000'000'000'000;

void CheckGeneratedKey(std::string_view line, bool admin) {
  std::vector<std::string_view> words = Split(line, ' ');
  if (words.size() < 2) return;
  const core::Identity who{std::string(words[0]), std::string(words[1])};
  std::optional<int64_t> expires;
  size_t label_at = words[1].data() + words[1].size() - line.data();
  if (words.size() > 2) {
    // Whole seconds, as the key file writes them, within int64 micros.
    int64_t seconds = 0;
    const char* last = words[2].data() + words[2].size();
    const auto [end, error] = std::from_chars(words[2].data(), last, seconds);
    if (error == std::errc() && end == last && seconds > -kMaxSeconds && seconds < kMaxSeconds) {
      expires = seconds * 1'000'000;
      label_at = words[2].data() + words[2].size() - line.data();
    }
  }
  std::string_view label = line.substr(label_at);
  while (!label.empty() && label.front() == ' ') label.remove_prefix(1);
  const auto generated = core::GenerateApiKey(who, label, expires, admin);
  if (!generated.ok()) return;
  const auto store = core::ApiKeyStore::Parse(generated->file_line, admin);
  OMNIFORGE_FUZZ_CHECK(store.ok());
  OMNIFORGE_FUZZ_CHECK(store->size() == 1);
  const int64_t before = expires ? *expires - 1 : std::numeric_limits<int64_t>::max();
  const auto granted = store->AuthenticateAt(generated->key, before);
  OMNIFORGE_FUZZ_CHECK(granted.ok());
  OMNIFORGE_FUZZ_CHECK(granted->tenant_id == who.tenant_id && granted->user_id == who.user_id);
  if (expires) {
    OMNIFORGE_FUZZ_CHECK(!store->AuthenticateAt(generated->key, *expires).ok());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const bool admin : {false, true}) {
    const auto store = core::ApiKeyStore::Parse(text, admin);
    if (store.ok()) {
      CheckPresentedKeys(text, *store);
    } else {
      OMNIFORGE_FUZZ_CHECK(absl::IsInvalidArgument(store.status()));
    }
  }
  const std::vector<std::string_view> lines = Split(text, '\n');
  for (size_t i = 0; i < lines.size() && i < 4; ++i) CheckGeneratedKey(lines[i], i % 2 == 1);
  return 0;
}
