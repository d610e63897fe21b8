// Queue and job requests: field checks (400s) and share planning (accepted, then Failed).
#include "server/queues/queue_request.h"

#include <gtest/gtest.h>

namespace carve::server::queues {
namespace {

using nlohmann::json;

QueueRecord Queue(bool mgpu) {
  QueueRecord q;
  q.account = "123456789012";
  q.name = "q1";
  q.mgpu = mgpu;
  return q;
}

JobSubmission Custom(std::string parameters, int tasks = 1) {
  JobSubmission s;
  s.command = {"true"};
  s.task_count = tasks;
  s.parameters = std::move(parameters);
  return s;
}

TEST(ParseCreateQueue, ReadsAnInstanceTypeAllocation) {
  auto r = ParseCreateQueue(json::parse(
      R"({"name":"q1","mgpu":true,"strategy":"spread","allocation":{"instance_type":"ml.g5.48xlarge","count":1}})"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(r->mgpu);
  EXPECT_EQ(r->strategy, core::Strategy::kSpread);
  EXPECT_EQ(r->instance_type, "ml.g5.48xlarge");
  EXPECT_EQ(r->count, 1);
}

TEST(ParseCreateQueue, RejectsAMissingAllocationNamingTheField) {
  auto r = ParseCreateQueue(json::parse(R"({"name":"q1","mgpu":true})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("allocation"), std::string::npos);
}

TEST(ParseCreateQueue, RejectsBothInstanceTypeAndNodes) {
  auto r = ParseCreateQueue(json::parse(
      R"({"name":"q1","allocation":{"instance_type":"ml.g5.48xlarge","nodes":["n1"]}})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("either instance_type"), std::string::npos);
}

TEST(ParseCreateQueue, RejectsANonBooleanMgpuSwitch) {
  auto r =
      ParseCreateQueue(json::parse(R"({"name":"q1","mgpu":"yes","allocation":{"nodes":["n1"]}})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "mgpu=\"yes\": must be true or false");
}

TEST(ParseCreateQueue, RejectsAQueueNameWithASlash) {
  auto r = ParseCreateQueue(json::parse(R"({"name":"a/b","allocation":{"nodes":["n1"]}})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("name='a/b'"), std::string::npos);
}

TEST(ParseCreateQueue, RejectsAnUnknownEnforcementNamingTheAcceptedValues) {
  auto r = ParseCreateQueue(
      json::parse(R"({"name":"q","enforcement":"cgroup","allocation":{"nodes":["n1"]}})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "enforcement='cgroup': must be one of interposer, mps, none");
}

TEST(ApplyQueueUpdate, RefusesToChangeTheMgpuSwitchAndSaysANewQueueIsNeeded) {
  auto r = ApplyQueueUpdate(Queue(true), json::parse(R"({"mgpu":false})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("mgpu=false"), std::string::npos);
  EXPECT_NE(r.error().message.find("fixed when a queue is created"), std::string::npos);
  EXPECT_NE(r.error().message.find("create a new queue"), std::string::npos);
}

TEST(ApplyQueueUpdate, AcceptsTheSameMgpuValueAndChangesTheStrategy) {
  auto r = ApplyQueueUpdate(Queue(true), json::parse(R"({"mgpu":true,"strategy":"SPREAD"})"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->strategy, core::Strategy::kSpread);
  EXPECT_TRUE(r->mgpu);
}

TEST(ParseJobSubmission, TurnsACommandStringIntoAShellCommand) {
  auto r = ParseJobSubmission(json::parse(R"({"command":"echo hi","task_count":3})"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->command, (std::vector<std::string>{"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(r->task_count, 3);
}

// A job's environment reaches its tasks' processes: the loader's and carve's names are refused.
TEST(ParseJobSubmission, RefusesReservedOrMalformedEnvironmentNames) {
  for (const char* env : {R"({"LD_PRELOAD":"/tmp/evil.so"})", R"({"CARVE_JOB_ID":"x"})",
                          R"({"CUDA_VISIBLE_DEVICES":"0"})", R"({"A=B":"x"})"}) {
    auto r = ParseJobSubmission(
        json::parse(std::string(R"({"command":"true","environment":)") + env + "}"));
    ASSERT_FALSE(r.has_value()) << env;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(r.error().message.rfind("environment.", 0), 0u) << r.error().message;
  }
  EXPECT_TRUE(ParseJobSubmission(json::parse(
                  R"({"command":"true","environment":{"CARVE_MODEL":"m","MY_VAR":"1"}})"))
                  .has_value());
}

TEST(ParseJobSubmission, RejectsACustomJobWithoutACommand) {
  auto r = ParseJobSubmission(json::parse(R"({"type":"CustomJob"})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "command: required for a CustomJob");
}

TEST(ParseJobSubmission, RejectsATaskCountOfZeroNamingTheRange) {
  auto r = ParseJobSubmission(json::parse(R"({"command":"true","task_count":0})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "task_count=0: must be 1..1024");
}

TEST(ParseJobSubmission, RejectsAnUnknownJobType) {
  auto r = ParseJobSubmission(json::parse(R"({"type":"SparkJob","command":"x"})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("type='SparkJob'"), std::string::npos);
}

TEST(ParseJobSubmission, RejectsARayClusterWithoutWorkerGroups) {
  auto r = ParseJobSubmission(json::parse(R"({"type":"RayCluster"})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("worker_groups"), std::string::npos);
}

TEST(ParseJobSubmission, RefusesAFieldItDoesNotImplementNamingTheOnesItDoes) {
  auto r = ParseJobSubmission(json::parse(R"({"command":"true","runtime_env":{"pip":["x"]}})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("runtime_env: not a field of a job submission; the fields are "
                                   "type, name, command"),
            std::string::npos)
      << r.error().message;
}

TEST(ParseJobSubmission, ARayServeJobCarriesAServeConfigAsYamlOrJson) {
  auto yaml = ParseJobSubmission(json::parse(R"({"type":"RayServe",
      "worker_groups":[{"replicas":1}],
      "serve_config":"applications:\n  - import_path: echo:app\n"})"));
  ASSERT_TRUE(yaml.has_value()) << yaml.error().message;
  EXPECT_EQ(yaml->serve_config, "applications:\n  - import_path: echo:app\n");
  auto object = ParseJobSubmission(json::parse(R"({"type":"RayServe",
      "worker_groups":[{"replicas":1}],
      "serve_config":{"applications":[{"import_path":"echo:app"}]}})"));
  ASSERT_TRUE(object.has_value()) << object.error().message;
  EXPECT_NE(object->serve_config.find("echo:app"), std::string::npos);
  PlannedJob plan = PlanTasks(*object, Queue(true));
  ASSERT_TRUE(plan.failure.empty()) << plan.failure;
  ASSERT_EQ(plan.tasks.size(), 3u);
  EXPECT_EQ(plan.tasks[2].role, TaskRole::kServe);
  EXPECT_FALSE(plan.tasks[2].share.has_value()) << "Serve deploys from the head's node, no GPU";
}

TEST(ParseJobSubmission, RefusesAServeConfigWhereItCannotBeDeployed) {
  auto missing = ParseJobSubmission(json::parse(R"({"type":"RayServe",
      "worker_groups":[{"replicas":1}]})"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message,
            "serve_config: required for a RayServe job (the config `serve deploy` takes)");
  auto cluster = ParseJobSubmission(json::parse(R"({"type":"RayCluster",
      "worker_groups":[{"replicas":1}], "serve_config":"applications: []"})"));
  ASSERT_FALSE(cluster.has_value());
  EXPECT_EQ(cluster.error().message,
            "serve_config: only a RayServe job deploys one, not a RayCluster");
  auto bad = ParseJobSubmission(json::parse(R"({"type":"RayServe",
      "worker_groups":[{"replicas":1}], "serve_config":"applications: [{name: a}]"})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("serve_config.applications[0].import_path"),
            std::string::npos);
  auto number = ParseJobSubmission(json::parse(R"({"type":"RayServe",
      "worker_groups":[{"replicas":1}], "serve_config":7})"));
  ASSERT_FALSE(number.has_value());
  EXPECT_EQ(number.error().message,
            "serve_config=7: must be the Serve config as YAML text or a JSON object");
}

TEST(PlanTasks, GivesEachTaskTheSeedShareOfCore30AndMemory1000) {
  auto p = PlanTasks(Custom("emr.serverless.mgpu.core=30;\nemr.serverless.mgpu.memory=1000;\n"
                            "serverless.custom.job.task.gpus=1;",
                            20),
                     Queue(true));
  ASSERT_TRUE(p.failure.empty()) << p.failure;
  ASSERT_EQ(p.tasks.size(), 20u);
  EXPECT_EQ(p.tasks[7].share->core_percent, 30);
  EXPECT_EQ(p.tasks[7].share->memory_mib, 1000);
  EXPECT_EQ(p.tasks[7].index, 7);
}

TEST(PlanTasks, GivesAFullCardWhenAnMgpuQueueJobSetsNoMgpuParameters) {
  auto p = PlanTasks(Custom(""), Queue(true));
  ASSERT_TRUE(p.failure.empty());
  EXPECT_EQ(p.tasks[0].share->core_percent, 100);
  EXPECT_FALSE(p.tasks[0].share->memory_mib.has_value());
}

TEST(PlanTasks, ReadsLegacyGpusOneAsOneWholeCardOnAQueueWithoutMgpu) {
  auto p = PlanTasks(Custom("serverless.custom.job.task.gpus=1;"), Queue(false));
  ASSERT_TRUE(p.failure.empty()) << p.failure;
  EXPECT_EQ(p.tasks[0].share->core_percent, 100);
  EXPECT_EQ(p.tasks[0].share->card_count(), 1);
}

TEST(PlanTasks, FailsAFractionalShareOnAQueueWithoutMgpuNamingTheParameter) {
  // The core statement is named even when others follow it.
  auto p = PlanTasks(Custom("emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=1000;"),
                     Queue(false));
  EXPECT_TRUE(p.tasks.empty());
  EXPECT_NE(p.failure.find("emr.serverless.mgpu.core=30"), std::string::npos);
  EXPECT_NE(p.failure.find("whole cards only"), std::string::npos);
}

// The seed's rules, each with the message the share rules give.
TEST(PlanTasks, FailsCore150WithTheMultipleOf100Rule) {
  auto p = PlanTasks(Custom("emr.serverless.mgpu.core=150;"), Queue(true));
  EXPECT_EQ(p.failure,
            "emr.serverless.mgpu.core=150: above 100 only whole multiples of 100 are allowed "
            "(200 = two full cards)");
}

TEST(PlanTasks, FailsCoreBelowFive) {
  auto p = PlanTasks(Custom("emr.serverless.mgpu.core=4;"), Queue(true));
  EXPECT_NE(p.failure.find("emr.serverless.mgpu.core=4"), std::string::npos);
  EXPECT_NE(p.failure.find("5"), std::string::npos);
}

TEST(PlanTasks, FailsMemoryBelow256Mib) {
  auto p =
      PlanTasks(Custom("emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=255;"), Queue(true));
  EXPECT_NE(p.failure.find("emr.serverless.mgpu.memory=255"), std::string::npos);
  EXPECT_NE(p.failure.find("256"), std::string::npos);
}

TEST(PlanTasks, FailsMemorySetBesideCore200) {
  auto p = PlanTasks(Custom("emr.serverless.mgpu.core=200;emr.serverless.mgpu.memory=1000;"),
                     Queue(true));
  EXPECT_NE(p.failure.find("emr.serverless.mgpu.memory=1000"), std::string::npos);
}

TEST(PlanTasks, FailsAParameterTextWithoutSemicolonGivingLineAndColumn) {
  auto p = PlanTasks(Custom("emr.serverless.mgpu.core=30"), Queue(true));
  EXPECT_NE(p.failure.find("line 1"), std::string::npos);
}

TEST(PlanTasks, PlansARayJobAsHeadWorkersAndDriver) {
  JobSubmission s;
  s.type = JobType::kRayJob;
  s.entrypoint = "python main.py";
  s.workers = 3;
  s.parameters = "serverless.ray.worker.mgpu.core=30;serverless.ray.worker.mgpu.memory=4096;";
  auto p = PlanTasks(s, Queue(true));
  ASSERT_TRUE(p.failure.empty()) << p.failure;
  ASSERT_EQ(p.tasks.size(), 5u);
  EXPECT_EQ(p.tasks[0].role, TaskRole::kHead);
  EXPECT_FALSE(p.tasks[0].share.has_value());  // No head parameters: no GPU.
  EXPECT_EQ(p.tasks[1].role, TaskRole::kWorker);
  EXPECT_EQ(p.tasks[1].share->core_percent, 30);
  EXPECT_EQ(p.tasks[3].share->memory_mib, 4096);
  EXPECT_EQ(p.tasks[4].role, TaskRole::kDriver);
}

TEST(PlanTasks, GivesEachRayClusterGroupItsOwnShareThroughTheApi) {
  JobSubmission s;
  s.type = JobType::kRayCluster;
  s.worker_groups = {{"small", 2, 20, 2048}, {"big", 1, 60, 8192}};
  auto p = PlanTasks(s, Queue(true));
  ASSERT_TRUE(p.failure.empty()) << p.failure;
  ASSERT_EQ(p.tasks.size(), 4u);
  const std::vector<std::tuple<std::string, int, int64_t>> want = {
      {"small", 20, 2048}, {"small", 20, 2048}, {"big", 60, 8192}};
  for (size_t i = 0; i < want.size(); ++i) {
    const TaskRecord& t = p.tasks[i + 1];
    EXPECT_EQ(t.group, std::get<0>(want[i])) << i;
    EXPECT_EQ(t.share->core_percent, std::get<1>(want[i])) << i;
    EXPECT_EQ(t.share->memory_mib, std::get<2>(want[i])) << i;
  }
  EXPECT_EQ(p.tasks[2].group_index, 1);
  EXPECT_EQ(p.tasks[3].group_index, 0);
}

TEST(PlanTasks, FailsARayClusterGroupBreakingARuleNamingTheGroupField) {
  JobSubmission s;
  s.type = JobType::kRayCluster;
  s.worker_groups = {{"small", 2, 3, {}}};
  auto p = PlanTasks(s, Queue(true));
  EXPECT_NE(p.failure.find("worker_groups[0].core=3"), std::string::npos);
}

// memory_mib alone is a share of core 100, and the seed forbids memory there: the job fails
// naming the field, rather than keeping the job's worker share and dropping the memory.
TEST(PlanTasks, MemoryWithoutCoreFailsNamingTheGroupOrHeadField) {
  JobSubmission s;
  s.type = JobType::kRayCluster;
  s.parameters = "serverless.ray.worker.mgpu.core=30;";
  s.worker_groups = {{"small", 1, 20, {}}, {"big", 1, {}, 4096}};
  auto p = PlanTasks(s, Queue(true));
  EXPECT_NE(p.failure.find("worker_groups[1].memory_mib=4096: memory cannot be set when core is "
                           "100 or above"),
            std::string::npos)
      << p.failure;
  s.worker_groups = {{"small", 1, 20, {}}};
  s.head = GroupRequest{"head", 1, {}, 2048};
  p = PlanTasks(s, Queue(true));
  EXPECT_NE(p.failure.find("head.memory_mib=2048"), std::string::npos) << p.failure;
}

// A worker group or the head is refused for a field it does not have, as the top level is: a
// `memory` meant as `memory_mib` would otherwise leave a core-only share with proportional memory.
// Every error names the field under its group.
TEST(ParseJobSubmission, RefusesAFieldAWorkerGroupOrTheHeadDoesNotHaveNamingIt) {
  auto r = ParseJobSubmission(json::parse(
      R"({"type":"RayCluster","worker_groups":[{"name":"g","replicas":2,"core":30,"memory":4096}]})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "worker_groups[0].memory: not a field of a worker group; the fields are name, "
            "replicas, core, memory_mib");
  r = ParseJobSubmission(
      json::parse(R"({"type":"RayCluster","worker_groups":[{"name":"g"}],"head":{"cores":20}})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "head.cores: not a field of the head; the fields are core, memory_mib");
  r = ParseJobSubmission(
      json::parse(R"({"type":"RayCluster","worker_groups":[{"name":"g"}],"head":{"replicas":2}})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("head.replicas: not a field of the head"), std::string::npos);
  // A hostile tenant's 100,000-character key is quoted in part, not echoed whole.
  const std::string huge(100000, 'k');
  r = ParseJobSubmission(
      json{{"type", "RayCluster"}, {"worker_groups", json::array({json{{huge, 1}}})}});
  ASSERT_FALSE(r.has_value());
  EXPECT_LT(r.error().message.size(), 300u);
  EXPECT_NE(r.error().message.find("worker_groups[0].kkkk"), std::string::npos);
  r = ParseJobSubmission(json{{huge, 1}});
  ASSERT_FALSE(r.has_value());
  EXPECT_LT(r.error().message.size(), 400u) << r.error().message.substr(0, 100);
  r = ParseJobSubmission(json::parse(
      R"({"type":"RayCluster","worker_groups":[{"name":"g"},{"name":"h","core":"30"}]})"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("worker_groups[1].core=\"30\": must be a whole number"),
            std::string::npos)
      << r.error().message;
  r = ParseJobSubmission(json::parse(
      R"({"type":"RayCluster","worker_groups":[{"name":"g","replicas":3,"core":35,"memory_mib":1536}],"head":{"core":15,"memory_mib":768}})"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->worker_groups[0].replicas, 3);
  EXPECT_EQ(r->worker_groups[0].core_percent, 35);
  EXPECT_EQ(r->worker_groups[0].memory_mib, 1536);
  EXPECT_EQ(r->head->core_percent, 15);
  EXPECT_EQ(r->head->memory_mib, 768);
}

// Values of the wrong kind are refused naming the field and the rule, never read anyway: a type
// that names no job type (the empty one included), a command list holding a number, a group's
// replicas given as text.
TEST(ParseJobSubmission, RefusesValuesOfTheWrongKindNamingTheField) {
  for (const auto& [body, want] : std::vector<std::pair<std::string, std::string>>{
           {R"({"type":"","command":"true"})",
            "type='': must be one of CustomJob, RayJob, RayCluster, RayServe"},
           {R"({"type":"Spark","command":"true"})", "type='Spark': must be one of"},
           {R"({"command":["echo",3]})", "command: 3 is not a string"},
           {R"({"type":"RayCluster","worker_groups":[{"name":"g","replicas":"two"}]})",
            "worker_groups[0].replicas=\"two\": must be a whole number"},
           {R"({"type":"RayCluster","worker_groups":[{"name":"g","replicas":0}]})",
            "worker_groups[0].replicas=0: must be 1.."}}) {
    auto r = ParseJobSubmission(json::parse(body));
    ASSERT_FALSE(r.has_value()) << body;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find(want), std::string::npos) << body << ": " << r.error().message;
  }
}

// The API's head share is what the head gets, over serverless.ray.head.*, and the workers keep
// theirs: three distinct shares, so taking one for another fails.
TEST(PlanTasks, TheApisHeadShareWinsOverTheHeadParameters) {
  JobSubmission s;
  s.type = JobType::kRayCluster;
  s.parameters = "serverless.ray.head.mgpu.core=20;serverless.ray.worker.mgpu.core=60;";
  s.worker_groups = {{"workers", 1, {}, {}}};
  s.head = GroupRequest{"head", 1, 35, 1536};
  auto p = PlanTasks(s, Queue(true));
  ASSERT_TRUE(p.failure.empty()) << p.failure;
  ASSERT_EQ(p.tasks.size(), 2u);
  ASSERT_EQ(p.tasks[0].role, TaskRole::kHead);
  EXPECT_EQ(p.tasks[0].share->core_percent, 35);
  EXPECT_EQ(p.tasks[0].share->memory_mib, 1536);
  EXPECT_EQ(p.tasks[1].share->core_percent, 60);
  EXPECT_FALSE(p.tasks[1].share->memory_mib.has_value());
  // Without the API's head, the parameters' head share is the head's.
  s.head.reset();
  p = PlanTasks(s, Queue(true));
  ASSERT_TRUE(p.failure.empty()) << p.failure;
  EXPECT_EQ(p.tasks[0].share->core_percent, 20);
}

// On a queue without mGPU a fractional Ray share fails naming what asked for it: the head's API
// field, a group's field, or the worker parameter, each with its own value.
TEST(PlanTasks, AFractionalRayShareOnAQueueWithoutMgpuNamesTheFieldThatAskedForIt) {
  JobSubmission s;
  s.type = JobType::kRayCluster;
  s.parameters = "serverless.ray.head.mgpu.core=20;";
  s.worker_groups = {{"workers", 1, {}, {}}};
  s.head = GroupRequest{"head", 1, 15, {}};
  auto p = PlanTasks(s, Queue(false));
  EXPECT_NE(p.failure.find("head.core=15: queue 'q1' was created without mGPU"), std::string::npos)
      << p.failure;
  EXPECT_EQ(p.failure.find("mgpu.core=20"), std::string::npos) << p.failure;

  s.head.reset();
  s.parameters = "";
  s.worker_groups = {{"a", 1, {}, {}}, {"b", 1, 25, {}}};
  p = PlanTasks(s, Queue(false));
  EXPECT_NE(p.failure.find("worker_groups[1].core=25: queue 'q1'"), std::string::npos) << p.failure;

  s.parameters = "serverless.ray.worker.mgpu.core=40;";
  s.worker_groups = {{"a", 1, {}, {}}};
  p = PlanTasks(s, Queue(false));
  EXPECT_NE(p.failure.find("serverless.ray.worker.mgpu.core=40: queue 'q1'"), std::string::npos)
      << p.failure;
}

}  // namespace
}  // namespace carve::server::queues
