#include "protocol/agent_protocol.h"

#include <gtest/gtest.h>

namespace carve::protocol {
namespace {

TEST(AgentProtocol, DesiredStateRoundTripsEveryField) {
  DesiredState d;
  d.node_id = "node-a";
  d.epoch = "e1";
  d.version = 7;
  d.gpus = {{0, true, {{"3g.40gb", 0}, {"1g.10gb", 6}}}, {1, false, {}}};
  WorkloadDesired w;
  w.id = "111111111111/ic-a/abc";
  w.kind = protocol::WorkloadKind::kCopy;
  w.name = "ic-a";
  w.index = 2;
  w.command = {"carve", "testmodel", "--port", "{port}"};
  w.values = {{"model_data", "s3://b/m.tar.gz"}};
  w.environment = {{"MODEL", "llama"}};
  w.device.gpus = {0};
  w.device.partition_start = 6;
  w.device.share = ShareSpec{30, 1000, protocol::Enforcement::kMps, true};
  w.cpu_milli = 2000;
  w.memory_mib = 4096;
  w.restart = protocol::RestartPolicy::kOnFailure;
  w.max_retries = 3;
  w.health_check = false;
  w.ports = {"dashboard", "serve"};
  w.files = {{"serve_config", "applications: []\n"}};
  w.status_url = "http://127.0.0.1:{port_dashboard}/api/serve/applications/";
  d.workloads = {w};
  d.logs_listed = true;
  d.kept_logs = {"111111111111/q/job-1/0"};

  auto back = DesiredStateFromJson(nlohmann::json::parse(ToJson(d).dump()));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->version, 7u);
  EXPECT_EQ(back->gpus, d.gpus);
  ASSERT_EQ(back->workloads.size(), 1u);
  EXPECT_EQ(back->workloads[0], w);
  EXPECT_TRUE(back->logs_listed);
  EXPECT_EQ(back->kept_logs, d.kept_logs);
}

TEST(AgentProtocol, MissingFieldsTakeDefaults) {
  auto r = DesiredStateFromJson(nlohmann::json{{"version", 3}, {"workloads", {{{"id", "x"}}}}});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->workloads.size(), 1u);
  EXPECT_EQ(r->workloads[0].restart, protocol::RestartPolicy::kAlways);
  EXPECT_TRUE(r->workloads[0].health_check);
  EXPECT_FALSE(r->workloads[0].device.share.has_value());
  EXPECT_FALSE(r->workloads[0].device.partition_start.has_value());
  EXPECT_FALSE(r->logs_listed);  // An older server: the agent removes no log it does not list.
}

// A partition is named by its start on the wire ("partition_start"), and also by its index in
// the GPU's desired partitions ("partition"), which agents of the previous release read: one
// that finds no partition there would take the whole GPU, so the index is always sent. From a
// server of the previous release (index only) the agent finds the start in the desired layout,
// and an index that names no partition makes the workload unreadable, never a whole GPU.
TEST(AgentProtocol, APartitionIsNamedByItsStartAndItsIndexForThePreviousRelease) {
  DesiredState d;
  d.gpus = {{2, true, {{"3g.20gb", 4}, {"2g.10gb", 0}, {"1g.5gb", 6}}}};
  WorkloadDesired w;
  w.id = "acct/ic/1";
  w.device.gpus = {2};
  w.device.partition_start = 6;
  d.workloads = {w};
  nlohmann::json j = ToJson(d);
  EXPECT_EQ(j["workloads"][0]["device"]["partition_start"], 6);
  EXPECT_EQ(j["workloads"][0]["device"]["partition"], 2);
  d.workloads[0].device.partition_start = 2;  // In no partition: past every layout's end.
  EXPECT_GT(ToJson(d)["workloads"][0]["device"]["partition"], 7);
  d.workloads[0].device.partition_start.reset();  // A whole GPU.
  EXPECT_EQ(ToJson(d)["workloads"][0]["device"]["partition"], -1);

  j["workloads"][0]["device"].erase("partition_start");  // A server of the previous release.
  j["workloads"][0]["device"]["partition"] = 1;
  auto old_server = DesiredStateFromJson(j);
  ASSERT_TRUE(old_server.has_value()) << old_server.error().message;
  ASSERT_EQ(old_server->workloads.size(), 1u);
  EXPECT_EQ(old_server->workloads[0].device.partition_start, 0);  // The 2g.10gb.

  j["workloads"][0]["device"]["partition"] = 3;
  auto beyond = DesiredStateFromJson(j);
  ASSERT_TRUE(beyond.has_value()) << beyond.error().message;
  EXPECT_TRUE(beyond->workloads.empty());
  ASSERT_EQ(beyond->unreadable.size(), 1u);
  EXPECT_NE(beyond->unreadable[0].reason.find("device.partition 3 names no partition"),
            std::string::npos)
      << beyond->unreadable[0].reason;
}

TEST(AgentProtocol, WrongTypesAreInvalidArgumentNotExceptions) {
  auto r = StatusReportFromJson(nlohmann::json{{"node_id", "n"}, {"applied_version", "seven"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("status report"), std::string::npos);
  EXPECT_FALSE(RegistrationFromJson(nlohmann::json::array()).has_value());
}

TEST(AgentProtocol, EachWireNameIsSpelledOnceAndReadBack) {
  for (WorkloadState v :
       {WorkloadState::kStarting, WorkloadState::kRunning, WorkloadState::kBackoff,
        WorkloadState::kSucceeded, WorkloadState::kFailed, WorkloadState::kStopped}) {
    EXPECT_EQ(nlohmann::json(v).get<WorkloadState>(), v) << NameOf(v);
  }
  EXPECT_EQ(nlohmann::json(RestartPolicy::kOnFailure), "on-failure");
  EXPECT_EQ(nlohmann::json(Enforcement::kMps), "mps");
  EXPECT_EQ(nlohmann::json(WorkloadKind::kTask), "task");
  EXPECT_EQ(nlohmann::json(WorkloadState::kBackoff), "backoff");
}

// A newer server may send a value this agent does not know: only that workload is unreadable,
// reported under its id; the others run.
TEST(AgentProtocol, AWorkloadWithAValueThisAgentDoesNotKnowIsUnreadableAlone) {
  DesiredState d;
  d.version = 7;
  WorkloadDesired a, b;
  a.id = "acct/ic/1";
  b.id = "acct/ic/2";
  b.name = "ic";
  b.index = 2;
  d.workloads = {a, b};
  nlohmann::json j = ToJson(d);
  j["workloads"][1]["kind"] = "vm";
  auto read = DesiredStateFromJson(j);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(read->version, 7u);
  ASSERT_EQ(read->workloads.size(), 1u);
  EXPECT_EQ(read->workloads[0].id, "acct/ic/1");
  ASSERT_EQ(read->unreadable.size(), 1u);
  EXPECT_EQ(read->unreadable[0].id, "acct/ic/2");
  EXPECT_EQ(read->unreadable[0].name, "ic");
  EXPECT_EQ(read->unreadable[0].index, 2);
  EXPECT_NE(read->unreadable[0].reason.find("kind='vm': must be one of copy, task"),
            std::string::npos)
      << read->unreadable[0].reason;
  // One without an id cannot be reported: the desired state is refused.
  j["workloads"][1].erase("id");
  auto refused = DesiredStateFromJson(j);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("kind='vm'"), std::string::npos);
  // A status naming a state the server does not know is refused, naming it.
  StatusReport s;
  s.node_id = "n";
  WorkloadStatus w;
  w.id = "acct/ic/1";
  s.workloads = {w};
  nlohmann::json sj = ToJson(s);
  sj["workloads"][0]["state"] = "paused";
  auto bad = StatusReportFromJson(sj);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("state='paused': must be one of starting, running, backoff, "
                                     "succeeded, failed, stopped"),
            std::string::npos)
      << bad.error().message;
}

TEST(AgentProtocol, RegistrationNeedsANodeId) {
  auto r = RegistrationFromJson(nlohmann::json{{"instance_type", "ml.p4d.24xlarge"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("node_id"), std::string::npos);
}

TEST(AgentProtocol, StatusReportRoundTrips) {
  StatusReport s;
  s.node_id = "n";
  s.epoch = "e";
  s.applied_version = 4;
  GpuStatus g;
  g.index = 1;
  g.mig = true;
  g.partitions = {{"1g.5gb", 6, "MIG-abc"}};
  g.applied = true;
  g.processes = {{42, 100}};
  s.gpus = {g};
  WorkloadStatus w{"id",
                   WorkloadState::kBackoff,
                   10,
                   5000,
                   "127.0.0.1:5000",
                   1,
                   {3},
                   "ok",
                   "/d",
                   29.5,
                   900,
                   true,
                   "Traceback: boom",
                   {{"dashboard", 8265}},
                   R"({"applications": {}})"};
  s.workloads = {w};
  s.events = {"copy restarted"};
  auto back = StatusReportFromJson(ToJson(s));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->workloads, s.workloads);
  ASSERT_EQ(back->gpus.size(), 1u);
  EXPECT_EQ(back->gpus[0].partitions[0].uuid, "MIG-abc");
  EXPECT_EQ(back->gpus[0].processes[0].pid, 42u);
  EXPECT_EQ(back->events, s.events);
}

TEST(AgentProtocol, AStatusBodyOverItsCapIsRefused) {
  StatusReport s;
  s.node_id = "n";
  WorkloadStatus w;
  w.id = "acct/q/job-0001/head-0.1";
  w.status_body = std::string(kMaxStatusBody + 1, 'x');
  s.workloads = {w};
  auto back = StatusReportFromJson(ToJson(s));
  ASSERT_FALSE(back.has_value());
  EXPECT_EQ(back.error().message,
            "status report: workloads[acct/q/job-0001/head-0.1].status_body is 16385 bytes; at "
            "most 16384");
}

// A float converts to an integer field with a cast that is undefined out of range (1.8e19 into
// the uint64_t status_version); it is refused, naming the field, whatever its value.
TEST(AgentProtocol, AFloatInAnIntegerFieldIsRefusedNamingTheField) {
  auto huge = HeartbeatFromJson(nlohmann::json::parse(
      R"({"node_id": "n", "epoch": "e", "status_version": 18466744073709551615})"));
  ASSERT_FALSE(huge.has_value());
  EXPECT_EQ(huge.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(huge.error().message.find("'status_version' must be an integer"), std::string::npos)
      << huge.error().message;
  auto nested =
      StatusReportFromJson(nlohmann::json::parse(R"({"node_id": "n", "gpus": [{"index": 1.5}]})"));
  ASSERT_FALSE(nested.has_value());
  EXPECT_NE(nested.error().message.find("'index'"), std::string::npos) << nested.error().message;
}

TEST(AgentProtocol, AValueNestedDeeperThanAnyMessageIsRefused) {
  std::string deep = R"({"node_id": "n", "events": )";
  for (int i = 0; i < 20; ++i) deep += "[";
  for (int i = 0; i < 20; ++i) deep += "]";
  auto r = StatusReportFromJson(nlohmann::json::parse(deep + "}"));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("nested deeper than 16 levels"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace carve::protocol

namespace carve::protocol {
namespace {

TEST(AgentProtocol, ANodeIdIsOneAlphabetAndBoundedInLength) {
  EXPECT_TRUE(CheckNodeId("node-a", "t").ok());
  EXPECT_TRUE(CheckNodeId("ip-10-0-0-1.ec2.internal", "t").ok());
  EXPECT_TRUE(CheckNodeId(std::string(63, 'n'), "t").ok());
  const std::vector<std::string> bad_ids{
      "", "../../etc", "a/b", ".hidden", "-flag", "a b", "n\n", "n\xc3\xa9", std::string(64, 'n')};
  for (const std::string& bad : bad_ids) {
    const Status s = CheckNodeId(bad, "registration");
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(s.error().message.find("registration: node_id"), std::string::npos)
        << s.error().message;
  }
  auto r = RegistrationFromJson(nlohmann::json{{"node_id", "a/../../etc"}, {"instance_type", "x"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("may hold only letters"), std::string::npos);
}

TEST(AgentProtocol, EventsAndCatalogDiffsAreBoundedInCountAndLength) {
  nlohmann::json many{{"node_id", "n"}, {"events", std::vector<std::string>(65, "e")}};
  auto r = StatusReportFromJson(many);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("events holds 65 entries; at most 64"), std::string::npos)
      << r.error().message;
  nlohmann::json long_one{{"node_id", "n"},
                          {"catalog_diffs", {std::string(kMaxEventLength + 1, 'x')}}};
  auto g = RegistrationFromJson(long_one);
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().message.find("catalog_diffs[0] is 1025 bytes"), std::string::npos)
      << g.error().message;
  EXPECT_TRUE(StatusReportFromJson(
                  nlohmann::json{{"node_id", "n"}, {"events", std::vector<std::string>(64, "e")}})
                  .has_value());
}

}  // namespace
}  // namespace carve::protocol
