// PlanTaskWorkload: a task's workload as a pure function of its records and the Ray templates,
// tested without a Store, a registry or a clock.
#include "server/queues/task_workload.h"

#include <gtest/gtest.h>

namespace carve::server::queues {
namespace {

class TaskWorkloadTest : public ::testing::Test {
 protected:
  TaskWorkloadTest() {
    queue_.account = "111111111111";
    queue_.name = "gpuq";
    queue_.mgpu = true;
    queue_.enforcement = Enforcement::kMps;
    job_.queue = "gpuq";
    job_.id = "job-0007";
    job_.max_retries = 2;
  }
  TaskRecord& AddTask(TaskRole role, int index) {
    TaskRecord t;
    t.role = role;
    t.index = index;
    t.workload_id = "111111111111/gpuq/job-0007/" + std::to_string(index);
    job_.tasks.push_back(t);
    return job_.tasks.back();
  }
  TaskPlan Plan(size_t task, bool answered = false) {
    return PlanTaskWorkload({queue_, job_, job_.tasks.at(task), ray_, answered});
  }

  QueueRecord queue_;
  JobRecord job_;
  RayRuntime ray_;
};

// A user's argument with braces reaches the process as written: the agent expands templates
// once, so it goes through a value.
TEST_F(TaskWorkloadTest, ATaskRunsTheJobsCommandWithItsBracesIntact) {
  job_.command = {"awk", "{print $1}", "/data/{port}"};
  job_.environment = {{"MODE", "eval"}};
  AddTask(TaskRole::kTask, 0);
  TaskPlan plan = Plan(0);
  ASSERT_TRUE(plan.workload.has_value()) << plan.waiting;
  const protocol::WorkloadDesired& w = *plan.workload;
  EXPECT_EQ(w.kind, protocol::WorkloadKind::kTask);
  EXPECT_EQ(w.name, "gpuq-job-0007");
  EXPECT_EQ(w.command, (std::vector<std::string>{"awk", "{arg_1}", "{arg_2}"}));
  EXPECT_EQ(w.values.at("arg_1"), "{print $1}");
  EXPECT_EQ(w.values.at("arg_2"), "/data/{port}");
  EXPECT_TRUE(w.image.empty());
  EXPECT_EQ(w.environment.at("MODE"), "eval");
  EXPECT_EQ(w.environment.at("CARVE_TASK_ROLE"), "task");
  EXPECT_EQ(w.environment.at("CARVE_TASK_COUNT"), "1");
  EXPECT_EQ(w.restart, protocol::RestartPolicy::kOnFailure);
  EXPECT_EQ(w.max_retries, 2);
  EXPECT_FALSE(w.health_check);
}

// A share names its card, core percent, memory quota and the enforcement the task was placed
// with, not the queue's current one.
TEST_F(TaskWorkloadTest, AShareNamesItsCardQuotaAndTheEnforcementItWasPlacedWith) {
  job_.command = {"python", "train.py"};
  TaskRecord& t = AddTask(TaskRole::kTask, 0);
  t.share = core::MgpuShare{30, 1000};
  core::AllocationRecord where;
  where.gpu_indexes = {3};
  where.memory_mib = 1000;
  t.allocation = where;
  t.enforcement = Enforcement::kInterposer;
  TaskPlan plan = Plan(0);
  ASSERT_TRUE(plan.workload.has_value());
  const protocol::DeviceRequest& dev = plan.workload->device;
  EXPECT_EQ(dev.gpus, std::vector<int>{3});
  ASSERT_TRUE(dev.share.has_value());
  EXPECT_EQ(dev.share->core_percent, 30);
  EXPECT_EQ(dev.share->memory_mib, 1000);
  EXPECT_EQ(dev.share->enforcement, Enforcement::kInterposer);
  EXPECT_EQ(plan.workload->environment.at("CARVE_MGPU_MEMORY_MIB"), "1000");
  EXPECT_EQ(plan.workload->values.at("num_gpus"), "1");

  job_.tasks[0].enforcement.reset();  // A record from before it was kept: the queue's.
  EXPECT_EQ(Plan(0).workload->device.share->enforcement, Enforcement::kMps);
  job_.max_retries = 0;
  EXPECT_EQ(Plan(0).workload->restart, protocol::RestartPolicy::kNever);
}

// Ray: workers and the driver wait for the head's address; the head and workers come back
// until the job ends; every Ray process runs in the Ray image with Ray's variables.
TEST_F(TaskWorkloadTest, RayProcessesWaitForTheHeadAndComeBackUntilTheJobEnds) {
  job_.type = JobType::kRayJob;
  job_.entrypoint = "python job.py";
  ray_.image = "rayproject/ray:2.40.0";
  ray_.environment = {{"RAY_USAGE_STATS_ENABLED", "0"}};
  AddTask(TaskRole::kHead, 0);
  AddTask(TaskRole::kWorker, 1).group_index = 0;
  AddTask(TaskRole::kDriver, 2);
  EXPECT_FALSE(Plan(1).workload.has_value());
  EXPECT_EQ(Plan(1).waiting, "the head's address");
  EXPECT_FALSE(Plan(2).workload.has_value());

  TaskPlan head = Plan(0);
  ASSERT_TRUE(head.workload.has_value());
  EXPECT_EQ(head.workload->command, ray_.head_command);
  EXPECT_EQ(head.workload->ports, std::vector<std::string>{"dashboard"});
  EXPECT_EQ(head.workload->image, "rayproject/ray:2.40.0");
  EXPECT_EQ(head.workload->restart, protocol::RestartPolicy::kOnFailure);
  EXPECT_EQ(head.workload->max_retries, -1);

  job_.head_address = "10.0.0.5:6379";
  TaskPlan worker = Plan(1);
  ASSERT_TRUE(worker.workload.has_value());
  EXPECT_EQ(worker.workload->values.at("head_address"), "10.0.0.5:6379");
  EXPECT_EQ(worker.workload->environment.at("RAY_ADDRESS"), "10.0.0.5:6379");
  EXPECT_EQ(worker.workload->environment.at("RAY_USAGE_STATS_ENABLED"), "0");
  EXPECT_EQ(worker.workload->max_retries, -1);
  TaskPlan driver = Plan(2);
  ASSERT_TRUE(driver.workload.has_value());
  EXPECT_EQ(driver.workload->values.at("entrypoint"), "python job.py");
  EXPECT_EQ(driver.workload->max_retries, 2) << "the driver is the user's work";
}

// RayServe: the head gets a Serve port and a status URL; the Serve task waits for the head's
// dashboard to answer, then deploys its config as a file with the ingress port; a config that
// cannot be rendered is an error worth a log line, not a workload.
TEST_F(TaskWorkloadTest, AServeTaskDeploysItsConfigOnceTheHeadsDashboardAnswered) {
  job_.type = JobType::kRayServe;
  job_.serve_config = "applications: [{import_path: a:b}]";
  job_.head_address = "10.0.0.5:6379";
  job_.dashboard_url = "http://10.0.0.5:8265";
  TaskRecord& head = AddTask(TaskRole::kHead, 0);
  head.ports = {{"dashboard", 8265}, {"serve", 31002}};
  AddTask(TaskRole::kServe, 1);
  EXPECT_EQ(Plan(0).workload->ports, (std::vector<std::string>{"dashboard", "serve"}));
  EXPECT_FALSE(Plan(0).workload->status_url.empty());

  TaskPlan early = Plan(1, /*answered=*/false);
  EXPECT_FALSE(early.workload.has_value());
  EXPECT_EQ(early.waiting, "the head's dashboard to answer");
  EXPECT_FALSE(early.broken);

  TaskPlan serve = Plan(1, /*answered=*/true);
  ASSERT_TRUE(serve.workload.has_value()) << serve.waiting;
  EXPECT_NE(serve.workload->files.at("serve_config").find("31002"), std::string::npos);
  EXPECT_EQ(serve.workload->command[2], "{file_serve_config}");
  EXPECT_EQ(serve.workload->max_retries, kServeDeployRetries);

  job_.tasks[1].agent_state = "running";  // Once the agent runs it, it stays published.
  EXPECT_TRUE(Plan(1, /*answered=*/false).workload.has_value());

  job_.serve_config = "applications: [";
  TaskPlan bad = Plan(1, /*answered=*/true);
  EXPECT_FALSE(bad.workload.has_value());
  EXPECT_TRUE(bad.broken);
}

}  // namespace
}  // namespace carve::server::queues
