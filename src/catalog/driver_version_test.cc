#include "catalog/driver_version.h"

#include <gtest/gtest.h>

namespace carve::catalog {
namespace {

TEST(DriverVersion, ParsesFullVersions) {
  auto v = DriverVersion::Parse("525.60.13");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 525);
  EXPECT_EQ(v->minor, 60);
  EXPECT_EQ(v->patch, 13);
  EXPECT_EQ(v->ToString(), "525.60.13");
}

TEST(DriverVersion, ParsesBranches) {
  auto v = DriverVersion::Parse("R510");
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (DriverVersion{510, 0, 0}));
  EXPECT_EQ(v->ToString(), "R510");
}

TEST(DriverVersion, OrdersNumerically) {
  EXPECT_LT(*DriverVersion::Parse("470.199.02"), *DriverVersion::Parse("R510"));
  EXPECT_LT(*DriverVersion::Parse("R525"), *DriverVersion::Parse("525.60.13"));
}

TEST(DriverVersion, RejectsGarbageNamingTheText) {
  for (const char* bad : {"", "R", "abc", "525..1", "525.1.2.3", "525.", "-1"}) {
    auto v = DriverVersion::Parse(bad);
    ASSERT_FALSE(v) << bad;
    EXPECT_EQ(v.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(v.error().message.find(std::string("'") + bad + "'"), std::string::npos);
  }
}

}  // namespace
}  // namespace carve::catalog
