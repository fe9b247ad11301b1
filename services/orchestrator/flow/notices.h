// What list_agents says besides the agents: the user's time zone and the
// notices the user has not been told yet (a scheduled run that failed or
// did part of its work, slots missed while no scheduler ran), and those
// notices in words.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/flow/move.h"

namespace omniforge::orchestrator {

struct AgentListing {
  std::vector<AgentInfo> agents;
  // The user's time zone; empty when the result did not say (unknown).
  std::string time_zone;
  std::vector<::omniforge::orchestrator::v1::NoticeEvent> notices;
  // The notices' ids, for mark_notices_seen.
  std::vector<std::string> notice_ids;
};

// The listing in a list_agents result; empty (no zone, no notices) when
// the result is not one.
AgentListing ListingFromResult(const nlohmann::json& result);

// The notice in words, its times in `time_zone`: "Your agent
// 'weekly-sales-digest' failed on Monday 9 November at 09:00 (UTC): no
// project matches 'Sales'."
std::string NoticeInWords(const ::omniforge::orchestrator::v1::NoticeEvent& notice,
                          const std::string& time_zone);

}  // namespace omniforge::orchestrator
