#include "services/orchestrator/api/key_admin_service.h"

#include <google/protobuf/util/time_util.h>

#include "libs/core/grpc_status.h"
#include "libs/core/server.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using google::protobuf::util::TimeUtil;

std::string_view MetadataValue(const grpc::ServerContext& context, const char* key) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(key);
  if (it == metadata.end()) return {};
  return {it->second.data(), it->second.size()};
}

void SetTime(int64_t micros, google::protobuf::Timestamp* out) {
  *out = TimeUtil::MicrosecondsToTimestamp(micros);
}

void ToProto(const StoredKey& key, pb::ApiKey* out) {
  out->set_key_id(key.key_id);
  out->set_tenant_id(key.tenant_id);
  out->set_user_id(key.user_id);
  out->set_kind(key.kind == core::KeyKind::kGateway ? pb::KEY_KIND_GATEWAY : pb::KEY_KIND_USER);
  out->set_label(key.label);
  SetTime(key.created_micros, out->mutable_create_time());
  SetTime(key.rotated_micros, out->mutable_rotate_time());
  if (key.expires_micros != 0) SetTime(key.expires_micros, out->mutable_expire_time());
  if (key.revoked_micros != 0) SetTime(key.revoked_micros, out->mutable_revoke_time());
  if (key.previous_valid_until_micros != 0) {
    SetTime(key.previous_valid_until_micros, out->mutable_previous_secret_expire_time());
  }
}

// Runs `body` for an authenticated caller (the server's interceptor records
// the call's metrics).
template <typename Body>
grpc::Status Serve(const absl::StatusOr<KeyAdminCaller>& caller, Body body) {
  return core::ToGrpcStatus(caller.ok() ? body(*caller) : caller.status());
}

}  // namespace

absl::StatusOr<KeyAdminCaller> KeyAdminGrpcService::Caller(
    const grpc::ServerContext& context) const {
  const std::string_view key = core::PresentedApiKey(MetadataValue(context, "authorization"),
                                                     MetadataValue(context, "x-api-key"));
  if (key.empty()) {
    return absl::UnauthenticatedError(
        "missing admin key: send `authorization: Bearer <admin key>` (a key of "
        "auth.admin_keys_file)");
  }
  absl::StatusOr<core::Identity> admin = admin_keys_.Authenticate(key);
  if (!admin.ok()) {
    return absl::UnauthenticatedError(absl::IsUnauthenticated(admin.status())
                                          ? std::string("invalid admin key: ") +
                                                std::string(admin.status().message())
                                          : std::string(admin.status().message()));
  }
  return KeyAdminCaller{admin->user_id, admin->tenant_id};
}

grpc::Status KeyAdminGrpcService::CreateKey(grpc::ServerContext* context,
                                            const pb::CreateKeyRequest* request,
                                            pb::CreateKeyResponse* response) {
  return Serve(Caller(*context), [&](const KeyAdminCaller& caller) -> absl::Status {
    StoredKey wanted;
    wanted.tenant_id = request->tenant_id();
    wanted.user_id = request->user_id();
    switch (request->kind()) {
      case pb::KEY_KIND_UNSPECIFIED:
      case pb::KEY_KIND_USER:
        wanted.kind = core::KeyKind::kUser;
        break;
      case pb::KEY_KIND_GATEWAY:
        wanted.kind = core::KeyKind::kGateway;
        break;
      default:
        return absl::InvalidArgumentError("kind: KEY_KIND_USER or KEY_KIND_GATEWAY");
    }
    wanted.label = request->label();
    if (request->has_expire_time()) {
      wanted.expires_micros = TimeUtil::TimestampToMicroseconds(request->expire_time());
    }
    absl::StatusOr<IssuedKey> issued = admin_.Create(caller, wanted);
    if (!issued.ok()) return issued.status();
    response->set_key(issued->key);
    ToProto(issued->stored, response->mutable_api_key());
    return absl::OkStatus();
  });
}

grpc::Status KeyAdminGrpcService::ListKeys(grpc::ServerContext* context,
                                           const pb::ListKeysRequest* request,
                                           pb::ListKeysResponse* response) {
  return Serve(Caller(*context), [&](const KeyAdminCaller& caller) -> absl::Status {
    absl::StatusOr<std::vector<StoredKey>> keys =
        admin_.List(caller, request->tenant_id(), request->include_revoked());
    if (!keys.ok()) return keys.status();
    for (const StoredKey& key : *keys) ToProto(key, response->add_api_keys());
    return absl::OkStatus();
  });
}

grpc::Status KeyAdminGrpcService::RotateKey(grpc::ServerContext* context,
                                            const pb::RotateKeyRequest* request,
                                            pb::RotateKeyResponse* response) {
  return Serve(Caller(*context), [&](const KeyAdminCaller& caller) -> absl::Status {
    const int64_t grace =
        request->has_grace_period() ? TimeUtil::DurationToMicroseconds(request->grace_period()) : 0;
    absl::StatusOr<IssuedKey> issued =
        admin_.Rotate(caller, request->tenant_id(), request->key_id(), grace);
    if (!issued.ok()) return issued.status();
    response->set_key(issued->key);
    ToProto(issued->stored, response->mutable_api_key());
    return absl::OkStatus();
  });
}

grpc::Status KeyAdminGrpcService::RevokeKey(grpc::ServerContext* context,
                                            const pb::RevokeKeyRequest* request,
                                            pb::RevokeKeyResponse* response) {
  return Serve(Caller(*context), [&](const KeyAdminCaller& caller) -> absl::Status {
    absl::StatusOr<StoredKey> key = admin_.Revoke(caller, request->tenant_id(), request->key_id());
    if (!key.ok()) return key.status();
    ToProto(*key, response->mutable_api_key());
    return absl::OkStatus();
  });
}

}  // namespace omniforge::orchestrator
