// `omniforge keys create|list|rotate|revoke`: API keys managed at runtime,
// through the orchestrator's KeyAdminService (its admin port) with an admin
// key.
#pragma once

#include <string>

#include "libs/core/client_tls.h"

namespace omniforge::cli {

struct KeysOptions {
  std::string server = "127.0.0.1:50049";
  std::string admin_key;
  std::string tenant;
  std::string user;              // create: the user of a user key
  bool gateway = false;          // create: a gateway key
  std::string label;             // create
  std::string expires;           // create: RFC 3339 or a date
  std::string key_id;            // rotate, revoke
  int grace_s = 0;               // rotate: how long the old secret keeps working
  bool include_revoked = false;  // list
  bool json = false;
  int timeout_s = 10;
  core::ChannelSecurity security;
};

// Each prints what it made or found. Returns 0; 1 when the call failed (the
// RPC error is on stderr); 2 for bad input or without an admin key.
int RunKeysCreate(const KeysOptions& options);
int RunKeysList(const KeysOptions& options);
int RunKeysRotate(const KeysOptions& options);
int RunKeysRevoke(const KeysOptions& options);

}  // namespace omniforge::cli
