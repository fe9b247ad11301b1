// In a ThreadSanitizer build, a map field filled here (inline code compiled
// with TSan) is measured, serialized and parsed by Debian's libprotobuf
// (built without it): both must agree on its layout
// (testing/tsan_protobuf_abi.h). Without that header this test crashed.
#include <google/protobuf/struct.pb.h>
#include <gtest/gtest.h>

#include <string>

namespace omniforge::core {
namespace {

TEST(TsanProtobufAbiTest, AMapFieldFilledHereIsSerializedAndParsedByTheLibrary) {
  google::protobuf::Struct metadata;
  (*metadata.mutable_fields())["source"].set_string_value("web");
  (*metadata.mutable_fields())["attempt"].set_number_value(3);
  const size_t size = metadata.ByteSizeLong();
  std::string wire;
  ASSERT_TRUE(metadata.SerializeToString(&wire));
  EXPECT_EQ(wire.size(), size);
  google::protobuf::Struct back;
  ASSERT_TRUE(back.ParseFromString(wire));
  ASSERT_EQ(back.fields().size(), 2u);
  EXPECT_EQ(back.fields().at("source").string_value(), "web");
  EXPECT_EQ(back.fields().at("attempt").number_value(), 3);
}

}  // namespace
}  // namespace omniforge::core
