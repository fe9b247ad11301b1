// The runnable parts of an agent drafted without a model (local mode): the
// instructions a run with a model follows, written from a template per kind
// of agent (digest, monitor, report, triage), and the steps a run without
// one takes when the request names a project to read, with the tools they
// need (the grant the preview shows). Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace omniforge::orchestrator {

// Sets `args`' steps and tools for an agent of `kind` (empty: none named)
// reading `project`: a digest and an agent of no kind list its tasks, a
// monitor and a triage its tasks still to do, a report reads the project
// with its tasks and documents.
void SetDraftSteps(const std::string& kind, const std::string& project, nlohmann::json& args);

// What a run of an agent of `kind` does, in words a model follows, for
// `purpose` (the request), reading what `args` names (its project, its
// config's data_source) and sending to its config's recipients.
std::string DraftInstructions(const std::string& kind, const std::string& purpose,
                              const nlohmann::json& args);

// A new agent's arguments (`tool` create_agent) whose schedule names no
// zone of its own get the user's `zone`, so that the preview says when it
// runs as the executor will store it; nothing when the zone is not known
// (empty: the executor then takes the user's itself).
void ReadScheduleInUsersZone(const std::string& tool, const std::string& zone,
                             nlohmann::json& args);

}  // namespace omniforge::orchestrator
