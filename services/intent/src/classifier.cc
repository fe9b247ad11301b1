#include "services/intent/src/classifier.h"

#include <fasttext/fasttext.h>
#include <stdlib.h>
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

}  // namespace

std::string ModelInput(std::string_view text, const ClassifierOptions& options) {
  const std::string normalized = NormalizeText(text);
  std::string out;
  out.reserve(normalized.size() * 2 + 16);
  for (std::string_view w : Words(normalized)) {
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
  return std::unique_ptr<LocalClassifier>(new LocalClassifier(std::move(model), options));
}

LocalClassifier::LocalClassifier(std::unique_ptr<fasttext::FastText> model,
                                 const ClassifierOptions& options)
    : model_(std::move(model)), options_(options) {}

LocalClassifier::~LocalClassifier() = default;

std::vector<Prediction> LocalClassifier::Predict(std::string_view text) const {
  std::istringstream in(ModelInput(text, options_) + "\n");
  std::vector<std::pair<fasttext::real, std::string>> raw;
  model_->predictLine(in, raw, static_cast<int32_t>(kAllActions.size()), 0.0);
  std::vector<Prediction> out;
  out.reserve(raw.size());
  for (const auto& [probability, label] : raw) {
    std::string_view name = label;
    if (name.starts_with(kLabelPrefix)) name.remove_prefix(kLabelPrefix.size());
    if (auto action = ParseAction(name)) {
      out.push_back({*action, static_cast<float>(probability)});
    }
  }
  return out;
}

}  // namespace omniforge::intent
