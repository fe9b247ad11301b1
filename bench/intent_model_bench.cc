// intent_model_bench: the local intent models on their own, in-process.
//
// Trains the models from the shipped training split (as the service does at
// start) several times and reports the median training time, then measures
// their accuracy on the dev split (the models alone, no rules), the latency
// of one prediction and of one whole local analysis (rules and models).
// Options override the training settings, to compare alternatives on the
// same data:
//   intent_model_bench [--runs N] [--dim D] [--epoch E] [--lr R] [--ngrams N]
//                      [--minn M] [--maxn M] [--buckets B] [--seed S]
//                      [--concepts 0|1] [--noise 0|1] [--first-word 0|1]
//                      [--length 0|1] [--linear-weight W] [--linear-epochs E]
//                      [--linear-lr R] [--linear-l2 L] [--show-rule-changes]
// Final line:
//   RESULT train_ms=… dev_accuracy=… predict_p50_us=… predict_p99_us=…
//          analyze_p50_us=… analyze_p99_us=… train_utterances=…
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "services/intent/src/analyzer.h"
#include "services/intent/src/classifier.h"
#include "services/intent/src/labeled_data.h"

namespace {

using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
}

namespace intent = omniforge::intent;

// The training settings a run may override.
void AddTrainingOptions(CLI::App& app, intent::ClassifierOptions& options) {
  app.add_option("--dim", options.dim);
  app.add_option("--epoch", options.epoch);
  app.add_option("--lr", options.learning_rate);
  app.add_option("--ngrams", options.word_ngrams);
  app.add_option("--minn", options.min_char_ngram);
  app.add_option("--maxn", options.max_char_ngram);
  app.add_option("--buckets", options.buckets);
  app.add_option("--seed", options.seed);
  app.add_option("--concepts", options.concepts, "concept tokens (0/1)");
  app.add_option("--noise", options.noise, "noise tokens (0/1)");
  app.add_option("--first-word", options.first_word, "first-word token (0/1)");
  app.add_option("--length", options.length, "length token (0/1)");
  app.add_option("--linear-weight", options.linear_weight, "share of the linear model (0..1)");
  app.add_option("--linear-epochs", options.linear_epochs);
  app.add_option("--linear-lr", options.linear_learning_rate);
  app.add_option("--linear-l2", options.linear_l2);
}

// The dev utterances where the rules around the model change its answer
// (the message alone, as the evaluation sends the dev split), and how many
// they fix and break.
void PrintRuleChanges(const intent::LocalClassifier& model, const intent::LocalAnalyzer& analyzer,
                      const std::vector<intent::LabeledUtterance>& dev) {
  int gained = 0;
  int lost = 0;
  for (const intent::LabeledUtterance& u : dev) {
    const std::vector<intent::Prediction> ranked = model.Predict(u.text);
    const intent::Action alone = ranked.empty() ? intent::Action::kUnknown : ranked[0].action;
    intent::IntentRequest request;
    request.message = u.text;
    const intent::LocalResult result = analyzer.Analyze(request);
    if (result.analysis.action == alone) continue;
    const bool right = result.analysis.action == u.action;
    if (right) ++gained;
    if (alone == u.action) ++lost;
    std::printf("rules %s: %s -> %s (expected %s): %s — %s\n",
                right               ? "fix"
                : alone == u.action ? "break"
                                    : "change",
                std::string(intent::ActionName(alone)).c_str(),
                std::string(intent::ActionName(result.analysis.action)).c_str(),
                std::string(intent::ActionName(u.action)).c_str(), u.text.c_str(),
                result.analysis.reasoning.c_str());
  }
  std::printf("rules: %d fixed, %d broken\n", gained, lost);
}

}  // namespace

// NOLINTNEXTLINE(bugprone-exception-escape): a bench that cannot set up ends on the exception
int main(int argc, char** argv) {
  using namespace omniforge::intent;
  CLI::App app{"local intent model benchmark"};
  ClassifierOptions options;
  int runs = 3;
  app.add_option("--runs", runs, "trainings to time");
  AddTrainingOptions(app, options);
  bool show_rule_changes = false;
  app.add_flag("--show-rule-changes", show_rule_changes,
               "list dev utterances where the rules around the model change its answer");
  CLI11_PARSE(app, argc, argv);

  const std::vector<LabeledUtterance> train = TrainingSplit();
  const std::vector<LabeledUtterance> dev = DevSplit();
  std::vector<double> train_ms;
  std::unique_ptr<LocalClassifier> model;
  for (int i = 0; i < std::max(1, runs); ++i) {
    const auto start = Clock::now();
    auto trained = LocalClassifier::Train(train, options);
    train_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (!trained.ok()) {
      std::fprintf(stderr, "%s\n", std::string(trained.status().message()).c_str());
      return 1;
    }
    model = *std::move(trained);
  }
  int correct = 0;
  std::vector<double> predict_us;
  for (int round = 0; round < 5; ++round) {
    for (const LabeledUtterance& u : dev) {
      const auto start = Clock::now();
      const std::vector<Prediction> ranked = model->Predict(u.text);
      predict_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
      if (round == 0 && !ranked.empty() && ranked[0].action == u.action) ++correct;
    }
  }
  // The whole local analysis (rules and models) of each dev message alone.
  const LocalAnalyzer analyzer(*model);
  std::vector<double> analyze_us;
  for (int round = 0; round < 5; ++round) {
    for (const LabeledUtterance& u : dev) {
      IntentRequest request;
      request.message = u.text;
      const auto start = Clock::now();
      const LocalResult result = analyzer.Analyze(request);
      analyze_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
  }
  if (show_rule_changes) PrintRuleChanges(*model, analyzer, dev);
  std::printf("training: %zu utterances, runs (ms):", train.size());
  for (double ms : train_ms) std::printf(" %.0f", ms);
  std::printf("\ndev: %zu utterances, %d correct by the model alone\n", dev.size(), correct);
  std::printf(
      "RESULT train_ms=%.0f dev_accuracy=%.4f predict_p50_us=%.1f predict_p99_us=%.1f "
      "analyze_p50_us=%.1f analyze_p99_us=%.1f train_utterances=%zu\n",
      Percentile(train_ms, 0.5), dev.empty() ? 0.0 : static_cast<double>(correct) / dev.size(),
      Percentile(predict_us, 0.5), Percentile(predict_us, 0.99), Percentile(analyze_us, 0.5),
      Percentile(analyze_us, 0.99), train.size());
  return 0;
}
