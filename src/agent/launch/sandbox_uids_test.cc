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

TEST(SandboxUids, GivesEachAccountsContainersTheirOwnBlockAboveTheProcessRange) {
  TempFile f;
  auto uids = SandboxUids::Open(f.path, 200000, 10, 1u << 30);
  ASSERT_TRUE(uids.has_value());
  ASSERT_TRUE(uids->UidFor("a").has_value());
  auto b = uids->ContainerIdsFor("b");  // allocates b's index, 1, as UidFor would
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->first, (1u << 30) + 65536u);
  EXPECT_EQ(b->count, 65536u);
  EXPECT_EQ(*uids->UidFor("b"), 200001u);
  EXPECT_EQ(uids->ContainerIdsFor("a")->first, 1u << 30);
}

TEST(SandboxUids, RefusesAContainerBlockPastTheLastUid) {
  TempFile f;
  const uint32_t base = 0xFFFFFFFEu - 2 * 65536;  // room for index 0 and 1 only
  auto uids = SandboxUids::Open(f.path, 200000, 10, base);
  ASSERT_TRUE(uids.has_value());
  EXPECT_TRUE(uids->ContainerIdsFor("a").has_value());
  EXPECT_TRUE(uids->ContainerIdsFor("b").has_value());
  auto c = uids->ContainerIdsFor("c");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(c.error().message.find("--sandbox-container-uid-base"), std::string::npos);
}

TEST(SandboxUids, RefusesAContainerBaseInsideTheProcessRange) {
  TempFile f;
  auto inside = SandboxUids::Open(f.path, 200000, 10, 200009);
  ASSERT_FALSE(inside.has_value());
  EXPECT_NE(inside.error().message.find("container uid base 200009"), std::string::npos);
  EXPECT_TRUE(SandboxUids::Open(f.path, 200000, 10, 200010).has_value());
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
