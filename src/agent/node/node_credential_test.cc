// The node-credential file's server pins (node_credential.h): kept with the credential, read on
// every start, replaced only when the operator names new ones. Joining itself, against a real TLS
// server, is tests/integration/tls_test.py.
#include "agent/node/node_credential.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace carve::agent::node {
namespace {
namespace fs = std::filesystem;

const std::string kPinA = "sha256:" + std::string(64, 'a');
const std::string kPinB = "sha256:" + std::string(64, 'b');

class NodeCredentialFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "carve-node-cred-XXXXXX").string();
    ASSERT_NE(mkdtemp(t.data()), nullptr);
    dir_ = t;
    file_ = (dir_ / "node-credential").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const nlohmann::json& j) {
    std::ofstream(file_) << j.dump();
    fs::permissions(file_, fs::perms::owner_read | fs::perms::owner_write);
  }
  nlohmann::json Read() const {
    std::ifstream in(file_);
    std::ostringstream text;
    text << in.rdbuf();
    return nlohmann::json::parse(text.str());
  }
  fs::path dir_;
  std::string file_;
};

// No server is reachable at this URL: a start that had to join would fail, so each answer below
// came from the file.
const std::vector<std::string> kNowhere = {"https://127.0.0.1:1"};

TEST_F(NodeCredentialFileTest, ALaterStartReadsThePinsKeptWithTheCredential) {
  Write({{"node_id", "n1"}, {"credential", "carve-node.x.y"}, {"server_cert_sha256", {kPinA}}});
  auto held = LoadOrJoin(file_, kNowhere, "", "n1");
  ASSERT_TRUE(held.has_value()) << held.error().message;
  EXPECT_EQ(held->credential, "carve-node.x.y");
  EXPECT_EQ(held->server_pins, std::vector<std::string>{kPinA});
}

TEST_F(NodeCredentialFileTest, AFileWithoutPinsIsAPlainOrCaTrustedServersCredential) {
  Write({{"node_id", "n1"}, {"credential", "carve-node.x.y"}});
  auto held = LoadOrJoin(file_, kNowhere, "", "n1");
  ASSERT_TRUE(held.has_value()) << held.error().message;
  EXPECT_TRUE(held->server_pins.empty());
}

// The server's key changed (or the node joined before TLS): the operator names the new pin once.
TEST_F(NodeCredentialFileTest, PinsGivenToALaterStartReplaceTheKeptOnesInTheFile) {
  Write({{"node_id", "n1"}, {"credential", "carve-node.x.y"}, {"server_cert_sha256", {kPinA}}});
  auto held = LoadOrJoin(file_, kNowhere, "", "n1", {.pins = {kPinB}});
  ASSERT_TRUE(held.has_value()) << held.error().message;
  EXPECT_EQ(held->server_pins, std::vector<std::string>{kPinB});
  EXPECT_EQ(Read()["server_cert_sha256"], nlohmann::json({kPinB}));
  EXPECT_EQ(Read()["credential"], "carve-node.x.y");
  EXPECT_EQ(fs::status(file_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(NodeCredentialFileTest, APinThatIsNotOneIsRefusedNamingTheFile) {
  Write({{"node_id", "n1"}, {"credential", "carve-node.x.y"}, {"server_cert_sha256", {"md5:0"}}});
  auto held = LoadOrJoin(file_, kNowhere, "", "n1");
  ASSERT_FALSE(held.has_value());
  EXPECT_EQ(held.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(held.error().message.find(file_), std::string::npos) << held.error().message;
}

}  // namespace
}  // namespace carve::agent::node
