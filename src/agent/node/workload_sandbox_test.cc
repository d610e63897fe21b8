#include "agent/node/workload_sandbox.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace carve::agent::node {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "workload-sandbox-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

protocol::WorkloadDesired Task(const std::string& account) {
  protocol::WorkloadDesired w;
  w.id = account + "/job-1/0";
  w.kind = protocol::WorkloadKind::kTask;
  w.name = "job-1";
  w.command = {"sh", "-c", "id"};
  return w;
}

launch::LaunchRequest Request(const std::string& data_dir) {
  return {{"sh", "-c", "id"},
          {},
          "",
          data_dir + "/logs/job-1/copy-0/stdout.log",
          data_dir + "/logs/job-1/copy-0/stderr.log"};
}

std::unique_ptr<WorkloadSandbox> Make(launch::SandboxMode mode, const std::string& data_dir,
                                      const std::string& search_path) {
  SandboxOptions o;
  o.mode = mode;
  auto s = WorkloadSandbox::Create(o, data_dir, search_path);
  EXPECT_TRUE(s.has_value());
  return s ? std::move(s).value() : nullptr;
}

// A sandbox in required mode over this host's own tools (its PATH), with the uid range given:
// what the tests that need a real sandbox start from (each skips where the host cannot).
std::unique_ptr<WorkloadSandbox> OnThisHost(
    const std::string& data_dir, uint32_t uid_base,
    uint32_t container_uid_base = launch::kDefaultContainerUidBase) {
  SandboxOptions o;
  o.uid_base = uid_base;
  o.container_uid_base = container_uid_base;
  o.mode = launch::SandboxMode::kRequired;
  const char* path = std::getenv("PATH");
  auto s = WorkloadSandbox::Create(o, data_dir, path != nullptr ? path : "/usr/bin:/bin");
  EXPECT_TRUE(s.has_value());
  return s ? std::move(s).value() : nullptr;
}

TEST(WorkloadSandbox, AutoWithoutASandboxRunsOnlyTheFirstAccount) {
  TempDir d;
  auto s = Make(launch::SandboxMode::kAuto, d.path, "/nonexistent");
  ASSERT_FALSE(s->active());
  auto first = s->Wrap(Task("111111111111"), d.path + "/w", {}, Request(d.path));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->argv, (std::vector<std::string>{"sh", "-c", "id"}));
  auto second = s->Wrap(Task("222222222222"), d.path + "/w", {}, Request(d.path));
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(second.error().message.find("222222222222"), std::string::npos);
  EXPECT_NE(second.error().message.find("first account that ran here, 111111111111"),
            std::string::npos)
      << second.error().message;
  EXPECT_TRUE(s->Wrap(Task("111111111111"), d.path + "/w", {}, Request(d.path)).has_value());
}

TEST(WorkloadSandbox, RequiredWithoutASandboxRefusesEveryProcess) {
  TempDir d;
  auto s = Make(launch::SandboxMode::kRequired, d.path, "/nonexistent");
  auto r = s->Wrap(Task("111111111111"), d.path + "/w", {}, Request(d.path));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("--sandbox required"), std::string::npos) << r.error().message;
}

TEST(WorkloadSandbox, OffLeavesTheRequestAsItIs) {
  TempDir d;
  auto s = Make(launch::SandboxMode::kOff, d.path, "/nonexistent");
  for (const char* account : {"111111111111", "222222222222"}) {
    auto r = s->Wrap(Task(account), d.path + "/w", {}, Request(d.path));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->argv, (std::vector<std::string>{"sh", "-c", "id"}));
  }
}

TEST(WorkloadSandbox, LeavesAnImageToTheContainerRuntimeWhereItCannotSandbox) {
  TempDir d;
  auto s = Make(launch::SandboxMode::kRequired, d.path, "/nonexistent");
  protocol::WorkloadDesired w = Task("111111111111");
  w.command.clear();
  w.image = "registry.example/model:1";
  launch::LaunchRequest r = Request(d.path);
  r.argv = {"podman", "run", "--rm", "--", w.image, "serve"};
  auto wrapped = s->Wrap(w, d.path + "/w", {}, r);
  ASSERT_TRUE(wrapped.has_value());
  EXPECT_EQ(wrapped->argv, r.argv);
}

// On a host that sandboxes, podman runs a container in a user namespace: its ids, root included,
// map onto the account's own block of host ids, above the process range. The options go before
// the "--" that ends them, so the image stays an operand.
TEST(WorkloadSandbox, MapsAPodmanContainersIdsOntoTheAccountsBlock) {
  TempDir d;
  auto s = OnThisHost(d.path, 220000, 1u << 30);
  ASSERT_TRUE(s);
  if (!s->active()) GTEST_SKIP() << "this host cannot sandbox (not root, or no bwrap)";
  protocol::WorkloadDesired w = Task("111111111111");
  w.command.clear();
  w.image = "registry.example/model:1";
  launch::LaunchRequest r = Request(d.path);
  r.argv = {"/usr/bin/podman", "run", "--rm", "--", w.image, "serve"};
  auto a = s->Wrap(w, d.path + "/w", {}, r);
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->argv, (std::vector<std::string>{
                         "/usr/bin/podman", "run", "--rm", "--uidmap=0:1073741824:65536",
                         "--gidmap=0:1073741824:65536", "--", w.image, "serve"}));
  w.id = "222222222222/ic/1";
  auto b = s->Wrap(w, d.path + "/w", {}, r);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->argv[3], "--uidmap=0:1073807360:65536");  // the next block, 2^30 + 65536
  EXPECT_EQ(b->argv[4], "--gidmap=0:1073807360:65536");
  r.argv = {"podman", "run", w.image};
  EXPECT_EQ(s->Wrap(w, d.path + "/w", {}, r).error().code, ErrorCode::kInternal);
}

// docker has no per-container user namespace: its container's program runs as the account's
// process uid, with no capabilities.
TEST(WorkloadSandbox, RunsADockerContainerAsTheAccountsUidWithoutCapabilities) {
  TempDir d;
  auto s = OnThisHost(d.path, 220000);
  ASSERT_TRUE(s);
  if (!s->active()) GTEST_SKIP() << "this host cannot sandbox (not root, or no bwrap)";
  protocol::WorkloadDesired w = Task("111111111111");
  w.command.clear();
  w.image = "registry.example/model:1";
  launch::LaunchRequest r = Request(d.path);
  r.argv = {"docker", "run", "--rm", "--", w.image, "serve"};
  auto a = s->Wrap(w, d.path + "/w", {}, r);
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->argv, (std::vector<std::string>{"docker", "run", "--rm", "--user=220000:220000",
                                               "--cap-drop=ALL", "--", w.image, "serve"}));
  w.id = "222222222222/ic/1";
  auto b = s->Wrap(w, d.path + "/w", {}, r);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->argv[3], "--user=220001:220001");
}

// On a host that can sandbox (root, bwrap): each account its own uid, the data dir hidden.
TEST(WorkloadSandbox, GivesEachAccountItsOwnUidAndHidesTheDataDir) {
  TempDir d;
  auto s = OnThisHost(d.path, 210000);
  ASSERT_TRUE(s);
  if (!s->active()) GTEST_SKIP() << "this host cannot sandbox (not root, or no bwrap)";
  auto a = s->Wrap(Task("111111111111"), d.path + "/w", {}, Request(d.path));
  auto b = s->Wrap(Task("222222222222"), d.path + "/w", {}, Request(d.path));
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  auto uid_of = [](const std::vector<std::string>& argv) {
    auto it = std::find(argv.begin(), argv.end(), "--reuid");
    return it != argv.end() && it + 1 != argv.end() ? *(it + 1) : "";
  };
  EXPECT_EQ(uid_of(a->argv), "210000");
  EXPECT_EQ(uid_of(b->argv), "210001");
  bool hides = false;
  for (size_t i = 0; i + 1 < a->argv.size(); ++i) {
    hides = hides || (a->argv[i] == "--tmpfs" && a->argv[i + 1] == d.path);
  }
  EXPECT_TRUE(hides);
  struct stat st {};
  ASSERT_EQ(::stat((d.path + "/logs/job-1/copy-0").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 210001u);  // the last account to launch there
}

}  // namespace
}  // namespace carve::agent::node
