// Sealing the strings inside a JSON document, for jsonb columns that SQL
// reads by key (`output ->> 'summary'`) and for rows that SQL turns into
// JSON (`to_jsonb(row)`): the document keeps its shape, keys, numbers and
// booleans, and every string value (at any depth) is sealed on its own in
// the text form (sealed_text.h). Opening walks a document (a tool's whole
// result, say) and opens every sealed string in it, wherever SQL put it.
//
// Each string is bound to `ad`, which names the schema and the tenant: a
// value moved to another tenant does not open; one moved to another row or
// field of the same tenant does (the SQL that builds results renames and
// nests fields, so a string's place cannot be named at both ends).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/seal/keys.h"

namespace omniforge::seal {

// Every string value inside `doc` (the document itself when it is one)
// sealed with `key`; empty strings stay empty. For nlohmann::json and
// nlohmann::ordered_json (which keeps the members in the order they were
// read, so a document written again reads as it did).
template <typename Json>
void SealStrings(Json& doc, const DataKey& key, std::string_view ad);

// A key by its id (KeyRing::Key or KeyRing::KeyById).
using KeyById = std::function<absl::StatusOr<DataKey>(int key_id)>;

// Every sealed string inside `doc` opened; other strings stay as they are.
// DATA_LOSS when one does not open.
template <typename Json>
absl::Status OpenStrings(Json& doc, const KeyById& key_by_id, std::string_view ad);

}  // namespace omniforge::seal
