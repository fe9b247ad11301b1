// The items of a list the assistant wrote in text, in the order the user
// sees them, so that "the second one" or "the one after X" is counted over
// the list and not over every name the turn happens to mention (an agent
// named in another's description is no item). Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "services/intent/entities/entities.h"

namespace omniforge::intent {

// The entries of the list `text` holds, as written, in list order:
//  - lines that open with a number ("1. x", "2) y", "#3 z"), ordered by
//    that number, or with a bullet ("- x", "* y", "• z"), or table rows
//    ("x | what it does");
//  - else numbers inline ("1) x, 2) y, 3) z");
//  - else a run of entries in one sentence, after its colon if it has one,
//    split at commas, semicolons, "and", "or" and "then" ("x, y and z",
//    "x, then y, and finally z").
// Fewer than two entries: empty.
std::vector<std::string> ListItems(std::string_view text);

// The user's agents the list in `text` holds, in list order without
// repeats: of a list set out on lines or numbered inline, one per entry
// (the first agent the entry names exactly, so that an agent named in
// another's description is none); of prose, every agent it names, in the
// order it names them. Empty when fewer than two.
std::vector<std::string> ListedAgents(std::string_view text,
                                      const std::vector<CatalogItem>& agents);

}  // namespace omniforge::intent
