// QueueService's Ray job types end to end: the head first, workers and the driver beside it,
// groups, Serve deployment, a lost head restarting its cluster (the fixture:
// queue_service_test_fixture.h).
#include "server/queues/queue_service_test_fixture.h"

namespace carve::server::queues {
namespace {

using namespace std::chrono_literals;

TEST_F(QueueServiceTest, StartsRayWorkersOnlyAfterTheHeadReportsItsAddress) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  JobSubmission s;
  s.type = JobType::kRayJob;
  s.entrypoint = "python main.py";
  s.workers = 2;
  s.parameters = "serverless.ray.worker.mgpu.core=30;serverless.ray.worker.mgpu.memory=4096;";
  auto job = service_->SubmitJob(kAccount, "q1", s);
  ASSERT_TRUE(job.has_value());
  service_->ReconcileOnce();
  auto desired = Desired("big");
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired[0].command[1], "head");
  EXPECT_EQ(desired[0].values.at("num_gpus"), "0");
  Report("big", {Reported(desired[0].id, protocol::WorkloadState::kRunning, "10.0.0.5:6379")});
  service_->ReconcileOnce();
  desired = Desired("big");
  ASSERT_EQ(desired.size(), 4u);  // head, 2 workers, driver
  EXPECT_EQ(desired[1].command[1], "worker");
  EXPECT_EQ(desired[1].values.at("head_address"), "10.0.0.5:6379");
  EXPECT_EQ(desired[1].values.at("num_gpus"), "1");
  EXPECT_EQ(desired[1].device.share->core_percent, 30);
  EXPECT_EQ(desired[3].environment.at("RAY_ADDRESS"), "10.0.0.5:6379");
  EXPECT_EQ(desired[3].values.at("entrypoint"), "python main.py");
  std::vector<protocol::WorkloadStatus> st;
  for (const auto& w : desired) {
    const bool ray_process = w.command[1] == "worker" || w.command[1] == "head";
    st.push_back(Reported(
        w.id, ray_process ? protocol::WorkloadState::kRunning : protocol::WorkloadState::kSucceeded,
        w.command[1] == "head" ? "10.0.0.5:6379" : ""));
  }
  Report("big", st);
  service_->ReconcileOnce();
  auto done = service_->GetJob(kAccount, "q1", job->id);
  EXPECT_EQ(done->state, JobState::kSucceeded);
  EXPECT_EQ(done->tasks[1].state, TaskState::kStopped);
  EXPECT_TRUE(Desired("big").empty());
}

// Each Ray worker is told its index within its own group and the count of all workers, and
// Ray's --num-gpus is its card count: 1 for a fraction of a card (the shared head too), 2 for a
// core of 200. Two groups of different sizes and shares, so no value can stand for another.
TEST_F(QueueServiceTest, RayWorkersGetTheirIndexInTheirGroupAndTheirCardCount) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  JobSubmission s;
  s.type = JobType::kRayCluster;
  s.parameters = "serverless.ray.head.mgpu.core=50;";
  s.worker_groups = {{"small", 2, 20, {}}, {"double", 3, 200, {}}};
  auto submitted = service_->SubmitJob(kAccount, "q1", s);
  ASSERT_TRUE(submitted.has_value()) << submitted.error().message;
  service_->ReconcileOnce();
  auto desired = Desired("big");
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired[0].values.at("num_gpus"), "1");  // The head's 50 % of one card.
  Report("big", {Reported(desired[0].id, protocol::WorkloadState::kRunning, "10.0.0.5:6379")});
  service_->ReconcileOnce();
  desired = Desired("big");
  ASSERT_EQ(desired.size(), 6u);
  std::multiset<std::string> seen;  // "core index count num_gpus" per worker
  for (const auto& w : desired) {
    if (w.environment.at("CARVE_TASK_ROLE") != "worker") continue;
    const int core = w.device.share ? w.device.share->core_percent
                                    : 100 * static_cast<int>(w.device.gpus.size());
    seen.insert(fmt::format("{} {} {} {}", core, w.environment.at("CARVE_TASK_INDEX"),
                            w.environment.at("CARVE_TASK_COUNT"), w.values.at("num_gpus")));
  }
  EXPECT_EQ(seen, (std::multiset<std::string>{"20 0 5 1", "20 1 5 1", "200 0 5 2", "200 1 5 2",
                                              "200 2 5 2"}));
}

// A RayJob's driver runs on its head's node, not the queue's first node: two 1-card nodes, the
// first (s1) 60 % taken before the job comes, so the head (core 50) can only land on s2.
TEST_F(QueueServiceTest, ARayDriverRunsOnItsHeadsNode) {
  MakeQueue("q1", "ml.g5.xlarge", 2, true);
  // Two tasks of 60 fill one card each; the one on s2 then ends, freeing s2 only.
  JobSubmission busy;
  busy.command = {"/bin/true"};
  busy.parameters = "emr.serverless.mgpu.core=60;";
  busy.task_count = 2;
  auto filler = service_->SubmitJob(kAccount, "q1", busy);
  ASSERT_TRUE(filler.has_value()) << filler.error().message;
  service_->ReconcileOnce();
  for (const auto& t : Get("q1", filler->id).tasks) {
    if (t.node == "s2")
      Report("s2", {Reported(t.workload_id, protocol::WorkloadState::kSucceeded, "")});
  }
  service_->ReconcileOnce();
  JobSubmission s;
  s.type = JobType::kRayJob;
  s.entrypoint = "python main.py";
  s.workers = 1;
  s.parameters = "serverless.ray.head.mgpu.core=50;serverless.ray.worker.mgpu.core=30;";
  auto submitted = service_->SubmitJob(kAccount, "q1", s);
  ASSERT_TRUE(submitted.has_value()) << submitted.error().message;
  service_->ReconcileOnce();
  JobRecord job = Get("q1", submitted->id);
  ASSERT_EQ(job.tasks[0].node, "s2");
  Report("s2",
         {Reported(job.tasks[0].workload_id, protocol::WorkloadState::kRunning, "10.0.0.5:6379")});
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  ASSERT_EQ(job.tasks.back().role, TaskRole::kDriver);
  EXPECT_EQ(job.tasks.back().state, TaskState::kPlaced);
  EXPECT_EQ(job.tasks.back().node, "s2");
}

TEST_F(QueueServiceTest, ALostRayHeadRestartsItsWholeCluster) {
  MakeQueue("q1", "ml.g5.xlarge", 2, true);
  JobSubmission s;
  s.type = JobType::kRayCluster;
  s.workers = 1;
  s.parameters = "serverless.ray.head.mgpu.core=50;serverless.ray.worker.mgpu.core=60;";
  auto submitted = service_->SubmitJob(kAccount, "q1", s);
  ASSERT_TRUE(submitted.has_value()) << submitted.error().message;
  service_->ReconcileOnce();
  JobRecord job = Get("q1", submitted->id);
  const std::string head_node = job.tasks[0].node;
  Report(head_node,
         {Reported(job.tasks[0].workload_id, protocol::WorkloadState::kRunning, "10.0.0.5:6379")});
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  ASSERT_EQ(job.head_address, "10.0.0.5:6379");
  ASSERT_EQ(job.tasks[1].state, TaskState::kPlaced);
  const std::string other = head_node == "s1" ? "s2" : "s1";
  clock_.Advance(20s);
  Report(other, {});
  registry_.Sweep();
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  EXPECT_TRUE(job.head_address.empty());
  EXPECT_EQ(job.tasks[0].node, other) << "the head is placed again, on the node still up";
  EXPECT_NE(job.tasks[1].rescheduled.find("Ray head's node " + head_node), std::string::npos)
      << job.tasks[1].rescheduled;
  for (const auto& w : Desired(other)) {
    EXPECT_EQ(w.id, job.tasks[0].workload_id) << "workers wait for the new head's address";
  }
}

// What the agent of a running Ray head reports: its address, named ports and the Serve API body.
protocol::WorkloadStatus HeadReport(const std::string& id, int restarts = 0,
                                    std::string body = R"({"applications": {}})") {
  protocol::WorkloadStatus s = Reported(id, protocol::WorkloadState::kRunning, "10.0.0.5:6379");
  s.ports = {{"dashboard", 8265}, {"serve", 8000}};
  s.restarts = restarts;
  s.status_body = std::move(body);
  return s;
}

JobSubmission ServeJob() {
  JobSubmission s;
  s.type = JobType::kRayServe;
  s.worker_groups = {GroupRequest{"gpu", 1, 30, 4096}};
  s.serve_config =
      "applications:\n  - name: echo\n    route_prefix: /echo\n    import_path: e:app\n";
  return s;
}

TEST_F(QueueServiceTest, ARayServeJobDeploysItsConfigOnceTheHeadHasItsPortsAndReportsTheApp) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  auto job = service_->SubmitJob(kAccount, "q1", ServeJob());
  ASSERT_TRUE(job.has_value()) << job.error().message;
  EXPECT_EQ(job->serve.status, "WAITING_FOR_CLUSTER");
  ASSERT_EQ(job->tasks.back().role, TaskRole::kServe);
  service_->ReconcileOnce();
  auto desired = Desired("big");
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired[0].ports, (std::vector<std::string>{"dashboard", "serve"}));
  EXPECT_EQ(desired[0].status_url, "http://127.0.0.1:{port_dashboard}/api/serve/applications/");
  EXPECT_EQ(desired[0].restart, protocol::RestartPolicy::kOnFailure);
  EXPECT_EQ(desired[0].max_retries, -1) << "a head comes back until the job ends";

  // The head runs, but its dashboard does not answer yet: Serve waits rather than fail.
  Report("big", {HeadReport(desired[0].id, 0, "error: GET http://127.0.0.1:8265/: Connection")});
  service_->ReconcileOnce();
  JobRecord j = Get("q1", job->id);
  EXPECT_EQ(Desired("big").size(), 2u) << "head and worker; not the Serve deployment yet";
  EXPECT_EQ(j.serve.status, "DEPLOYING");
  EXPECT_EQ(j.serve.message,
            "waiting for the head's dashboard to answer (GET http://127.0.0.1:8265/: Connection)");

  Report("big", {HeadReport(desired[0].id)});
  service_->ReconcileOnce();
  j = Get("q1", job->id);
  EXPECT_EQ(j.dashboard_url, "http://10.0.0.5:8265");
  EXPECT_EQ(j.serve.ingress, "http://10.0.0.5:8000");
  desired = Desired("big");
  ASSERT_EQ(desired.size(), 3u);  // head, worker, serve
  const protocol::WorkloadDesired& serve = desired[2];
  EXPECT_EQ(serve.command, (std::vector<std::string>{"serve", "deploy", "{file_serve_config}",
                                                     "--address={dashboard_url}"}));
  EXPECT_EQ(serve.values.at("dashboard_url"), "http://10.0.0.5:8265");
  EXPECT_NE(serve.files.at("serve_config").find("port: 8000"), std::string::npos)
      << serve.files.at("serve_config");
  EXPECT_TRUE(serve.device.gpus.empty());
  EXPECT_EQ(j.serve.status, "DEPLOYING");

  Report("big", {HeadReport(desired[0].id, 0,
                            R"({"applications": {"echo": {"status": "RUNNING",
                                "route_prefix": "/echo", "message": ""}}})"),
                 Reported(desired[1].id, protocol::WorkloadState::kRunning),
                 Reported(serve.id, protocol::WorkloadState::kSucceeded)});
  service_->ReconcileOnce();
  j = Get("q1", job->id);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.serve.status, "RUNNING");
  ASSERT_EQ(j.serve.applications.size(), 1u);
  EXPECT_EQ(j.serve.applications[0].route_prefix, "/echo");
  auto stored = store_.Get({kAccount, "Job", "q1/" + j.id});
  ASSERT_TRUE(stored.has_value());
  auto back = JobFromJson(nlohmann::json::parse(stored->body));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->serve, j.serve);
  EXPECT_EQ(back->tasks[0].ports,
            (std::map<std::string, int>{{"dashboard", 8265}, {"serve", 8000}}));

  auto cancelled = service_->CancelJob(kAccount, "q1", j.id);
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->serve.status, "STOPPED");
  EXPECT_TRUE(Desired("big").empty());
}

TEST_F(QueueServiceTest, AHeadThatRestartsRestartsItsClusterAndRedeploysServe) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  auto job = service_->SubmitJob(kAccount, "q1", ServeJob());
  ASSERT_TRUE(job.has_value());
  service_->ReconcileOnce();
  const std::string head_id = Desired("big")[0].id;
  Report("big", {HeadReport(head_id)});
  service_->ReconcileOnce();
  auto before = Desired("big");
  ASSERT_EQ(before.size(), 3u);
  Report("big", {HeadReport(head_id), Reported(before[1].id, protocol::WorkloadState::kRunning),
                 Reported(before[2].id, protocol::WorkloadState::kSucceeded)});
  service_->ReconcileOnce();
  ASSERT_EQ(Get("q1", job->id).tasks[2].state, TaskState::kSucceeded);

  // The agent restarted the head's process in place (same id, same address).
  Report("big", {HeadReport(head_id, 1), Reported(before[1].id, protocol::WorkloadState::kRunning),
                 Reported(before[2].id, protocol::WorkloadState::kSucceeded)});
  service_->ReconcileOnce();
  service_->ReconcileOnce();  // Placed again; published once the head runs.
  JobRecord j = Get("q1", job->id);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.tasks[1].rescheduled, "its Ray head restarted (1 restart); rejoining");
  auto after = Desired("big");
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].id, head_id);
  EXPECT_NE(after[1].id, before[1].id) << "a new worker joins the new head";
  EXPECT_NE(after[2].id, before[2].id) << "the Serve config is deployed again";
  EXPECT_EQ(j.serve.status, "DEPLOYING");
}

TEST_F(QueueServiceTest, RayProcessesRunInTheQueuesImageWithTheRuntimesEnvironment) {
  QueueOptions o = Options();
  o.ray.environment = {{"RAY_DEDUP_LOGS", "0"}, {"SHARED", "runtime"}};
  o.ray.image = "rayproject/ray:2.9.0-gpu";
  o.ray.queue_images = {{"q2", "rayproject/ray:2.9.0"}};
  Restart(o);
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  JobSubmission s;
  s.type = JobType::kRayJob;
  s.entrypoint = "python main.py";
  s.environment = {{"SHARED", "job"}};
  ASSERT_TRUE(service_->SubmitJob(kAccount, "q1", s).has_value());
  service_->ReconcileOnce();
  auto desired = Desired("big");
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired[0].image, "rayproject/ray:2.9.0-gpu");
  EXPECT_EQ(desired[0].environment.at("RAY_DEDUP_LOGS"), "0");
  EXPECT_EQ(desired[0].environment.at("SHARED"), "job") << "the job's environment wins";
  EXPECT_EQ(o.ray.ImageFor("q2"), "rayproject/ray:2.9.0");
}

}  // namespace
}  // namespace carve::server::queues
