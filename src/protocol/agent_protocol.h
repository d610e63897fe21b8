// The agent <-> server protocol: JSON bodies exchanged between `carve agent` (one per GPU node,
// or embedded in `carve server`) and the control plane. Every call is SigV4-signed with the same
// credentials the aws CLI uses (service "sagemaker").
//
//   POST /v1/agent/register        Registration       -> RegisterReply
//   GET  /v1/agent/desired?node=ID&after=V&wait_ms=N  -> DesiredState
//        long-poll: answers as soon as the node's desired version exceeds `after`, or after
//        wait_ms (at most 30 s) with the current state; `after=0` answers at once.
//   POST /v1/agent/status          StatusReport       -> StatusReply
//        the full status: sent at once after any change of an outcome (a workload's state, a
//        GPU's carve), when the server asks for it, and with fresh telemetry (utilization,
//        memory per process) at most every telemetry interval.
//   POST /v1/agent/heartbeat       Heartbeat          -> HeartbeatReply
//        liveness in between, every heartbeat interval: a few dozen bytes with the status
//        version the agent last sent, so the server asks for the full status only when it does
//        not have that version (after its own restart, say). At 5,000 nodes this is what keeps
//        the control plane's per-heartbeat cost independent of what runs on the nodes.
//
// The server owns the desired state; the agent owns what actually runs. Applying a desired
// state is idempotent: the agent compares it with what it has (GPU layouts, workload ids) and
// changes only the difference. A workload's id is stable for the life of one placement (a
// rescheduled copy gets a new id), so "same id" means "same process may stay", and an id that is
// no longer desired is stopped. This is how a node that comes back after NotReady reconciles:
// its stale copies are no longer in its desired state, so they are killed, never run twice.
//
// Versioning: DesiredState.version grows monotonically per node for the life of one server
// process; `epoch` changes when the server restarts, so an agent that sees another epoch treats
// the state as new even if the version number went down.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/result.h"

namespace carve::protocol {

// ---- Registration ----------------------------------------------------------------------------

struct GpuInventory {
  int index = 0;
  std::string uuid;            // "GPU-..."
  std::string name;            // NVML's product name
  uint32_t pci_device_id = 0;  // PCI device id (upper 16 bits of NVML's pciDeviceId)
  int64_t memory_mib = 0;
  bool mig_capable = false;
  int mig_mode_current = 0;  // 0 disabled, 1 enabled
  int mig_mode_pending = 0;
  std::string catalog_model;  // carve catalog id ("a100-40gb"), "" when unknown
};

struct Registration {
  std::string node_id;
  std::string instance_type;   // given, or derived from the GPUs ("ml.p4d.24xlarge")
  std::string driver;          // "nvml" or "sim"
  std::string driver_version;  // NVML's system driver version ("550.54.15"); "" for sim
  std::string hostname;
  std::string data_dir;  // absolute; workload logs live under it
  std::vector<GpuInventory> gpus;
  // Live NVML profile/placement data that differs from the catalog (live data wins), one line
  // each, e.g. "gpu 0 1g.10gb: NVML allows starts {0,1,2,3,4,5,6}, catalog {0,...}".
  std::vector<std::string> catalog_diffs;
};

struct RegisterReply {
  std::string node_id;
  std::string epoch;  // server process identity (random per start)
  int64_t heartbeat_interval_ms = 2000;
  int64_t node_timeout_ms = 15000;  // NotReady after this long without a status report
};

// ---- Desired state ---------------------------------------------------------------------------

struct PartitionSpec {
  std::string profile;  // NVML profile name without "mig-": "1g.5gb"
  int start = 0;        // placement start slice chosen by the layout engine
  friend bool operator==(const PartitionSpec&, const PartitionSpec&) = default;
};

struct GpuDesired {
  int index = 0;
  // true: the GPU carries exactly `partitions` (MIG). false: used whole (no instances).
  bool mig = false;
  std::vector<PartitionSpec> partitions;
  friend bool operator==(const GpuDesired&, const GpuDesired&) = default;
};

// The protocol's vocabulary. Each is spelled once, here (EnumNames), and only the JSON
// mapping spells it; a message naming a value not listed is refused, naming the field.

// How a share is held to its limits: carve's interposer (libcarve-mgpu.so: exact memory quota,
// time-share limiter), NVIDIA MPS (active-thread percentage and pinned device-memory limit), or
// not at all (the limits travel as CARVE_MGPU_* environment variables only).
enum class Enforcement { kInterposer, kMps, kNone };
// What a workload is: an inference-component copy, or a job task or Ray process.
enum class WorkloadKind { kCopy, kTask };
// When the agent starts a workload's process again after it exits.
enum class RestartPolicy { kAlways, kOnFailure, kNever };
// A workload's state, as the server sees it:
//   starting  process started, /ping not yet answering
//   running   healthy (answers /ping, or started when health_check is false)
//   backoff   crashed, restart scheduled
//   succeeded exited 0 and will not restart (tasks)
//   failed    exited non-zero with no restarts left, or could not start (message says why)
//   stopped   stopped on request
enum class WorkloadState { kStarting, kRunning, kBackoff, kSucceeded, kFailed, kStopped };

// Their JSON: the name; a name not listed throws, and the message decoders catch it.
void to_json(nlohmann::json& j, Enforcement v);
void from_json(const nlohmann::json& j, Enforcement& v);
void to_json(nlohmann::json& j, WorkloadKind v);
void from_json(const nlohmann::json& j, WorkloadKind& v);
void to_json(nlohmann::json& j, RestartPolicy v);
void from_json(const nlohmann::json& j, RestartPolicy& v);
void to_json(nlohmann::json& j, WorkloadState v);
void from_json(const nlohmann::json& j, WorkloadState& v);

// A state the workload will not leave by itself.
constexpr bool IsFinal(WorkloadState s) {
  return s == WorkloadState::kSucceeded || s == WorkloadState::kFailed ||
         s == WorkloadState::kStopped;
}

// An mGPU share of one card.
struct ShareSpec {
  int core_percent = 100;                  // 5..100
  int64_t memory_mib = 0;                  // 0: no quota (whole card memory)
  Enforcement enforcement = Enforcement::kInterposer;
  bool burstable = false;
  friend bool operator==(const ShareSpec&, const ShareSpec&) = default;
};

// Where a workload runs on the node's GPUs.
struct DeviceRequest {
  // Partition: gpus has one GPU, partition_start names its partition by the placement slice it
  // starts at, as the store and the layout engine do ({"profile", "start"}).
  // Whole GPUs: gpus lists them, no partition_start.
  // Share: gpus has one card, share is set.
  // No GPU: gpus empty.
  // On the wire a partition is also sent as "partition", its index in the GPU's desired
  // partitions, which agents of the previous release read; an agent reads that index only from
  // a server that sends no "partition_start" (ToJson, DesiredStateFromJson).
  std::vector<int> gpus;
  std::optional<int> partition_start;
  std::optional<ShareSpec> share;
  friend bool operator==(const DeviceRequest&, const DeviceRequest&) = default;
};

struct WorkloadDesired {
  std::string id;    // stable per placement: "<account>/<component>/<uid>"
  WorkloadKind kind = WorkloadKind::kCopy;
  std::string name;  // component or job name, for people (events, `carve logs NAME`)
  int index = 0;     // copy or task index, for `carve logs NAME --copy N`
  // Logs are keyed by `id`, never by `name`: <data_dir>/logs/<launch::LogDirName(id)>/.
  // Either a command template (placeholders {port}, {model_data} and any in `values`) ...
  std::vector<std::string> command;
  std::map<std::string, std::string> values;
  // ... or an OCI image run with podman/docker (when command is empty).
  std::string image;
  std::map<std::string, std::string> environment;  // passed through (CreateModel Environment)
  DeviceRequest device;
  int64_t cpu_milli = 0;           // host CPU limit (cgroup); 0: none
  int64_t memory_mib = 0;          // host memory limit (cgroup); 0: none
  RestartPolicy restart = RestartPolicy::kAlways;
  int max_retries = -1;            // on-failure: -1 unlimited
  bool health_check = true;        // running only after GET /ping answers 200
  // More ports the agent picks, by name ([a-z0-9_]): each is the placeholder {port_NAME} and is
  // reported in WorkloadStatus.ports (a Ray head's dashboard, a Serve ingress).
  std::vector<std::string> ports;
  // Files the agent writes for the workload, by name ([a-z0-9_]) -> contents: each is written
  // under the workload's directory and its path is the placeholder {file_NAME}.
  std::map<std::string, std::string> files;
  // A template (same placeholders) of an http://127.0.0.1 URL the agent reads while the process
  // runs, reporting the body (at most kMaxStatusBody bytes) as WorkloadStatus.status_body; ""
  // reads nothing. A Ray head's Serve applications (GET /api/serve/applications/).
  std::string status_url;
  // The operator's model roots (carve server --model-root): a file:// or path model_data value
  // must resolve inside one of them when the agent launches (protocol/launch_inputs.h).
  std::vector<std::string> model_roots;
  friend bool operator==(const WorkloadDesired&, const WorkloadDesired&) = default;
};

// A workload of a desired state that this agent cannot read: a value it does not know (an
// enforcement, a kind or a restart policy a newer server sends), or a member of the wrong kind.
// The agent reports it failed, naming the reason, and runs the rest of the desired state.
struct UnreadableWorkload {
  std::string id;
  std::string name;
  int index = 0;
  std::string reason;
};

struct DesiredState {
  std::string node_id;
  std::string epoch;
  uint64_t version = 0;
  std::vector<GpuDesired> gpus;  // only GPUs the server has decided about
  std::vector<WorkloadDesired> workloads;
  // Logs are kept past their workload only while the server lists them: with logs_listed set, a
  // log directory on the node whose workload id is neither in `workloads` nor in `kept_logs` (a
  // task of a job that was deleted, say) is removed. A server that predates the field sends
  // neither, and its agent removes nothing of the kind.
  bool logs_listed = false;
  std::vector<std::string> kept_logs;  // ids of ended workloads whose logs stay readable
  // Set by DesiredStateFromJson, never sent: the workloads it could not read (above).
  std::vector<UnreadableWorkload> unreadable;
};

// ---- Status ----------------------------------------------------------------------------------

struct CarvedPartition {
  std::string profile;
  int start = 0;
  std::string uuid;  // "MIG-..."
};

struct ProcessMemory {
  uint32_t pid = 0;
  int64_t used_mib = 0;
};

struct GpuStatus {
  int index = 0;
  bool mig = false;
  std::vector<CarvedPartition> partitions;  // what is carved now, in desired order when applied
  bool applied = false;                     // matches the desired entry for this GPU (if any)
  bool pending_reset = false;    // MIG mode change waits for a GPU reset: reported, not retried
  std::string error;             // why the desired layout could not be applied; "" when fine
  int utilization_percent = -1;  // -1 unknown
  int64_t memory_used_mib = -1;
  std::vector<ProcessMemory> processes;
};

struct WorkloadStatus {
  std::string id;
  WorkloadState state = WorkloadState::kStarting;
  int pid = 0;
  int port = 0;         // 127.0.0.1 port (or host address below) the workload serves on
  std::string address;  // "host:port" reachable from the server; "" when not serving
  int restarts = 0;
  std::vector<int> exit_codes;
  std::string message;            // last event or error
  std::string log_dir;            // absolute, on the node
  double core_used_percent = -1;  // enforcement layer's measure; -1 unknown
  int64_t memory_used_mib = -1;
  // Whether any process of this workload has answered its health check since the agent took
  // it on, and, while it is in backoff or failed, the last lines of its log (stderr, else
  // stdout; at most kMaxLogTail bytes): what the control plane tells the user about a copy
  // that cannot start.
  bool ever_healthy = false;
  std::string log_tail;
  std::map<std::string, int> ports;  // WorkloadDesired.ports, as picked
  // The last answer from WorkloadDesired.status_url: "" until one came; "error: ..." when the
  // last read failed.
  std::string status_body;
  friend bool operator==(const WorkloadStatus&, const WorkloadStatus&) = default;
};

inline constexpr size_t kMaxLogTail = 1024;
inline constexpr size_t kMaxStatusBody = size_t{16} * 1024;
// What one node may send at once (docs/security.md, "Nodes"): no agent, honest or not, grows the
// server's log or store without bound.
inline constexpr size_t kMaxNodeIdLength = 63;
inline constexpr size_t kMaxEvents = 64;         // StatusReport.events, Registration.catalog_diffs
inline constexpr size_t kMaxEventLength = 1024;  // each of them
inline constexpr size_t kMaxReportedWorkloads = 4096;

// A node id: 1-63 characters of [A-Za-z0-9._-], starting with a letter or digit, so it is safe
// as a file name, a log field and a metric label. InvalidArgument names `what` and the rule.
Status CheckNodeId(std::string_view id, std::string_view what);

struct StatusReport {
  std::string node_id;
  std::string epoch;  // the epoch the agent last registered with
  // Bumped by the agent whenever it has a status the server has not seen; heartbeats carry it.
  uint64_t status_version = 0;
  // The last desired version the agent acted on: applied, or failed with the failures reported
  // in GpuStatus.error / WorkloadStatus.message.
  uint64_t applied_version = 0;
  std::vector<GpuStatus> gpus;
  std::vector<WorkloadStatus> workloads;
  std::vector<std::string> events;  // since the last report ("copy X exited with 3, restarting")
};

struct StatusReply {
  std::string desired_epoch;
  uint64_t desired_version = 0;
  bool reregister = false;  // the server does not know this node (restarted, lost it): register
};

struct Heartbeat {
  std::string node_id;
  std::string epoch;
  uint64_t status_version = 0;  // of the last StatusReport the agent sent
  uint64_t applied_version = 0;
};

struct HeartbeatReply {
  std::string desired_epoch;
  uint64_t desired_version = 0;
  bool reregister = false;   // as in StatusReply
  bool send_status = false;  // the server lacks the agent's status_version: send the full status
};

// JSON (de)serialisation. FromJson errors are InvalidArgument naming the field.
nlohmann::json ToJson(const Registration& v);
nlohmann::json ToJson(const RegisterReply& v);
nlohmann::json ToJson(const DesiredState& v);
nlohmann::json ToJson(const WorkloadDesired& v);
nlohmann::json ToJson(const StatusReport& v);
nlohmann::json ToJson(const WorkloadStatus& v);
nlohmann::json ToJson(const StatusReply& v);
nlohmann::json ToJson(const Heartbeat& v);
nlohmann::json ToJson(const HeartbeatReply& v);
Result<Registration> RegistrationFromJson(const nlohmann::json& j);
Result<RegisterReply> RegisterReplyFromJson(const nlohmann::json& j);
Result<DesiredState> DesiredStateFromJson(const nlohmann::json& j);
Result<StatusReport> StatusReportFromJson(const nlohmann::json& j);
Result<StatusReply> StatusReplyFromJson(const nlohmann::json& j);
Result<Heartbeat> HeartbeatFromJson(const nlohmann::json& j);
Result<HeartbeatReply> HeartbeatReplyFromJson(const nlohmann::json& j);

}  // namespace carve::protocol

namespace carve {
template <>
struct EnumNames<protocol::Enforcement> {
  static constexpr std::string_view kField = "enforcement";
  static constexpr std::array<std::string_view, 3> kNames = {"interposer", "mps", "none"};
};
template <>
struct EnumNames<protocol::WorkloadKind> {
  static constexpr std::string_view kField = "kind";
  static constexpr std::array<std::string_view, 2> kNames = {"copy", "task"};
};
template <>
struct EnumNames<protocol::RestartPolicy> {
  static constexpr std::string_view kField = "restart";
  static constexpr std::array<std::string_view, 3> kNames = {"always", "on-failure", "never"};
};
template <>
struct EnumNames<protocol::WorkloadState> {
  static constexpr std::string_view kField = "state";
  static constexpr std::array<std::string_view, 6> kNames = {"starting",  "running", "backoff",
                                                             "succeeded", "failed",  "stopped"};
};
}  // namespace carve
