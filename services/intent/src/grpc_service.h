// The gRPC face of the intent service: parses the request (raw, so invalid
// UTF-8 gets a clear INVALID_ARGUMENT), checks enum values, converts to the
// logic's types and back. Local analyses run on the gRPC thread (they take
// microseconds); analyses that call the LLM run on the worker pool.
#pragma once

#include "libs/core/thread_pool.h"
#include "omniforge/intent/v1/intent_service.grpc.pb.h"
#include "services/intent/src/intent_service.h"

namespace omniforge::intent {

namespace pb = ::omniforge::intent::v1;

// Converts a request; INVALID_ARGUMENT for an unknown enum value.
absl::StatusOr<IntentRequest> FromProto(const pb::AnalyzeIntentRequest& request);
// The analysis and the model calls it made.
void ToProto(const IntentAnalysis& analysis, pb::AnalyzeIntentResponse* out);

class IntentGrpcService final
    : public pb::IntentService::WithRawCallbackMethod_AnalyzeIntent<pb::IntentService::Service> {
 public:
  // Both must outlive the service.
  IntentGrpcService(const IntentService& service, core::ThreadPool& workers)
      : service_(service), workers_(workers) {}

  grpc::ServerUnaryReactor* AnalyzeIntent(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;

 private:
  const IntentService& service_;
  core::ThreadPool& workers_;
};

}  // namespace omniforge::intent
