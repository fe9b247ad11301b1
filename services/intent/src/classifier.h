// The local model: a fastText supervised classifier over the eight actions,
// trained in-process from labeled utterances. Training with one thread and a
// fixed seed is deterministic: the same data gives the same model, bit for
// bit. Predict is const and safe to call from many threads at once.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "services/intent/src/action.h"
#include "services/intent/src/labeled_data.h"

namespace fasttext {
class FastText;
}

namespace omniforge::intent {

struct ClassifierOptions {
  int dim = 48;
  int epoch = 40;
  double learning_rate = 0.6;
  int word_ngrams = 2;
  // Character n-grams make misspellings ("scedule", "remnder") land near
  // the real word.
  int min_char_ngram = 3;
  int max_char_ngram = 5;
  int buckets = 200000;
  int seed = 7;
};

struct Prediction {
  Action action;
  float probability;  // softmax over the eight actions
};

class LocalClassifier final {
 public:
  // INVALID_ARGUMENT without examples; INTERNAL when fastText fails.
  static absl::StatusOr<std::unique_ptr<LocalClassifier>> Train(
      const std::vector<LabeledUtterance>& examples, const ClassifierOptions& options = {});
  ~LocalClassifier();

  // Every action the model knows, most probable first. `text` is raw user
  // text (it is normalized here). Empty for a text with no known word or
  // character n-gram at all.
  std::vector<Prediction> Predict(std::string_view text) const;

 private:
  explicit LocalClassifier(std::unique_ptr<fasttext::FastText> model);
  std::unique_ptr<fasttext::FastText> model_;
};

}  // namespace omniforge::intent
