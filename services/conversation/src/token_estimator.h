// Token counting for the context window, behind an interface so a real
// tokenizer can replace the estimate.
#pragma once

#include <cstdint>
#include <string_view>

namespace omniforge::conversation {

class TokenEstimator {
 public:
  virtual ~TokenEstimator() = default;
  // Tokens a message with this content costs in a chat prompt.
  virtual int32_t CountMessage(std::string_view content) const = 0;
  virtual std::string_view Name() const = 0;
};

// "heuristic-v1": approximates BPE tokenizers (cl100k/o200k) without their
// vocabulary. A message costs 4 tokens of chat framing plus, for its text:
//   - each run of ASCII letters or digits: ceil(length / 4), at least 1;
//   - each other non-space ASCII character (punctuation, symbols): 1;
//   - each non-ASCII code point: 1 (CJK, emoji and accented letters are
//     usually one token or more each).
// On English prose this lands within about 15% of cl100k counts, erring high.
class HeuristicTokenEstimator final : public TokenEstimator {
 public:
  int32_t CountMessage(std::string_view content) const override;
  std::string_view Name() const override { return "heuristic-v1"; }
};

}  // namespace omniforge::conversation
