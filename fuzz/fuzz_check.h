// What a fuzz target asserts: a property that must hold for every input.
// Unlike assert() it is compiled in every build type, so the corpus replay
// in `make test` (RelWithDebInfo, NDEBUG) checks the same properties.
#pragma once

#include <cstdio>
#include <cstdlib>

#define OMNIFORGE_FUZZ_CHECK(condition)                                                          \
  do {                                                                                           \
    if (!(condition)) {                                                                          \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                              \
    }                                                                                            \
  } while (false)
