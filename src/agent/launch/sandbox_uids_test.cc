#include "agent/launch/sandbox_uids.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace carve::launch {
namespace {

namespace fs = std::filesystem;

struct TempFile {
  TempFile() {
    std::string tmpl = (fs::temp_directory_path() / "sandbox-uids-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    path = dir + "/sandbox-uids";
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string dir;
  std::string path;
};

TEST(SandboxUids, GivesEachAccountItsOwnUidInFirstSeenOrder) {
  TempFile f;
  auto uids = SandboxUids::Open(f.path, 200000, 10);
  ASSERT_TRUE(uids.has_value());
  EXPECT_EQ(*uids->UidFor("222222222222"), 200000u);
  EXPECT_EQ(*uids->UidFor("111111111111"), 200001u);
  EXPECT_EQ(*uids->UidFor("222222222222"), 200000u);
}

TEST(SandboxUids, KeepsUidsAcrossReopening) {
  TempFile f;
  {
    auto uids = SandboxUids::Open(f.path, 300000, 10);
    ASSERT_TRUE(uids.has_value());
    ASSERT_TRUE(uids->UidFor("a").has_value());
    ASSERT_TRUE(uids->UidFor("b").has_value());
  }
  auto again = SandboxUids::Open(f.path, 300000, 10);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again->UidFor("b"), 300001u);
  EXPECT_EQ(*again->UidFor("c"), 300002u);
}

TEST(SandboxUids, RefusesAnAccountPastTheRangeAndAllocatesNothing) {
  TempFile f;
  auto uids = SandboxUids::Open(f.path, 200000, 1);
  ASSERT_TRUE(uids.has_value());
  ASSERT_TRUE(uids->UidFor("a").has_value());
  auto full = uids->UidFor("b");
  ASSERT_FALSE(full.has_value());
  EXPECT_EQ(full.error().code, ErrorCode::kResourceExhausted);
  auto reopened = SandboxUids::Open(f.path, 200000, 2);
  ASSERT_TRUE(reopened.has_value());
  EXPECT_EQ(*reopened->UidFor("b"), 200001u);
}

TEST(SandboxUids, RefusesRootAsTheBase) {
  TempFile f;
  EXPECT_FALSE(SandboxUids::Open(f.path, 0, 10).has_value());
}

TEST(SandboxUids, RefusesAFileWithADuplicateIndex) {
  TempFile f;
  std::ofstream(f.path) << "a 0\nb 0\n";
  auto uids = SandboxUids::Open(f.path, 200000, 10);
  ASSERT_FALSE(uids.has_value());
  EXPECT_EQ(uids.error().code, ErrorCode::kInvalidArgument);
}

TEST(SandboxUids, RefusesAnAccountThatIsNotAPlainName) {
  TempFile f;
  auto uids = SandboxUids::Open(f.path, 200000, 10);
  ASSERT_TRUE(uids.has_value());
  EXPECT_FALSE(uids->UidFor("../a").has_value());
  EXPECT_FALSE(uids->UidFor("a b").has_value());
}

}  // namespace
}  // namespace carve::launch
