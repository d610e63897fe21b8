#include "common/result.h"

#include <gtest/gtest.h>

#include <memory>

#include "common/fake_clock.h"
#include "common/ids.h"

namespace carve {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  CARVE_ASSIGN_OR_RETURN(int h, Half(x));
  CARVE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  CARVE_RETURN_IF_ERROR(Half(x));
  return OkStatus();
}

TEST(Result, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message, "odd: 3");
}

TEST(Result, ReturnIfErrorTurnsAValueErrorIntoAStatus) {
  EXPECT_TRUE(CheckEven(4).ok());
  Status s = CheckEven(5);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "odd: 5");
}

TEST(Result, HoldsMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r);
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(Result, ValueOrFallsBackOnError) {
  EXPECT_EQ(Half(3).value_or(-1), -1);
  EXPECT_EQ(Half(4).value_or(-1), 2);
}

TEST(ErrorCodeName, NamesEveryCode) {
  EXPECT_EQ(ErrorCodeName(ErrorCode::kResourceExhausted), "ResourceExhausted");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kUnimplemented), "Unimplemented");
}

TEST(StrongId, ComparesByValue) {
  EXPECT_EQ(GpuIndex{3}, GpuIndex{3});
  EXPECT_LT(GpuIndex{1}, GpuIndex{2});
  EXPECT_EQ(std::hash<NodeId>{}(NodeId{"a"}), std::hash<std::string>{}("a"));
}

TEST(FakeClock, MovesOnlyWhenAdvanced) {
  FakeClock clock(1000);
  auto t0 = clock.Now();
  EXPECT_EQ(clock.Now(), t0);
  clock.Advance(std::chrono::milliseconds(250));
  EXPECT_EQ(clock.Now() - t0, std::chrono::milliseconds(250));
  EXPECT_EQ(clock.UnixMillis(), 1250);
}

}  // namespace
}  // namespace carve
