// The real downstream clients: one long-lived channel per service (with
// keepalive), the caller's identity in the metadata of every call, and the
// turn's deadline as the call's deadline.
#pragma once

#include <memory>
#include <string>

#include "libs/core/client_tls.h"
#include "services/orchestrator/downstream/downstream.h"
#include "services/orchestrator/downstream/plan_executor.h"

namespace omniforge::orchestrator {

struct DownstreamAddresses {
  std::string conversation = "127.0.0.1:50051";
  std::string intent = "127.0.0.1:50052";
  std::string executor = "127.0.0.1:50053";
};

// Each on a channel to `address` secured as `security` says (client_tls.*;
// the default is plaintext).
std::unique_ptr<Memory> MakeGrpcMemory(const std::string& address,
                                       const core::ChannelSecurity& security = {});
std::unique_ptr<Understanding> MakeGrpcUnderstanding(const std::string& address,
                                                     const core::ChannelSecurity& security = {});
std::unique_ptr<Tools> MakeGrpcTools(const std::string& address,
                                     const core::ChannelSecurity& security = {});
// The executor's Converse, one dialogue per plan step.
std::unique_ptr<StepExecutors> MakeGrpcStepExecutors(const std::string& address,
                                                     const core::ChannelSecurity& security = {});

}  // namespace omniforge::orchestrator
