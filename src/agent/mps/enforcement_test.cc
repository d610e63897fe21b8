#include "agent/mps/enforcement.h"

#include <gtest/gtest.h>

namespace carve::agent::mps {
namespace {

TEST(Enforcement, DefaultsToTheInterposer) {
  EXPECT_EQ(*ParseEnforcement(""), Enforcement::kInterposer);
}

TEST(Enforcement, NamesRoundTrip) {
  for (Enforcement e : {Enforcement::kInterposer, Enforcement::kMps, Enforcement::kNone}) {
    EXPECT_EQ(*ParseEnforcement(EnforcementName(e)), e);
  }
}

TEST(Enforcement, AnUnknownValueNamesTheAcceptedOnes) {
  auto r = ParseEnforcement("hami");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("'hami' is not one of 'interposer'"), std::string::npos);
}

}  // namespace
}  // namespace carve::agent::mps
