// The fixture of the WorkloadManager tests, which are split by subject: launching, logs, cgroups
// and restarts (workload_manager_test.cc), mGPU and MPS shares (workload_share_test.cc), and
// adoption by a restarted agent (workload_adoption_test.cc). A manager over a fake NVML with two
// A100s and real processes.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/launch/process_launcher.h"
#include "agent/node/test_support.h"
#include "agent/node/workload_manager.h"
#include "agent/nvml/fake_nvml.h"
#include "common/clock.h"

namespace carve::agent::node {

// What every WorkloadManager test file uses from test_support.h.
using namespace std::chrono_literals;
using testing::Eventually;
using testing::ProcessExists;
using testing::ReadFile;
using testing::ShellCopy;

class WorkloadManagerTest : public ::testing::Test {
 protected:
  WorkloadManagerTest()
      : dir_(testing::TempDir()),
        nvml_(FakeNvml::FromText("gpus: 2 x a100-40gb").value()),
        gpus_(std::make_unique<GpuApplier>(*nvml_, SystemClock::Get())) {
    EXPECT_TRUE(gpus_->Init().ok());
    options_.command = {"node-a", dir_ + "/data", "/usr/local/bin/carve", "/usr/bin:/bin"};
    options_.cgroup_root = dir_ + "/no-cgroups";
    options_.stop_grace = std::chrono::seconds(2);
    options_.initial_backoff = std::chrono::milliseconds(50);
    options_.max_backoff = std::chrono::milliseconds(200);
    options_.probe_interval = std::chrono::milliseconds(50);
  }
  ~WorkloadManagerTest() override {
    if (manager_) manager_->StopAll();
    std::filesystem::remove_all(dir_);
  }

  WorkloadManager& Manager() {
    if (!manager_)
      manager_ = std::make_unique<WorkloadManager>(options_, launcher_, SystemClock::Get(), *gpus_);
    return *manager_;
  }
  // The agent restarts: a new manager and a new GPU applier, which knows no desired layout
  // until its first Apply (the GPUs themselves keep their partitions). Processes stay.
  void RestartAgent() {
    manager_.reset();
    gpus_ = std::make_unique<GpuApplier>(*nvml_, SystemClock::Get());
    ASSERT_TRUE(gpus_->Init().ok());
  }
  // One apply pass, as the agent's loop runs it.
  void Apply(const std::vector<protocol::WorkloadDesired>& desired,
             const std::vector<protocol::UnreadableWorkload>& unreadable = {}) {
    std::vector<protocol::WorkloadDesired> all = desired;
    for (auto& p : WorkloadManager::Placeholders(unreadable)) all.push_back(std::move(p));
    Manager().StopUndesired(all);
    Manager().RefuseUnreadable(unreadable);
    (void)gpus_->Apply(gpu_desired_, Manager().BusyGpus());
    Manager().StartMissing(desired);
    Manager().Poll();
  }
  std::optional<protocol::WorkloadStatus> Find(const std::string& id) {
    for (auto& s : Manager().Statuses()) {
      if (s.id == id) return s;
    }
    return std::nullopt;
  }
  bool HasEvent(const std::vector<std::string>& events, const std::string& part) {
    for (const auto& e : events) {
      if (e.find(part) != std::string::npos) return true;
    }
    return false;
  }

  std::string dir_;
  std::unique_ptr<FakeNvml> nvml_;
  std::unique_ptr<GpuApplier> gpus_;
  launch::ProcessLauncher launcher_;
  WorkloadOptions options_;
  std::vector<protocol::GpuDesired> gpu_desired_;
  std::unique_ptr<WorkloadManager> manager_;
};

}  // namespace carve::agent::node
