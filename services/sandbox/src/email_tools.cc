// email: draft_message, send_message, search_messages, list_drafts.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/sandbox/src/sandbox_tools.h"
#include "services/sandbox/src/seed.h"
#include "services/sandbox/src/tool_args.h"
#include "services/sandbox/src/views.h"

namespace omniforge::sandbox {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxSubjectBytes = 300;
constexpr size_t kMaxBodyBytes = 20000;
constexpr size_t kMaxRecipients = 50;
constexpr char kNothingLeaves[] =
    "sandbox mailbox: the message is recorded as sent; nothing leaves the sandbox";

std::string Preview(const Message& message) {
  return absl::StrCat("From: ", message.from, "\nTo: ", absl::StrJoin(message.to, ", "),
                      "\nSubject: ", message.subject, "\n\n", message.body);
}

// Reads to/subject/body into a new draft; nullopt (with the problems in
// `args`) when they are not valid.
std::optional<Message> ReadDraft(ToolContext& ctx, ToolArgs& args) {
  Message draft;
  draft.to = args.Emails("to", kMaxRecipients);
  draft.subject = args.String("subject", kMaxSubjectBytes);
  draft.body = args.String("body", kMaxBodyBytes, false);
  if (!args.ok()) return std::nullopt;
  draft.id = ctx.new_id();
  draft.folder = Folder::kDraft;
  draft.from = kSandboxUserEmail;
  draft.created_at = ctx.clock.Now();
  return draft;
}

// Recipients that are not among the contacts, as a limitation to show.
Json UnknownRecipients(ToolContext& ctx, const Message& message) {
  Json limitations = Json::array();
  auto contacts = ctx.store.ListContacts(ctx.tenant);
  if (!contacts.ok()) return limitations;
  std::vector<std::string> unknown;
  for (const std::string& to : message.to) {
    bool known = false;
    for (const Contact& contact : *contacts) known = known || contact.email == to;
    if (!known) unknown.push_back(to);
  }
  if (!unknown.empty()) {
    limitations.push_back(absl::StrCat("not in your contacts: ", absl::StrJoin(unknown, ", ")));
  }
  return limitations;
}

ToolResult DraftMessage(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  const std::optional<Message> draft = ReadDraft(ctx, args);
  if (!draft.has_value()) return args.Invalid();
  if (absl::Status added = ctx.store.AddMessage(ctx.tenant, *draft); !added.ok()) {
    return StoreFailure(added);
  }
  return Success({{"draft_id", draft->id},
                  {"draft", MessageJson(*draft, ctx.zone)},
                  {"preview", Preview(*draft)},
                  {"limitations", UnknownRecipients(ctx, *draft)}});
}

// The addresses of `message.to` that are not among the tenant's contacts.
absl::StatusOr<std::vector<std::string>> OutsideContacts(ToolContext& ctx, const Message& message) {
  auto contacts = ctx.store.ListContacts(ctx.tenant);
  if (!contacts.ok()) return contacts.status();
  std::vector<std::string> outside;
  for (const std::string& to : message.to) {
    const bool known = std::any_of(contacts->begin(), contacts->end(),
                                   [&](const Contact& contact) { return contact.email == to; });
    if (!known) outside.push_back(to);
  }
  return outside;
}

// What is sent is what the call says (to, subject, body), so that the
// approval of the call shows it. A draft_id names the draft this is, which
// must say the same; it then leaves the drafts.
ToolResult SendMessage(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  const std::string draft_id = args.Has("draft_id") ? args.String("draft_id", 100) : "";
  if (!args.Has("body")) args.Fail("body: required (what is sent; may be empty)");
  std::optional<Message> message = ReadDraft(ctx, args);
  if (!message.has_value()) return args.Invalid();
  auto outside = OutsideContacts(ctx, *message);
  if (!outside.ok()) return StoreFailure(outside.status());
  if (!outside->empty()) {
    return Failure("failed_precondition",
                   absl::StrCat("not in your contacts: ", absl::StrJoin(*outside, ", "),
                                "; the sandbox sends only to contacts (add them with "
                                "contacts add_contact first)"),
                   {{"outside_contacts", *outside}});
  }
  absl::StatusOr<Message> sent;
  if (draft_id.empty()) {
    message->folder = Folder::kSent;
    message->sent_at = message->created_at;
    absl::Status added = ctx.store.AddMessage(ctx.tenant, *message);
    if (!added.ok()) return StoreFailure(added);
    sent = *message;
  } else {
    auto draft = ctx.store.GetMessage(ctx.tenant, draft_id);
    if (!draft.ok()) return StoreFailure(draft.status());
    if (draft->to != message->to || draft->subject != message->subject ||
        draft->body != message->body) {
      return Failure("failed_precondition",
                     absl::StrCat("draft ", draft_id,
                                  " says something else: send it with its own to, subject and "
                                  "body, or draft the new text"));
    }
    sent = ctx.store.SendDraft(ctx.tenant, draft_id, ctx.clock.Now());
    if (!sent.ok()) return StoreFailure(sent.status());
  }
  return Success(
      {{"message", MessageJson(*sent, ctx.zone)}, {"limitations", Json::array({kNothingLeaves})}});
}

Json Messages(const std::vector<Message>& messages, const absl::TimeZone& zone) {
  Json list = Json::array();
  for (const Message& message : messages) list.push_back(MessageJson(message, zone));
  return list;
}

ToolResult SearchMessages(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  const std::string query = args.String("query", 200);
  const int limit = args.Int("limit", 1, 100, 20);
  if (!args.ok()) return args.Invalid();
  auto found = ctx.store.SearchMessages(ctx.tenant, query, limit);
  if (!found.ok()) return StoreFailure(found.status());
  return Success({{"query", query}, {"messages", Messages(*found, ctx.zone)}});
}

ToolResult ListDrafts(ToolContext& ctx, const Json& arguments) {
  ToolArgs args(arguments);
  const int limit = args.Int("limit", 1, 100, 20);
  if (!args.ok()) return args.Invalid();
  auto drafts = ctx.store.ListFolder(ctx.tenant, Folder::kDraft, limit);
  if (!drafts.ok()) return StoreFailure(drafts.status());
  return Success({{"drafts", Messages(*drafts, ctx.zone)}});
}

}  // namespace

std::vector<ToolDefinition> EmailTools() {
  const Json recipients = {{"type", "array"},
                           {"items", {{"type", "string"}, {"maxLength", 254}}},
                           {"minItems", 1},
                           {"maxItems", kMaxRecipients},
                           {"description", "email addresses"}};
  const Json subject = {{"type", "string"}, {"minLength", 1}, {"maxLength", kMaxSubjectBytes}};
  const Json body = {{"type", "string"}, {"maxLength", kMaxBodyBytes}};
  const Json id = {{"type", "string"}, {"minLength", 1}, {"maxLength", 100}};
  const Json limit = {{"type", "integer"}, {"minimum", 1}, {"maximum", 100}};
  return {
      {"draft_message", "Draft a message",
       "Saves a draft and returns its draft_id and a `preview` to show the user before "
       "sending. Nothing is sent.",
       ObjectSchema({{"to", recipients}, {"subject", subject}, {"body", body}}, {"to", "subject"}),
       false, false, false, DraftMessage},
      {"send_message", "Send a message",
       "Sends the message to, subject and body say, to your contacts only. To send a draft, "
       "give its draft_id with the draft's own to, subject and body (from draft_message or "
       "list_drafts).",
       ObjectSchema({{"to", recipients}, {"subject", subject}, {"body", body}, {"draft_id", id}},
                    {"to", "subject", "body"}),
       false, false, false, SendMessage},
      {"search_messages", "Search messages",
       "Sent and received messages whose sender, recipients, subject or body contain the "
       "query, newest first.",
       ObjectSchema({{"query", {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}}},
                     {"limit", limit}},
                    {"query"}),
       true, false, true, SearchMessages},
      {"list_drafts", "List drafts", "Drafts not sent yet, newest first.",
       ObjectSchema({{"limit", limit}}, {}), true, false, true, ListDrafts},
  };
}

}  // namespace omniforge::sandbox
