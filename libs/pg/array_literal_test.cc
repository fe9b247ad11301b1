#include "libs/pg/array_literal.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "tests/support/test_database.h"

namespace omniforge::pg {
namespace {

// Sends the literal as a statement parameter and reads the elements back
// the way the batch functions do, with unnest.
std::vector<std::optional<std::string>> RoundTrip(pqxx::connection& conn, const ArrayLiteral& a,
                                                  const std::string& type) {
  pqxx::nontransaction tx(conn);
  pqxx::result rows = tx.exec_params(
      "SELECT x::text FROM unnest($1::" + type + "[]) WITH ORDINALITY AS u(x, n) ORDER BY n",
      a.Text());
  std::vector<std::optional<std::string>> out;
  for (const auto& row : rows) {
    if (row[0].is_null()) {
      out.emplace_back();
    } else {
      out.emplace_back(row[0].as<std::string>());
    }
  }
  return out;
}

class ArrayLiteralTest : public ::testing::Test {
 protected:
  testing::TestDatabase db_;
  pqxx::connection conn_{db_.dsn()};
};

TEST_F(ArrayLiteralTest, TextComesBackExactlyWhateverItHolds) {
  const std::vector<std::string> texts = {
      "",     "plain",    "comma, and {braces}", "\"quoted\"", "back\\slash\\",
      "NULL", " spaced ", "line\nbreak\ttab",    "ünïcødé ✓",  "{\"json\": [1, 2]}"};
  ArrayLiteral a;
  for (const std::string& t : texts) a.Add(t);
  a.AddNull();
  const auto back = RoundTrip(conn_, a, "text");
  ASSERT_EQ(back.size(), texts.size() + 1);
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_TRUE(back[i].has_value()) << i;
    EXPECT_EQ(*back[i], texts[i]) << i;
  }
  EXPECT_FALSE(back.back().has_value());  // NULL, not the text "NULL"
}

TEST_F(ArrayLiteralTest, BytesComeBackExactly) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte += static_cast<char>(b);
  ArrayLiteral a;
  a.AddBytes(every_byte);
  a.AddBytes("");
  pqxx::nontransaction tx(conn_);
  pqxx::result rows = tx.exec_params(
      "SELECT x FROM unnest($1::bytea[]) WITH ORDINALITY AS u(x, n) ORDER BY n", a.Text());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(pqxx::binarystring(rows[0][0]).str(), every_byte);
  EXPECT_EQ(pqxx::binarystring(rows[1][0]).str(), "");
}

TEST_F(ArrayLiteralTest, NumbersAndTypedElements) {
  ArrayLiteral numbers;
  numbers.Add(int64_t{-9007199254740993});
  numbers.Add(int64_t{0});
  numbers.AddNull();
  EXPECT_EQ(RoundTrip(conn_, numbers, "bigint"),
            (std::vector<std::optional<std::string>>{"-9007199254740993", "0", std::nullopt}));
  ArrayLiteral json;
  json.Add(R"({"a": "x,\"y\"}", "b": [1, {}]})");
  EXPECT_EQ(RoundTrip(conn_, json, "jsonb"),
            (std::vector<std::optional<std::string>>{R"({"a": "x,\"y\"}", "b": [1, {}]})"}));
  EXPECT_EQ(RoundTrip(conn_, ArrayLiteral(), "uuid").size(), 0u);
}

}  // namespace
}  // namespace omniforge::pg
