#include "services/executor/src/tool.h"

namespace omniforge::executor {

std::string_view ToolRiskName(ToolRisk risk) {
  switch (risk) {
    case ToolRisk::kRead:
      return "read";
    case ToolRisk::kWrite:
      return "write";
    case ToolRisk::kHigh:
      return "high";
  }
  return "unknown";
}

ToolResult ToolResult::Error(std::string_view code, std::string_view message) {
  nlohmann::json error = {{"error", {{"code", code}, {"message", message}}}};
  return {error.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), true};
}

ToolResult ToolResult::Ok(const nlohmann::json& value) {
  return {value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), false};
}

}  // namespace omniforge::executor
