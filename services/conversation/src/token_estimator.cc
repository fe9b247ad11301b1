#include "services/conversation/src/token_estimator.h"

namespace omniforge::conversation {
namespace {

constexpr int32_t kMessageFraming = 4;
constexpr int32_t kCharsPerWordPiece = 4;

bool IsAsciiAlnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

int32_t HeuristicTokenEstimator::CountMessage(std::string_view content) const {
  int64_t tokens = kMessageFraming;
  int64_t run = 0;
  auto end_run = [&] {
    if (run > 0) tokens += (run + kCharsPerWordPiece - 1) / kCharsPerWordPiece;
    run = 0;
  };
  for (unsigned char c : content) {
    if (IsAsciiAlnum(c)) {
      ++run;
      continue;
    }
    end_run();
    if (c < 0x80) {
      if (c > ' ' && c != 0x7f) ++tokens;
    } else if ((c & 0xC0) != 0x80) {
      ++tokens;  // the lead byte of a multi-byte code point
    }
  }
  end_run();
  return static_cast<int32_t>(tokens);
}

}  // namespace omniforge::conversation
