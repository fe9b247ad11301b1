// Sealed values that fit a text or jsonb column.
//
// A value is sealed with one of the tenant's data keys (KeyRing) and written
// as `ofs1:<key id>:<base64 of nonce || ciphertext || tag>`: a text column
// holds it as is, a jsonb column as a JSON string. The associated data names
// the table, the row and the column (SealedAd), so a value copied to another
// row, column or tenant does not open. Rows written before a column was
// sealed hold the plaintext, which Open returns unchanged.
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/seal/key_ring.h"

namespace omniforge::seal {

// "<table>|<tenant>|<row>|<column>".
std::string SealedAd(std::string_view table, std::string_view tenant, std::string_view row,
                     std::string_view column);

// True when `text` has the sealed form (it may still fail to open).
bool IsSealedText(std::string_view text);

// `plaintext` sealed with `key`, in the text form.
std::string SealText(const DataKey& key, std::string_view plaintext, std::string_view ad);

// The id of the key that sealed `text`; 0 when it is not a well-formed
// sealed value.
int SealedKeyId(std::string_view text);

// The plaintext of a sealed value opened with `key` (the key SealedKeyId
// names); a value not in the sealed form is returned as it is. DATA_LOSS
// when it does not open.
absl::StatusOr<std::string> OpenTextWith(const DataKey& key, std::string_view text,
                                         std::string_view ad);

// The plaintext of a sealed value, reading its key inside the caller's
// tenant transaction when not cached; a value not in the sealed form is
// returned as it is (a row from before sealing). DATA_LOSS when a sealed
// value does not open (tampered, moved, or its key is gone).
absl::StatusOr<std::string> OpenText(KeyRing& keys, pqxx::work& tx, const std::string& tenant,
                                     std::string_view text, std::string_view ad);

// The same for a jsonb column's text (`column::text`): a sealed value is a
// JSON string holding the sealed form, and its plaintext is the JSON
// document that was sealed. Anything else is returned as it is.
absl::StatusOr<std::string> OpenJson(KeyRing& keys, pqxx::work& tx, const std::string& tenant,
                                     std::string_view json_text, std::string_view ad);

// OpenJson with the key the value names already at hand.
absl::StatusOr<std::string> OpenJsonWith(const DataKey& key, std::string_view json_text,
                                         std::string_view ad);

// A JSON document sealed for a jsonb column: the sealed form as a JSON string.
std::string SealJson(const DataKey& key, std::string_view json_text, std::string_view ad);

// Seals the columns of one row (table, tenant, row id) with one key. An
// empty text stays empty: it holds nothing to hide.
class RowSealer {
 public:
  RowSealer(const DataKey& key, std::string table, std::string tenant, std::string row)
      : key_(key), table_(std::move(table)), tenant_(std::move(tenant)), row_(std::move(row)) {}

  std::string Text(std::string_view column, std::string_view plaintext) const;
  // A JSON document for a jsonb column.
  std::string Json(std::string_view column, std::string_view json_text) const;

 private:
  const DataKey& key_;
  std::string table_, tenant_, row_;
};

// Opens the columns of one row inside the caller's tenant transaction. A
// column that fails to open reads as empty and its error is kept: check
// status() once the row is read.
class RowOpener {
 public:
  RowOpener(KeyRing& keys, pqxx::work& tx, std::string table, std::string tenant, std::string row)
      : keys_(keys),
        tx_(tx),
        table_(std::move(table)),
        tenant_(std::move(tenant)),
        row_(std::move(row)) {}

  std::string Text(std::string_view column, std::string_view stored);
  // A jsonb column's text; `empty` when it fails to open.
  std::string Json(std::string_view column, std::string_view stored,
                   std::string_view empty = "null");

  const absl::Status& status() const { return status_; }

 private:
  KeyRing& keys_;
  pqxx::work& tx_;
  std::string table_, tenant_, row_;
  absl::Status status_;
};

}  // namespace omniforge::seal
