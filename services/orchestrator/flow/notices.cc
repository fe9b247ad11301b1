#include "services/orchestrator/flow/notices.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using nlohmann::json;

std::string Text(const json& item, const char* key) {
  return item.contains(key) && item[key].is_string() ? item[key].get<std::string>() : "";
}

pb::NoticeKind KindOf(const std::string& kind) {
  if (kind == "run_failed") return pb::NOTICE_KIND_RUN_FAILED;
  if (kind == "run_partial") return pb::NOTICE_KIND_RUN_PARTIAL;
  if (kind == "missed") return pb::NOTICE_KIND_SLOTS_MISSED;
  return pb::NOTICE_KIND_UNSPECIFIED;
}

// "Monday 9 November at 09:00" in `zone` (the text as given when it is not
// an RFC 3339 time).
std::string When(const std::string& rfc3339, const absl::TimeZone& zone) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &error)) return rfc3339;
  return absl::FormatTime("%A %e %B at %H:%M", t, zone);
}

std::string Clock(const std::string& rfc3339, const absl::TimeZone& zone) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &error)) return rfc3339;
  return absl::FormatTime("%H:%M", t, zone);
}

// Collapses the space %e leaves before a one-digit day.
std::string Tidy(std::string text) {
  for (size_t at = text.find("  "); at != std::string::npos; at = text.find("  ", at)) {
    text.erase(at, 1);
  }
  return text;
}

}  // namespace

AgentListing ListingFromResult(const json& result) {
  AgentListing listing;
  listing.agents = AgentsFromListResult(result);
  if (!result.is_object()) return listing;
  if (std::string zone = Text(result, "time_zone"); !zone.empty()) listing.time_zone = zone;
  if (!result.contains("notices") || !result["notices"].is_array()) return listing;
  for (const json& item : result["notices"]) {
    if (!item.is_object()) continue;
    pb::NoticeEvent notice;
    notice.set_kind(KindOf(Text(item, "kind")));
    const std::string id = Text(item, "id");
    if (notice.kind() == pb::NOTICE_KIND_UNSPECIFIED || id.empty()) continue;
    notice.set_agent_id(Text(item, "agent_id"));
    notice.set_agent_name(Text(item, "agent"));
    notice.set_run_id(Text(item, "run_id"));
    notice.set_slot(Text(item, "slot"));
    if (item.contains("missed") && item["missed"].is_number_integer()) {
      notice.set_missed(item["missed"].get<int32_t>());
    }
    notice.set_missed_until(Text(item, "missed_until"));
    notice.set_policy(Text(item, "policy"));
    notice.set_error(Text(item, "error"));
    notice.set_message(
        NoticeInWords(notice, listing.time_zone.empty() ? "UTC" : listing.time_zone));
    listing.notices.push_back(std::move(notice));
    listing.notice_ids.push_back(id);
  }
  return listing;
}

std::string NoticeInWords(const pb::NoticeEvent& notice, const std::string& time_zone) {
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(time_zone, &zone)) zone = absl::UTCTimeZone();
  const std::string agent = "Your agent '" + notice.agent_name() + "'";
  const std::string in_zone = " (" + zone.name() + ")";
  std::string error = notice.error();
  if (!error.empty() && error.back() != '.') error += ".";
  switch (notice.kind()) {
    case pb::NOTICE_KIND_RUN_FAILED:
      return Tidy(absl::StrCat(agent, " failed on its scheduled run of ", When(notice.slot(), zone),
                               in_zone, error.empty() ? "." : ": " + error));
    case pb::NOTICE_KIND_RUN_PARTIAL:
      return Tidy(absl::StrCat(agent, " did only part of its scheduled run of ",
                               When(notice.slot(), zone), in_zone,
                               error.empty() ? "." : ": " + error));
    case pb::NOTICE_KIND_SLOTS_MISSED: {
      const int n = notice.missed();
      std::string span = When(notice.slot(), zone);
      if (n > 1 && !notice.missed_until().empty()) {
        const bool same_day = When(notice.slot(), zone).substr(0, 12) ==
                              When(notice.missed_until(), zone).substr(0, 12);
        span += " to " +
                (same_day ? Clock(notice.missed_until(), zone) : When(notice.missed_until(), zone));
      }
      return Tidy(absl::StrCat(agent, " missed ", n, n == 1 ? " scheduled run" : " scheduled runs",
                               ", ", span, " ", zone.name(), ", while no scheduler was running; ",
                               notice.policy() == "skip"
                                   ? (n == 1 ? "it was skipped, as the agent is set to."
                                             : "they were skipped, as the agent is set to.")
                                   : "the run after them ran late, once the scheduler was back."));
    }
    default:
      return "";
  }
}

}  // namespace omniforge::orchestrator
