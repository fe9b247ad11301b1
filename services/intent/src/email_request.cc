#include "services/intent/src/email_request.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace omniforge::intent {
namespace {

// Words of a request about agents or recurring work, not one email.
constexpr std::string_view kNotAnEmail[] = {"agent",   "agents",  "skill",         "every",
                                            "weekly",  "daily",   "automatically", "whenever",
                                            "monthly", "schedule"};

// The longest subject taken from the message's words.
constexpr size_t kMaxSubjectWords = 10;

std::string Capitalize(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

std::string Trimmed(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  while (!text.empty() && (text.back() == '.' || text.back() == '?' || text.back() == '!' ||
                           text.back() == ',' || text.back() == ';')) {
    text.remove_suffix(1);
    text = absl::StripTrailingAsciiWhitespace(text);
  }
  return std::string(text);
}

bool IsName(std::string_view word) {
  if (word.empty()) return false;
  if (word.find('@') != std::string_view::npos) return true;  // an address
  return std::isupper(static_cast<unsigned char>(word[0])) != 0 &&
         std::all_of(word.begin(), word.end(), [](char c) {
           return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '\'';
         });
}

// The names at the start of `text` (capitalized words or addresses, joined
// by "and", "&" or commas), and what follows them.
std::pair<std::vector<std::string>, std::string> LeadingNames(std::string_view text) {
  std::vector<std::string> names;
  std::string name;
  size_t at = 0;
  size_t rest = 0;
  while (true) {
    while (at < text.size() && text[at] == ' ') ++at;
    if (at >= text.size()) break;
    size_t end = at;
    while (end < text.size() && text[end] != ' ' && text[end] != ',') ++end;
    const std::string_view word = text.substr(at, end - at);
    const bool comma = end < text.size() && text[end] == ',';
    const size_t next = end + (comma ? 1 : 0);
    if ((word == "and" || word == "&") && (!names.empty() || !name.empty())) {
      if (!name.empty()) names.push_back(std::exchange(name, ""));
    } else if (IsName(word)) {
      name += (name.empty() ? "" : " ") + std::string(word);
      rest = next;
    } else {
      break;
    }
    if (comma && !name.empty()) names.push_back(std::exchange(name, ""));
    at = next;
  }
  if (!name.empty()) names.push_back(name);
  return {names, std::string(text.substr(rest))};
}

// "about the budget saying we're over": the topic and what it says.
void ReadWhatAndSays(std::string rest, EmailRequest& email) {
  static const std::regex kSays(
      R"((?:^|\s)(?:saying|to say|that says|and say|telling (?:him|her|them)|to tell (?:him|her|them)|and tell (?:him|her|them))\s+(?:that\s+)?|:\s+)",
      std::regex::icase);
  std::smatch said;
  if (std::regex_search(rest, said, kSays)) {
    email.says = Trimmed(said.suffix().str());
    rest = said.prefix().str();
  }
  std::string what = Trimmed(rest);
  static const std::regex kAbout(R"(^(?:about|regarding|re|on the subject of)\s+)",
                                 std::regex::icase);
  static const std::regex kWith(R"(^with\s+)", std::regex::icase);
  std::smatch lead;
  if (std::regex_search(what, lead, kAbout)) {
    email.topic = lead.suffix().str();
  } else if (!what.empty()) {
    email.topic = std::regex_search(what, lead, kWith) ? lead.suffix().str() : what;
    email.sends_topic = true;
  }
}

}  // namespace

std::optional<EmailRequest> ReadEmailRequest(std::string_view message) {
  std::string text = Trimmed(std::string(message));
  static const std::regex kPolite(
      R"(^(?:(?:hey|hi|ok|okay|please|pls|can you|could you|would you|will you|now)[,]?\s+)+)",
      std::regex::icase);
  text = std::regex_replace(text, kPolite, "", std::regex_constants::format_first_only);
  // The verb and its frame, each leaving the names first in what follows;
  // `after` is what may stand between the names and the rest.
  static const std::regex kFrames[] = {
      std::regex(R"(^(?:e-?mail|mail)\s+(?:to\s+)?)", std::regex::icase),
      std::regex(R"(^send\s+(?:an?\s+)?(?:e-?mail|mail|note|message)\s+to\s+)", std::regex::icase),
      std::regex(R"(^write\s+(?:an?\s+(?:e-?mail|note|message)\s+)?to\s+)", std::regex::icase),
      std::regex(R"(^(?:send|drop)\s+)", std::regex::icase),
  };
  static const std::regex kObject(R"(^\s*(?:an?\s+)?(?:e-?mail|mail|note|message|line)\b\s*)",
                                  std::regex::icase);
  for (size_t i = 0; i < std::size(kFrames); ++i) {
    std::smatch frame;
    if (!std::regex_search(text, frame, kFrames[i])) continue;
    auto [names, rest] = LeadingNames(frame.suffix().str());
    if (names.empty()) return std::nullopt;
    std::smatch object;
    const bool has_object = std::regex_search(rest, object, kObject);
    if (has_object) rest = object.suffix().str();
    // "send Sarah ..." and "drop Sarah ..." are emails only with "an email",
    // "a note", "a line" after the names.
    if (i == std::size(kFrames) - 1 && !has_object) return std::nullopt;
    EmailRequest email;
    email.recipients = std::move(names);
    ReadWhatAndSays(rest, email);
    return email;
  }
  return std::nullopt;
}

std::map<std::string, std::string> EmailEntities(const EmailRequest& request) {
  std::map<std::string, std::string> out;
  out[kEmailToEntity] = absl::StrJoin(request.recipients, ", ");
  std::string subject = request.topic.empty() ? request.says : request.topic;
  std::vector<std::string> words = absl::StrSplit(subject, ' ', absl::SkipEmpty());
  if (words.size() > kMaxSubjectWords) words.resize(kMaxSubjectWords);
  subject = Capitalize(absl::StrJoin(words, " "));
  out[kEmailSubjectEntity] = subject.empty() ? "Hello" : subject;
  std::string body;
  if (!request.says.empty()) {
    body = Capitalize(request.says) + ".";
  } else if (request.sends_topic) {
    body = "Here is " + request.topic + ".";
  } else if (!request.topic.empty()) {
    body = "I'm writing about " + request.topic + ".";
  }
  if (!body.empty()) out[kEmailBodyEntity] = body;
  return out;
}

void ApplyEmailRequest(const IntentRequest& request, IntentAnalysis& analysis) {
  if (request.pending.question != QuestionKind::kNone || !request.pending.actions.empty() ||
      analysis.entities.contains(kAttendeesEntity)) {
    return;
  }
  const std::optional<EmailRequest> email = ReadEmailRequest(request.message);
  if (!email) return;
  const std::string lower = absl::AsciiStrToLower(request.message);
  for (const absl::string_view word : absl::StrSplit(lower, absl::ByAnyChar(" ,.?!"))) {
    const std::string_view w(word.data(), word.size());
    if (std::find(std::begin(kNotAnEmail), std::end(kNotAnEmail), w) != std::end(kNotAnEmail)) {
      return;
    }
  }
  analysis.action = Action::kExecuteTask;
  analysis.confidence = std::max(analysis.confidence, 0.9f);
  analysis.is_ambiguous = false;
  analysis.alternative.reset();
  analysis.clarifying_question.clear();
  analysis.clarification = Clarification{};
  analysis.parts.clear();
  for (const char* key : {"agent_name", "topic", "purpose", "suggested_name", "schedule",
                          "recipients", "data_source"}) {
    analysis.entities.erase(key);
  }
  for (auto& [key, value] : EmailEntities(*email)) analysis.entities[key] = value;
  analysis.reasoning = "an email to send to " + analysis.entities[kEmailToEntity];
}

}  // namespace omniforge::intent
