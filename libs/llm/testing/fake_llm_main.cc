// omniforge-fake-llm: the fake LLM provider as a process, for black-box tests
// of the services. Serves a JSON script (format in fake_provider.h) on
// 127.0.0.1, prints "listening on 127.0.0.1:<port>" once it accepts
// connections, and serves until SIGTERM or SIGINT.
#include <pthread.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigwait, not <csignal>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "libs/core/files.h"
#include "libs/llm/testing/fake_provider.h"

// NOLINTNEXTLINE(bugprone-exception-escape): a test double; an exception ends it with its message
int main(int argc, char** argv) {
  using omniforge::llm::testing::FakeLlmServer;
  using omniforge::llm::testing::FakeOptions;
  using omniforge::llm::testing::FakeRule;

  // Blocked before any thread starts, so only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  CLI::App app{"omniforge fake LLM provider (OpenAI and Anthropic wire formats)"};
  FakeOptions options;
  std::string script_file;
  app.add_option("--port", options.port, "TCP port on 127.0.0.1 (0: any free port)");
  app.add_option("--script", script_file, "JSON script of rules (none: echo every request)");
  app.add_option("--api-key", options.api_key, "require this API key (401 otherwise)");
  CLI11_PARSE(app, argc, argv);

  std::vector<FakeRule> rules;
  if (!script_file.empty()) {
    auto text = omniforge::core::ReadFile(script_file);
    if (!text.ok()) {
      std::cerr << "omniforge-fake-llm: " << text.status().message() << "\n";
      return 2;
    }
    auto parsed = omniforge::llm::testing::ParseFakeScript(*text);
    if (!parsed.ok()) {
      std::cerr << "omniforge-fake-llm: " << script_file << ": " << parsed.status().message()
                << "\n";
      return 2;
    }
    rules = *std::move(parsed);
  }
  auto server = FakeLlmServer::Start(std::move(rules), options);
  if (!server.ok()) {
    std::cerr << "omniforge-fake-llm: " << server.status().message() << "\n";
    return 1;
  }
  std::cout << "listening on 127.0.0.1:" << (*server)->port() << std::endl;
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  (*server)->Stop();
  return 0;
}
