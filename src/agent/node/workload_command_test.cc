#include "agent/node/workload_command.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "agent/node/test_support.h"

namespace carve::agent::node {
namespace {

std::string Env(const launch::LaunchRequest& r, const std::string& key) {
  auto it = std::find_if(r.env.begin(), r.env.end(), [&](auto& kv) { return kv.first == key; });
  return it == r.env.end() ? "<unset>" : it->second;
}

protocol::WorkloadDesired Image(const std::string& ref) {
  protocol::WorkloadDesired w;
  w.id = "acct/ic/1";
  w.name = "ic";
  w.image = ref;
  w.environment = {{"MODEL", "llama"}};
  return w;
}

TEST(BuildLaunchRequest, ExpandsTheTemplateWithPortModelDataAndCarve) {
  protocol::WorkloadDesired w;
  w.id = "a/ic/1";
  w.name = "ic";
  w.command = {"{carve}", "testmodel", "--port", "{port}", "--data", "{model_data}"};
  w.values = {{"model_data", "s3://bucket/m"}};
  auto r = BuildLaunchRequest(w, 8123, launch::MigBinding{"MIG-x"},
                              {"n", "/data", "/opt/carve", "/usr/bin"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->argv, (std::vector<std::string>{"/opt/carve", "testmodel", "--port", "8123",
                                               "--data", "s3://bucket/m"}));
  EXPECT_EQ(Env(*r, "CUDA_VISIBLE_DEVICES"), "MIG-x");
  EXPECT_EQ(Env(*r, "CARVE_PORT"), "8123");
  EXPECT_EQ(r->stdout_path, "/data/logs/a+ic+1/stdout.log");
}

// A directory with fake `podman` / `docker` executables and, when asked, a CDI spec naming
// devices, as the NVIDIA Container Toolkit writes it.
class ContainerTest : public ::testing::Test {
 protected:
  ContainerTest() {
    std::filesystem::create_directories(bin_);
    std::filesystem::create_directories(cdi_);
    std::filesystem::create_directories(model_);
  }
  ~ContainerTest() override { std::filesystem::remove_all(root_); }
  void Install(const std::string& name) {
    const std::string path = bin_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n";
    ::chmod(path.c_str(), 0755);
  }
  void Cdi(const std::vector<std::string>& names) {
    std::ofstream f(cdi_ + "/nvidia.yaml");
    f << "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n";
    for (const auto& n : names) f << "- name: " << n << "\n  containerEdits: {}\n";
  }
  std::string EnvFile() const {
    return root_ + "/data/workloads/" + WorkloadDirName("acct/ic/1") + "/container.env";
  }
  std::string EnvFileText() const {
    std::ifstream f(EnvFile());
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  CommandContext Ctx() {
    CommandContext c{"node-7", root_ + "/data", "/opt/carve", "/nowhere:" + bin_};
    c.cdi_spec_dirs = {cdi_};
    return c;
  }
  Result<launch::LaunchRequest> Build(const launch::DeviceBinding& binding,
                                      const std::string& model_data = "") {
    protocol::WorkloadDesired w = Image("reg/m:1");
    w.model_roots = {root_};
    if (!model_data.empty()) w.values["model_data"] = model_data;
    return BuildLaunchRequest(w, 9000, binding, Ctx());
  }
  // The argv after the runtime's fixed `run --rm --name X -p P --security-opt=...` and before
  // the env file.
  static std::vector<std::string> Middle(const launch::LaunchRequest& r) {
    auto env_file = std::find(r.argv.begin(), r.argv.end(), "--env-file");
    return {r.argv.begin() + 8, env_file};
  }
  // The argv from the env file on: `--env-file FILE -- IMAGE ...`.
  static std::vector<std::string> Tail(const launch::LaunchRequest& r) {
    auto env_file = std::find(r.argv.begin(), r.argv.end(), "--env-file");
    return {env_file, r.argv.end()};
  }
  static std::string FirstLogLine(const launch::LaunchRequest& r) {
    std::ifstream f(r.stdout_path);
    std::string line;
    std::getline(f, line);
    return line;
  }

  std::string root_ = testing::TempDir() + "carve-container-" + std::to_string(::getpid());
  std::string bin_ = root_ + "/bin";
  std::string cdi_ = root_ + "/cdi";
  std::string model_ = root_ + "/model";
};

TEST_F(ContainerTest, PodmanGetsThePartitionAsACdiDeviceTheModelAndServe) {
  Install("podman");
  Install("docker");  // podman comes first.
  Cdi({"0", "MIG-y", "all"});
  auto r = Build(launch::MigBinding{"MIG-y"}, "file://" + model_);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->argv[0], bin_ + "/podman");
  EXPECT_EQ(std::vector<std::string>(r->argv.begin() + 1, r->argv.begin() + 8),
            (std::vector<std::string>{"run", "--rm", "--name",
                                      "carve-" + WorkloadDirName("acct/ic/1"), "-p",
                                      "127.0.0.1:9000:8080", "--security-opt=no-new-privileges"}));
  EXPECT_EQ(Middle(*r), (std::vector<std::string>{"--device", "nvidia.com/gpu=MIG-y", "-v",
                                                  model_ + ":/opt/ml/model:ro"}));
  EXPECT_EQ(Tail(*r),
            (std::vector<std::string>{"--env-file", EnvFile(), "--", "reg/m:1", "serve"}));
  EXPECT_EQ(EnvFileText(),
            "MODEL=llama\nCUDA_VISIBLE_DEVICES=MIG-y\nSAGEMAKER_BIND_TO_PORT=8080\n");
  struct stat st {};
  ASSERT_EQ(::stat(EnvFile().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(FirstLogLine(*r),
            "carve: podman runs reg/m:1 with its GPU passed as CDI device(s) nvidia.com/gpu=MIG-y");
}

TEST_F(ContainerTest, DockerWithoutACdiNameUsesGpus) {
  Install("docker");
  Cdi({"0", "1"});  // Index names only: not the partition's UUID.
  auto r = Build(launch::MigBinding{"MIG-y"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->argv[0], bin_ + "/docker");
  EXPECT_EQ(Middle(*r), (std::vector<std::string>{"--gpus", "device=MIG-y"}));
  EXPECT_EQ(FirstLogLine(*r), "carve: docker runs reg/m:1 with its GPU passed with docker --gpus "
                              "device=MIG-y (no CDI spec names it)");
}

TEST_F(ContainerTest, DockerWithCdiAndTwoWholeGpus) {
  Install("docker");
  Cdi({"GPU-a", "GPU-b"});
  auto r = Build(launch::GpuBinding{{"GPU-a", "GPU-b"}, {}});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(Middle(*r), (std::vector<std::string>{"--device", "nvidia.com/gpu=GPU-a", "--device",
                                                  "nvidia.com/gpu=GPU-b"}));
  std::filesystem::remove(cdi_ + "/nvidia.yaml");
  auto plain = Build(launch::GpuBinding{{"GPU-a", "GPU-b"}, {}});
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  // Quoted, or docker would split the list at the comma.
  EXPECT_EQ(Middle(*plain), (std::vector<std::string>{"--gpus", "\"device=GPU-a,GPU-b\""}));
}

TEST_F(ContainerTest, PodmanWithoutCdiIsAClearError) {
  Install("podman");
  auto r = Build(launch::MigBinding{"MIG-y"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("podman on node node-7 passes GPUs to containers through CDI "
                                   "only, and no CDI spec in [" + cdi_ + "] names MIG-y"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("nvidia-ctk cdi generate --device-name-strategy=uuid"),
            std::string::npos);
}

TEST_F(ContainerTest, ModelDataCarveCannotMountIsRefused) {
  Install("docker");
  auto s3 = Build(std::monostate{}, "s3://bucket/model.tar.gz");
  ASSERT_FALSE(s3.has_value());
  EXPECT_EQ(s3.error().message,
            "ModelDataUrl s3://bucket/model.tar.gz is not downloaded by carve; give the model "
            "data as a directory on every node (an absolute path or file:///path), which is "
            "mounted read-only at /opt/ml/model");
  std::ofstream(model_ + "/weights.txt") << "w";
  auto file = Build(std::monostate{}, model_ + "/weights.txt");
  ASSERT_FALSE(file.has_value());
  EXPECT_NE(file.error().message.find("weights.txt is not a directory on this node"),
            std::string::npos);
}

// The server checked the path at CreateModel; a symlink swapped in since must not escape.
TEST_F(ContainerTest, ModelDataIsResolvedAgainAtLaunch) {
  Install("docker");
  std::filesystem::create_directory_symlink("/etc", model_ + "/swapped");
  auto escaped = Build(std::monostate{}, "file://" + model_ + "/swapped");
  ASSERT_FALSE(escaped.has_value());
  EXPECT_EQ(escaped.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(escaped.error().message.find("resolves to /etc, outside every model root"),
            std::string::npos)
      << escaped.error().message;
  for (const std::string& url :
       std::vector<std::string>{"/no/such/dir", "file:///", model_ + "/../../.."}) {
    EXPECT_FALSE(Build(std::monostate{}, url).has_value()) << url;
  }
}

// A hostile Image never reaches the option position, even if the server's check was bypassed.
TEST_F(ContainerTest, AnImageThatIsNotAReferenceIsRefusedAtLaunch) {
  Install("podman");
  for (const char* image : {"--privileged", "-v=/:/host", "Reg/M", "a b"}) {
    protocol::WorkloadDesired w = Image(image);
    auto r = BuildLaunchRequest(w, 9000, std::monostate{}, Ctx());
    ASSERT_FALSE(r.has_value()) << image;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  }
}

// The image is the first operand after `--`, after every option, and the podman client sees
// none of the model's variables: they reach the container through the env file only.
TEST_F(ContainerTest, TheImageFollowsTheOptionsAndTheClientEnvHasNoModelVariable) {
  Install("podman");
  protocol::WorkloadDesired w = Image("reg/m:1");
  w.environment = {{"SECRET_TOKEN", "hunter2"}, {"MODEL", "llama"}};
  auto r = BuildLaunchRequest(w, 9000, std::monostate{}, Ctx());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto dashes = std::find(r->argv.begin(), r->argv.end(), "--");
  ASSERT_NE(dashes, r->argv.end());
  EXPECT_EQ(std::vector<std::string>(dashes + 1, r->argv.end()),
            (std::vector<std::string>{"reg/m:1", "serve"}));
  for (auto it = r->argv.begin() + 2; it != dashes; ++it) {  // Options and their values only.
    EXPECT_EQ(it->find("hunter2"), std::string::npos) << *it;
  }
  EXPECT_EQ(r->env, ContainerClientEnv());
  for (const auto& [name, value] : r->env) {
    EXPECT_TRUE(name == "PATH" || std::find(std::begin(kContainerClientPassthrough),
                                            std::end(kContainerClientPassthrough),
                                            name) != std::end(kContainerClientPassthrough))
        << name;
    EXPECT_NE(value, "hunter2");
  }
  EXPECT_NE(EnvFileText().find("SECRET_TOKEN=hunter2\n"), std::string::npos);
}

TEST_F(ContainerTest, AValueAnEnvFileCannotCarryIsRefused) {
  Install("podman");
  protocol::WorkloadDesired w = Image("reg/m:1");
  w.environment = {{"A", "x\nLD_PRELOAD=/tmp/evil.so"}};
  auto r = BuildLaunchRequest(w, 9000, std::monostate{}, Ctx());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(ContainerTest, AnMgpuShareReachesTheContainerThroughLdSoPreloadAndTheLedgerMount) {
  Install("docker");
  Cdi({"GPU-card"});
  auto r = Build(launch::MgpuBinding{"GPU-card", "/opt/carve/lib/libcarve-mgpu.so",
                                     "/data/ledgers/w1.ledger"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const std::string preload =
      root_ + "/data/workloads/" + WorkloadDirName("acct/ic/1") + "/ld.so.preload";
  EXPECT_EQ(Middle(*r),
            (std::vector<std::string>{
                "--device", "nvidia.com/gpu=GPU-card", "-v",
                "/opt/carve/lib/libcarve-mgpu.so:/opt/carve/lib/libcarve-mgpu.so:ro", "-v",
                "/data/ledgers:/data/ledgers", "-v", preload + ":/etc/ld.so.preload:ro"}));
  std::ifstream f(preload);
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, "/opt/carve/lib/libcarve-mgpu.so");
  // The binding's variables reach the container, not the podman client.
  EXPECT_NE(EnvFileText().find("LD_PRELOAD="), std::string::npos);
  EXPECT_NE(EnvFileText().find("CARVE_MGPU_LEDGER=/data/ledgers/w1.ledger\n"), std::string::npos);
  EXPECT_EQ(Env(*r, "LD_PRELOAD"), "<unset>");
}

TEST_F(ContainerTest, ACommandInAnImageSharesTheHostNetworkAndRunsTheExpandedCommand) {
  Install("podman");
  Cdi({"GPU-card"});
  protocol::WorkloadDesired w = Image("reg/ray:2.9");
  w.command = {"ray", "start", "--head", "--port={port}", "--dashboard-port={port_dashboard}"};
  w.values["port_dashboard"] = "8265";
  w.files["serve_config"] = "applications: []\n";
  auto r = BuildLaunchRequest(w, 6379, launch::GpuBinding{{"GPU-card"}, {}}, Ctx());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const std::string files = root_ + "/data/workloads/" + WorkloadDirName("acct/ic/1") + "/files";
  EXPECT_EQ(std::vector<std::string>(r->argv.begin() + 1, r->argv.begin() + 11),
            (std::vector<std::string>{"run", "--rm", "--name",
                                      "carve-" + WorkloadDirName("acct/ic/1"), "--network=host",
                                      "--security-opt=no-new-privileges", "--device",
                                      "nvidia.com/gpu=GPU-card", "-v",
                                      files + ":" + files + ":ro"}));
  EXPECT_EQ(Tail(*r), (std::vector<std::string>{"--env-file", EnvFile(), "--", "reg/ray:2.9",
                                                "ray", "start", "--head", "--port=6379",
                                                "--dashboard-port=8265"}));
  EXPECT_EQ(EnvFileText(), "MODEL=llama\nCUDA_VISIBLE_DEVICES=GPU-card\nCARVE_PORT=6379\n");
}

TEST(BuildLaunchRequest, AnImageWithoutAContainerRuntimeIsAClearError) {
  auto r = BuildLaunchRequest(Image("reg/m:1"), 9000, std::monostate{},
                              {"node-7", "/data", "/opt/carve", "/nowhere"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(r.error().message,
            "image reg/m:1 needs podman or docker on node node-7; neither is installed");
}

TEST(BuildLaunchRequest, NeitherCommandNorImageIsRejected) {
  protocol::WorkloadDesired w;
  w.id = "a/b/c";
  w.name = "b";
  EXPECT_EQ(BuildLaunchRequest(w, 1, std::monostate{}, {}).error().code,
            ErrorCode::kInvalidArgument);
}

TEST(WorkloadDirName, IsAPlainStableNameThatKeepsIdsApart) {
  const std::string a = WorkloadDirName("acct/ic-a/0");
  EXPECT_EQ(a.rfind("acct_ic-a_0-", 0), 0u) << a;
  EXPECT_EQ(a, WorkloadDirName("acct/ic-a/0"));
  EXPECT_NE(a, WorkloadDirName("acct_ic-a_0"));
  EXPECT_EQ(a.find('/'), std::string::npos);
}

TEST(FindOnPath, FindsOnlyExecutables) {
  EXPECT_EQ(FindOnPath("sh", "/nowhere:/bin"), "/bin/sh");
  EXPECT_EQ(FindOnPath("no-such-tool-here", "/bin:/usr/bin"), "");
}

}  // namespace
}  // namespace carve::agent::node
