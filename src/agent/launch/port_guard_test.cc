#include "agent/launch/port_guard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace carve::launch {
namespace {

using Argv = std::vector<std::string>;

// iptables as far as PortGuard uses it: chains of rules, -N failing on an existing chain, -C
// and -D failing on a missing rule, -w 5 required. Every call is recorded.
struct FakeIptables {
  std::map<std::string, std::vector<Argv>> chains{{"OUTPUT", {}}};
  std::vector<Argv> calls;
  int fail_inserts_after = -1;  // >= 0: that many -I succeed, then they fail

  CommandRunner Runner() {
    return [this](const Argv& argv) -> Result<CommandOutcome> { return Run(argv); };
  }

  Result<CommandOutcome> Run(const Argv& argv) {
    calls.push_back(argv);
    if (argv.size() < 5 || argv[0] != "/usr/sbin/iptables" || argv[1] != "-w" || argv[2] != "5") {
      return CommandOutcome{2, "bad invocation"};
    }
    const std::string& op = argv[3];
    const std::string& chain = argv[4];
    const Argv rule(argv.begin() + 5, argv.end());
    if (op == "-N") {
      if (chains.contains(chain)) return CommandOutcome{1, "Chain already exists."};
      chains[chain];
      return CommandOutcome{};
    }
    if (!chains.contains(chain)) return CommandOutcome{1, "No chain/target/match by that name."};
    auto& rules = chains[chain];
    if (op == "-F") {
      rules.clear();
      return CommandOutcome{};
    }
    if (op == "-I") {  // -I CHAIN 1 RULE...: at the top
      if (argv.size() < 6 || argv[5] != "1") return CommandOutcome{2, "only -I CHAIN 1"};
      if (fail_inserts_after == 0) return CommandOutcome{4, "iptables: Resource busy"};
      if (fail_inserts_after > 0) --fail_inserts_after;
      rules.insert(rules.begin(), Argv(argv.begin() + 6, argv.end()));
      return CommandOutcome{};
    }
    auto found = std::find(rules.begin(), rules.end(), rule);
    if (op == "-C") return CommandOutcome{found == rules.end() ? 1 : 0, ""};
    if (op == "-D") {
      if (found == rules.end()) return CommandOutcome{1, "Bad rule"};
      rules.erase(found);
      return CommandOutcome{};
    }
    if (op == "-A") {
      rules.push_back(rule);
      return CommandOutcome{};
    }
    return CommandOutcome{2, "unknown op"};
  }
};

Argv Rule(int port, const std::string& ids, Argv target) {
  Argv r = {"-p", "tcp",   "-m",          "conntrack", "--ctorigdstport", std::to_string(port),
            "-m", "owner", "--uid-owner", ids};
  r.insert(r.end(), target.begin(), target.end());
  return r;
}

const Argv kReturn = {"-j", "RETURN"};
const Argv kReset = {"-j", "REJECT", "--reject-with", "tcp-reset"};

// The chain's end: no tenant id out through a container bridge.
std::vector<Argv> Bridges() {
  std::vector<Argv> out;
  for (const char* bridge : {"podman+", "cni-podman+", "docker+"}) {
    out.push_back(
        {"-o", bridge, "-m", "owner", "--uid-owner", "200000-4294967294", "-j", "REJECT"});
  }
  return out;
}

// `rules`, then the bridge rules.
std::vector<Argv> Chain(std::vector<Argv> rules) {
  for (auto& b : Bridges()) rules.push_back(std::move(b));
  return rules;
}

TEST(PortGuard, MakesItsChainAndHooksItIntoOutputOnce) {
  FakeIptables ipt;
  auto g = PortGuard::Create("/usr/sbin/iptables", "CARVE-0000ABCD", 200000, ipt.Runner());
  ASSERT_TRUE(g.has_value()) << g.error().message;
  EXPECT_TRUE(ipt.chains.contains("CARVE-0000ABCD"));
  EXPECT_EQ(ipt.chains["OUTPUT"], (std::vector<Argv>{{"-j", "CARVE-0000ABCD"}}));
  // An agent's restart finds its chain: emptied, not hooked a second time.
  ASSERT_TRUE((*g)->Guard(40001, {200000, {1u << 30, 65536}}).ok());
  auto again = PortGuard::Create("/usr/sbin/iptables", "CARVE-0000ABCD", 200000, ipt.Runner());
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(ipt.chains["CARVE-0000ABCD"], Bridges());
  EXPECT_EQ(ipt.chains["OUTPUT"].size(), 1u);
}

TEST(PortGuard, LetsTheOwnersIdsThroughAndResetsEveryOtherTenantId) {
  FakeIptables ipt;
  auto g = PortGuard::Create("/usr/sbin/iptables", "CARVE-1", 200000, ipt.Runner());
  ASSERT_TRUE(g.has_value());
  ASSERT_TRUE((*g)->Guard(40001, {200003, {1073938432, 65536}}).ok());
  EXPECT_EQ(ipt.chains["CARVE-1"],
            Chain({Rule(40001, "200003", kReturn), Rule(40001, "1073938432-1074003967", kReturn),
                   Rule(40001, "200000-4294967294", kReset)}));
  // Without a container block (docker, or none): the process uid only. A new port's rules go
  // on top, the bridge rules stay last.
  ASSERT_TRUE((*g)->Guard(40002, {200004, {}}).ok());
  ASSERT_EQ(ipt.chains["CARVE-1"].size(), 8u);
  EXPECT_EQ(ipt.chains["CARVE-1"][0], Rule(40002, "200004", kReturn));
  EXPECT_EQ(ipt.chains["CARVE-1"][1], Rule(40002, "200000-4294967294", kReset));
  EXPECT_EQ(ipt.chains["CARVE-1"][2], Rule(40001, "200003", kReturn));
  EXPECT_EQ(ipt.chains["CARVE-1"][5], Bridges()[0]);
}

TEST(PortGuard, ReleaseRemovesOnlyThatPortsRulesAndGuardReplacesThem) {
  FakeIptables ipt;
  auto g = PortGuard::Create("/usr/sbin/iptables", "CARVE-1", 200000, ipt.Runner());
  ASSERT_TRUE(g.has_value());
  ASSERT_TRUE((*g)->Guard(40001, {200000, {}}).ok());
  ASSERT_TRUE((*g)->Guard(40002, {200001, {}}).ok());
  (*g)->Release(40001);
  EXPECT_EQ(ipt.chains["CARVE-1"],
            Chain({Rule(40002, "200001", kReturn), Rule(40002, "200000-4294967294", kReset)}));
  ASSERT_TRUE((*g)->Guard(40002, {200005, {}}).ok());  // the port changed hands
  EXPECT_EQ(ipt.chains["CARVE-1"],
            Chain({Rule(40002, "200005", kReturn), Rule(40002, "200000-4294967294", kReset)}));
  (*g)->Release(40002);
  (*g)->Release(40002);  // twice: nothing to do
  EXPECT_EQ(ipt.chains["CARVE-1"], Bridges());
}

TEST(PortGuard, AGuardThatFailsPartWayLeavesNothingAndSaysWhy) {
  FakeIptables ipt;
  auto g = PortGuard::Create("/usr/sbin/iptables", "CARVE-1", 200000, ipt.Runner());
  ASSERT_TRUE(g.has_value());
  ipt.fail_inserts_after = 1;  // the reset goes in (last first), the owner's RETURN does not
  Status s = (*g)->Guard(40001, {200000, {}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(s.error().message.find("Resource busy"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("--ctorigdstport 40001"), std::string::npos);
  EXPECT_EQ(ipt.chains["CARVE-1"], Bridges());
}

TEST(PortGuard, RefusesAChainNameIptablesWouldNot) {
  FakeIptables ipt;
  EXPECT_FALSE(PortGuard::Create("/usr/sbin/iptables", "carve lower", 200000, ipt.Runner()));
  EXPECT_FALSE(PortGuard::Create("/usr/sbin/iptables", std::string(29, 'A'), 200000, ipt.Runner()));
  EXPECT_TRUE(ipt.calls.empty());
}

TEST(PortGuard, ChainNamesAreStablePerDataDirAndDifferBetweenThem) {
  EXPECT_EQ(PortGuard::ChainFor("/var/lib/carve/nodes/a"),
            PortGuard::ChainFor("/var/lib/carve/nodes/a"));
  EXPECT_NE(PortGuard::ChainFor("/var/lib/carve/nodes/a"),
            PortGuard::ChainFor("/var/lib/carve/nodes/b"));
  EXPECT_EQ(PortGuard::ChainFor("x").size(), 14u);
  EXPECT_EQ(PortGuard::ChainFor("x").rfind("CARVE-", 0), 0u);
}

TEST(RunCommand, ReturnsTheStatusAndWhatTheProgramWroteToStderr) {
  auto out = RunCommand({"/bin/sh", "-c", "echo to-stdout; echo 'to stderr' >&2; exit 3"});
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->status, 3);
  EXPECT_EQ(out->error_output, "to stderr");
  auto missing = RunCommand({"/nonexistent/iptables"});
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->status, 127);
}

}  // namespace
}  // namespace carve::launch
