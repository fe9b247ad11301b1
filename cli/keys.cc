#include "cli/keys.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <iostream>

#include "cli/rpc_error.h"
#include "libs/core/api_keys.h"
#include "omniforge/orchestrator/v1/key_admin_service.grpc.pb.h"

namespace omniforge::cli {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using google::protobuf::util::TimeUtil;

bool HasAdminKey(const KeysOptions& options) {
  if (!options.admin_key.empty()) return true;
  std::cerr << "error: an admin key is needed: --admin-key or OMNIFORGE_ADMIN_KEY (a key of the "
               "orchestrator's auth.admin_keys_file)\n";
  return false;
}

std::unique_ptr<pb::KeyAdminService::Stub> Stub(const KeysOptions& options) {
  grpc::ChannelArguments channel_args;
  return pb::KeyAdminService::NewStub(
      core::CreateServiceChannel(options.server, options.security, channel_args));
}

std::unique_ptr<grpc::ClientContext> Context(const KeysOptions& options) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->AddMetadata("authorization", "Bearer " + options.admin_key);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(options.timeout_s));
  return context;
}

std::string TimeOrDash(bool set, const google::protobuf::Timestamp& t) {
  return set ? TimeUtil::ToString(t) : "-";
}

void PrintKey(const pb::ApiKey& key) {
  std::cout << key.key_id() << "  " << key.tenant_id() << "  "
            << (key.kind() == pb::KEY_KIND_GATEWAY ? "(gateway)" : key.user_id())
            << "  expires=" << TimeOrDash(key.has_expire_time(), key.expire_time())
            << "  revoked=" << TimeOrDash(key.has_revoke_time(), key.revoke_time());
  if (key.has_previous_secret_expire_time()) {
    std::cout << "  previous-secret-until="
              << TimeUtil::ToString(key.previous_secret_expire_time());
  }
  if (!key.label().empty()) std::cout << "  " << key.label();
  std::cout << "\n";
}

void Print(const google::protobuf::Message& message) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json);
  std::cout << json << "\n";
}

}  // namespace

// A key just made (created or rotated): its secret, shown this once, and
// what is kept of it.
template <typename Issued>
int ShowIssued(const KeysOptions& options, const Issued& response) {
  if (options.json) {
    Print(response);
    return 0;
  }
  std::cout << "key: " << response.key() << "  (shown once: only its hash is kept)\n";
  PrintKey(response.api_key());
  return 0;
}

int RunKeysCreate(const KeysOptions& options) {
  if (!HasAdminKey(options)) return 2;
  pb::CreateKeyRequest request;
  request.set_tenant_id(options.tenant);
  request.set_user_id(options.user);
  request.set_kind(options.gateway ? pb::KEY_KIND_GATEWAY : pb::KEY_KIND_USER);
  request.set_label(options.label);
  if (!options.expires.empty()) {
    const std::optional<int64_t> expires = core::ParseApiKeyExpiry(options.expires);
    if (!expires) {
      std::cerr << "error: --expires: not an RFC 3339 time or a date: " << options.expires << "\n";
      return 2;
    }
    *request.mutable_expire_time() = TimeUtil::MicrosecondsToTimestamp(*expires);
  }
  pb::CreateKeyResponse response;
  if (int rc = ReportRpcError(Stub(options)->CreateKey(Context(options).get(), request, &response)))
    return rc;
  return ShowIssued(options, response);
}

int RunKeysList(const KeysOptions& options) {
  if (!HasAdminKey(options)) return 2;
  pb::ListKeysRequest request;
  request.set_tenant_id(options.tenant);
  request.set_include_revoked(options.include_revoked);
  pb::ListKeysResponse response;
  if (int rc = ReportRpcError(Stub(options)->ListKeys(Context(options).get(), request, &response)))
    return rc;
  if (options.json) {
    Print(response);
    return 0;
  }
  for (const pb::ApiKey& key : response.api_keys()) PrintKey(key);
  return 0;
}

int RunKeysRotate(const KeysOptions& options) {
  if (!HasAdminKey(options)) return 2;
  pb::RotateKeyRequest request;
  request.set_tenant_id(options.tenant);
  request.set_key_id(options.key_id);
  if (options.grace_s > 0) request.mutable_grace_period()->set_seconds(options.grace_s);
  pb::RotateKeyResponse response;
  if (int rc = ReportRpcError(Stub(options)->RotateKey(Context(options).get(), request, &response)))
    return rc;
  return ShowIssued(options, response);
}

int RunKeysRevoke(const KeysOptions& options) {
  if (!HasAdminKey(options)) return 2;
  pb::RevokeKeyRequest request;
  request.set_tenant_id(options.tenant);
  request.set_key_id(options.key_id);
  pb::RevokeKeyResponse response;
  if (int rc = ReportRpcError(Stub(options)->RevokeKey(Context(options).get(), request, &response)))
    return rc;
  if (options.json) {
    Print(response);
    return 0;
  }
  PrintKey(response.api_key());
  return 0;
}

}  // namespace omniforge::cli
