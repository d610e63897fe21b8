// The fixture of the QueueService tests: the service end to end over a real NodeRegistry and a
// FakeStore, with the test playing the agent (it reads the desired workloads and reports
// WorkloadStatus back). queue_service_test.cc tests queues and jobs; queue_ray_test.cc the Ray
// job types.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "server/queues/queue_service.h"
#include "store/fake_store.h"

namespace carve::server::queues {

inline constexpr char kAccount[] = "123456789012";

struct TestNode {
  std::string name;
  std::string instance_type;
  int gpus = 1;
};
// The fleet of these tests: nodes its agents registered (the queue claims come from the
// registry's nodes, as in the server).
inline const std::vector<TestNode> kFleet = {
    {"big", "ml.g5.48xlarge", 8}, {"s1", "ml.g5.xlarge", 1}, {"s2", "ml.g5.xlarge", 1}};

inline protocol::WorkloadStatus Reported(std::string id, protocol::WorkloadState state,
                                         std::string address = "", std::vector<int> codes = {},
                                         double core = -1, int64_t memory = -1) {
  protocol::WorkloadStatus s;
  s.id = std::move(id);
  s.state = state;
  s.address = std::move(address);
  s.exit_codes = std::move(codes);
  s.core_used_percent = core;
  s.memory_used_mib = memory;
  return s;
}

inline nodes::NodeRegistryOptions RegistryOptions(const Clock* clock) {
  nodes::NodeRegistryOptions o;
  o.clock = clock;
  return o;
}

class QueueServiceTest : public ::testing::Test {
 protected:
  QueueServiceTest() {
    for (const auto& n : kFleet) {
      protocol::Registration r;
      r.node_id = n.name;
      r.instance_type = n.instance_type;
      r.driver = "sim";
      for (int i = 0; i < n.gpus; ++i) {
        protocol::GpuInventory g;
        g.index = i;
        g.uuid = "GPU-" + std::to_string(i);
        r.gpus.push_back(g);
      }
      EXPECT_TRUE(registry_.Register(r).has_value());
    }
    service_ = std::make_unique<QueueService>(store_, registry_, claims_, Options());
  }
  QueueOptions Options() {
    QueueOptions o;
    o.clock = &clock_;
    o.ray.head_command = {"fake-ray", "head", "--port={port}", "--num-gpus={num_gpus}"};
    o.ray.worker_command = {"fake-ray", "worker", "--address={head_address}",
                            "--num-gpus={num_gpus}"};
    return o;
  }
  // CreateQueue of a plain (not mGPU) queue of `count` nodes of `type`, as asked.
  Result<QueueRecord> TryQueue(const std::string& name, const std::string& type, int count) {
    CreateQueueRequest r;
    r.name = name;
    r.instance_type = type;
    r.count = count;
    return service_->CreateQueue(kAccount, r);
  }
  // A service of other options over the same store, registry and claims.
  void Restart(const QueueOptions& o) {
    service_.reset();
    service_ = std::make_unique<QueueService>(store_, registry_, claims_, o);
  }
  // A new process over the same store and registry: claims it must take again, and what it
  // knows recovered from the store.
  void Recovered() {
    service_.reset();
    fresh_claims_ = std::make_unique<nodes::NodeClaims>();
    service_ = std::make_unique<QueueService>(store_, registry_, *fresh_claims_, Options());
    ASSERT_TRUE(service_->Recover().ok());
  }
  QueueRecord MakeQueue(const std::string& name, const std::string& type, int count, bool mgpu,
                        bool gang = false) {
    CreateQueueRequest r;
    r.name = name;
    r.mgpu = mgpu;
    r.instance_type = type;
    r.count = count;
    r.gang = gang;
    auto q = service_->CreateQueue(kAccount, r);
    EXPECT_TRUE(q.has_value()) << q.error().message;
    return q.value_or(QueueRecord{});
  }
  JobRecord Submit(const std::string& queue, const std::string& params, int tasks = 1,
                   std::optional<bool> gang = {}) {
    JobSubmission s;
    s.command = {"/bin/true"};
    s.task_count = tasks;
    s.parameters = params;
    s.gang = gang;
    auto j = service_->SubmitJob(kAccount, queue, s);
    EXPECT_TRUE(j.has_value()) << j.error().message;
    return j.value_or(JobRecord{});
  }
  JobRecord Get(const std::string& queue, const std::string& id) {
    auto j = service_->GetJob(kAccount, queue, id);
    EXPECT_TRUE(j.has_value());
    return j.value_or(JobRecord{});
  }
  std::vector<protocol::WorkloadDesired> Desired(const std::string& node) {
    auto d = registry_.WaitDesired(node, registry_.epoch(), 0, std::chrono::milliseconds(0));
    EXPECT_TRUE(d.has_value());
    return d.has_value() ? d->workloads : std::vector<protocol::WorkloadDesired>{};
  }
  // The agent reports every desired workload of `node` in `state` (and others as given).
  void Report(const std::string& node, std::vector<protocol::WorkloadStatus> statuses) {
    protocol::StatusReport s;
    s.node_id = node;
    s.epoch = registry_.epoch();
    s.workloads = std::move(statuses);
    registry_.ReportStatus(s);
  }
  void ReportAll(const std::string& node, protocol::WorkloadState state,
                 std::vector<int> codes = {}) {
    std::vector<protocol::WorkloadStatus> list;
    for (const auto& w : Desired(node)) {
      list.push_back(Reported(w.id, state, "", codes));
    }
    Report(node, list);
  }

  FakeClock clock_;
  store::FakeStore store_{clock_};
  nodes::NodeRegistry registry_{store_, RegistryOptions(&clock_)};
  nodes::NodeClaims claims_;
  std::unique_ptr<nodes::NodeClaims> fresh_claims_;  // Recovered()'s: outlives service_.
  std::unique_ptr<QueueService> service_;
};

}  // namespace carve::server::queues
