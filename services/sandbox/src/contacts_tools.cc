// contacts: find_contacts, list_contacts, add_contact.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "services/sandbox/src/sandbox_tools.h"
#include "services/sandbox/src/tool_args.h"
#include "services/sandbox/src/views.h"

namespace omniforge::sandbox {
namespace {

using Json = nlohmann::json;

// Every word of the query appears in the contact's name or email.
bool Matches(const Contact& contact, const std::string& query) {
  for (const std::string& word :
       std::vector<std::string>(absl::StrSplit(query, ' ', absl::SkipEmpty()))) {
    if (!ContainsIgnoringCase(contact.name, word) && !ContainsIgnoringCase(contact.email, word)) {
      return false;
    }
  }
  return true;
}

std::string WhichQuestion(const std::string& query, const std::vector<Contact>& matches) {
  std::vector<std::string> options;
  options.reserve(matches.size());
  for (const Contact& contact : matches) {
    options.push_back(absl::StrCat(contact.name, " (", contact.email, ")"));
  }
  const std::string last = options.back();
  options.pop_back();
  return absl::StrCat("Which ", query, " do you mean: ", absl::StrJoin(options, ", "), " or ", last,
                      "?");
}

ToolResult FindContacts(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  const std::string query = args.String("query", 200);
  if (!args.ok()) return args.Invalid();
  auto contacts = ctx.store.ListContacts(ctx.tenant);
  if (!contacts.ok()) return StoreFailure(contacts.status());
  std::vector<Contact> matches;
  for (const Contact& contact : *contacts) {
    if (Matches(contact, query)) matches.push_back(contact);
  }
  Json result = {{"query", query}, {"matches", Json::array()}, {"ambiguous", matches.size() > 1}};
  for (const Contact& contact : matches) result["matches"].push_back(ContactJson(contact));
  if (matches.size() > 1) {
    result["question"] = WhichQuestion(query, matches);
    result["confidence"] = 1.0 / static_cast<double>(matches.size());
    result["limitations"] = {
        absl::StrCat(matches.size(), " contacts match \"", query, "\": ask the user which one")};
  } else if (matches.empty()) {
    result["limitations"] = {absl::StrCat("no contact matches \"", query, "\"")};
  }
  return Success(std::move(result));
}

ToolResult ListContacts(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  const int limit = args.Int("limit", 1, 200, 50);
  if (!args.ok()) return args.Invalid();
  auto contacts = ctx.store.ListContacts(ctx.tenant);
  if (!contacts.ok()) return StoreFailure(contacts.status());
  Json result = {{"contacts", Json::array()}, {"total", contacts->size()}};
  for (size_t i = 0; i < contacts->size() && i < static_cast<size_t>(limit); ++i) {
    result["contacts"].push_back(ContactJson((*contacts)[i]));
  }
  if (contacts->size() > static_cast<size_t>(limit)) result["truncated"] = true;
  return Success(std::move(result));
}

ToolResult AddContact(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  Contact contact;
  contact.name = args.String("name", 200);
  const std::string email = args.String("email", 254);
  contact.phone = args.String("phone", 50, false);
  contact.organization = args.String("organization", 200, false);
  if (!email.empty() && !IsEmailAddress(email)) {
    args.Fail(absl::StrCat("email: \"", email, "\" is not an email address"));
  }
  if (!args.ok()) return args.Invalid();
  contact.email = absl::AsciiStrToLower(email);
  contact.id = ctx.new_id();
  if (absl::Status added = ctx.store.AddContact(ctx.tenant, contact); !added.ok()) {
    return StoreFailure(added);
  }
  return Success({{"contact", ContactJson(contact)}});
}

}  // namespace

std::vector<ToolDefinition> ContactsTools() {
  const Json text = {{"type", "string"}};
  return {
      {"find_contacts", "Find contacts",
       "Finds contacts whose name or email contains every word of the query. When several "
       "match (two people called John), all are returned with `ambiguous: true` and a "
       "`question` to ask the user which one is meant.",
       ObjectSchema({{"query", {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}}}},
                    {"query"}),
       true, false, true, FindContacts},
      {"list_contacts", "List contacts", "Lists the contacts by name.",
       ObjectSchema({{"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 200}}}}, {}), true,
       false, true, ListContacts},
      {"add_contact", "Add a contact",
       "Adds a contact; refused (already_exists) when one has the same email.",
       ObjectSchema({{"name", {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}}},
                     {"email", {{"type", "string"}, {"maxLength", 254}}},
                     {"phone", text},
                     {"organization", text}},
                    {"name", "email"}),
       false, false, false, AddContact},
  };
}

}  // namespace omniforge::sandbox
