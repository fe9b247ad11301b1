#include "services/orchestrator/api/key_admin_service.h"

#include <google/protobuf/util/time_util.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <vector>

#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "libs/core/grpc_status.h"
#include "libs/core/server.h"
#include "services/orchestrator/api/raw_request.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using google::protobuf::util::TimeUtil;

std::string_view MetadataValue(const grpc::ServerContextBase& context, const char* key) {
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

// Authenticates the caller, parses the request and runs `body` on the
// calling thread, then finishes the call. Key administration is an
// operator's occasional act of a statement or two, so it takes no worker
// pool of its own (the admin port has its server's threads to itself).
template <typename Request, typename Response, typename Body>
grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* context, const grpc::ByteBuffer& raw,
                                grpc::ByteBuffer* raw_response,
                                const absl::StatusOr<KeyAdminCaller>& caller, Body body) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Request request;
  Response response;
  absl::Status status = caller.status();
  if (status.ok()) status = ParseRawRequest(raw, request);
  if (status.ok()) status = body(*caller, request, &response);
  if (status.ok()) {
    bool own_buffer = false;
    if (!grpc::SerializationTraits<Response>::Serialize(response, raw_response, &own_buffer).ok()) {
      status = absl::InternalError("cannot serialize the response");
    }
  }
  reactor->Finish(core::ToGrpcStatus(status));
  return reactor;
}

// OK, or INVALID_ARGUMENT naming `field` when `time` is outside what a
// Timestamp may hold (years 1 to 9999, nanos within a second): such a
// value would overflow on its way to microseconds.
absl::Status ValidTimestamp(const char* field, const google::protobuf::Timestamp& time) {
  if (time.seconds() < TimeUtil::kTimestampMinSeconds ||
      time.seconds() > TimeUtil::kTimestampMaxSeconds || time.nanos() < 0 ||
      time.nanos() > 999'999'999) {
    return core::InvalidField(field, core::kReasonFieldInvalid, "not a valid time");
  }
  return absl::OkStatus();
}

absl::Status ValidDuration(const char* field, const google::protobuf::Duration& duration) {
  if (duration.seconds() < TimeUtil::kDurationMinSeconds ||
      duration.seconds() > TimeUtil::kDurationMaxSeconds || duration.nanos() < -999'999'999 ||
      duration.nanos() > 999'999'999) {
    return core::InvalidField(field, core::kReasonFieldInvalid, "not a valid duration");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KeyAdminCaller> KeyAdminGrpcService::Caller(
    const grpc::ServerContextBase& context) const {
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

grpc::ServerUnaryReactor* KeyAdminGrpcService::CreateKey(grpc::CallbackServerContext* context,
                                                         const Raw* raw, Raw* raw_response) {
  return Serve<pb::CreateKeyRequest, pb::CreateKeyResponse>(
      context, *raw, raw_response, Caller(*context),
      [this](const KeyAdminCaller& caller, const auto& request, auto* response) {
        return Create(caller, request, response);
      });
}

grpc::ServerUnaryReactor* KeyAdminGrpcService::ListKeys(grpc::CallbackServerContext* context,
                                                        const Raw* raw, Raw* raw_response) {
  return Serve<pb::ListKeysRequest, pb::ListKeysResponse>(
      context, *raw, raw_response, Caller(*context),
      [this](const KeyAdminCaller& caller, const auto& request, auto* response) {
        return List(caller, request, response);
      });
}

grpc::ServerUnaryReactor* KeyAdminGrpcService::RotateKey(grpc::CallbackServerContext* context,
                                                         const Raw* raw, Raw* raw_response) {
  return Serve<pb::RotateKeyRequest, pb::RotateKeyResponse>(
      context, *raw, raw_response, Caller(*context),
      [this](const KeyAdminCaller& caller, const auto& request, auto* response) {
        return Rotate(caller, request, response);
      });
}

grpc::ServerUnaryReactor* KeyAdminGrpcService::RevokeKey(grpc::CallbackServerContext* context,
                                                         const Raw* raw, Raw* raw_response) {
  return Serve<pb::RevokeKeyRequest, pb::RevokeKeyResponse>(
      context, *raw, raw_response, Caller(*context),
      [this](const KeyAdminCaller& caller, const auto& request, auto* response) {
        return Revoke(caller, request, response);
      });
}

absl::Status KeyAdminGrpcService::Create(const KeyAdminCaller& caller,
                                         const pb::CreateKeyRequest& request,
                                         pb::CreateKeyResponse* response) {
  StoredKey wanted;
  wanted.tenant_id = request.tenant_id();
  wanted.user_id = request.user_id();
  switch (request.kind()) {
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
  wanted.label = request.label();
  if (request.has_expire_time()) {
    if (absl::Status valid = ValidTimestamp("expire_time", request.expire_time()); !valid.ok()) {
      return valid;
    }
    wanted.expires_micros = TimeUtil::TimestampToMicroseconds(request.expire_time());
  }
  absl::StatusOr<IssuedKey> issued = admin_.Create(caller, wanted);
  if (!issued.ok()) return issued.status();
  response->set_key(issued->key);
  ToProto(issued->stored, response->mutable_api_key());
  return absl::OkStatus();
}

absl::Status KeyAdminGrpcService::List(const KeyAdminCaller& caller,
                                       const pb::ListKeysRequest& request,
                                       pb::ListKeysResponse* response) {
  absl::StatusOr<std::vector<StoredKey>> keys =
      admin_.List(caller, request.tenant_id(), request.include_revoked());
  if (!keys.ok()) return keys.status();
  for (const StoredKey& key : *keys) ToProto(key, response->add_api_keys());
  return absl::OkStatus();
}

absl::Status KeyAdminGrpcService::Rotate(const KeyAdminCaller& caller,
                                         const pb::RotateKeyRequest& request,
                                         pb::RotateKeyResponse* response) {
  int64_t grace = 0;
  if (request.has_grace_period()) {
    if (absl::Status valid = ValidDuration("grace_period", request.grace_period()); !valid.ok()) {
      return valid;
    }
    grace = TimeUtil::DurationToMicroseconds(request.grace_period());
  }
  absl::StatusOr<IssuedKey> issued =
      admin_.Rotate(caller, request.tenant_id(), request.key_id(), grace);
  if (!issued.ok()) return issued.status();
  response->set_key(issued->key);
  ToProto(issued->stored, response->mutable_api_key());
  return absl::OkStatus();
}

absl::Status KeyAdminGrpcService::Revoke(const KeyAdminCaller& caller,
                                         const pb::RevokeKeyRequest& request,
                                         pb::RevokeKeyResponse* response) {
  absl::StatusOr<StoredKey> key = admin_.Revoke(caller, request.tenant_id(), request.key_id());
  if (!key.ok()) return key.status();
  ToProto(*key, response->mutable_api_key());
  return absl::OkStatus();
}

}  // namespace omniforge::orchestrator
