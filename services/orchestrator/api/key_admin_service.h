// The gRPC face of key administration: KeyAdminService, served on the
// orchestrator's admin port. Each call presents an admin key (`authorization:
// Bearer <key>` or `x-api-key`) from the admin key file; the logic
// (keys/key_admin.h) decides what it may manage. This layer only
// authenticates, converts and calls it.
#pragma once

#include "libs/core/api_keys.h"
#include "omniforge/orchestrator/v1/key_admin_service.grpc.pb.h"
#include "services/orchestrator/keys/key_admin.h"

namespace omniforge::orchestrator {

// Every method takes its request as raw bytes, so that bytes protobuf
// refuses are INVALID_ARGUMENT naming the field (raw_request.h).
using RawKeyAdminService = v1::KeyAdminService::WithRawCallbackMethod_CreateKey<
    v1::KeyAdminService::WithRawCallbackMethod_ListKeys<
        v1::KeyAdminService::WithRawCallbackMethod_RotateKey<
            v1::KeyAdminService::WithRawCallbackMethod_RevokeKey<v1::KeyAdminService::Service>>>>;

class KeyAdminGrpcService final : public RawKeyAdminService {
 public:
  // `admin_keys` (the admin key file: tenant `*` manages every tenant) and
  // `admin` must outlive this.
  KeyAdminGrpcService(const core::ApiKeys& admin_keys, KeyAdmin& admin)
      : admin_keys_(admin_keys), admin_(admin) {}

  using Raw = grpc::ByteBuffer;
  grpc::ServerUnaryReactor* CreateKey(grpc::CallbackServerContext* context, const Raw* raw,
                                      Raw* raw_response) override;
  grpc::ServerUnaryReactor* ListKeys(grpc::CallbackServerContext* context, const Raw* raw,
                                     Raw* raw_response) override;
  grpc::ServerUnaryReactor* RotateKey(grpc::CallbackServerContext* context, const Raw* raw,
                                      Raw* raw_response) override;
  grpc::ServerUnaryReactor* RevokeKey(grpc::CallbackServerContext* context, const Raw* raw,
                                      Raw* raw_response) override;

 private:
  // The caller by its admin key; UNAUTHENTICATED without a known one.
  absl::StatusOr<KeyAdminCaller> Caller(const grpc::ServerContextBase& context) const;

  absl::Status Create(const KeyAdminCaller& caller, const v1::CreateKeyRequest& request,
                      v1::CreateKeyResponse* response);
  absl::Status List(const KeyAdminCaller& caller, const v1::ListKeysRequest& request,
                    v1::ListKeysResponse* response);
  absl::Status Rotate(const KeyAdminCaller& caller, const v1::RotateKeyRequest& request,
                      v1::RotateKeyResponse* response);
  absl::Status Revoke(const KeyAdminCaller& caller, const v1::RevokeKeyRequest& request,
                      v1::RevokeKeyResponse* response);

  const core::ApiKeys& admin_keys_;
  KeyAdmin& admin_;
};

}  // namespace omniforge::orchestrator
