// Servers launched from npm must name an exact package version.
#include "libs/mcp/npm_pinning.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace omniforge::mcp {
namespace {

using ::testing::HasSubstr;

bool Pinned(const std::string& command, const std::vector<std::string>& args) {
  return CheckNpmPackagesPinned(command, args).ok();
}

TEST(NpmPinningTest, ExactVersionsOnly) {
  for (const char* exact : {"2026.8.31", "1.2.3", "0.0.1", "1.0.0-rc.1", "1.0.0+build.5"}) {
    EXPECT_TRUE(IsExactVersion(exact)) << exact;
  }
  for (const char* loose : {"", "latest", "^1.2.3", "~1.2.3", "1.2", "1.2.x", ">=1.0.0", "01.2.3",
                            "1.2.3 - 2.0.0", "1.2.3-", "v1.2.3"}) {
    EXPECT_FALSE(IsExactVersion(loose)) << loose;
  }
}

TEST(NpmPinningTest, NpxPackagesNeedAnExactVersion) {
  EXPECT_TRUE(Pinned("npx", {"-y", "@modelcontextprotocol/server-memory@2026.8.31"}));
  EXPECT_TRUE(Pinned("/usr/bin/npx", {"--yes", "server-x@1.0.0", "--flag", "unpinned"}));
  EXPECT_TRUE(Pinned("npx", {"-p", "@scope/tools@2.0.1", "tools-server", "--port", "1"}));
  EXPECT_TRUE(Pinned("npx", {"--package=@scope/tools@2.0.1", "tools-server"}));
  EXPECT_TRUE(Pinned("npx", {"./vendored/server"}));
  EXPECT_TRUE(Pinned("npm", {"exec", "--", "server-x@3.1.4"}));
  EXPECT_TRUE(Pinned("node", {"server.js"}));  // not from npm at all

  const absl::Status unpinned =
      CheckNpmPackagesPinned("npx", {"-y", "@modelcontextprotocol/server-memory"});
  EXPECT_EQ(unpinned.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unpinned.message(), HasSubstr("'@modelcontextprotocol/server-memory'"));
  EXPECT_FALSE(Pinned("npx", {"-y", "@modelcontextprotocol/server-memory@latest"}));
  EXPECT_FALSE(Pinned("npx", {"server-x@^1.0.0"}));
  EXPECT_FALSE(Pinned("npx", {"--registry", "https://r.example", "server-x"}));
  EXPECT_FALSE(Pinned("npx", {"-p", "server-x", "server-x"}));
  EXPECT_FALSE(Pinned("npx", {"-p", "a@1.0.0", "-p", "b", "a"}));
  EXPECT_FALSE(Pinned("npx", {"-c", "server-x --stdio"}));
  EXPECT_FALSE(Pinned("npx", {"-y"}));
  EXPECT_FALSE(Pinned("npm", {"x", "server-x"}));
}

}  // namespace
}  // namespace omniforge::mcp
