// Detection of credentials in free text: API keys and tokens, passwords,
// payment card numbers (Luhn-checked), private keys.
//
// Used to flag messages that contain secrets and to mask them in logs.
// Thread-safe; the patterns compile once (RE2, linear time in the input).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace omniforge::core {

// Kinds reported by DetectSecrets, in a stable order without duplicates:
// "private_key", "openai_api_key", "anthropic_api_key", "aws_access_key",
// "github_token", "slack_token", "google_api_key", "stripe_key",
// "omniforge_api_key", "jwt",
// "bearer_token", "password", "credit_card".
std::vector<std::string> DetectSecrets(std::string_view text);

// Returns `text` with every detected secret replaced by "[REDACTED]".
std::string RedactSecrets(std::string_view text);

}  // namespace omniforge::core
