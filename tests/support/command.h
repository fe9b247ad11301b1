// Runs a command-line program the way a user or a script does, for tests of
// the CLI and the scripts: with piped standard streams, or on a terminal.
#pragma once

#include <string>
#include <vector>

namespace omniforge::testing {

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out;     // standard output (on a terminal: everything it showed)
  std::string err;     // standard error (empty on a terminal)
};

// Runs argv[0] (a path) with the caller's environment minus OMNIFORGE_* and
// NO_COLOR, plus `env` (NAME=value). Standard input reads `input`; standard
// output and error are collected. Waits for the program to exit.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input = "",
                         const std::vector<std::string>& env = {});

// The same with standard input, output and error on a new pseudo-terminal,
// as in an interactive shell: `input` is typed in at once (the terminal
// echoes it and turns "\n" into "\r\n"; "\x04" at the start of a line is
// end of input).
CommandResult RunInTerminal(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env = {},
                            const std::string& input = "");

}  // namespace omniforge::testing
