#include "services/intent/src/concepts.h"

#include <algorithm>
#include <span>
#include <string>
#include <unordered_map>

namespace omniforge::intent {
namespace {

// Things the platform runs.
constexpr std::string_view kAgentWords[] = {
    "agent",      "bot",      "assistant", "automation",    "workflow",  "flow",
    "robot",      "zap",      "script",    "routine",       "cron",      "cronjob",
    "daemon",     "worker",   "watcher",   "monitor",       "tracker",   "notifier",
    "nagger",     "chaser",   "checker",   "router",        "sorter",    "enricher",
    "syncer",     "digester", "poster",    "reminder",      "scheduler", "summarizer",
    "summariser", "triager",  "responder", "autoresponder", "updater",   "flagger",
    "filer",      "sync",     "agnet",     "agant",         "bott",      "automaton",
    "recipe",     "playbook", "pipeline"};

constexpr std::string_view kSkillWords[] = {
    "skill",    "capability", "ability",   "module",    "plugin", "plug",    "extension",
    "function", "helper",     "component", "primitive", "action", "lookup",  "connector",
    "step",     "tool",       "toolkit",   "utility",   "util",   "library", "snippet",
    "macro",    "reusable",   "shared",    "skil",      "skils",  "block"};

// Channels and places things go.
constexpr std::string_view kMailWords[] = {
    "email", "mail",  "inbox",  "gmail",   "outlook",    "mailbox",
    "e",     "emial", "emails", "mailing", "newsletter", "smtp",
    "imap",  "cc",    "bcc",    "emailed", "mailchimp",  "sendgrid"};

constexpr std::string_view kChatWords[] = {
    "slack", "teams", "discord", "dm",      "channel", "telegram",   "whatsapp", "sms",  "text",
    "ping",  "chat",  "thread",  "mention", "msteams", "mattermost", "signal",   "webex"};

constexpr std::string_view kNotifyWords[] = {
    "notify", "notification", "alert", "warn",  "warning",   "remind", "nudge", "heads",
    "flag",   "escalate",     "page",  "pager", "pagerduty", "notif",  "alarm"};

constexpr std::string_view kReportWords[] = {
    "report",    "digest",    "summary",    "recap",  "roundup", "briefing", "brief",
    "overview",  "rollup",    "dashboard",  "kpi",    "metric",  "stats",    "statistic",
    "scorecard", "snapshot",  "newsletter", "memo",   "writeup", "gist",     "tldr",
    "synopsis",  "breakdown", "reprot",     "raport", "sumary",  "summery",  "digets",
    "summarize", "summarise", "summerize"};

constexpr std::string_view kDocWords[] = {
    "doc",    "document",   "pdf",     "file",     "attachment", "spreadsheet", "sheet",
    "excel",  "csv",        "xlsx",    "docx",     "slide",      "deck",        "presentation",
    "folder", "drive",      "dropbox", "box",      "sharepoint", "onedrive",    "page",
    "wiki",   "confluence", "notion",  "airtable", "gsheet"};

// Business systems.
constexpr std::string_view kCrmWords[] = {
    "crm",    "salesforce",  "hubspot", "pipedrive", "zoho",    "lead",    "prospect",
    "deal",   "opportunity", "opp",     "pipeline",  "account", "contact", "customer",
    "client", "churn",       "renewal", "upsell",    "quota",   "sfdc",    "attio"};

constexpr std::string_view kMoneyWords[] = {
    "invoice", "payment", "stripe",  "billing",      "bill",  "refund",  "revenue", "mrr",
    "arr",     "expense", "receipt", "quickbooks",   "xero",  "payroll", "budget",  "cost",
    "price",   "pricing", "spend",   "dollar",       "euro",  "usd",     "eur",     "gbp",
    "paid",    "pay",     "charge",  "subscription", "vat",   "tax",     "ar",      "ap",
    "cash",    "wire",    "brex",    "ramp",         "paypal"};

constexpr std::string_view kTicketWords[] = {
    "ticket",   "zendesk", "intercom", "freshdesk",  "helpdesk", "jira",
    "linear",   "issue",   "bug",      "asana",      "trello",   "clickup",
    "backlog",  "sprint",  "epic",     "github",     "gitlab",   "pr",
    "incident", "outage",  "sla",      "escalation", "support",  "servicenow"};

constexpr std::string_view kShopWords[] = {
    "shopify",     "order",    "cart",        "checkout", "inventory", "stock",    "sku",
    "product",     "shipment", "shipping",    "fedex",    "ups",       "dhl",      "warehouse",
    "fulfillment", "amazon",   "woocommerce", "etsy",     "catalog",   "catalogue"};

constexpr std::string_view kCalendarWords[] = {
    "calendar",    "meeting", "call",     "zoom",    "meet", "event",  "webinar",
    "appointment", "booking", "calendly", "standup", "1on1", "agenda", "interview"};

constexpr std::string_view kPeopleWords[] = {
    "team",       "manager",   "boss",      "colleague",   "coworker", "staff",   "employee",
    "hire",       "intern",    "cfo",       "ceo",         "cto",      "coo",     "vp",
    "director",   "founder",   "rep",       "recruiter",   "hr",       "finance", "legal",
    "ops",        "marketing", "sales",     "engineering", "everyone", "people",  "student",
    "teacher",    "parent",    "volunteer", "donor",       "member",   "user",    "recipient",
    "contractor", "partner",   "vendor",    "supplier",    "investor", "board",   "exec",
    "leadership"};

// When things happen.
constexpr std::string_view kScheduleWords[] = {
    "daily",        "weekly",    "monthly",       "quarterly",   "yearly",    "annually",
    "hourly",       "nightly",   "biweekly",      "fortnightly", "every",     "each",
    "whenever",     "recurring", "schedule",      "scheduled",   "cadence",   "routinely",
    "periodically", "always",    "automatically", "auto",        "automatic", "automatically",
    "automaticaly", "automtic",  "regularly",     "weekday",     "weekend",   "morning",
    "evening",      "afternoon", "midnight",      "noon",        "eod",       "eow",
    "eom"};

constexpr std::string_view kWeekdayWords[] = {
    "monday",   "tuesday",    "wednesday", "thursday", "friday",    "saturday",
    "sunday",   "mon",        "tue",       "tues",     "wed",       "thu",
    "thur",     "thurs",      "fri",       "sat",      "sun",       "mondays",
    "tuesdays", "wednesdays", "thursdays", "fridays",  "saturdays", "sundays"};

constexpr std::string_view kClockWords[] = {"am",  "pm",  "utc",     "gmt",     "est",
                                            "pst", "cet", "eastern", "pacific", "oclock"};

constexpr std::string_view kNowWords[] = {
    "now",    "today",    "tonight", "asap",      "immediately", "rn",     "once",      "instantly",
    "urgent", "urgently", "quickly", "yesterday", "yesterdays",  "todays", "currently", "tomorrow"};

// What users ask to have done with an existing agent.
constexpr std::string_view kRunWords[] = {
    "run",     "rerun",    "execute", "trigger", "launch", "kick",    "fire",     "retry",
    "replay",  "redo",     "resend",  "repeat",  "start",  "process", "perform",  "generate",
    "produce", "compile",  "prepare", "pull",    "fetch",  "grab",    "export",   "import",
    "upload",  "download", "resync",  "refresh", "scan",   "send",    "dispatch", "blast",
    "deliver", "forward",  "share",   "email",   "post",   "publish"};

constexpr std::string_view kChangeWords[] = {
    "change", "update",  "modify",     "edit",    "tweak",    "adjust",    "alter",       "amend",
    "revise", "rework",  "tune",       "tighten", "loosen",   "replace",   "swap",        "switch",
    "rename", "move",    "reschedule", "shift",   "postpone", "instead",   "rather",      "anymore",
    "longer", "include", "exclude",    "drop",    "omit",     "skip",      "ignore",      "add",
    "append", "insert",  "rephrase",   "reword",  "shorten",  "lengthen",  "simplify",    "prefer",
    "point",  "chnage",  "cahnge",     "updte",   "modfy",    "configure", "reconfigure", "set",
    "limit",  "cap",     "raise",      "lower",   "bump",     "increase",  "decrease",    "reduce"};

constexpr std::string_view kLifecycleWords[] = {
    "pause",        "unpause", "resume",    "stop",      "halt",       "disable",  "enable",
    "delete",       "remove",  "archive",   "unarchive", "deactivate", "activate", "reactivate",
    "suspend",      "restore", "duplicate", "clone",     "copy",       "kill",     "trash",
    "nuke",         "mute",    "unmute",    "freeze",    "unfreeze",   "retire",   "snooze",
    "decommission", "sunset",  "mothball",  "shelve",    "revive",     "purge",    "wipe",
    "erase",        "destroy", "shut",      "off",       "offline",    "online",   "undo",
    "rollback",     "revert",  "transfer",  "reassign",  "deleet",     "delet",    "pasue",
    "paus"};

constexpr std::string_view kAccessWords[] = {
    "access",     "permission", "role",         "admin",        "owner",      "viewer",
    "editor",     "seat",       "invite",       "revoke",       "grant",      "promote",
    "demote",     "downgrade",  "upgrade",      "sso",          "saml",       "okta",
    "2fa",        "mfa",        "password",     "login",        "credential", "key",
    "token",      "secret",     "apikey",       "oauth",        "connection", "connect",
    "disconnect", "reconnect",  "integrate",    "integration",  "authorize",  "authenticate",
    "workspace",  "org",        "organization", "organisation", "tenant",     "plan",
    "tier",       "license",    "licence",      "quota",        "usage",      "limit",
    "project",    "folder",     "disconect",    "reconect",     "conect"};

// Questions.
constexpr std::string_view kWhWords[] = {
    "what",  "whats",  "how", "hows", "why",  "whys",  "when", "whens", "which", "wich",
    "where", "wheres", "who", "whos", "whom", "whose", "wat",  "wut",   "wht",   "hw"};

constexpr std::string_view kInquireWords[] = {
    "explain",    "tell",    "show",       "list",          "describe", "detail",
    "status",     "log",     "history",    "know",          "wonder",   "curious",
    "understand", "clarify", "difference", "documentation", "docs",     "tutorial",
    "guide",      "faq",     "supported",  "allowed"};

// Making something new.
constexpr std::string_view kWantWords[] = {"need",    "want",    "wish",  "dream", "hope",
                                           "looking", "require", "wanna", "gotta", "ideally"};

constexpr std::string_view kCreateWords[] = {
    "create",    "build",     "make",      "setup",   "set",   "spin",  "new",
    "automate",  "design",    "draft",     "develop", "craft", "write", "construct",
    "establish", "introduce", "implement", "hook",    "wire",  "teach", "train",
    "enable",    "creat",     "crate",     "buid",    "bulid", "mak"};

constexpr std::string_view kProblemWords[] = {
    "manually", "manual",   "hand",       "hours",  "tedious", "forget",   "forgot", "forgets",
    "miss",     "missed",   "late",       "slow",   "painful", "annoying", "waste",  "wasting",
    "keep",     "keeps",    "always",     "never",  "tired",   "sick",     "chaos",  "mess",
    "messy",    "struggle", "struggling", "behind", "pile",    "piling",   "falls",  "fall",
    "slip",     "slips",    "lost",       "nobody", "noone"};

// Talking to the assistant.
constexpr std::string_view kGreetWords[] = {
    "hi",      "hello",   "hey",       "heya",    "hiya",       "howdy",   "yo",        "sup",
    "hola",    "bonjour", "salut",     "ciao",    "hallo",      "hej",     "hei",       "moin",
    "servus",  "ola",     "oi",        "namaste", "konnichiwa", "aloha",   "shalom",    "salaam",
    "merhaba", "privet",  "greetings", "morning", "gm",         "evening", "afternoon", "welcome",
    "ahoy",    "hellooo", "helloo",    "heyy",    "heyyy",      "hii",     "hiii",      "wassup",
    "whatsup", "wazzup",  "g'day",     "gday",    "buongiorno", "buenos",  "dias",      "bom",
    "dia",     "guten",   "tag",       "morgen"};

constexpr std::string_view kByeWords[] = {
    "bye",     "goodbye", "byebye",    "cya",         "seeya",    "later",   "laters",  "ttyl",
    "gn",      "night",   "goodnight", "farewell",    "adios",    "adieu",   "tschuss", "tschüss",
    "ciao",    "au",      "revoir",    "arrivederci", "sayonara", "peace",   "cheerio", "ta",
    "brb",     "afk",     "gtg",       "g2g",         "off",      "signing", "logging", "leaving",
    "heading", "lunch",   "break",     "coffee"};

constexpr std::string_view kThanksWords[] = {
    "thanks", "thank", "thx",       "thnx",       "thanx",       "tks",      "ty",
    "tysm",   "tyvm",  "cheers",    "appreciate", "appreciated", "grateful", "gracias",
    "merci",  "danke", "obrigado",  "obrigada",   "grazie",      "arigato",  "dank",
    "tack",   "takk",  "kiitos",    "spasibo",    "dziekuje",    "thankyou", "thankyu",
    "kudos",  "props", "lifesaver", "legend",     "hero"};

constexpr std::string_view kPraiseWords[] = {
    "great",     "awesome",     "amazing",   "cool",      "nice",       "neat",    "sweet",
    "excellent", "perfect",     "brilliant", "fantastic", "wonderful",  "superb",  "impressive",
    "love",      "lovely",      "wow",       "woah",      "whoa",       "omg",     "yay",
    "hooray",    "hurray",      "woohoo",    "woo",       "wooo",       "yeehaw",  "bravo",
    "nailed",    "genius",      "magic",     "magical",   "incredible", "epic",    "dope",
    "rad",       "lit",         "fire",      "chef",      "kiss",       "respect", "spot",
    "solid",     "gamechanger", "stellar",   "slick",     "smooth",     "noice",   "lol",
    "lmao",      "rofl",        "haha",      "hahaha",    "hehe",       "heh",     "lmfao",
    "xd",        "funny",       "hilarious", "jk",        "kidding"};

constexpr std::string_view kFeelingWords[] = {
    "tired",    "exhausted",   "sleepy",     "stressed", "stress",  "burnt",   "burned",
    "burnout",  "overwhelmed", "anxious",    "nervous",  "worried", "sad",     "happy",
    "glad",     "excited",     "bored",      "boring",   "hungry",  "sick",    "ill",
    "grumpy",   "cranky",      "frustrated", "angry",    "mad",     "annoyed", "confused",
    "lost",     "relieved",    "proud",      "thrilled", "stoked",  "pumped",  "meh",
    "ugh",      "sigh",        "welp",       "oof",      "ouch",    "yikes",   "phew",
    "whew",     "hmm",         "hmmm",       "hm",       "huh",     "eh",      "ah",
    "oh",       "ooh",         "aha",        "argh",     "ugh",     "grr",     "blah",
    "vacation", "holiday",     "holidays",   "weekend",  "monday",  "friday",  "sweating",
    "crazy",    "rough",       "long",       "busy",     "swamped", "slammed", "caffeine",
    "sleep",    "nap",         "feeling",    "mood",     "vibe",    "vibes"};

constexpr std::string_view kAckWords[] = {
    "ok",      "okay",     "k",      "kk",         "okey",        "okie", "alright",
    "aight",   "sure",     "yes",    "yeah",       "yep",         "yup",  "ya",
    "yea",     "noted",    "gotcha", "understood", "roger",       "ack",  "fair",
    "indeed",  "agreed",   "fine",   "cool",       "np",          "nw",   "maybe",
    "perhaps", "whatever", "anyway", "anyways",    "affirmative", "bet"};

constexpr std::string_view kYouWords[] = {
    "you",     "youre", "your", "yours",   "yourself", "u",        "ur",       "omniforge",
    "chatbot", "ai",    "gpt",  "llm",     "human",    "alive",    "sentient", "joke",
    "poem",    "sing",  "song", "opinion", "favorite", "favourite"};

// Off-topic worlds.
constexpr std::string_view kWorldWords[] = {
    "weather",   "rain",       "sun",        "snow",      "moon",       "planet",     "earth",
    "space",     "universe",   "god",        "war",       "president",  "king",       "queen",
    "country",   "city",       "population", "ocean",     "river",      "mountain",   "animal",
    "dog",       "cat",        "bird",       "fish",      "horse",      "turtle",     "penguin",
    "parrot",    "pet",        "recipe",     "cook",      "cooking",    "bake",       "food",
    "pizza",     "pasta",      "soup",       "cake",      "wine",       "beer",       "diet",
    "calorie",   "healthy",    "health",     "doctor",    "medicine",   "fever",      "headache",
    "flu",       "covid",      "vitamin",    "gym",       "workout",    "exercise",   "football",
    "soccer",    "basketball", "baseball",   "tennis",    "golf",       "cricket",    "nba",
    "nfl",       "fifa",       "olympics",   "movie",     "film",       "netflix",    "tv",
    "series",    "book",       "novel",      "album",     "band",       "music",      "guitar",
    "piano",     "game",       "minecraft",  "fortnite",  "chess",      "poker",      "lottery",
    "horoscope", "zodiac",     "astrology",  "dating",    "girlfriend", "boyfriend",  "wife",
    "husband",   "wedding",    "baby",       "kids",      "sister",     "brother",    "mom",
    "dad",       "mother",     "father",     "grandma",   "house",      "apartment",  "rent",
    "mortgage",  "car",        "bike",       "flight",    "travel",     "trip",       "hotel",
    "visa",      "passport",   "airport",    "beach",     "stock",      "bitcoin",    "crypto",
    "invest",    "math",       "physics",    "chemistry", "biology",    "science",    "philosophy",
    "religion",  "essay",      "homework",   "exam",      "school",     "university", "college",
    "translate", "french",     "spanish",    "german",    "language",   "dinosaur",   "volcano",
    "galaxy",    "atom",       "quantum",    "einstein",  "napoleon",   "shakespeare"};

struct Concept {
  std::string_view token;
  std::span<const std::string_view> words;
};

// Each concept and the words that express it, singular and base forms
// (plurals and -ing/-ed forms are found by stripping the suffix). A word
// belongs to one concept only; the first listing wins.
constexpr Concept kConcepts[] = {
    {"_agent", kAgentWords},     {"_skill", kSkillWords},
    {"_mail", kMailWords},       {"_chat", kChatWords},
    {"_notify", kNotifyWords},   {"_report", kReportWords},
    {"_doc", kDocWords},         {"_crm", kCrmWords},
    {"_money", kMoneyWords},     {"_ticket", kTicketWords},
    {"_shop", kShopWords},       {"_calendar", kCalendarWords},
    {"_people", kPeopleWords},   {"_schedule", kScheduleWords},
    {"_weekday", kWeekdayWords}, {"_clock", kClockWords},
    {"_now", kNowWords},         {"_run", kRunWords},
    {"_change", kChangeWords},   {"_lifecycle", kLifecycleWords},
    {"_access", kAccessWords},   {"_wh", kWhWords},
    {"_inquire", kInquireWords}, {"_want", kWantWords},
    {"_create", kCreateWords},   {"_problem", kProblemWords},
    {"_greet", kGreetWords},     {"_bye", kByeWords},
    {"_thanks", kThanksWords},   {"_praise", kPraiseWords},
    {"_feeling", kFeelingWords}, {"_ack", kAckWords},
    {"_you", kYouWords},         {"_world", kWorldWords},
};

const std::unordered_map<std::string_view, std::string_view>& ConceptIndex() {
  static const std::unordered_map<std::string_view, std::string_view> index = [] {
    std::unordered_map<std::string_view, std::string_view> out;
    for (const Concept& c : kConcepts) {
      for (std::string_view w : c.words) out.emplace(w, c.token);
    }
    return out;
  }();
  return index;
}

bool IsVowel(char c) {
  return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y';
}

}  // namespace

std::string_view ConceptOf(std::string_view word) {
  // Pictographs (U+1F300..U+1FAFF) and dingbats and symbols (U+2600..U+27BF):
  // reactions, whichever one was typed.
  if (word.size() >= 3) {
    const auto b0 = static_cast<unsigned char>(word[0]);
    const auto b1 = static_cast<unsigned char>(word[1]);
    if ((b0 == 0xF0 && b1 == 0x9F) || (b0 == 0xE2 && b1 >= 0x98 && b1 <= 0x9E)) return "_emoji";
  }
  const auto& index = ConceptIndex();
  if (auto it = index.find(word); it != index.end()) return it->second;
  for (std::string_view suffix : {"s", "es", "ing", "ed", "d", "er"}) {
    if (word.size() > suffix.size() + 2 && word.ends_with(suffix)) {
      if (auto it = index.find(word.substr(0, word.size() - suffix.size())); it != index.end()) {
        return it->second;
      }
    }
  }
  return {};
}

bool LooksLikeNoise(std::string_view word) {
  if (word.empty()) return false;
  bool ascii_letters = true;
  bool digits = true;
  for (char c : word) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x80 || !(c >= 'a' && c <= 'z')) ascii_letters = false;
    if (!(c >= '0' && c <= '9')) digits = false;
  }
  if (digits || !ascii_letters) return false;
  // One letter three or more times in a row: "kkkkk", "aaaah" is still a
  // word people type, so only when the run is most of the word.
  size_t longest_run = 1;
  for (size_t i = 1, run = 1; i < word.size(); ++i) {
    run = word[i] == word[i - 1] ? run + 1 : 1;
    longest_run = std::max(longest_run, run);
  }
  if (longest_run >= 4 && longest_run * 2 >= word.size()) return true;
  // Keyboard rows typed in a sweep.
  static const std::string_view kRows[] = {"qwertyuiop", "asdfghjkl", "zxcvbnm",
                                           "poiuytrewq", "lkjhgfdsa", "mnbvcxz"};
  if (word.size() >= 4) {
    for (std::string_view row : kRows) {
      if (row.find(word.substr(0, 4)) != std::string_view::npos) return true;
    }
  }
  // Long words without a vowel, or with a run of six consonants ("strengths"
  // has five).
  size_t vowels = 0;
  size_t consonant_run = 0;
  size_t longest_consonants = 0;
  for (char c : word) {
    if (IsVowel(c)) {
      ++vowels;
      consonant_run = 0;
    } else {
      longest_consonants = std::max(longest_consonants, ++consonant_run);
    }
  }
  if (word.size() >= 5 && vowels == 0) return true;
  if (longest_consonants >= 6) return true;
  // A short syllable repeated: "lkjlkjlkj", "fghfghfgh", "pqpqpqpq".
  for (size_t period = 2; period <= 3 && word.size() >= period * 3; ++period) {
    bool repeats = true;
    for (size_t i = period; i < word.size() && repeats; ++i) repeats = word[i] == word[i - period];
    if (repeats) return true;
  }
  return false;
}

}  // namespace omniforge::intent
