// The main of a fuzz target in the normal build: runs LLVMFuzzerTestOneInput
// once on every file named on the command line, or on every file of a named
// directory, or on standard input when no path is given. Registered as a
// test per target (fuzz/CMakeLists.txt), it replays the committed corpus
// and crash reproducers; a failed property aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void RunOne(const std::string& bytes) {
  // A copy of its own, so reading past the input is caught by ASan builds.
  const std::vector<uint8_t> input(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(input.data(), input.size());
}

bool RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "replay: cannot read " << path << "\n";
    return false;
  }
  RunOne(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    RunOne(std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()));
    return 0;
  }
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg = argv[i];
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(arg);
    }
    for (const auto& file : files) {
      if (!RunFile(file)) return 1;
      ++inputs;
    }
  }
  if (inputs == 0) {
    std::cerr << "replay: no inputs found\n";
    return 1;
  }
  std::cout << "replay: " << inputs << " inputs, all passed\n";
  return 0;
}
