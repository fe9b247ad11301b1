// Differential target for the JSON scanner (libs/llm/json_scan.h): every
// text it accepts, nlohmann's parser must accept with the same SAX events
// (values, keys, numbers and their lexemes); every text nlohmann accepts and
// the scanner declines must be one the scanner says it leaves to a full
// parser (nesting deeper than kMaxJsonScanDepth, an integer beyond 64 bits, a
// number that does not fit a double) or start with a UTF-8 byte order mark,
// which nlohmann skips and RFC 8259 lets a parser refuse. A text holding a
// NUL byte the scanner must refuse (nlohmann stops reading at it).
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "libs/llm/json_scan.h"
#include "nlohmann/json.hpp"

namespace {

namespace wire = omniforge::llm::wire_internal;

// Both parsers' events, as text: one line per event.
class Recorder final {
 public:
  bool null() { return Add("null"); }
  bool boolean(bool value) { return Add(value ? "true" : "false"); }
  bool number_integer(int64_t value) { return Add("int " + std::to_string(value)); }
  bool number_unsigned(uint64_t value) { return Add("uint " + std::to_string(value)); }
  bool number_float(double value, const std::string& lexeme) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    floats_.push_back(lexeme);
    return Add("float " + std::to_string(bits) + " " + lexeme);
  }
  bool string(std::string& value) { return Add("string " + value); }
  bool binary(std::vector<uint8_t>&) { return Add("binary"); }
  bool key(std::string& value) { return Add("key " + value); }
  bool start_object(size_t) { return Open("{"); }
  bool end_object() { return Close("}"); }
  bool start_array(size_t) { return Open("["); }
  bool end_array() { return Close("]"); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  const std::vector<std::string>& events() const { return events_; }
  size_t max_depth() const { return max_depth_; }
  const std::vector<std::string>& floats() const { return floats_; }

 private:
  bool Add(std::string event) {
    events_.push_back(std::move(event));
    return true;
  }
  bool Open(const char* what) {
    max_depth_ = std::max(max_depth_, ++depth_);
    return Add(what);
  }
  bool Close(const char* what) {
    --depth_;
    return Add(what);
  }

  std::vector<std::string> events_;
  std::vector<std::string> floats_;
  size_t depth_ = 0;
  size_t max_depth_ = 0;
};

// Whether nlohmann reported a number the scanner declines: an integer
// lexeme beyond 64 bits (nlohmann makes it a double), or a number
// std::from_chars cannot make a double of (out of range).
bool HasNumberScannerDeclines(const Recorder& reference) {
  for (const std::string& lexeme : reference.floats()) {
    if (lexeme.find_first_of(".eE") == std::string::npos) return true;
    double value = 0;
    const auto [end, error] = std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), value);
    if (error != std::errc() || end != lexeme.data() + lexeme.size()) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Recorder scanned;
  std::string scratch;
  const bool scanner_accepts = wire::ScanJson(text, scanned, scratch);
  const size_t first = text.find_first_not_of(" \t\r\n");
  OMNIFORGE_FUZZ_CHECK(wire::ScansAsJsonObject(text) ==
                       (scanner_accepts && first != std::string_view::npos && text[first] == '{'));
  // A NUL byte is never JSON, but nlohmann's lexer takes one for the end of
  // its input and ignores what follows: the texts are compared without.
  if (text.find('\0') != std::string_view::npos) {
    OMNIFORGE_FUZZ_CHECK(!scanner_accepts);
    return 0;
  }

  Recorder reference;
  const bool nlohmann_accepts =
      nlohmann::json::sax_parse(text, &reference, nlohmann::json::input_format_t::json, true);

  if (scanner_accepts) {
    OMNIFORGE_FUZZ_CHECK(nlohmann_accepts);
    OMNIFORGE_FUZZ_CHECK(scanned.events() == reference.events());
    OMNIFORGE_FUZZ_CHECK(scanned.max_depth() <= wire::kMaxJsonScanDepth);
  } else if (nlohmann_accepts) {
    const bool byte_order_mark = text.substr(0, 3) == "\xEF\xBB\xBF";
    OMNIFORGE_FUZZ_CHECK(byte_order_mark || reference.max_depth() > wire::kMaxJsonScanDepth ||
                         HasNumberScannerDeclines(reference));
  }
  return 0;
}
