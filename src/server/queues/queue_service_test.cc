// QueueService end to end, queues and jobs: creation and claims, shares and their publication,
// ordering, gang placement, deletion, restarts (the fixture: queue_service_test_fixture.h).
#include <chrono>
#include <span>
#include <thread>

#include "server/queues/queue_service_test_fixture.h"

namespace carve::server::queues {
namespace {

using namespace std::chrono_literals;

TEST_F(QueueServiceTest, CreatesAnMgpuQueueThatClaimsItsNodeAndUsesItsCardsWhole) {
  QueueRecord q = MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  EXPECT_EQ(q.nodes, std::vector<std::string>{"big"});
  EXPECT_EQ(claims_.NodesOf(q.Owner()).size(), 1u);
  auto d = registry_.WaitDesired("big", registry_.epoch(), 0, 0ms);
  ASSERT_TRUE(d.has_value());
  ASSERT_EQ(d->gpus.size(), 8u);
  EXPECT_FALSE(d->gpus[3].mig);
  EXPECT_TRUE(store_.Get({kAccount, "Queue", "q1"}).has_value());
}

TEST_F(QueueServiceTest, RefusesAQueueWhenTheFleetLacksFreeNodesAndKeepsNothing) {
  MakeQueue("q1", "ml.g5.xlarge", 2, true);
  auto q = TryQueue("q2", "ml.g5.xlarge", 1);
  ASSERT_FALSE(q.has_value());
  EXPECT_EQ(q.error().code, ErrorCode::kResourceExhausted);
  EXPECT_FALSE(store_.Get({kAccount, "Queue", "q2"}).has_value());
  EXPECT_EQ(service_->ListQueues(kAccount).size(), 1u);
}

TEST_F(QueueServiceTest, AnAccountPastItsQueueLimitIsRefused) {
  QueueOptions o = Options();
  o.max_queues_per_account = 1;
  Restart(o);
  MakeQueue("q1", "ml.g5.xlarge", 1, false);
  auto q = TryQueue("q2", "ml.g5.xlarge", 1);
  ASSERT_FALSE(q.has_value());
  EXPECT_EQ(q.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(q.error().message, std::string("account ") + kAccount +
                                   " already holds 1 queues, the most one account may hold; "
                                   "delete one first");
  EXPECT_FALSE(claims_.Find(NodeId("s2"))->owner.has_value());  // Nothing claimed for it.
}

// The limit is per account: another account's queues do not count toward it.
TEST_F(QueueServiceTest, AnotherAccountsQueuesDoNotCountTowardTheLimit) {
  QueueOptions o = Options();
  o.max_queues_per_account = 1;
  Restart(o);
  CreateQueueRequest theirs;
  theirs.name = "theirs";
  theirs.instance_type = "ml.g5.xlarge";
  theirs.count = 1;
  ASSERT_TRUE(service_->CreateQueue("222222222222", theirs).has_value());
  auto mine = TryQueue("q1", "ml.g5.xlarge", 1);
  EXPECT_TRUE(mine.has_value()) << mine.error().message;
}

// A submitted job wakes the reconciler: it is placed at once, not at the next periodic pass.
TEST_F(QueueServiceTest, ASubmittedJobIsPlacedWithoutWaitingForThePeriodicPass) {
  QueueOptions o = Options();
  o.reconcile_interval = std::chrono::hours(1);
  Restart(o);
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  service_->Start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (service_->passes() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // Its first pass, done.
  }
  ASSERT_GT(service_->passes(), 0u);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=30;");
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Get("q1", job.id).state == JobState::kPending &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  service_->Stop();
  EXPECT_EQ(Get("q1", job.id).state, JobState::kRunning);
}

TEST_F(QueueServiceTest, AQueuePastItsUnfinishedJobLimitIsRefusedUntilOneEnds) {
  QueueOptions o = Options();
  o.max_unfinished_jobs_per_queue = 2;
  Restart(o);
  MakeQueue("q", "ml.g5.xlarge", 1, false);
  JobRecord first = Submit("q", "");
  Submit("q", "");
  JobSubmission s;
  s.command = {"/bin/true"};
  auto third = service_->SubmitJob(kAccount, "q", s);
  ASSERT_FALSE(third.has_value());
  EXPECT_EQ(third.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(third.error().message,
            "queue 'q' holds 2 unfinished jobs, the most one queue may hold; wait for some to "
            "finish, or cancel some");
  ASSERT_TRUE(service_->CancelJob(kAccount, "q", first.id).has_value());
  EXPECT_TRUE(service_->SubmitJob(kAccount, "q", s).has_value());
}

TEST_F(QueueServiceTest, JobsListInPagesInSubmissionOrder) {
  MakeQueue("q", "ml.g5.xlarge", 1, false);
  for (int i = 0; i < 5; ++i) Submit("q", "");
  std::vector<int64_t> seen;
  int64_t after = 0;
  int pages = 0;
  while (true) {
    auto page = service_->ListJobsPage(kAccount, "q", after, 2);
    ASSERT_TRUE(page.has_value());
    ++pages;
    for (const auto& j : page->jobs) seen.push_back(j.seq);
    if (!page->next_after) break;
    after = *page->next_after;
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(service_->ListJobsPage(kAccount, "nope", 0, 2).error().code, ErrorCode::kNotFound);
}

TEST_F(QueueServiceTest, RefusesToFlipTheMgpuSwitchOfAQueue) {
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  auto r = service_->UpdateQueue(kAccount, "q1", nlohmann::json{{"mgpu", false}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("new queue"), std::string::npos);
  EXPECT_TRUE(service_->GetQueue(kAccount, "q1")->mgpu);
}

TEST_F(QueueServiceTest, PlacesTwentyTasksOfCore30ThreeToACardAndPublishesTheirShares) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=1000;", 20);
  EXPECT_EQ(job.state, JobState::kPending) << job.reason;
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  EXPECT_EQ(job.state, JobState::kRunning);
  std::map<int, int> per_card;
  for (const auto& t : job.tasks) ++per_card[t.gpus.at(0)];
  for (int g = 0; g < 6; ++g) EXPECT_EQ(per_card[g], 3);
  auto desired = Desired("big");
  ASSERT_EQ(desired.size(), 20u);
  ASSERT_TRUE(desired[0].device.share.has_value());
  EXPECT_EQ(desired[0].device.share->core_percent, 30);
  EXPECT_EQ(desired[0].device.share->memory_mib, 1000);
  EXPECT_EQ(desired[0].device.share->enforcement, protocol::Enforcement::kInterposer);
  EXPECT_EQ(desired[0].kind, protocol::WorkloadKind::kTask);
  EXPECT_TRUE(desired[0].ports.empty()) << "named ports are a Ray head's";
  EXPECT_FALSE(desired[0].health_check);
  EXPECT_EQ(desired[0].environment.at("CARVE_MGPU_CORE_PERCENT"), "30");
}

// docs/mgpu.md: a queue's strategy "can be changed later", and the next placement follows it.
TEST_F(QueueServiceTest, AStrategyChangeAppliesToTheNextPlacement) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);  // BINPACK
  auto card_of = [&](const JobRecord& submitted) {
    service_->ReconcileOnce();
    JobRecord j = Get("q1", submitted.id);
    EXPECT_EQ(j.state, JobState::kRunning) << j.reason;
    return j.tasks.empty() || j.tasks[0].gpus.empty() ? -1 : j.tasks[0].gpus[0];
  };
  const std::string share = "emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=1000;";
  const int first = card_of(Submit("q1", share));
  EXPECT_EQ(card_of(Submit("q1", share)), first);  // BINPACK: beside the first
  auto q = service_->UpdateQueue(kAccount, "q1", nlohmann::json{{"strategy", "SPREAD"}});
  ASSERT_TRUE(q.has_value()) << q.error().message;
  EXPECT_EQ(q->strategy, core::Strategy::kSpread);
  EXPECT_NE(card_of(Submit("q1", share)), first);  // SPREAD: an empty card
}

// A share given only a core percentage gets memory in proportion to it (docs/mgpu.md), and the
// agent is told that quota: a share published with memory 0 would get the whole card.
TEST_F(QueueServiceTest, ACoreOnlyShareIsPublishedWithMemoryInProportionToItsCore) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  Submit("q1", "emr.serverless.mgpu.core=25;", 1);
  Submit("q1", "emr.serverless.mgpu.core=50;", 1);
  service_->ReconcileOnce();
  auto desired = Desired("big");
  ASSERT_EQ(desired.size(), 2u);
  std::map<int, int64_t> memory;  // core percent -> published memory quota
  for (const auto& w : desired) {
    ASSERT_TRUE(w.device.share.has_value()) << w.id;
    memory[w.device.share->core_percent] = w.device.share->memory_mib;
    EXPECT_EQ(w.environment.at("CARVE_MGPU_MEMORY_MIB"),
              std::to_string(w.device.share->memory_mib));
  }
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_GT(memory[25], 1024);  // A quarter of an A10G's 24 GiB, less carve's reserve.
  EXPECT_LT(memory[25], 6144);
  EXPECT_NEAR(static_cast<double>(memory[50]), 2.0 * memory[25], 1.0);
}

// A queue that asked for unenforced shares says so to the agent, which then runs them without
// the interposer; it survives a restart like every queue setting.
TEST_F(QueueServiceTest, AQueueWithEnforcementNonePublishesUnenforcedShares) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  ASSERT_TRUE(service_->UpdateQueue(kAccount, "q1", nlohmann::json{{"enforcement", "none"}})
                  .has_value());
  EXPECT_EQ(service_->GetQueue(kAccount, "q1")->enforcement, Enforcement::kNone);
  Submit("q1", "emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=1000;", 1);
  service_->ReconcileOnce();
  auto desired = Desired("big");
  ASSERT_EQ(desired.size(), 1u);
  ASSERT_TRUE(desired[0].device.share.has_value());
  EXPECT_EQ(desired[0].device.share->enforcement, protocol::Enforcement::kNone);
  auto stored = store_.Get({kAccount, "Queue", "q1"});
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(nlohmann::json::parse(stored->body)["enforcement"], "none");
  Recovered();  // Read back from the store, not remembered.
  EXPECT_EQ(service_->GetQueue(kAccount, "q1")->enforcement, Enforcement::kNone);
}

// A change of enforcement applies to the tasks placed after it (docs/mgpu.md): the running task
// keeps the interposer it started under, through a restart of the service, and only the new one
// runs unenforced. Republishing the old task with `none` would let the agent restart it open.
TEST_F(QueueServiceTest, AnEnforcementChangeAppliesOnlyToTasksPlacedAfterIt) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  JobRecord before = Submit("q1", "emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=1000;");
  service_->ReconcileOnce();
  ASSERT_TRUE(
      service_->UpdateQueue(kAccount, "q1", nlohmann::json{{"enforcement", "none"}}).has_value());
  JobRecord after = Submit("q1", "emr.serverless.mgpu.core=40;emr.serverless.mgpu.memory=2000;");
  service_->ReconcileOnce();
  auto enforcement_by_core = [&] {
    std::map<int, protocol::Enforcement> out;
    for (const auto& w : Desired("big")) {
      if (w.device.share) out[w.device.share->core_percent] = w.device.share->enforcement;
    }
    return out;
  };
  const std::map<int, protocol::Enforcement> want = {{30, protocol::Enforcement::kInterposer},
                                                     {40, protocol::Enforcement::kNone}};
  EXPECT_EQ(enforcement_by_core(), want);
  EXPECT_EQ(Get("q1", before.id).tasks[0].enforcement, Enforcement::kInterposer);
  EXPECT_EQ(Get("q1", after.id).tasks[0].enforcement, Enforcement::kNone);
  // A new process: it recovers the jobs from the store and publishes them again.
  Recovered();
  service_->ReconcileOnce();
  EXPECT_EQ(Get("q1", before.id).tasks[0].enforcement, Enforcement::kInterposer);
  EXPECT_EQ(enforcement_by_core(), want);
}

// A recovered queue whose node another owner took meanwhile is loaded without cards (its header
// says so): a job is refused naming the node, and nothing is published on the other owner's.
TEST_F(QueueServiceTest, ARecoveredQueueWhoseNodeWasTakenPlacesNothingThere) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  service_.reset();
  fresh_claims_ = std::make_unique<nodes::NodeClaims>();
  nodes::SyncFromRegistry(registry_, *fresh_claims_);
  const NodeId big("big");
  ASSERT_TRUE(fresh_claims_
                  ->ClaimSpecific(nodes::Owner::Endpoint(kAccount, "ep", "AllTraffic"),
                                  std::span<const NodeId>(&big, 1))
                  .ok());
  service_ = std::make_unique<QueueService>(store_, registry_, *fresh_claims_, Options());
  ASSERT_TRUE(service_->Recover().ok());
  JobSubmission s;
  s.command = {"/bin/true"};
  s.parameters = "emr.serverless.mgpu.core=30;";
  auto job = service_->SubmitJob(kAccount, "q1", s);
  ASSERT_FALSE(job.has_value());
  EXPECT_EQ(job.error().message,
            "queue 'q1' could not re-claim its nodes (big) after a restart; see the server log");
  service_->ReconcileOnce();
  EXPECT_TRUE(Desired("big").empty());
}

TEST_F(QueueServiceTest, AcceptsAJobWithCore150AndFailsItWithTheRule) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=150;");
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_NE(job.reason.find("emr.serverless.mgpu.core=150"), std::string::npos);
  service_->ReconcileOnce();
  EXPECT_EQ(Get("q1", job.id).state, JobState::kFailed);
  EXPECT_TRUE(Desired("big").empty());
}

TEST_F(QueueServiceTest, SucceedsWhenEveryTaskExitsZeroAndFreesTheCards) {
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=50;", 2);
  service_->ReconcileOnce();
  ReportAll("s1", protocol::WorkloadState::kRunning);
  service_->ReconcileOnce();
  EXPECT_EQ(Get("q1", job.id).tasks[0].state, TaskState::kRunning);
  ReportAll("s1", protocol::WorkloadState::kSucceeded, {0});
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  EXPECT_EQ(job.state, JobState::kSucceeded);
  EXPECT_EQ(job.tasks[1].exit_codes, std::vector<int>{0});
  EXPECT_TRUE(Desired("s1").empty());
  auto view = service_->GpuView(kAccount, "q1");
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->core_allocated_percent, 0);
}

TEST_F(QueueServiceTest, FailsTheJobWhenATaskFailsNamingItsExitCodes) {
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=50;", 2);
  service_->ReconcileOnce();
  auto desired = Desired("s1");
  ASSERT_EQ(desired.size(), 2u);
  Report("s1", {Reported(desired[0].id, protocol::WorkloadState::kRunning),
                Reported(desired[1].id, protocol::WorkloadState::kFailed, "", {3})});
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_NE(job.reason.find("task 1 (task) failed: exit codes [3]"), std::string::npos);
  EXPECT_EQ(job.tasks[0].state, TaskState::kCancelled);
  EXPECT_TRUE(Desired("s1").empty());  // The sibling is stopped.
}

TEST_F(QueueServiceTest, KeepsWaitingJobsInFifoOrderEvenWhenALaterOneWouldFit) {
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  JobRecord a = Submit("q1", "emr.serverless.mgpu.core=60;");
  JobRecord b = Submit("q1", "emr.serverless.mgpu.core=60;");
  JobRecord c = Submit("q1", "emr.serverless.mgpu.core=30;");
  service_->ReconcileOnce();
  EXPECT_EQ(Get("q1", a.id).state, JobState::kRunning);
  EXPECT_EQ(Get("q1", b.id).state, JobState::kPending);
  EXPECT_NE(Get("q1", b.id).reason.find("waiting for cards"), std::string::npos);
  EXPECT_EQ(Get("q1", c.id).state, JobState::kPending);  // Fits, but waits behind b.
  ReportAll("s1", protocol::WorkloadState::kSucceeded, {0});
  service_->ReconcileOnce();
  EXPECT_EQ(Get("q1", a.id).state, JobState::kSucceeded);
  EXPECT_EQ(Get("q1", b.id).state, JobState::kRunning);
  EXPECT_EQ(Get("q1", c.id).state, JobState::kRunning);
}

TEST_F(QueueServiceTest, RunsAHigherPriorityJobBeforeAnEarlierOne) {
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  JobRecord a = Submit("q1", "emr.serverless.mgpu.core=60;");
  service_->ReconcileOnce();
  JobRecord b = Submit("q1", "emr.serverless.mgpu.core=60;");
  JobSubmission urgent;
  urgent.command = {"/bin/true"};
  urgent.parameters = "emr.serverless.mgpu.core=60;";
  urgent.priority = 10;
  auto c = service_->SubmitJob(kAccount, "q1", urgent);
  ASSERT_TRUE(c.has_value());
  ReportAll("s1", protocol::WorkloadState::kSucceeded, {0});
  service_->ReconcileOnce();
  EXPECT_EQ(Get("q1", c->id).state, JobState::kRunning);
  EXPECT_EQ(Get("q1", b.id).state, JobState::kPending);
}

TEST_F(QueueServiceTest, StartsAGangJobOnlyWhenAllItsTasksFit) {
  MakeQueue("q1", "ml.g5.xlarge", 2, true);
  JobRecord first = Submit("q1", "emr.serverless.mgpu.core=60;");
  JobRecord gang = Submit("q1", "emr.serverless.mgpu.core=60;", 2, true);
  service_->ReconcileOnce();
  JobRecord g = Get("q1", gang.id);
  EXPECT_EQ(g.state, JobState::kPending);
  for (const auto& t : g.tasks) EXPECT_EQ(t.state, TaskState::kPending);
  EXPECT_NE(g.reason.find("gang"), std::string::npos);
  ReportAll("s1", protocol::WorkloadState::kSucceeded, {0});
  ReportAll("s2", protocol::WorkloadState::kSucceeded, {0});
  service_->ReconcileOnce();
  g = Get("q1", gang.id);
  EXPECT_EQ(g.state, JobState::kRunning);
  EXPECT_EQ(g.tasks[0].state, TaskState::kPlaced);
  EXPECT_EQ(g.tasks[1].state, TaskState::kPlaced);
}

// A queue created with --gang makes gang placement its jobs' default, and a job's own `gang`
// overrides it both ways. Two 1-card nodes, one card 60 % taken: a 2-task job of core 55 fits
// only half.
TEST_F(QueueServiceTest, TheQueuesGangIsTheDefaultAJobsOwnOverrides) {
  MakeQueue("q1", "ml.g5.xlarge", 2, true, /*gang=*/true);
  Submit("q1", "emr.serverless.mgpu.core=60;");
  JobRecord by_queue = Submit("q1", "emr.serverless.mgpu.core=55;", 2);
  service_->ReconcileOnce();
  by_queue = Get("q1", by_queue.id);
  EXPECT_EQ(by_queue.state, JobState::kPending);
  for (const auto& t : by_queue.tasks) EXPECT_EQ(t.state, TaskState::kPending);
  ASSERT_TRUE(service_->CancelJob(kAccount, "q1", by_queue.id).has_value());

  JobRecord own = Submit("q1", "emr.serverless.mgpu.core=55;", 2, /*gang=*/false);
  service_->ReconcileOnce();
  own = Get("q1", own.id);
  int placed = 0;
  for (const auto& t : own.tasks) placed += t.state == TaskState::kPlaced ? 1 : 0;
  EXPECT_EQ(placed, 1) << "a job that says gang=false places what fits";
}

// A job's max_retries is kept (through a restart of the service) and reaches the agent as the
// task's restart policy.
TEST_F(QueueServiceTest, AJobsMaxRetriesIsKeptAndPublished) {
  MakeQueue("q1", "ml.g5.48xlarge", 1, true);
  JobSubmission s;
  s.command = {"/bin/false"};
  s.parameters = "emr.serverless.mgpu.core=30;";
  s.max_retries = 3;
  auto job = service_->SubmitJob(kAccount, "q1", s);
  ASSERT_TRUE(job.has_value()) << job.error().message;
  EXPECT_EQ(job->max_retries, 3);
  Recovered();
  service_->ReconcileOnce();
  EXPECT_EQ(Get("q1", job->id).max_retries, 3);
  auto desired = Desired("big");
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired[0].restart, protocol::RestartPolicy::kOnFailure);
  EXPECT_EQ(desired[0].max_retries, 3);
}

TEST_F(QueueServiceTest, FailsAJobThatCanNeverFitTheQueue) {
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=200;");
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_NE(job.reason.find("can never run"), std::string::npos);
  // A gang job whose tasks each fit but never all at once says it is the gang that cannot.
  JobRecord gang = Submit("q1", "emr.serverless.mgpu.core=60;", 2, true);
  EXPECT_EQ(gang.state, JobState::kFailed);
  EXPECT_NE(gang.reason.find("gang: all tasks of the job start together"), std::string::npos)
      << gang.reason;
}

TEST_F(QueueServiceTest, RefusesToDeleteAQueueWithRunningJobsThenReleasesItsNodes) {
  QueueRecord q = MakeQueue("q1", "ml.g5.xlarge", 1, true);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=50;");
  service_->ReconcileOnce();
  Status st = service_->DeleteQueue(kAccount, "q1");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.error().message.find(job.id), std::string::npos);
  EXPECT_EQ(claims_.NodesOf(q.Owner()).size(), 1u);
  auto cancelled = service_->CancelJob(kAccount, "q1", job.id);
  ASSERT_TRUE(cancelled.has_value());
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  EXPECT_TRUE(Desired("s1").empty());
  ASSERT_TRUE(service_->DeleteQueue(kAccount, "q1").ok());
  EXPECT_TRUE(claims_.NodesOf(q.Owner()).empty());
  EXPECT_FALSE(store_.Get({kAccount, "Job", "q1/" + job.id}).has_value());
}

// Delete is refused while any job is Submitted or Pending too, not only Running: a job waiting
// for cards would lose its queue under it.
TEST_F(QueueServiceTest, RefusesToDeleteAQueueWithAPendingJob) {
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  JobRecord running = Submit("q1", "emr.serverless.mgpu.core=60;");
  JobRecord pending = Submit("q1", "emr.serverless.mgpu.core=60;");
  service_->ReconcileOnce();
  ASSERT_EQ(Get("q1", pending.id).state, JobState::kPending);
  ASSERT_TRUE(service_->CancelJob(kAccount, "q1", running.id).has_value());
  Status st = service_->DeleteQueue(kAccount, "q1");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.error().message.find(pending.id), std::string::npos) << st.error().message;
  EXPECT_TRUE(service_->GetQueue(kAccount, "q1").has_value());
}

// On etcd one commit removes at most 127 records, and a queue keeps up to 1,000 finished jobs.
TEST_F(QueueServiceTest, DeletingAQueueWithMoreJobsThanOneCommitHoldsSurvivesAFailedStep) {
  QueueRecord q = MakeQueue("q1", "ml.g5.xlarge", 1, true);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Submit("q1", "emr.serverless.mgpu.core=200;").state, JobState::kFailed);
  }
  store_.set_max_commit_keys(2);
  store_.FailNthCommit(2, Unavailable("disk"));
  Status failed = service_->DeleteQueue(kAccount, "q1");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(store_.Get({kAccount, "Queue", "q1"}).has_value());  // The queue goes last.
  EXPECT_EQ(service_->ListJobs(kAccount, "q1")->size(), 3u);       // 2 went in the first step.
  Status again = service_->DeleteQueue(kAccount, "q1");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_FALSE(store_.Get({kAccount, "Queue", "q1"}).has_value());
  EXPECT_TRUE(store_.ListAllAccounts("Job")->empty());
  EXPECT_TRUE(claims_.NodesOf(q.Owner()).empty());
}

// On etcd a step can land and lose its answer (an unknown outcome): the next DeleteQueue finds
// those jobs gone, not NotFound for ever; and a lost answer to the last step means it is done.
TEST_F(QueueServiceTest, DeletingAQueueAfterAStepsAnswerWasLostFinishesOnTheNextCall) {
  QueueRecord q = MakeQueue("q1", "ml.g5.xlarge", 1, true);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Submit("q1", "emr.serverless.mgpu.core=200;").state, JobState::kFailed);
  }
  store_.set_max_commit_keys(2);
  store_.LoseNthAnswer(2, Unavailable("the answer to the commit was lost"));
  Status failed = service_->DeleteQueue(kAccount, "q1");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(store_.ListAllAccounts("Job")->size(), 1u);  // Two steps of two landed.
  Status again = service_->DeleteQueue(kAccount, "q1");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_FALSE(store_.Get({kAccount, "Queue", "q1"}).has_value());
  EXPECT_TRUE(store_.ListAllAccounts("Job")->empty());
  EXPECT_TRUE(claims_.NodesOf(q.Owner()).empty());

  QueueRecord q2 = MakeQueue("q2", "ml.g5.xlarge", 1, true);
  ASSERT_EQ(Submit("q2", "emr.serverless.mgpu.core=200;").state, JobState::kFailed);
  store_.LoseNthAnswer(1, Unavailable("the answer to the commit was lost"));
  ASSERT_FALSE(service_->DeleteQueue(kAccount, "q2").ok());
  EXPECT_FALSE(store_.Get({kAccount, "Queue", "q2"}).has_value());  // It went, unanswered.
  Status done = service_->DeleteQueue(kAccount, "q2");
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_TRUE(service_->ListQueues(kAccount).empty());
  EXPECT_TRUE(claims_.NodesOf(q2.Owner()).empty());
}

TEST_F(QueueServiceTest, KeepsJobsTaskIdsAndPlacementsAcrossARestart) {
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=70;");
  service_->ReconcileOnce();
  ReportAll("s1", protocol::WorkloadState::kRunning);
  service_->ReconcileOnce();
  const std::string workload = Get("q1", job.id).tasks[0].workload_id;
  ASSERT_FALSE(workload.empty());

  service_.reset();
  nodes::NodeClaims fresh_claims;  // A new process knows no claims: Recover takes them again.
  QueueService restarted(store_, registry_, fresh_claims, Options());
  ASSERT_TRUE(restarted.Recover().ok());
  auto after = restarted.GetJob(kAccount, "q1", job.id);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->state, JobState::kRunning);
  EXPECT_EQ(after->tasks[0].workload_id, workload);
  EXPECT_EQ(fresh_claims.NodesOf(nodes::Owner::Queue(kAccount, "q1")).size(), 1u);
  auto desired = Desired("s1");
  ASSERT_EQ(desired.size(), 1u);
  EXPECT_EQ(desired[0].id, workload);
  // The restored share still holds its 70%: a 40% job waits.
  JobSubmission s;
  s.command = {"/bin/true"};
  s.parameters = "emr.serverless.mgpu.core=40;";
  auto next = restarted.SubmitJob(kAccount, "q1", s);
  ASSERT_TRUE(next.has_value());
  restarted.ReconcileOnce();
  EXPECT_EQ(restarted.GetJob(kAccount, "q1", next->id)->state, JobState::kPending);
}

TEST_F(QueueServiceTest, ATaskOnANodeThatStopsReportingMovesToAnotherNode) {
  MakeQueue("q1", "ml.g5.xlarge", 2, true);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=60;");
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  ASSERT_EQ(job.tasks[0].state, TaskState::kPlaced);
  const std::string lost = job.tasks[0].node;
  const std::string other = lost == "s1" ? "s2" : "s1";
  const std::string old_id = job.tasks[0].workload_id;
  ReportAll(lost, protocol::WorkloadState::kRunning);
  service_->ReconcileOnce();
  // Only the other node keeps reporting past the timeout.
  clock_.Advance(20s);
  Report(other, {});
  auto swept = registry_.Sweep();
  EXPECT_NE(std::find(swept.begin(), swept.end(), NodeId(lost)), swept.end());
  EXPECT_EQ(std::find(swept.begin(), swept.end(), NodeId(other)), swept.end());
  service_->ReconcileOnce();

  job = Get("q1", job.id);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.tasks[0].state, TaskState::kPlaced);
  EXPECT_EQ(job.tasks[0].node, other);
  EXPECT_NE(job.tasks[0].workload_id, old_id);
  EXPECT_EQ(job.tasks[0].rescheduled, "node " + lost + " stopped reporting; rescheduled");
  EXPECT_TRUE(Desired(lost).empty()) << "its agent stops the old process if it comes back";
  ASSERT_EQ(Desired(other).size(), 1u);
  EXPECT_EQ(Desired(other)[0].id, job.tasks[0].workload_id);
  // Persisted as rescheduled: a restarted server does not resurrect the old placement.
  auto stored = store_.Get({kAccount, "Job", "q1/" + job.id});
  ASSERT_TRUE(stored.has_value());
  EXPECT_NE(stored->body.find(job.tasks[0].workload_id), std::string::npos);
  EXPECT_NE(stored->body.find("stopped reporting; rescheduled"), std::string::npos);
}

TEST_F(QueueServiceTest, ALostTaskWaitsWhenNoReadyNodeHasRoomAndReturnsWithItsNode) {
  MakeQueue("q1", "ml.g5.xlarge", 2, true);
  JobRecord job = Submit("q1", "emr.serverless.mgpu.core=60;", 2);
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  ASSERT_NE(job.tasks[0].node, job.tasks[1].node);
  const std::string lost = job.tasks[0].node;
  const std::string other = job.tasks[1].node;
  clock_.Advance(20s);
  Report(other, {});
  registry_.Sweep();
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  EXPECT_EQ(job.tasks[0].state, TaskState::kPending);
  EXPECT_TRUE(job.tasks[0].gpus.empty()) << "a waiting task holds no card of its lost node";
  EXPECT_EQ(job.tasks[1].state, TaskState::kPlaced);
  EXPECT_NE(job.reason.find("not schedulable"), std::string::npos) << job.reason;
  Report(lost, {});  // The agent is back.
  service_->ReconcileOnce();
  job = Get("q1", job.id);
  EXPECT_EQ(job.tasks[0].state, TaskState::kPlaced);
  EXPECT_EQ(job.tasks[0].node, lost);
  EXPECT_EQ(job.tasks[0].attempt, 2);
}

TEST_F(QueueServiceTest, AQueueKeepsOnlyItsNewestFinishedJobs) {
  QueueOptions o = Options();
  o.max_finished_jobs_per_queue = 2;
  Restart(o);
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(Submit("q1", "emr.serverless.mgpu.core=150;").id);
  JobRecord running = Submit("q1", "emr.serverless.mgpu.core=30;");
  service_->ReconcileOnce();
  auto listed = service_->ListJobs(kAccount, "q1");
  ASSERT_TRUE(listed.has_value());
  std::vector<std::string> kept;
  for (const auto& j : *listed) kept.push_back(j.id);
  EXPECT_EQ(kept, (std::vector<std::string>{ids[2], ids[3], running.id}))
      << "the two newest finished jobs and the unfinished one";
  auto gone = service_->GetJob(kAccount, "q1", ids[0]);
  ASSERT_FALSE(gone.has_value());
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
  EXPECT_FALSE(store_.Get({kAccount, "Job", "q1/" + ids[1]}).has_value()) << "deleted for good";
  // A restarted server loads what is left.
  Restart(o);
  ASSERT_TRUE(service_->Recover().ok());
  EXPECT_EQ(service_->ListJobs(kAccount, "q1")->size(), 3u);
}

TEST_F(QueueServiceTest, ShowsAllocatedAndMeasuredUseInTheGpuView) {
  MakeQueue("q1", "ml.g5.xlarge", 1, true);
  Submit("q1", "emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=1000;", 2);
  service_->ReconcileOnce();
  auto desired = Desired("s1");
  ASSERT_EQ(desired.size(), 2u);
  Report("s1", {Reported(desired[0].id, protocol::WorkloadState::kRunning, "", {}, 27.5, 800),
                Reported(desired[1].id, protocol::WorkloadState::kRunning)});
  auto view = service_->GpuView(kAccount, "q1");
  ASSERT_TRUE(view.has_value());
  ASSERT_EQ(view->cards.size(), 1u);
  const CardView& card = view->cards[0];
  EXPECT_EQ(card.core_allocated_percent, 60);
  EXPECT_EQ(card.memory_allocated_mib, 2000);
  EXPECT_EQ(card.memory_capacity_mib, 24576 - 512);
  ASSERT_EQ(card.worker_views.size(), 2u);
  EXPECT_EQ(card.worker_views[0].core_limit_percent, 30);
  EXPECT_EQ(card.worker_views[0].core_used_percent, 27.5);
  EXPECT_EQ(card.worker_views[0].memory_used_mib, 800);
  EXPECT_FALSE(card.worker_views[1].core_used_percent.has_value());  // -1: not measured.
  nlohmann::json j = ToJson(*view);
  EXPECT_EQ(j["cards"][0]["workers"][1]["used"]["core_percent"], "not measured");
  EXPECT_EQ(j["cards"][0]["workers"][0]["compute_share"]["achieved_of_limit_percent"], 91.7);
}

}  // namespace
}  // namespace carve::server::queues
