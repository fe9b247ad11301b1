// The data files of libs/words/data as compiled into the library (generated
// by embed_lists.cmake). Internal to libs/words: read them through lists.h.
#pragma once

#include <vector>

namespace omniforge::words::internal {

struct EmbeddedList {
  const char* name;  // the file name without ".txt"
  const char* text;  // the file's contents
};

const std::vector<EmbeddedList>& EmbeddedLists();

}  // namespace omniforge::words::internal
