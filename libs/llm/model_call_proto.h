// A usage record and the ModelCall message that carries it between services
// (omniforge/llm/v1/model_call.proto): the intent service and the
// executor's agents return their model calls, the orchestrator records them.
#pragma once

#include "libs/llm/usage.h"
#include "omniforge/llm/v1/model_call.pb.h"

namespace omniforge::llm {

void ToProto(const UsageRecord& record, ::omniforge::llm::v1::ModelCall* out);

// A failure of a kind this release does not know is still a failure
// (kBadResponse).
UsageRecord FromProto(const ::omniforge::llm::v1::ModelCall& call);

}  // namespace omniforge::llm
