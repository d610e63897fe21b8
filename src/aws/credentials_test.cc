#include "aws/credentials.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>

namespace carve::aws {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "carve-cred-XXXXXX").string();
    EXPECT_NE(mkdtemp(t.data()), nullptr);
    path_ = t;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::filesystem::path path() const { return path_; }

 private:
  std::filesystem::path path_;
};

mode_t ModeOf(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(stat(p.c_str(), &st), 0);
  return st.st_mode & 0777;
}

TEST(Credentials, ParsesSectionsWithAccountIds) {
  auto c = Credentials::Parse(
      "# comment\n[default]\naws_access_key_id = AKIA1\naws_secret_access_key=s1\n"
      "carve_account_id = 111111111111\n\n[other]\n  aws_access_key_id=AKIA2 \n"
      "aws_secret_access_key = s2\nregion = us-west-2\n[no-keys]\nregion = x\n");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  ASSERT_EQ(c->all().size(), 2u);
  const std::optional<Credential> one = c->Find("AKIA1");
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->secret_access_key, "s1");
  EXPECT_EQ(one->account_id, "111111111111");
  EXPECT_EQ(c->Find("AKIA2")->account_id, kDefaultAccountId);
  EXPECT_EQ(c->Find("AKIA2")->profile, "other");
  EXPECT_FALSE(c->Find("AKIA3").has_value());
}

TEST(Credentials, ARoleMakesAnOperatorAndEverySectionWithoutOneIsATenant) {
  auto c = Credentials::Parse(
      "[default]\naws_access_key_id=AKIA1\naws_secret_access_key=s1\n"
      "[ops]\naws_access_key_id=AKIA2\naws_secret_access_key=s2\ncarve_role = operator\n"
      "[team]\naws_access_key_id=AKIA3\naws_secret_access_key=s3\ncarve_role=tenant\n");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_FALSE(c->Find("AKIA1")->operator_role);  // Roles are named: [default] is no exception.
  EXPECT_TRUE(c->Find("AKIA2")->operator_role);
  EXPECT_FALSE(c->Find("AKIA3")->operator_role);
}

TEST(Credentials, AFileFromBeforeRolesKeepsItsDefaultSectionAsTheOperator) {
  auto c = Credentials::Parse(
      "[default]\naws_access_key_id=AKIA1\naws_secret_access_key=s1\n"
      "[team]\naws_access_key_id=AKIA3\naws_secret_access_key=s3\n");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_TRUE(c->Find("AKIA1")->operator_role);
  EXPECT_FALSE(c->Find("AKIA3")->operator_role);
}

TEST(Credentials, RejectsAnUnknownRoleNamingTheLine) {
  auto c =
      Credentials::Parse("[a]\naws_access_key_id=K\naws_secret_access_key=S\ncarve_role = root\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("line 4: carve_role 'root'"), std::string::npos)
      << c.error().message;
}

TEST(Credentials, TheGeneratedFirstKeyIsTheOperatorsAndAnAddedAccountATenant) {
  TempDir dir;
  const auto file = dir.path() / "credentials";
  auto first = Credentials::LoadOrCreate(file);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  ASSERT_TRUE(AddAccount(file, "team", "222222222222").has_value());
  auto all = Credentials::Load(file);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  ASSERT_EQ(all->all().size(), 2u);
  EXPECT_TRUE(all->all()[0].operator_role);
  EXPECT_FALSE(all->all()[1].operator_role);
}

TEST(Credentials, AWatchedFileTakesARemovedKeyAndANewRoleWithoutARestart) {
  TempDir dir;
  const auto file = dir.path() / "credentials";
  const std::string a =
      "[a]\naws_access_key_id=AKIA1\naws_secret_access_key=s1\ncarve_role=operator\n";
  const std::string b = "[b]\naws_access_key_id=AKIA2\naws_secret_access_key=s2\n";
  std::ofstream(file) << a << b;
  auto c = Credentials::Load(file);
  ASSERT_TRUE(c.has_value()) << c.error().message;
  std::vector<std::string> outcomes;
  c->Watch(
      file,
      [&](const Status& s, size_t keys) {
        outcomes.push_back(s.ok() ? std::to_string(keys) : s.error().message);
      },
      std::chrono::milliseconds(0));
  EXPECT_TRUE(c->Find("AKIA2").has_value());
  std::ofstream(file, std::ios::trunc) << a;  // [b] revoked.
  EXPECT_FALSE(c->Find("AKIA2").has_value());
  ASSERT_TRUE(c->Find("AKIA1").has_value());
  std::ofstream(file, std::ios::trunc) << a << "[b]\naws_access_key_id=AKIA2\n";  // Broken.
  EXPECT_TRUE(c->Find("AKIA1").has_value());  // The last good keys hold.
  EXPECT_FALSE(c->Find("AKIA2").has_value());
  std::ofstream(file, std::ios::trunc) << a << b << "carve_role = operator\n";
  ASSERT_TRUE(c->Find("AKIA2").has_value());
  EXPECT_TRUE(c->Find("AKIA2")->operator_role);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0], "1");
  EXPECT_NE(outcomes[1].find("no aws_secret_access_key"), std::string::npos) << outcomes[1];
  EXPECT_EQ(outcomes[2], "2");
  // A copy holds the keys of the moment and watches nothing.
  Credentials copy = *c;
  std::ofstream(file, std::ios::trunc) << a;
  EXPECT_TRUE(copy.Find("AKIA2").has_value());
}

TEST(Credentials, RejectsBadAccountIdNamingTheLine) {
  auto c = Credentials::Parse(
      "[a]\naws_access_key_id=K\naws_secret_access_key=S\n"
      "carve_account_id = 12ab\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(c.error().message.find("line 4"), std::string::npos) << c.error().message;
}

TEST(Credentials, RejectsAKeyWithoutSecretAndDuplicateKeys) {
  EXPECT_FALSE(Credentials::Parse("[a]\naws_access_key_id=K\n").has_value());
  EXPECT_FALSE(Credentials::Parse("[a]\naws_access_key_id=K\naws_secret_access_key=S\n"
                                  "[b]\naws_access_key_id=K\naws_secret_access_key=T\n")
                   .has_value());
}

TEST(Credentials, FirstStartCreatesARandomDefaultKeyWithMode0600) {
  TempDir dir;
  auto file = dir.path() / "data" / "credentials";
  auto first = Credentials::LoadOrCreate(file);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_TRUE(first->created);
  EXPECT_EQ(ModeOf(file), 0600u);
  ASSERT_EQ(first->credentials.all().size(), 1u);
  const Credential c = first->credentials.all()[0];
  EXPECT_EQ(c.profile, "default");
  EXPECT_EQ(c.access_key_id.size(), 20u);
  EXPECT_EQ(c.access_key_id.substr(0, 4), "AKIA");
  EXPECT_EQ(c.secret_access_key.size(), 40u);
  EXPECT_EQ(c.account_id.size(), 12u);

  auto second = Credentials::LoadOrCreate(file);
  ASSERT_TRUE(second.has_value());
  EXPECT_FALSE(second->created);
  ASSERT_TRUE(second->credentials.Find(c.access_key_id).has_value());
  EXPECT_EQ(second->credentials.Find(c.access_key_id)->secret_access_key, c.secret_access_key);
}

TEST(Credentials, GeneratedKeysDiffer) {
  auto a = GenerateCredential("a");
  auto b = GenerateCredential("b");
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_NE(a->access_key_id, b->access_key_id);
  EXPECT_NE(a->secret_access_key, b->secret_access_key);
}

TEST(Credentials, AddAccountAppendsASeparateAccount) {
  TempDir dir;
  auto file = dir.path() / "credentials";
  ASSERT_TRUE(Credentials::LoadOrCreate(file).has_value());
  auto added = AddAccount(file, "tenant-b", "222222222222");
  ASSERT_TRUE(added.has_value()) << added.error().message;
  auto all = Credentials::Load(file);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  ASSERT_EQ(all->all().size(), 2u);
  EXPECT_EQ(all->Find(added->access_key_id)->account_id, "222222222222");
  EXPECT_NE(all->all()[0].account_id, "222222222222");
  EXPECT_EQ(ModeOf(file), 0600u);
  auto dup = AddAccount(file, "tenant-b");
  ASSERT_FALSE(dup.has_value());
  EXPECT_EQ(dup.error().code, ErrorCode::kAlreadyExists);
}

TEST(Credentials, TheAwsCliReadsTheFileAsIs) {
  TempDir dir;
  auto file = dir.path() / "credentials";
  auto created = Credentials::LoadOrCreate(file);
  ASSERT_TRUE(created.has_value());
  std::string cmd =
      "python3 -c 'import botocore.session as s; c = s.Session(profile=\"default\")"
      ".get_credentials(); print(c.access_key, c.secret_key)'";
  std::string env = "AWS_SHARED_CREDENTIALS_FILE=" + file.string() +
                    " AWS_CONFIG_FILE=/dev/null AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= ";
  FILE* p = popen((env + cmd).c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[256] = {};
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  ASSERT_EQ(pclose(p), 0);
  const Credential c = created->credentials.all()[0];
  EXPECT_EQ(std::string(buf, n), c.access_key_id + " " + c.secret_access_key + "\n");
}

}  // namespace
}  // namespace carve::aws
