// ServerApp assembled as `carve server` runs it: a temp data dir, port 0, the embedded agents of
// the default simulated fleet, and a signed client.
#include "app/server_app.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "protocol/signed_client.h"

namespace carve::app {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ServerAppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("carve-app-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    config_.data_dir = dir_.string();
    config_.listen_port = 0;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  ServerConfig config_;
};

TEST_F(ServerAppTest, StartsOnAFreePortWithItsLocalNodesRegisteredAndStopsCleanly) {
  auto app = ServerApp::Create(config_);
  ASSERT_TRUE(app.has_value()) << app.error().message;
  EXPECT_TRUE((*app)->credentials_created());
  struct stat st {};
  ASSERT_EQ(::stat((*app)->credentials_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto port = (*app)->Start();
  ASSERT_TRUE(port.has_value()) << port.error().message;
  EXPECT_GT(*port, 0);
  EXPECT_EQ((*app)->local_agents(), 4);

  auto key = protocol::LoadClientCredentials((*app)->credentials_file());
  ASSERT_TRUE(key.has_value());
  protocol::SignedClient client((*app)->url(), *key);
  // Start waits (bounded) for the local agents to register; on a loaded machine they may still
  // be on their way, so poll with a deadline rather than assume.
  Result<nlohmann::json> fleet = Unavailable("not asked yet");
  int ready = 0;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       ready < 4 && std::chrono::steady_clock::now() < deadline;) {
    fleet = client.Json("GET", "/v1/fleet");
    ASSERT_TRUE(fleet.has_value()) << fleet.error().message;
    ready = 0;
    for (const auto& n : (*fleet)["nodes"]) ready += n["ready"].get<bool>() ? 1 : 0;
    if (ready < 4) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(ready, 4);
  EXPECT_EQ((*fleet)["nodes"].size(), 4u);
  // The dashboard's Endpoints page in one read: nothing of this account's yet, and the history.
  auto view = client.Json("GET", "/v1/ui/endpoints");
  ASSERT_TRUE(view.has_value()) << view.error().message;
  EXPECT_TRUE((*view)["Endpoints"].empty()) << view->dump();
  EXPECT_TRUE((*view)["InferenceComponents"].empty());
  EXPECT_TRUE((*view)["History"].is_object());
  auto missing = client.Json("GET", "/v1/endpoints/nope/carve");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  (*app)->Stop();
  (*app)->Stop();  // Idempotent.
}

TEST_F(ServerAppTest, ASecondStartKeepsTheCredentialsAndTheStore) {
  {
    auto app = ServerApp::Create(config_);
    ASSERT_TRUE(app.has_value());
  }
  auto again = ServerApp::Create(config_);
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_FALSE((*again)->credentials_created());
}

TEST_F(ServerAppTest, AnUnreadableConfigNamesTheFlagAndTheFile) {
  config_.config_path = (dir_ / "no-such.yaml").string();
  auto app = ServerApp::Create(config_);
  ASSERT_FALSE(app.has_value());
  EXPECT_EQ(app.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(app.error().message, HasSubstr("--config " + config_.config_path));
}

TEST_F(ServerAppTest, ABadFleetSectionNamesTheKey) {
  fs::create_directories(dir_);
  const fs::path yaml = dir_ / "carve.yaml";
  std::ofstream(yaml)
      << "fleet:\n  nodes:\n    - instance_type: ml.p4d.24xlarge\n      count: -1\n";
  config_.config_path = yaml.string();
  auto app = ServerApp::Create(config_);
  ASSERT_FALSE(app.has_value());
  EXPECT_THAT(app.error().message, HasSubstr("fleet.nodes[0].count"));
}

// A second server on a data dir that one holds is refused, naming the lock and the holder, and
// the first keeps it; once the first is gone the directory is free again.
TEST_F(ServerAppTest, ASecondServerOnTheSameDataDirIsRefusedNamingTheHolder) {
  auto first = ServerApp::Create(config_);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  auto second = ServerApp::Create(config_);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(second.error().message, HasSubstr((dir_ / "server.lock").string()));
  EXPECT_THAT(second.error().message, HasSubstr("pid " + std::to_string(::getpid())));
  first->reset();
  EXPECT_TRUE(ServerApp::Create(config_).has_value());
}

// Others may read the secret keys: refused with the chmod that fixes it, and the file untouched.
TEST_F(ServerAppTest, ACredentialsFileOthersCanReadIsRefusedAndLeftAlone) {
  { ASSERT_TRUE(ServerApp::Create(config_).has_value()); }
  const fs::path creds = dir_ / "credentials";
  std::ifstream before_in(creds);
  const std::string before((std::istreambuf_iterator<char>(before_in)), {});
  ASSERT_EQ(::chmod(creds.c_str(), 0644), 0);
  auto app = ServerApp::Create(config_);
  ASSERT_FALSE(app.has_value());
  EXPECT_EQ(app.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(app.error().message, HasSubstr("has mode 0644"));
  EXPECT_THAT(app.error().message, HasSubstr("chmod 600 " + fs::absolute(creds).string()));
  std::ifstream after_in(creds);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(after_in)), {}), before);
}

// A damaged database is an error naming the file and what to do, never a silent reset.
TEST_F(ServerAppTest, ACorruptDatabaseIsRefusedNamingTheFileAndKeptAsItIs) {
  fs::create_directories(dir_);
  const fs::path db = dir_ / "carve.db";
  const std::string garbage(8192, 'x');
  std::ofstream(db, std::ios::binary) << garbage;
  auto app = ServerApp::Create(config_);
  ASSERT_FALSE(app.has_value());
  EXPECT_THAT(app.error().message, HasSubstr("cannot open the database " + db.string()));
  EXPECT_THAT(app.error().message, HasSubstr("move it away"));
  std::ifstream in(db, std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), garbage);
}

}  // namespace
}  // namespace carve::app
