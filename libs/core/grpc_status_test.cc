#include "libs/core/grpc_status.h"

#include <gtest/gtest.h>

namespace omniforge::core {
namespace {

// Every code keeps its meaning and its message across the wire, both ways.
TEST(GrpcStatusTest, EveryCodeAndItsMessageCrossBothWays) {
  for (int code = 1; code <= 16; ++code) {
    SCOPED_TRACE(code);
    const absl::Status inside(static_cast<absl::StatusCode>(code), "conversation c1 not found");
    const grpc::Status wire = ToGrpcStatus(inside);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(wire.error_message(), "conversation c1 not found");
    const absl::Status back = FromGrpcStatus(wire);
    EXPECT_EQ(back, inside);
  }
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("x")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcStatus(absl::UnauthenticatedError("x")).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "busy")).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(GrpcStatusTest, OkIsOkAndCarriesNoMessage) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).error_message().empty());
}

}  // namespace
}  // namespace omniforge::core
