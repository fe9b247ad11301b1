// The user's settings (the time zone schedules are read in) and the notices
// the assistant tells the user once (migration 0005_notices_and_settings.sql).
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "libs/core/ids.h"
#include "libs/schedule/schedule.h"
#include "services/executor/src/platform_handlers.h"

namespace omniforge::executor::platform {
namespace {

constexpr size_t kMaxNotices = 100;

// "missed:<agent uuid>:<slot in microseconds since 1970>": a missed slot's
// notice (platform.user_notices).
struct SlotRef {
  std::string agent_id;
  int64_t slot_micros = 0;
};

std::optional<SlotRef> ParseSlotRef(const std::string& id) {
  std::vector<std::string> parts = absl::StrSplit(id, ':');
  SlotRef ref;
  if (parts.size() != 3 || parts[0] != "missed" || !core::IsUuid(parts[1]) ||
      !absl::SimpleAtoi(parts[2], &ref.slot_micros)) {
    return std::nullopt;
  }
  ref.agent_id = parts[1];
  return ref;
}

}  // namespace

std::string UserTimeZone(pqxx::work& tx, const ToolCall& call) {
  pqxx::result r = tx.exec_params(
      "SELECT time_zone FROM platform.user_settings WHERE tenant_id = $1 AND user_id = $2",
      call.who.tenant_id, call.who.user_id);
  return r.empty() ? std::string("UTC") : std::string(r[0][0].c_str());
}

absl::StatusOr<ToolResult> UpdateSettings(pqxx::work& tx, const ToolCall& call,
                                          core::TimePoint /*now*/) {
  Args args(call.arguments);
  const std::string zone = args.Text("time_zone", 1, 64);
  if (!zone.empty() && !schedule::IsTimeZone(zone)) {
    args.Fail("time_zone", absl::StrCat("'", zone,
                                        "' is not a time zone: give an IANA name such as "
                                        "'Europe/Berlin', 'America/New_York' or 'UTC'"));
  }
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  pqxx::result r = tx.exec_params(
      "INSERT INTO platform.user_settings AS u (tenant_id, user_id, time_zone) "
      "VALUES ($1, $2, $3) ON CONFLICT (tenant_id, user_id) DO UPDATE SET time_zone = "
      "EXCLUDED.time_zone, updated_at = now() RETURNING jsonb_build_object('time_zone', "
      "u.time_zone, 'updated_at', u.updated_at)::text",
      call.who.tenant_id, call.who.user_id, zone);
  return ToolResult{JsonObject({{"settings", r[0][0].c_str()}}), false};
}

absl::StatusOr<ToolResult> MarkNoticesSeen(pqxx::work& tx, const ToolCall& call,
                                           core::TimePoint /*now*/) {
  Args args(call.arguments);
  std::vector<std::string> runs;
  std::vector<SlotRef> slots;
  const nlohmann::json& ids =
      call.arguments.contains("notices") ? call.arguments["notices"] : nlohmann::json::array();
  if (!ids.is_array() || ids.empty() || ids.size() > kMaxNotices) {
    args.Fail("notices", absl::StrCat("give 1 to ", kMaxNotices, " notice ids from list_agents"));
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      const std::string id = ids[i].is_string() ? ids[i].get<std::string>() : "";
      if (core::IsUuid(id)) {
        runs.push_back(id);
      } else if (std::optional<SlotRef> slot = ParseSlotRef(id)) {
        slots.push_back(*slot);
      } else {
        args.Fail(absl::StrCat("notices[", i, "]"), "is not a notice id from list_agents");
      }
    }
  }
  if (absl::Status bad = args.status(); !bad.ok()) return bad;
  int64_t marked = 0;
  if (!runs.empty()) {
    nlohmann::json list = runs;
    marked += tx.exec_params(
                    "UPDATE platform.runs SET reported_at = now() WHERE tenant_id = $1 AND "
                    "user_id = $2 AND reported_at IS NULL AND id = ANY(ARRAY(SELECT "
                    "jsonb_array_elements_text($3::jsonb)::uuid))",
                    call.who.tenant_id, call.who.user_id, list.dump())
                  .affected_rows();
  }
  for (const SlotRef& slot : slots) {
    marked += tx.exec_params(
                    "UPDATE platform.schedule_slots s SET reported_at = now() FROM "
                    "platform.agents a WHERE s.tenant_id = $1 AND s.agent_id = $3::uuid AND "
                    "s.slot = 'epoch'::timestamptz + $4::bigint * interval '1 microsecond' AND "
                    "s.reported_at IS NULL AND a.tenant_id = s.tenant_id AND a.id = s.agent_id "
                    "AND a.user_id = $2",
                    call.who.tenant_id, call.who.user_id, slot.agent_id, slot.slot_micros)
                  .affected_rows();
  }
  return ToolResult{JsonObject({{"marked", std::to_string(marked)}}), false};
}

}  // namespace omniforge::executor::platform
