#include "libs/core/secrets.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace omniforge::core {
namespace {

constexpr std::string_view kRedacted = "[REDACTED]";

// Indexes into kKindNames; the order is the one DetectSecrets reports in.
enum Kind : size_t {
  kPrivateKey,
  kOpenAiKey,
  kAnthropicKey,
  kAwsKey,
  kGithubToken,
  kSlackToken,
  kGoogleKey,
  kStripeKey,
  kOmniforgeKey,
  kJwt,
  kBearerToken,
  kPassword,
  kCreditCard,
  kKindCount,
};

constexpr std::array<std::string_view, kKindCount> kKindNames = {
    "private_key",  "openai_api_key", "anthropic_api_key", "aws_access_key",    "github_token",
    "slack_token",  "google_api_key", "stripe_key",        "omniforge_api_key", "jwt",
    "bearer_token", "password",       "credit_card",
};

struct Finding {
  Kind kind;
  size_t begin;
  size_t end;
};

struct Rule {
  Kind kind;
  const char* pattern;
  // Rejects a value that matches the pattern but is not that kind of secret;
  // nullptr accepts every match.
  bool (*accept)(std::string_view value);
};

// The Anthropic prefix also fits the OpenAI pattern (RE2 has no lookahead).
bool IsNotAnthropicKey(std::string_view value) { return !value.starts_with("sk-ant-"); }

// Keeps redaction idempotent: an already masked value is not a password.
bool IsNotRedacted(std::string_view value) { return value != kRedacted; }

// A pattern without capturing groups masks its whole match. One with groups
// masks only the group that took part (a password's value, not its key name),
// so the log still says which setting was there.
//
// Patterns, by kind:
//   private_key     PEM "-----BEGIN [RSA |EC |OPENSSH |DSA |ENCRYPTED |PGP
//                   ]PRIVATE KEY[ BLOCK]-----" through its END line, or to
//                   the end of the text when the END line is missing (a
//                   truncated key is still key material).
//   openai_api_key  sk-<20+ of [A-Za-z0-9_-]>, which covers sk-proj-...
//   anthropic       sk-ant-<20+ of [A-Za-z0-9_-]>
//   aws_access_key  AKIA or ASIA + 16 of [0-9A-Z]
//   github_token    gh[pousr]_<36+ alnum>, github_pat_<22+ of [A-Za-z0-9_]>
//   slack_token     xox[abprs]-<10+ of [A-Za-z0-9-]>
//   google_api_key  AIza + 35 of [0-9A-Za-z_-]
//   stripe_key      (sk|rk)_(live|test)_<16+ alnum> (secret/restricted keys)
//   omniforge_api_key  ofk_<12 hex key id>_<64 hex secret> (api_keys.h)
//   jwt             eyJ<b64url>.eyJ<b64url>.<b64url signature, maybe empty>
//   bearer_token    "Bearer " + a 16+ char token68 (case-insensitive)
//   password        password|passwd|pwd|secret|api[_-]?key|access[_-]?token
//                   (any case) followed by ':' or '=' (JSON quotes allowed):
//                   the value only; and the password in a URL's
//                   user:password@ part.
//   credit_card     not a regex: see FindCardNumbers.
constexpr Rule kRules[] = {
    {kPrivateKey,
     R"(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)"
     R"((?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*))",
     nullptr},
    {kOpenAiKey, R"(\bsk-[A-Za-z0-9_-]{20,})", IsNotAnthropicKey},
    {kAnthropicKey, R"(\bsk-ant-[A-Za-z0-9_-]{20,})", nullptr},
    {kAwsKey, R"(\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)", nullptr},
    {kGithubToken, R"(\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{22,}))", nullptr},
    {kSlackToken, R"(\bxox[abprs]-[A-Za-z0-9-]{10,})", nullptr},
    {kGoogleKey, R"(\bAIza[0-9A-Za-z_-]{35})", nullptr},
    {kStripeKey, R"(\b[sr]k_(?:live|test)_[0-9A-Za-z]{16,})", nullptr},
    {kOmniforgeKey, R"(\bofk_[0-9a-f]{12}_[0-9a-f]{64}\b)", nullptr},
    {kJwt, R"(\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)", nullptr},
    {kBearerToken, R"((?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}=*)", nullptr},
    {kPassword,
     R"re((?i)(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token)["']?)re"
     R"re(\s*[:=]\s*(?:"([^"\r\n]+)"|'([^'\r\n]+)'|([^\s"',;&]+)))re",
     IsNotRedacted},
    {kPassword, R"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@]+:([^\s/?#@]+)@)", IsNotRedacted},
};

constexpr size_t kRuleCount = std::size(kRules);

const std::array<std::unique_ptr<RE2>, kRuleCount>& CompiledRules() {
  // Built once and never destroyed, so logging during static destruction
  // still works. Latin-1 makes matching byte-wise: every pattern is ASCII
  // and the input may be any bytes, valid UTF-8 or not.
  static const auto* const rules = [] {
    auto* compiled = new std::array<std::unique_ptr<RE2>, kRuleCount>();
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);
    options.set_log_errors(false);
    for (size_t i = 0; i < kRuleCount; ++i) {
      (*compiled)[i] = std::make_unique<RE2>(kRules[i].pattern, options);
      if (!(*compiled)[i]->ok()) {
        std::fprintf(stderr, "omniforge: bad secret pattern %zu: %s\n", i,
                     (*compiled)[i]->error().c_str());
        std::abort();
      }
    }
    return compiled;
  }();
  return *rules;
}

void FindRuleMatches(const Rule& rule, const RE2& re, std::string_view text,
                     std::vector<Finding>& out) {
  const re2::StringPiece input(text.data(), text.size());
  const int n_groups = 1 + re.NumberOfCapturingGroups();
  std::vector<re2::StringPiece> groups(n_groups);
  size_t pos = 0;
  while (pos <= text.size() &&
         re.Match(input, pos, text.size(), RE2::UNANCHORED, groups.data(), n_groups)) {
    re2::StringPiece value = groups[0];
    for (int g = 1; g < n_groups; ++g) {
      if (groups[g].data() != nullptr) {
        value = groups[g];
        break;
      }
    }
    if (rule.accept == nullptr || rule.accept(std::string_view(value.data(), value.size()))) {
      const auto begin = static_cast<size_t>(value.data() - text.data());
      out.push_back({rule.kind, begin, begin + value.size()});
    }
    const auto match_end = static_cast<size_t>(groups[0].data() - text.data()) + groups[0].size();
    pos = groups[0].empty() ? match_end + 1 : match_end;
  }
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsWordByte(char c) {
  return IsDigit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool PassesLuhn(std::string_view digits) {
  int sum = 0;
  bool twice = false;
  for (size_t i = digits.size(); i-- > 0;) {
    int d = digits[i] - '0';
    if (twice) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    twice = !twice;
  }
  return sum % 10 == 0;
}

struct DigitGroup {
  size_t begin;
  size_t end;
  size_t size() const { return end - begin; }
};

// The longest card number, and so the most groups a card can span.
constexpr size_t kMaxCardDigits = 19;

size_t DigitsEnd(std::string_view text, size_t pos) {
  while (pos < text.size() && IsDigit(text[pos])) ++pos;
  return pos;
}

// Start of the group after one ending at `end`: the groups of a run are
// joined by a single space or dash. npos when the run ends there.
size_t NextGroup(std::string_view text, size_t end) {
  if (end + 1 < text.size() && (text[end] == ' ' || text[end] == '-') && IsDigit(text[end + 1])) {
    return end + 1;
  }
  return std::string_view::npos;
}

// True when the groups are laid out the way card numbers are printed: one
// unbroken block, 4-4-4-... with a shorter tail, or the 4-6-5 / 4-6-4
// layout of Amex and Diners. This is what keeps UUIDs, phone numbers and
// dates next to each other from reading as a card.
bool IsCardLayout(const DigitGroup* groups, size_t count) {
  if (count == 1) return true;
  if (count == 3 && groups[0].size() == 4 && groups[1].size() == 6 &&
      (groups[2].size() == 5 || groups[2].size() == 4)) {
    return true;
  }
  for (size_t g = 0; g + 1 < count; ++g) {
    if (groups[g].size() != 4) return false;
  }
  return groups[count - 1].size() <= 4;
}

// Records the card numbers in the run of digit groups that starts at
// `first`: 13-19 digits in a card layout, starting
// with 2-6 (the issuer ranges of the payment networks, which also rules out
// millisecond timestamps), passing the Luhn check. Windows are tried from
// each group in turn, so a card followed by an expiry date is still found.
void FindCardsInRun(std::string_view text, size_t first, std::vector<Finding>& out) {
  std::array<DigitGroup, kMaxCardDigits> window;
  std::array<char, kMaxCardDigits> digits;
  while (first != std::string_view::npos) {
    const DigitGroup lead{first, DigitsEnd(text, first)};
    // Every layout opens with a 4-digit group or is one unbroken block.
    if (lead.size() != 4 && (lead.size() < 13 || lead.size() > 19)) {
      first = NextGroup(text, lead.end);
      continue;
    }
    size_t count = 0;
    size_t n_digits = 0;
    size_t best = 0;
    for (size_t pos = first; pos != std::string_view::npos;) {
      const DigitGroup group{pos, DigitsEnd(text, pos)};
      if (n_digits + group.size() > kMaxCardDigits) break;
      text.copy(digits.data() + n_digits, group.size(), group.begin);
      n_digits += group.size();
      window[count++] = group;
      if (n_digits >= 13 && digits[0] >= '2' && digits[0] <= '6' &&
          IsCardLayout(window.data(), count) &&
          PassesLuhn(std::string_view(digits.data(), n_digits))) {
        best = count;
      }
      pos = NextGroup(text, group.end);
    }
    if (best == 0) {
      first = NextGroup(text, lead.end);
      continue;
    }
    out.push_back({kCreditCard, window[0].begin, window[best - 1].end});
    first = NextGroup(text, window[best - 1].end);
  }
}

// Card numbers need a checksum and a layout check, which a regex cannot do,
// so runs of digits are scanned by hand, without allocating.
void FindCardNumbers(std::string_view text, std::vector<Finding>& out) {
  size_t i = 0;
  while (i < text.size()) {
    // A run must start and end on a word boundary: digits inside an
    // identifier or a hex string are not card numbers.
    if (!IsDigit(text[i]) || (i > 0 && IsWordByte(text[i - 1]))) {
      ++i;
      continue;
    }
    size_t end = DigitsEnd(text, i);
    for (size_t next = NextGroup(text, end); next != std::string_view::npos;
         next = NextGroup(text, end)) {
      end = DigitsEnd(text, next);
    }
    if (end == text.size() || !IsWordByte(text[end])) {
      FindCardsInRun(text, i, out);
    }
    i = end;
  }
}

std::vector<Finding> FindAll(std::string_view text) {
  std::vector<Finding> found;
  const auto& compiled = CompiledRules();
  for (size_t i = 0; i < kRuleCount; ++i) {
    FindRuleMatches(kRules[i], *compiled[i], text, found);
  }
  FindCardNumbers(text, found);
  return found;
}

}  // namespace

std::vector<std::string> DetectSecrets(std::string_view text) {
  std::array<bool, kKindCount> seen{};
  for (const Finding& f : FindAll(text)) seen[f.kind] = true;
  std::vector<std::string> kinds;
  for (size_t k = 0; k < kKindCount; ++k) {
    if (seen[k]) kinds.emplace_back(kKindNames[k]);
  }
  return kinds;
}

std::string RedactSecrets(std::string_view text) {
  std::vector<Finding> found = FindAll(text);
  if (found.empty()) return std::string(text);
  std::sort(found.begin(), found.end(),
            [](const Finding& a, const Finding& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  size_t i = 0;
  while (i < found.size()) {
    // Overlapping or touching findings (a JWT inside a bearer header, an
    // api_key value that is also an OpenAI key) become one mask.
    size_t begin = found[i].begin;
    size_t end = found[i].end;
    for (++i; i < found.size() && found[i].begin <= end; ++i) {
      end = std::max(end, found[i].end);
    }
    out.append(text.substr(copied, begin - copied));
    out.append(kRedacted);
    copied = end;
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace omniforge::core
