// Stage 5, Decide, for the meeting flow of local mode (meeting_flow.h): the
// flow's READ calls (contacts, free time) run one after the other under
// the turn's guardrails, each result taken in, until the flow asks the
// user, proposes the booking, or stops.
#include "services/orchestrator/planner/meeting_flow.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

Move TurnPass::DecideMeeting(MeetingState meeting) {
  const MeetingClock clock{runner_.calendar_clock().NowMicros(), time_zone_};
  while (true) {
    MeetingStep step = NextMeetingStep(meeting, clock);
    if (!step.call) return std::move(step.move);
    const std::optional<ToolRun> ran = RunTool(*step.call, nullptr);
    if (!ran) {
      // A guardrail stopped the turn (its error event is out) or a newer
      // message set the flow aside: nothing is proposed.
      Move stopped;
      stopped.action_type = intentpb::ACTION_TYPE_EXECUTE_TASK;
      stopped.entities = meeting;
      return stopped;
    }
    TakeMeetingResult(meeting, *step.call, ParseObject(ran->result_json), ran->is_error, clock);
  }
}

}  // namespace omniforge::orchestrator
