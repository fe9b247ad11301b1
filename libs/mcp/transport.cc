#include "libs/mcp/transport.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "libs/mcp/json_rpc.h"

namespace omniforge::mcp {
namespace {
constexpr char kSessionExpiredPayload[] = "omniforge.mcp/session-expired";
}  // namespace

absl::Status SessionExpiredError(std::string_view detail) {
  absl::Status status = absl::NotFoundError(absl::StrCat("MCP session expired: ", Sv(detail)));
  status.SetPayload(kSessionExpiredPayload, absl::Cord("1"));
  return status;
}

bool IsSessionExpired(const absl::Status& status) {
  return status.GetPayload(kSessionExpiredPayload).has_value();
}

}  // namespace omniforge::mcp
