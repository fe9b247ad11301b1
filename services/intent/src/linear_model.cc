#include "services/intent/src/linear_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace omniforge::intent {
namespace {

std::vector<std::string_view> Tokens(std::string_view input) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < input.size()) {
    size_t end = input.find(' ', start);
    if (end == std::string_view::npos) end = input.size();
    if (end > start) out.push_back(input.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

uint64_t Fnv1a(std::string_view s, uint64_t hash = 14695981039346656037ULL) {
  for (unsigned char c : s) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

void Softmax(LinearModel::Scores& s) {
  const float top = *std::max_element(s.begin(), s.end());
  float sum = 0;
  for (float& v : s) {
    v = std::exp(v - top);
    sum += v;
  }
  for (float& v : s) v /= sum;
}

}  // namespace

std::vector<uint64_t> LinearModel::FeatureHashes(std::string_view input) {
  const std::vector<std::string_view> tokens = Tokens(input);
  std::vector<uint64_t> out;
  out.reserve(tokens.size() * 2);
  uint64_t previous = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint64_t h = Fnv1a(tokens[i]);
    out.push_back(h);
    if (i > 0) out.push_back(Fnv1a(tokens[i], previous * 1099511628211ULL + 0x9e3779b97f4a7c15ULL));
    previous = h;
  }
  return out;
}

std::vector<int> LinearModel::Features(std::string_view input) const {
  std::vector<int> out;
  for (uint64_t f : FeatureHashes(input)) {
    if (auto it = index_.find(f); it != index_.end()) out.push_back(it->second);
  }
  return out;
}

LinearModel LinearModel::Train(const std::vector<std::string>& inputs,
                               const std::vector<int>& labels, const LinearModelOptions& options) {
  LinearModel m;
  std::vector<std::vector<int>> examples;
  examples.reserve(inputs.size());
  for (const std::string& input : inputs) {
    std::vector<int> features;
    for (uint64_t f : FeatureHashes(input)) {
      auto [it, inserted] = m.index_.try_emplace(f, static_cast<int>(m.index_.size()));
      features.push_back(it->second);
    }
    examples.push_back(std::move(features));
  }
  m.weights_.assign(m.index_.size(), Scores{});

  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(options.seed);
  const double total_steps = static_cast<double>(options.epochs) * examples.size();
  double step = 0;
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    // A Fisher-Yates shuffle written out: std::shuffle's order is not
    // specified, this one is the same everywhere.
    for (size_t i = order.size(); i > 1; --i) {
      std::swap(order[i - 1], order[rng() % i]);
    }
    for (size_t e : order) {
      const std::vector<int>& features = examples[e];
      if (features.empty()) continue;
      const float lr =
          static_cast<float>(options.learning_rate * (1.0 - step / total_steps)) + 1e-4f;
      ++step;
      const float scale = 1.0f / std::sqrt(static_cast<float>(features.size()));
      Scores s = m.bias_;
      for (int f : features) {
        for (int c = 0; c < kClasses; ++c) s[c] += m.weights_[f][c] * scale;
      }
      Softmax(s);
      for (int c = 0; c < kClasses; ++c) {
        const float gradient = s[c] - (c == labels[e] ? 1.0f : 0.0f);
        m.bias_[c] -= lr * gradient * 0.1f;
        for (int f : features) {
          float& w = m.weights_[f][c];
          w -= lr * (gradient * scale + static_cast<float>(options.l2) * w);
        }
      }
    }
  }
  return m;
}

LinearModel::Scores LinearModel::Predict(std::string_view input) const {
  const std::vector<int> features = Features(input);
  Scores s = bias_;
  if (!features.empty()) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(features.size()));
    for (int f : features) {
      for (int c = 0; c < kClasses; ++c) s[c] += weights_[f][c] * scale;
    }
  }
  Softmax(s);
  return s;
}

bool LinearModel::Knows(std::string_view input) const { return !Features(input).empty(); }

}  // namespace omniforge::intent
