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

class KeyAdminGrpcService final : public omniforge::orchestrator::v1::KeyAdminService::Service {
 public:
  // `admin_keys` (the admin key file: tenant `*` manages every tenant) and
  // `admin` must outlive this.
  KeyAdminGrpcService(const core::ApiKeys& admin_keys, KeyAdmin& admin)
      : admin_keys_(admin_keys), admin_(admin) {}

  grpc::Status CreateKey(grpc::ServerContext* context, const v1::CreateKeyRequest* request,
                         v1::CreateKeyResponse* response) override;
  grpc::Status ListKeys(grpc::ServerContext* context, const v1::ListKeysRequest* request,
                        v1::ListKeysResponse* response) override;
  grpc::Status RotateKey(grpc::ServerContext* context, const v1::RotateKeyRequest* request,
                         v1::RotateKeyResponse* response) override;
  grpc::Status RevokeKey(grpc::ServerContext* context, const v1::RevokeKeyRequest* request,
                         v1::RevokeKeyResponse* response) override;

 private:
  // The caller by its admin key; UNAUTHENTICATED without a known one.
  absl::StatusOr<KeyAdminCaller> Caller(const grpc::ServerContext& context) const;

  const core::ApiKeys& admin_keys_;
  KeyAdmin& admin_;
};

}  // namespace omniforge::orchestrator
