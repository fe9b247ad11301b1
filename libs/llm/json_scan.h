// Internal to omniforge_llm_wire: a strict JSON reader (RFC 8259) that walks
// a text once and reports what it meets to a SAX handler, with neither a
// document nor nlohmann's lexer, which reads one character at a time through
// an input adapter and appends every string character to its token buffer.
// A streamed answer is a few hundred small JSON chunks; reading them is most
// of what the client does per call beyond what libcurl does.
//
// Strict means it never accepts text nlohmann's parser would reject: bytes
// outside the grammar, invalid UTF-8 in strings, lone surrogate escapes,
// control characters, trailing text. It does decline some valid text that it
// leaves to a full parser: integers beyond 64 bits and nesting deeper than
// kMaxJsonScanDepth.
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace omniforge::llm::wire_internal {

inline constexpr size_t kMaxJsonScanDepth = 64;

// The handler has nlohmann::json_sax's methods, each returning false to stop:
// null(), boolean(bool), number_integer(int64_t) (negative integers),
// number_unsigned(uint64_t) (the others), number_float(double, const
// std::string& lexeme), string(std::string&), key(std::string&),
// start_object(size_t), end_object(), start_array(size_t), end_array().
// Returns true when `text` is one JSON value (whitespace around it allowed)
// and the handler took everything; false for anything else. `scratch` holds
// each string, key and number lexeme while the handler reads it; passing the
// same one to every call saves an allocation per call.
template <typename Handler>
bool ScanJson(std::string_view text, Handler& handler, std::string& scratch);

namespace json_scan_internal {

inline bool IsWhitespace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Bytes a string can hold as they are: printable ASCII but the quote and
// the backslash. One table load per byte in the common case.
inline constexpr std::array<bool, 256> kPlainStringByte = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

inline int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

inline void AppendUtf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

// The length of the well-formed UTF-8 sequence at `p` (Unicode table 3-7:
// no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
inline size_t Utf8SequenceLength(const unsigned char* p, const unsigned char* end) {
  const unsigned char lead = p[0];
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (static_cast<size_t>(end - p) < length) return 0;
  if (p[1] < low || p[1] > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  }
  return length;
}

template <typename Handler>
class Scanner final {
 public:
  Scanner(std::string_view text, Handler& handler, std::string& scratch)
      : p_(reinterpret_cast<const unsigned char*>(text.data())),
        end_(p_ + text.size()),
        handler_(handler),
        text_(scratch) {}

  bool Run() {
    std::array<bool, kMaxJsonScanDepth> in_object{};
    size_t depth = 0;
    SkipWhitespace();
    for (;;) {
      // A value starts here.
      if (p_ == end_) return false;
      const unsigned char c = *p_;
      if (c == '{' || c == '[') {
        ++p_;
        const bool object = c == '{';
        if (depth == kMaxJsonScanDepth) return false;
        if (!(object ? handler_.start_object(kUnknownSize) : handler_.start_array(kUnknownSize))) {
          return false;
        }
        SkipWhitespace();
        const unsigned char close = object ? '}' : ']';
        if (p_ != end_ && *p_ == close) {
          ++p_;
          if (!(object ? handler_.end_object() : handler_.end_array())) return false;
        } else {
          in_object[depth++] = object;
          if (object && !ReadKey()) return false;
          continue;
        }
      } else if (!ReadScalar()) {
        return false;
      }
      // After a value: close containers until a ',' asks for the next value.
      for (;;) {
        SkipWhitespace();
        if (depth == 0) return p_ == end_;
        if (p_ == end_) return false;
        const unsigned char d = *p_++;
        if (d == ',') {
          SkipWhitespace();
          if (in_object[depth - 1] && !ReadKey()) return false;
          break;
        }
        const unsigned char close = in_object[depth - 1] ? '}' : ']';
        if (d != close) return false;
        --depth;
        if (!(in_object[depth] ? handler_.end_object() : handler_.end_array())) return false;
      }
    }
  }

 private:
  static constexpr size_t kUnknownSize = static_cast<size_t>(-1);

  void SkipWhitespace() {
    while (p_ != end_ && IsWhitespace(static_cast<char>(*p_))) ++p_;
  }

  // `"name"`, whitespace, `:`, whitespace.
  bool ReadKey() {
    if (p_ == end_ || *p_ != '"' || !ReadString()) return false;
    if (!handler_.key(text_)) return false;
    SkipWhitespace();
    if (p_ == end_ || *p_ != ':') return false;
    ++p_;
    SkipWhitespace();
    return true;
  }

  bool ReadScalar() {
    switch (*p_) {
      case '"':
        return ReadString() && handler_.string(text_);
      case 't':
        return ReadLiteral("true") && handler_.boolean(true);
      case 'f':
        return ReadLiteral("false") && handler_.boolean(false);
      case 'n':
        return ReadLiteral("null") && handler_.null();
      default:
        return ReadNumber();
    }
  }

  bool ReadLiteral(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() ||
        std::string_view(reinterpret_cast<const char*>(p_), word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }

  // The string at p_ (its opening quote) into text_, unescaped.
  bool ReadString() {
    ++p_;
    text_.clear();
    for (;;) {
      const unsigned char* run = p_;
      while (p_ != end_ && kPlainStringByte[*p_]) ++p_;
      text_.append(reinterpret_cast<const char*>(run), static_cast<size_t>(p_ - run));
      if (p_ == end_) return false;
      const unsigned char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c == '\\') {
        if (!ReadEscape()) return false;
      } else if (c >= 0x80) {
        const size_t length = Utf8SequenceLength(p_, end_);
        if (length == 0) return false;
        text_.append(reinterpret_cast<const char*>(p_), length);
        p_ += length;
      } else {
        return false;  // a control character
      }
    }
  }

  bool ReadEscape() {
    if (end_ - p_ < 2) return false;
    const unsigned char c = p_[1];
    p_ += 2;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        text_.push_back(static_cast<char>(c));
        return true;
      case 'b':
        text_.push_back('\b');
        return true;
      case 'f':
        text_.push_back('\f');
        return true;
      case 'n':
        text_.push_back('\n');
        return true;
      case 'r':
        text_.push_back('\r');
        return true;
      case 't':
        text_.push_back('\t');
        return true;
      case 'u':
        break;
      default:
        return false;
    }
    int32_t unit = ReadHex4();
    if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return false;
    uint32_t code_point = static_cast<uint32_t>(unit);
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      // A high surrogate must be followed by an escaped low one.
      if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
      p_ += 2;
      const int32_t low = ReadHex4();
      if (low < 0xDC00 || low > 0xDFFF) return false;
      code_point = 0x10000 + ((static_cast<uint32_t>(unit) - 0xD800) << 10) +
                   (static_cast<uint32_t>(low) - 0xDC00);
    }
    AppendUtf8(code_point, text_);
    return true;
  }

  // Four hex digits at p_, or -1.
  int32_t ReadHex4() {
    if (end_ - p_ < 4) return -1;
    int32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = HexDigit(static_cast<char>(p_[i]));
      if (digit < 0) return -1;
      value = value * 16 + digit;
    }
    p_ += 4;
    return value;
  }

  bool ReadNumber() {
    const unsigned char* start = p_;
    if (*p_ == '-') ++p_;
    auto digits = [&] {
      const unsigned char* from = p_;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      return p_ - from;
    };
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;  // a leading zero stands alone: "01" fails after the value
    } else if (digits() == 0) {
      return false;
    }
    bool integer = true;
    if (p_ != end_ && *p_ == '.') {
      ++p_;
      if (digits() == 0) return false;
      integer = false;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (digits() == 0) return false;
      integer = false;
    }
    const char* first = reinterpret_cast<const char*>(start);
    const char* last = reinterpret_cast<const char*>(p_);
    if (integer) {
      if (*start == '-') {
        int64_t value = 0;
        const auto [ptr, ec] = std::from_chars(first, last, value);
        return ec == std::errc() && ptr == last && handler_.number_integer(value);
      }
      uint64_t value = 0;
      const auto [ptr, ec] = std::from_chars(first, last, value);
      return ec == std::errc() && ptr == last && handler_.number_unsigned(value);
    }
    double value = 0;
    const auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || ptr != last) return false;
    text_.assign(first, last);
    return handler_.number_float(value, text_);
  }

  const unsigned char* p_;
  const unsigned char* const end_;
  Handler& handler_;
  std::string& text_;  // the string, key or number lexeme being reported
};

}  // namespace json_scan_internal

template <typename Handler>
bool ScanJson(std::string_view text, Handler& handler, std::string& scratch) {
  return json_scan_internal::Scanner<Handler>(text, handler, scratch).Run();
}

namespace json_scan_internal {

// A handler that takes everything: ScanJson with it only checks the text.
struct AcceptAll {
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(int64_t) { return true; }
  bool number_unsigned(uint64_t) { return true; }
  bool number_float(double, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool key(std::string&) { return true; }
  bool start_object(size_t) { return true; }
  bool end_object() { return true; }
  bool start_array(size_t) { return true; }
  bool end_array() { return true; }
};

}  // namespace json_scan_internal

// Whether `text` is one JSON object, checked without building a document:
// true means a full parser accepts it. false means it is not, or that it
// is one the scanner declines (see above), which a full parser must judge.
inline bool ScansAsJsonObject(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return false;
  json_scan_internal::AcceptAll accept;
  std::string scratch;
  return ScanJson(text, accept, scratch);
}

}  // namespace omniforge::llm::wire_internal
