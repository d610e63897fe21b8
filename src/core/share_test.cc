// Every rule of the seed's mGPU text, each with a valid and an invalid value.
#include "core/share.h"

#include <gtest/gtest.h>

namespace carve::core {
namespace {

void ExpectRejected(const Result<MgpuShare>& r, std::string_view fragment) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find(fragment), std::string::npos) << r.error().message;
}

// Rule: for a fraction of one card, core is an integer from 5 to 100.
TEST(ValidateShare, AcceptsCoreAtTheMinimumOfFive) {
  auto r = ValidateShare(5, 256);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->core_percent, 5);
  EXPECT_FALSE(r->whole_cards());
  EXPECT_EQ(r->card_count(), 1);
}

TEST(ValidateShare, RejectsCoreBelowFiveNamingTheRule) {
  ExpectRejected(ValidateShare(4, 1000), "core=4: core must be at least 5");
  ExpectRejected(ValidateShare(0, {}), "core=0");
  ExpectRejected(ValidateShare(-30, {}), "core=-30");
}

TEST(ValidateShare, AcceptsCoreOfExactlyOneHundredAsOneWholeCard) {
  auto r = ValidateShare(100, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(r->whole_cards());
  EXPECT_EQ(r->card_count(), 1);
}

// Rule: at 100 or above, only integer multiples of 100 (200 = two full cards).
TEST(ValidateShare, AcceptsMultiplesOfOneHundredAsWholeCards) {
  auto r = ValidateShare(200, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->card_count(), 2);
  EXPECT_EQ(r->ToString(), "core=200% (2 whole cards)");
}

TEST(ValidateShare, RejectsCoreAboveOneHundredThatIsNotAMultiple) {
  ShareParamNames names{"emr.serverless.mgpu.core", "emr.serverless.mgpu.memory"};
  auto r = ValidateShare(150, {}, names);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "emr.serverless.mgpu.core=150: above 100 only whole multiples of 100 are allowed "
            "(200 = two full cards)");
  ExpectRejected(ValidateShare(101, {}), "core=101: above 100");
}

// Rule: memory is at least 256 MiB.
TEST(ValidateShare, AcceptsMemoryOfExactly256Mib) {
  auto r = ValidateShare(30, 256);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->memory_mib, 256);
}

TEST(ValidateShare, RejectsMemoryBelow256Mib) {
  ExpectRejected(ValidateShare(30, 255), "memory=255: memory must be at least 256 MiB");
}

// Rule: memory cannot be set when core is 100 or above.
TEST(ValidateShare, AcceptsMemoryWithAFractionalCoreOf99) {
  auto r = ValidateShare(99, 4096);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->ToString(), "core=99% memory=4096 MiB");
}

TEST(ValidateShare, RejectsMemoryWhenCoreIsOneHundredOrMore) {
  ExpectRejected(ValidateShare(100, 1000), "memory=1000: memory cannot be set when core is 100");
  ExpectRejected(ValidateShare(300, 1000), "memory=1000: memory cannot be set");
}

TEST(ValidateShare, LeavesMemoryUnsetForAProportionalShare) {
  auto r = ValidateShare(30, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_FALSE(r->memory_mib.has_value());
}

TEST(ValidateShare, RejectsAbsurdlyLargeValuesInsteadOfOverflowing) {
  ExpectRejected(ValidateShare(int64_t{100} * 1'000'000'000, {}), "at most");
  ExpectRejected(ValidateShare(50, int64_t{1} << 50), "at most");
}

}  // namespace
}  // namespace carve::core
