#include "libs/llm/sse.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace omniforge::llm {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// The first CR or LF in `bytes` at or after `pos`, or npos. Two memchr scans
// instead of string_view::find_first_of, which tests every byte against the
// set one call at a time; CR is rare, so its scan stops at the next LF.
size_t FindLineEnd(std::string_view bytes, size_t pos) {
  const char* begin = bytes.data() + pos;
  const size_t length = bytes.size() - pos;
  const void* lf = std::memchr(begin, '\n', length);
  const size_t lf_at =
      lf == nullptr ? length : static_cast<size_t>(static_cast<const char*>(lf) - begin);
  const void* cr = std::memchr(begin, '\r', lf_at);
  if (cr != nullptr) return pos + static_cast<size_t>(static_cast<const char*>(cr) - begin);
  return lf == nullptr ? std::string_view::npos : pos + lf_at;
}

}  // namespace

SseParser::SseParser(EventCallback on_event) : on_event_(std::move(on_event)) {}

bool SseParser::Feed(std::string_view bytes) {
  size_t pos = 0;
  while (!stopped_ && pos < bytes.size()) {
    if (after_cr_) {
      after_cr_ = false;
      if (bytes[pos] == '\n') {
        ++pos;
        continue;
      }
    }
    size_t end = FindLineEnd(bytes, pos);
    if (end == std::string_view::npos) {
      line_.append(bytes.substr(pos));
      break;
    }
    after_cr_ = bytes[end] == '\r';
    std::string_view piece = bytes.substr(pos, end - pos);
    if (line_.empty()) {
      // The common case: the whole line is in this chunk, no copy needed.
      ProcessLine(piece);
    } else {
      line_.append(piece);
      ProcessLine(line_);
      line_.clear();
    }
    pos = end + 1;
  }
  return !stopped_;
}

void SseParser::ProcessLine(std::string_view line) {
  if (at_stream_start_) {
    at_stream_start_ = false;
    if (line.substr(0, kByteOrderMark.size()) == kByteOrderMark) {
      line.remove_prefix(kByteOrderMark.size());
    }
  }
  if (line.empty()) {
    Dispatch();
    return;
  }
  if (line.front() == ':') return;
  std::string_view field = line;
  std::string_view value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "event") {
    event_type_.assign(value);
  } else if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "id") {
    // The spec ignores an id containing NUL.
    if (value.find('\0') == std::string_view::npos) id_buffer_.assign(value);
  } else if (field == "retry") {
    // Only ASCII digits; anything else is ignored. Values past an hour are
    // clamped: no server means them, and they would overflow.
    if (!value.empty() && value.size() <= 18 &&
        value.find_first_not_of("0123456789") == std::string_view::npos) {
      retry_ms_ = std::min(std::stoll(std::string(value)), 3'600'000LL);
    }
  }
}

void SseParser::Dispatch() {
  last_event_id_ = id_buffer_;
  if (!has_data_) {
    event_type_.clear();
    return;
  }
  // Swapped, not moved: both buffers keep their capacity for the next event,
  // so a stream of small events costs no allocation per event.
  if (event_type_.empty()) {
    event_.type.assign("message");
  } else {
    event_.type.swap(event_type_);
  }
  event_.data.swap(data_);
  event_type_.clear();
  data_.clear();
  has_data_ = false;
  if (!on_event_(event_)) stopped_ = true;
}

}  // namespace omniforge::llm
