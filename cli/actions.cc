#include "cli/actions.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <iostream>

#include "cli/action_view.h"
#include "cli/rpc_error.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"

namespace omniforge::cli {

int RunActions(const ActionsOptions& options) {
  namespace pb = ::omniforge::orchestrator::v1;
  if (options.api_key.empty()) {
    std::cerr << "error: an API key is needed: --api-key or OMNIFORGE_API_KEY (make up writes "
                 "one for the demo user to /tmp/omniforge/demo.key)\n";
    return 2;
  }
  grpc::ChannelArguments channel_args;
  auto stub = pb::ChatService::NewStub(
      core::CreateServiceChannel(options.server, options.security, channel_args));
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + options.api_key);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(options.timeout_s));
  pb::ListActionsRequest request;
  request.set_conversation_id(options.conversation_id);
  request.set_limit(options.limit);
  pb::ListActionsResponse response;
  if (int rc = ReportRpcError(stub->ListActions(&context, request, &response))) return rc;
  ShowDecisions(std::cout, response, options.json);
  return 0;
}

}  // namespace omniforge::cli
