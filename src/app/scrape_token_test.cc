#include "app/scrape_token.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <thread>

namespace carve::app {
namespace {
namespace fs = std::filesystem;

class ScrapeTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "carve-scrape-XXXXXX").string();
    ASSERT_NE(mkdtemp(t.data()), nullptr);
    dir_ = t;
    file_ = dir_ / "scrape-token";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Read() {
    std::ifstream in(file_);
    std::string token;
    in >> token;
    return token;
  }
  void Write(const std::string& text) {
    std::ofstream(file_, std::ios::trunc) << text;
    fs::permissions(file_, fs::perms::owner_read | fs::perms::owner_write);
  }
  fs::path dir_;
  fs::path file_;
};

TEST_F(ScrapeTokenTest, TheFirstStartWritesAPrivateRandomTokenThatMatchesOnlyItself) {
  auto t = ScrapeToken::OpenOrCreate(file_);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(file_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string token = Read();
  EXPECT_EQ(token.size(), 64u);
  EXPECT_TRUE((*t)->Matches(token));
  EXPECT_FALSE((*t)->Matches(token.substr(0, 63)));
  EXPECT_FALSE((*t)->Matches(token + "x"));
  EXPECT_FALSE((*t)->Matches(""));
  std::string other = token;
  other[10] = other[10] == 'a' ? 'b' : 'a';
  EXPECT_FALSE((*t)->Matches(other));
}

TEST_F(ScrapeTokenTest, ARotatedTokenTakesEffectWithoutARestart) {
  Write(std::string(40, 'a') + "\n");
  auto t = ScrapeToken::OpenOrCreate(file_);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_TRUE((*t)->Matches(std::string(40, 'a')));
  Write(std::string(41, 'b') + "\n");  // Another size, so the change is seen whatever the clock.
  EXPECT_FALSE((*t)->Matches(std::string(40, 'a')));
  EXPECT_TRUE((*t)->Matches(std::string(41, 'b')));
}

TEST_F(ScrapeTokenTest, AShortOrSharedTokenFileIsRefusedNamingTheFile) {
  Write("short\n");
  auto t = ScrapeToken::OpenOrCreate(file_);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("scrape-token: the scrape token is 5 characters"),
            std::string::npos)
      << t.error().message;
  Write(std::string(40, 'a'));
  fs::permissions(file_, fs::perms::others_read, fs::perm_options::add);
  t = ScrapeToken::OpenOrCreate(file_);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("chmod 600"), std::string::npos) << t.error().message;
}

TEST_F(ScrapeTokenTest, AFileBrokenAfterStartRefusesEveryToken) {
  Write(std::string(40, 'a'));
  auto t = ScrapeToken::OpenOrCreate(file_);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  Write("tiny");
  EXPECT_FALSE((*t)->Matches("tiny"));
  EXPECT_FALSE((*t)->Matches(std::string(40, 'a')));
}

}  // namespace
}  // namespace carve::app
