#include "services/intent/src/meeting_request.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace omniforge::intent {
namespace {

constexpr std::string_view kBookingVerbs[] = {"schedule", "book",     "arrange", "organise",
                                              "organize", "plan",     "setup",   "put",
                                              "set",      "schedules"};
constexpr std::string_view kMeetingKinds[] = {
    "meeting", "call",   "sync",    "chat", "catch-up", "catchup",   "1:1",  "appointment",
    "session", "review", "standup", "meet", "lunch",    "interview", "demo", "huddle"};
constexpr std::string_view kDays[] = {"today",    "tomorrow", "monday",   "tuesday", "wednesday",
                                      "thursday", "friday",   "saturday", "sunday"};
constexpr std::string_view kPartsOfDay[] = {"morning", "afternoon", "evening"};
// Words that end the list of names after "with".
constexpr std::string_view kNameStops[] = {"at",     "on",    "in", "for",  "next",
                                           "this",   "about", "to", "from", "around",
                                           "before", "after", "by"};

// Words of a request about agents or recurring work, not one meeting.
constexpr std::string_view kNotAMeeting[] = {"agent",  "agents", "skill",        "every",
                                             "weekly", "daily",  "automatically"};

template <size_t N>
bool In(const std::string_view (&list)[N], std::string_view word) {
  return std::find(std::begin(list), std::end(list), word) != std::end(list);
}

// The message's words with the punctuation around them stripped (inside
// they stay: "2:30pm", "30-minute", "1:1"); `lower` the same lower-cased.
struct Words {
  std::vector<std::string> raw;
  std::vector<std::string> lower;
};

Words Split(std::string_view message) {
  Words words;
  std::string word;
  auto flush = [&] {
    while (!word.empty() && std::ispunct(static_cast<unsigned char>(word.back())) != 0 &&
           word.back() != '%') {
      word.pop_back();
    }
    size_t start = 0;
    while (start < word.size() && std::ispunct(static_cast<unsigned char>(word[start])) != 0) {
      ++start;
    }
    if (start < word.size()) {
      words.raw.push_back(word.substr(start));
      words.lower.push_back(absl::AsciiStrToLower(words.raw.back()));
    }
    word.clear();
  };
  for (char c : message) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == ',') {
      flush();
      if (c == ',') {
        words.raw.emplace_back(",");
        words.lower.emplace_back(",");
      }
    } else {
      word += c;
    }
  }
  flush();
  return words;
}

bool Capitalized(const std::string& word) {
  return !word.empty() && std::isupper(static_cast<unsigned char>(word[0])) != 0;
}

bool IsDayWord(const std::string& lower) {
  return In(kDays, lower) || In(kPartsOfDay, lower) || lower == "noon" || lower == "tonight";
}

// The names after the first "with": runs of capitalized words, split by
// "and" and commas, up to the first word that is not part of one.
std::vector<std::string> Attendees(const Words& w) {
  std::vector<std::string> names;
  const auto with = std::find(w.lower.begin(), w.lower.end(), "with");
  if (with == w.lower.end()) return names;
  std::string name;
  for (size_t i = static_cast<size_t>(with - w.lower.begin()) + 1; i < w.raw.size(); ++i) {
    const std::string& lower = w.lower[i];
    if (lower == "and" || lower == "," || lower == "&") {
      if (!name.empty()) names.push_back(std::exchange(name, ""));
      continue;
    }
    if (!Capitalized(w.raw[i]) || IsDayWord(lower) || In(kNameStops, lower) ||
        std::isdigit(static_cast<unsigned char>(lower[0])) != 0) {
      break;
    }
    name += (name.empty() ? "" : " ") + w.raw[i];
  }
  if (!name.empty()) names.push_back(name);
  return names;
}

int DurationMinutes(const std::string& text) {
  std::smatch m;
  static const std::regex kMinutes(R"((\d{1,3})[- ]?(?:minutes?|mins?)\b)");
  static const std::regex kHours(R"((\d{1,2}(?:\.5)?)[- ]?(?:hours?|hrs?)\b)");
  if (std::regex_search(text, m, kMinutes)) return std::stoi(m[1]);
  if (text.find("half an hour") != std::string::npos ||
      text.find("half-hour") != std::string::npos || text.find("half hour") != std::string::npos) {
    return 30;
  }
  if (std::regex_search(text, m, kHours)) return static_cast<int>(std::stod(m[1]) * 60);
  if (std::regex_search(text, std::regex(R"(\b(?:an|one) hour\b)"))) return 60;
  return 0;
}

std::string ClockTime(const std::string& text) {
  std::smatch m;
  static const std::regex kAmPm(R"(\b(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b)");
  static const std::regex kClock(R"(\b([01]?\d|2[0-3]):([0-5]\d)\b)");
  int hour = -1;
  int minute = 0;
  if (std::regex_search(text, m, kAmPm)) {
    hour = std::stoi(m[1]) % 12 + (m[3] == "pm" ? 12 : 0);
    if (m[2].matched) minute = std::stoi(m[2]);
  } else if (std::regex_search(text, m, kClock)) {
    hour = std::stoi(m[1]);
    minute = std::stoi(m[2]);
  } else if (std::regex_search(text, std::regex(R"(\bnoon\b)"))) {
    hour = 12;
  }
  if (hour < 0 || hour > 23 || minute > 59) return "";
  return absl::StrFormat("%02d:%02d", hour, minute);
}

std::string Capitalize(std::string word) {
  if (!word.empty()) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
  return word;
}

}  // namespace

std::map<std::string, std::string> ReadMeetingTime(std::string_view message) {
  std::map<std::string, std::string> out;
  const std::string text = absl::AsciiStrToLower(std::string(message));
  const Words w = Split(message);
  for (const std::string& word : w.lower) {
    if (In(kDays, word) && !out.contains(kDayEntity)) out[kDayEntity] = word;
    if (In(kPartsOfDay, word) && !out.contains(kPartOfDayEntity)) out[kPartOfDayEntity] = word;
  }
  if (const std::string time = ClockTime(text); !time.empty()) out[kTimeEntity] = time;
  return out;
}

std::optional<MeetingRequest> ReadMeetingRequest(std::string_view message) {
  const Words w = Split(message);
  const std::string text = absl::AsciiStrToLower(std::string(message));
  bool booking = false;
  std::string kind;
  for (size_t i = 0; i < w.lower.size(); ++i) {
    const std::string& word = w.lower[i];
    if (In(kBookingVerbs, word) &&
        (word != "set" || (i + 1 < w.lower.size() && w.lower[i + 1] == "up"))) {
      booking = true;
    }
    if (kind.empty() && In(kMeetingKinds, word)) kind = word == "meet" ? "meeting" : word;
    // "30-minute call": the kind after a length.
    if (kind.empty() && word.find('-') != std::string::npos &&
        In(kMeetingKinds, word.substr(word.rfind('-') + 1))) {
      kind = word.substr(word.rfind('-') + 1);
    }
  }
  MeetingRequest request;
  request.duration_minutes = DurationMinutes(text);
  request.attendees = Attendees(w);
  if (!booking || (kind.empty() && request.duration_minutes == 0) || request.attendees.empty()) {
    return std::nullopt;
  }
  const std::map<std::string, std::string> when = ReadMeetingTime(message);
  auto at = [&when](const char* key) {
    auto it = when.find(key);
    return it == when.end() ? std::string() : it->second;
  };
  request.day = at(kDayEntity);
  request.time = at(kTimeEntity);
  request.part_of_day = at(kPartOfDayEntity);
  request.title =
      kind.empty() || kind == "1:1" ? (kind.empty() ? "Meeting" : "1:1") : Capitalize(kind);
  return request;
}

std::map<std::string, std::string> MeetingEntities(const MeetingRequest& request) {
  std::map<std::string, std::string> out;
  std::string names;
  for (const std::string& name : request.attendees) names += (names.empty() ? "" : ", ") + name;
  out[kAttendeesEntity] = names;
  if (request.duration_minutes > 0) {
    out[kDurationMinutesEntity] = std::to_string(request.duration_minutes);
  }
  if (!request.day.empty()) out[kDayEntity] = request.day;
  if (!request.time.empty()) out[kTimeEntity] = request.time;
  if (!request.part_of_day.empty()) out[kPartOfDayEntity] = request.part_of_day;
  out[kTitleEntity] = request.title;
  return out;
}

void ApplyMeetingRequest(const IntentRequest& request, IntentAnalysis& analysis) {
  if (request.pending.question != QuestionKind::kNone || !request.pending.actions.empty()) {
    for (auto& [key, value] : ReadMeetingTime(request.message)) analysis.entities[key] = value;
    return;
  }
  const std::optional<MeetingRequest> meeting = ReadMeetingRequest(request.message);
  if (!meeting) return;
  for (const std::string& word : Split(request.message).lower) {
    if (In(kNotAMeeting, word)) return;
  }
  analysis.action = Action::kExecuteTask;
  analysis.confidence = std::max(analysis.confidence, 0.9f);
  analysis.is_ambiguous = false;
  analysis.alternative.reset();
  analysis.clarifying_question.clear();
  analysis.clarification = Clarification{};
  analysis.parts.clear();
  for (const char* key : {"agent_name", "topic", "purpose", "suggested_name", "schedule"}) {
    analysis.entities.erase(key);
  }
  for (auto& [key, value] : MeetingEntities(*meeting)) analysis.entities[key] = value;
  analysis.reasoning = "a meeting to book with " + analysis.entities[kAttendeesEntity];
}

}  // namespace omniforge::intent
