// A multinomial logistic regression over sparse token features: the second
// opinion beside the fastText model. fastText squeezes every token through a
// small dense embedding; this model gives every token and token pair its own
// weight per action, so rare but telling words keep their say. Trained by
// SGD in a fixed order (deterministic), in milliseconds. Predict is const and
// safe to call from many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace omniforge::intent {

struct LinearModelOptions {
  int epochs = 12;
  double learning_rate = 0.5;
  double l2 = 1e-5;
  unsigned seed = 7;
};

class LinearModel final {
 public:
  static constexpr int kClasses = 8;
  using Scores = std::array<float, kClasses>;

  // `inputs[i]` is the space-separated token string of example i (the same
  // text the fastText model reads) and `labels[i]` its class, 0..7.
  static LinearModel Train(const std::vector<std::string>& inputs, const std::vector<int>& labels,
                           const LinearModelOptions& options = {});

  // Softmax probabilities per class; uniform when no feature is known.
  Scores Predict(std::string_view input) const;

  // True when `input` has at least one feature the model knows.
  bool Knows(std::string_view input) const;

 private:
  std::vector<int> Features(std::string_view input) const;
  // Tokens and pairs of neighbouring tokens (as fastText's word bigrams),
  // each as a 64-bit hash.
  static std::vector<uint64_t> FeatureHashes(std::string_view input);

  std::unordered_map<uint64_t, int> index_;
  std::vector<Scores> weights_;  // per feature
  Scores bias_{};
};

}  // namespace omniforge::intent
