#include "services/orchestrator/api/request_fields.h"

#include "google/protobuf/unknown_field_set.h"
#include "libs/core/text.h"

namespace omniforge::orchestrator {
namespace {

// Nested messages are followed this deep at most (the public requests nest
// one level).
constexpr int kMaxDepth = 8;

std::string Walk(const google::protobuf::Descriptor& type, std::string_view bytes,
                 const std::string& prefix, int depth) {
  google::protobuf::UnknownFieldSet fields;
  if (depth > kMaxDepth || !fields.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return "";
  }
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& field = fields.field(i);
    if (field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) continue;
    const google::protobuf::FieldDescriptor* described = type.FindFieldByNumber(field.number());
    if (described == nullptr) continue;
    std::string path = prefix + described->name();
    if (described->type() == google::protobuf::FieldDescriptor::TYPE_STRING &&
        !core::IsValidUtf8(field.length_delimited())) {
      return path;
    }
    if (described->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
      std::string inner =
          Walk(*described->message_type(), field.length_delimited(), path + ".", depth + 1);
      if (!inner.empty()) return inner;
    }
  }
  return "";
}

}  // namespace

std::string InvalidUtf8Field(const google::protobuf::Descriptor& type, std::string_view bytes) {
  return Walk(type, bytes, "", 0);
}

}  // namespace omniforge::orchestrator
