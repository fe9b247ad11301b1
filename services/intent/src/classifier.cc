#include "services/intent/src/classifier.h"

#include <fasttext/fasttext.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): POSIX mkstemp, not <cstdlib>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "services/intent/src/concepts.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

constexpr std::string_view kLabelPrefix = "__label__";

// fastText reads its training data from a file; this one lives only for the
// duration of the training.
class TempFile final {
 public:
  TempFile() {
    const char* dir = getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/omniforge-intent-XXXXXX";
    fd_ = mkstemp(path_.data());
  }
  ~TempFile() {
    if (fd_ >= 0) {
      close(fd_);
      unlink(path_.c_str());
    }
  }
  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Crude stemming: "reports" -> "report", "scheduled" -> "schedul",
// "running" -> "runn". Both training and prediction see the same stems, so
// only consistency matters; it pools the few examples each form has.
std::string_view Stem(std::string_view w) {
  if (w.size() <= 4) return w;
  for (std::string_view suffix : {"ing", "ed", "es", "ly", "s"}) {
    if (w.size() > suffix.size() + 3 && w.ends_with(suffix)) {
      return w.substr(0, w.size() - suffix.size());
    }
  }
  return w;
}

// The position of `action` in kAllActions: its class in the linear model.
int ClassIndex(Action action) {
  return static_cast<int>(std::find(kAllActions.begin(), kAllActions.end(), action) -
                          kAllActions.begin());
}

}  // namespace

std::string ModelInput(std::string_view text, const ClassifierOptions& options) {
  const std::string normalized = NormalizeText(text);
  std::string out;
  out.reserve(normalized.size() * 2 + 16);
  const std::vector<std::string_view> words = Words(normalized);
  if (options.first_word && !words.empty()) {
    out.append("_first_");
    out.append(Stem(words[0]));
  }
  if (options.length) {
    if (!out.empty()) out.push_back(' ');
    out.append(words.size() <= 2    ? "_len_tiny"
               : words.size() <= 5  ? "_len_short"
               : words.size() <= 15 ? "_len_mid"
                                    : "_len_long");
  }
  for (std::string_view w : words) {
    if (!out.empty()) out.push_back(' ');
    const bool digits =
        std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
    out.append(digits ? std::string_view("__num__") : Stem(w));
    if (options.concepts) {
      if (std::string_view c = ConceptOf(w); !c.empty()) {
        out.push_back(' ');
        out.append(c);
      }
    }
    if (options.noise && LooksLikeNoise(w)) out.append(" _noise");
  }
  return out;
}

namespace {

fasttext::Args MakeArgs(const ClassifierOptions& o, const std::string& input) {
  // Every field is set: the defaults are the unsupervised ones.
  fasttext::Args args;
  args.input = input;
  args.output = "";
  args.model = fasttext::model_name::sup;
  args.loss = fasttext::loss_name::softmax;
  args.lr = o.learning_rate;
  args.lrUpdateRate = 100;
  args.dim = o.dim;
  args.ws = 5;
  args.epoch = o.epoch;
  args.minCount = 1;
  args.minCountLabel = 0;
  args.neg = 5;
  args.wordNgrams = o.word_ngrams;
  args.bucket = o.buckets;
  args.minn = o.min_char_ngram;
  args.maxn = o.max_char_ngram;
  args.thread = 1;  // one thread + a seed: deterministic
  args.t = 1e-4;
  args.label = std::string(kLabelPrefix);
  args.verbose = 0;
  args.pretrainedVectors = "";
  args.saveOutput = false;
  args.seed = o.seed;
  args.qout = false;
  args.retrain = false;
  args.qnorm = false;
  args.cutoff = 0;
  args.dsub = 2;
  args.autotuneValidationFile = "";
  return args;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalClassifier>> LocalClassifier::Train(
    const std::vector<LabeledUtterance>& examples, const ClassifierOptions& options) {
  if (examples.empty()) return absl::InvalidArgumentError("no training examples");
  TempFile file;
  if (!file.ok()) return absl::InternalError("cannot create a temporary file for training");
  {
    std::ofstream out(file.path());
    for (const LabeledUtterance& u : examples) {
      out << kLabelPrefix << ActionLabel(u.action) << ' ' << ModelInput(u.text, options) << '\n';
    }
    if (!out.good()) return absl::InternalError("cannot write the training file");
  }
  TempFile saved;
  if (!saved.ok()) return absl::InternalError("cannot create a temporary file for the model");
  auto model = std::make_unique<fasttext::FastText>();
  try {
    auto trainer = std::make_unique<fasttext::FastText>();
    trainer->train(MakeArgs(options, file.path()));
    // A trained model's dictionary keeps a 30-million-slot hash table
    // (120 MB); a loaded one sizes it to the vocabulary. Save and reload.
    trainer->saveModel(saved.path());
    trainer.reset();
    model->loadModel(saved.path());
  } catch (const std::exception& e) {
    return absl::InternalError(std::string("training the intent model failed: ") + e.what());
  }
  LinearModel linear;
  if (options.linear_weight > 0) {
    std::vector<std::string> inputs;
    std::vector<int> labels;
    inputs.reserve(examples.size());
    labels.reserve(examples.size());
    for (const LabeledUtterance& u : examples) {
      inputs.push_back(ModelInput(u.text, options));
      labels.push_back(ClassIndex(u.action));
    }
    LinearModelOptions linear_options;
    linear_options.epochs = options.linear_epochs;
    linear_options.learning_rate = options.linear_learning_rate;
    linear_options.l2 = options.linear_l2;
    linear_options.seed = static_cast<unsigned>(options.seed);
    linear = LinearModel::Train(inputs, labels, linear_options);
  }
  return std::unique_ptr<LocalClassifier>(
      new LocalClassifier(std::move(model), std::move(linear), options));
}

LocalClassifier::LocalClassifier(std::unique_ptr<fasttext::FastText> model, LinearModel linear,
                                 const ClassifierOptions& options)
    : model_(std::move(model)), linear_(std::move(linear)), options_(options) {}

LocalClassifier::~LocalClassifier() = default;

std::vector<Prediction> LocalClassifier::Predict(std::string_view text) const {
  const std::string input = ModelInput(text, options_);
  std::istringstream in(input + "\n");
  std::vector<std::pair<fasttext::real, std::string>> raw;
  model_->predictLine(in, raw, static_cast<int32_t>(kAllActions.size()), 0.0);
  LinearModel::Scores fast{};
  for (const auto& [probability, label] : raw) {
    std::string_view name = label;
    if (name.starts_with(kLabelPrefix)) name.remove_prefix(kLabelPrefix.size());
    if (auto action = ParseAction(name))
      fast[ClassIndex(*action)] = static_cast<float>(probability);
  }
  const bool linear = options_.linear_weight > 0 && linear_.Knows(input);
  if (raw.empty() && !linear) return {};
  LinearModel::Scores combined = fast;
  if (linear) {
    const LinearModel::Scores l = linear_.Predict(input);
    const float w = raw.empty() ? 1.0f : static_cast<float>(options_.linear_weight);
    for (size_t c = 0; c < combined.size(); ++c) combined[c] = (1 - w) * fast[c] + w * l[c];
  }
  std::vector<Prediction> out;
  out.reserve(kAllActions.size());
  for (size_t c = 0; c < kAllActions.size(); ++c) out.push_back({kAllActions[c], combined[c]});
  std::stable_sort(out.begin(), out.end(), [](const Prediction& a, const Prediction& b) {
    return a.probability > b.probability;
  });
  Remember(text, out);
  return out;
}

void LocalClassifier::Remember(std::string_view text, const std::vector<Prediction>& ranked) const {
  if (text.size() > kRememberedBytes) return;
  absl::MutexLock lock(&mu_);
  if (remembered_.size() >= kRememberedMessages) remembered_.clear();
  remembered_.insert_or_assign(std::string(text), ranked);
}

std::vector<Prediction> LocalClassifier::PredictEarlier(std::string_view text) const {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = remembered_.find(absl::string_view(text.data(), text.size()));
        it != remembered_.end()) {
      return it->second;
    }
  }
  return Predict(text);
}

}  // namespace omniforge::intent
