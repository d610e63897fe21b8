#include "protocol/agent_protocol.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>

namespace carve::protocol {

namespace {

template <NamedEnum E>
E EnumFromJson(const nlohmann::json& j) {
  auto v = ParseEnum<E>(j.get<std::string>(), EnumNames<E>::kField);
  if (!v.has_value()) throw std::invalid_argument(v.error().message);
  return *v;
}

}  // namespace

void to_json(nlohmann::json& j, Enforcement v) { j = NameOf(v); }
void from_json(const nlohmann::json& j, Enforcement& v) { v = EnumFromJson<Enforcement>(j); }
void to_json(nlohmann::json& j, WorkloadKind v) { j = NameOf(v); }
void from_json(const nlohmann::json& j, WorkloadKind& v) { v = EnumFromJson<WorkloadKind>(j); }
void to_json(nlohmann::json& j, RestartPolicy v) { j = NameOf(v); }
void from_json(const nlohmann::json& j, RestartPolicy& v) { v = EnumFromJson<RestartPolicy>(j); }
void to_json(nlohmann::json& j, WorkloadState v) { j = NameOf(v); }
void from_json(const nlohmann::json& j, WorkloadState& v) { v = EnumFromJson<WorkloadState>(j); }

// Field-by-field mapping; a missing field takes the struct's default, a wrong type throws
// (caught below and turned into InvalidArgument).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuInventory, index, uuid, name, pci_device_id,
                                                memory_mib, mig_capable, mig_mode_current,
                                                mig_mode_pending, catalog_model)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Registration, node_id, instance_type, driver,
                                                driver_version, hostname, data_dir, gpus,
                                                catalog_diffs)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RegisterReply, node_id, epoch,
                                                heartbeat_interval_ms, node_timeout_ms)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PartitionSpec, profile, start)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuDesired, index, mig, partitions)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ShareSpec, core_percent, memory_mib, enforcement,
                                                burstable)

void to_json(nlohmann::json& j, const DeviceRequest& v) {
  j = {{"gpus", v.gpus}};
  if (v.partition_start) j["partition_start"] = *v.partition_start;
  if (v.share) j["share"] = *v.share;
}
void from_json(const nlohmann::json& j, DeviceRequest& v) {
  v = DeviceRequest{};
  if (j.contains("gpus")) j.at("gpus").get_to(v.gpus);
  if (j.contains("partition_start") && !j.at("partition_start").is_null()) {
    v.partition_start = j.at("partition_start").get<int>();
  }
  if (j.contains("share") && !j.at("share").is_null()) v.share = j.at("share").get<ShareSpec>();
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WorkloadDesired, id, kind, name, index, command,
                                                values, image, environment, device, cpu_milli,
                                                memory_mib, restart, max_retries, health_check,
                                                ports, files, status_url, model_roots)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DesiredState, node_id, epoch, version, gpus,
                                                workloads, logs_listed, kept_logs)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CarvedPartition, profile, start, uuid)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProcessMemory, pid, used_mib)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GpuStatus, index, mig, partitions, applied,
                                                pending_reset, error, utilization_percent,
                                                memory_used_mib, processes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WorkloadStatus, id, state, pid, port, address,
                                                restarts, exit_codes, message, log_dir,
                                                ever_healthy, log_tail, core_used_percent,
                                                memory_used_mib, ports, status_body)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StatusReport, node_id, epoch, status_version,
                                                applied_version, gpus, workloads, events)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StatusReply, desired_epoch, desired_version,
                                                reregister)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Heartbeat, node_id, epoch, status_version,
                                                applied_version)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HeartbeatReply, desired_epoch, desired_version,
                                                reregister, send_status)

namespace {

// The only fields that are not integers. An integer field reads a JSON float with a C++ cast,
// which is undefined behaviour when the value is out of the field's range (1.8e19 into a
// uint64_t, found by the agent_protocol fuzz target), so a float anywhere else is refused first.
constexpr std::string_view kFloatFields[] = {"core_used_percent"};
// Messages nest a few levels; a deeper value is refused before anything recurses into it.
constexpr int kMaxDepth = 16;

Status CheckNumbers(const nlohmann::json& j, std::string_view key, int depth) {
  if (depth > kMaxDepth) {
    return InvalidArgument("nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  if (j.is_number_float() &&
      std::find(std::begin(kFloatFields), std::end(kFloatFields), key) == std::end(kFloatFields)) {
    return InvalidArgument("'" + std::string(key) + "' must be an integer, got " + j.dump());
  }
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) CARVE_RETURN_IF_ERROR(CheckNumbers(v, k, depth + 1));
  } else if (j.is_array()) {
    for (const auto& v : j) CARVE_RETURN_IF_ERROR(CheckNumbers(v, key, depth + 1));
  }
  return OkStatus();
}

template <typename T>
Result<T> Parse(const nlohmann::json& j, std::string_view what) {
  if (!j.is_object()) return InvalidArgument(std::string(what) + ": expected a JSON object");
  if (auto checked = CheckNumbers(j, "", 0); !checked.ok()) {
    return InvalidArgument(std::string(what) + ": " + checked.error().message);
  }
  try {
    return j.get<T>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string(what) + ": " + e.what());
  } catch (const std::invalid_argument& e) {  // A name no enum lists (EnumFromJson).
    return InvalidArgument(std::string(what) + ": " + e.what());
  }
}

}  // namespace

nlohmann::json ToJson(const Registration& v) { return v; }
nlohmann::json ToJson(const RegisterReply& v) { return v; }
namespace {

// The desired partitions of GPU `gpu` in `state`; nullptr when the state says nothing of it.
const std::vector<PartitionSpec>* PartitionsOf(const DesiredState& state, int gpu) {
  for (const GpuDesired& g : state.gpus) {
    if (g.index == gpu) return &g.partitions;
  }
  return nullptr;
}

// "device.partition" of a workload as a server of the previous release sent it; -1 when absent.
int LegacyPartitionIndex(const nlohmann::json& workload) {
  const auto dev = workload.find("device");
  if (dev == workload.end() || !dev->is_object()) return -1;
  const auto index = dev->find("partition");
  return index != dev->end() && index->is_number_integer() ? index->get<int>() : -1;
}

}  // namespace

nlohmann::json ToJson(const DesiredState& v) {
  nlohmann::json j = v;
  // Agents of the previous release name a partition by its index in the GPU's desired
  // partitions ("partition"), and take -1 for the whole GPU. So a partition is always sent with
  // an index; one whose start is not in the layout sent beside it gets an index past any
  // layout's end, which those agents refuse (NotFound) rather than bind the whole GPU.
  constexpr int kNoSuchPartition = 1 << 20;
  for (size_t i = 0; i < v.workloads.size(); ++i) {
    const DeviceRequest& dev = v.workloads[i].device;
    int index = dev.partition_start ? kNoSuchPartition : -1;
    if (dev.partition_start && dev.gpus.size() == 1) {
      if (const auto* parts = PartitionsOf(v, dev.gpus.front())) {
        for (size_t p = 0; p < parts->size(); ++p) {
          if ((*parts)[p].start == *dev.partition_start) index = static_cast<int>(p);
        }
      }
    }
    j["workloads"][i]["device"]["partition"] = index;
  }
  return j;
}
nlohmann::json ToJson(const WorkloadDesired& v) { return v; }
nlohmann::json ToJson(const StatusReport& v) { return v; }
nlohmann::json ToJson(const WorkloadStatus& v) { return v; }
nlohmann::json ToJson(const StatusReply& v) { return v; }
nlohmann::json ToJson(const Heartbeat& v) { return v; }
nlohmann::json ToJson(const HeartbeatReply& v) { return v; }

Status CheckNodeId(std::string_view id, std::string_view what) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  const auto bad = [&](const std::string& rule) {
    const std::string shown(id.substr(0, 80));
    return InvalidArgument(std::string(what) + ": node_id '" + shown +
                           (id.size() > 80 ? "...'" : "'") + " " + rule);
  };
  if (id.empty()) return bad("must not be empty");
  if (id.size() > kMaxNodeIdLength) {
    return bad("is " + std::to_string(id.size()) + " characters; at most " +
               std::to_string(kMaxNodeIdLength));
  }
  if (!alnum(id.front())) return bad("must start with a letter or digit");
  for (char c : id) {
    if (!alnum(c) && c != '.' && c != '_' && c != '-') {
      return bad("may hold only letters, digits, '.', '_' and '-'");
    }
  }
  return OkStatus();
}

namespace {

Status CheckLines(const std::vector<std::string>& lines, std::string_view what) {
  if (lines.size() > kMaxEvents) {
    return InvalidArgument(std::string(what) + " holds " + std::to_string(lines.size()) +
                           " entries; at most " + std::to_string(kMaxEvents));
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].size() > kMaxEventLength) {
      return InvalidArgument(std::string(what) + "[" + std::to_string(i) + "] is " +
                             std::to_string(lines[i].size()) + " bytes; at most " +
                             std::to_string(kMaxEventLength));
    }
  }
  return OkStatus();
}

}  // namespace

Result<Registration> RegistrationFromJson(const nlohmann::json& j) {
  CARVE_ASSIGN_OR_RETURN(auto r, Parse<Registration>(j, "registration"));
  CARVE_RETURN_IF_ERROR(CheckNodeId(r.node_id, "registration"));
  CARVE_RETURN_IF_ERROR(CheckLines(r.catalog_diffs, "registration: catalog_diffs"));
  return r;
}
Result<RegisterReply> RegisterReplyFromJson(const nlohmann::json& j) {
  return Parse<RegisterReply>(j, "register reply");
}
Result<DesiredState> DesiredStateFromJson(const nlohmann::json& j) {
  // Each workload is read by itself, so one that names a value this agent does not know fails
  // alone (it still needs an id to be reported under) instead of the whole desired state.
  const auto list = j.is_object() ? j.find("workloads") : j.end();
  if (list == j.end() || !list->is_array()) return Parse<DesiredState>(j, "desired state");
  nlohmann::json rest = j;
  rest["workloads"] = nlohmann::json::array();
  std::vector<WorkloadDesired> read;
  std::vector<int> legacy_index;  // Per read workload: "partition" without "partition_start".
  std::vector<UnreadableWorkload> unreadable;
  for (const nlohmann::json& w : *list) {
    auto one = Parse<WorkloadDesired>(w, "workload");
    if (one.has_value()) {
      legacy_index.push_back(one->device.partition_start ? -1 : LegacyPartitionIndex(w));
      read.push_back(std::move(*one));
      continue;
    }
    const auto id = w.is_object() ? w.find("id") : w.end();
    if (id == w.end() || !id->is_string()) {
      return InvalidArgument("desired state: " + one.error().message);
    }
    const auto name = w.find("name");
    const auto index = w.find("index");
    unreadable.push_back({id->get<std::string>(),
                          name != w.end() && name->is_string() ? name->get<std::string>() : "",
                          index != w.end() && index->is_number_integer() ? index->get<int>() : 0,
                          one.error().message});
  }
  CARVE_ASSIGN_OR_RETURN(DesiredState d, Parse<DesiredState>(rest, "desired state"));
  // A server of the previous release names a partition by its index only: its start is the
  // desired layout's. An index that names none is refused, never taken for the whole GPU.
  for (size_t i = 0; i < read.size(); ++i) {
    WorkloadDesired& w = read[i];
    if (legacy_index[i] < 0) {
      d.workloads.push_back(std::move(w));
      continue;
    }
    const std::vector<PartitionSpec>* parts =
        w.device.gpus.size() == 1 ? PartitionsOf(d, w.device.gpus.front()) : nullptr;
    if (parts == nullptr || legacy_index[i] >= static_cast<int>(parts->size())) {
      unreadable.push_back({w.id, w.name, w.index,
                            "device.partition " + std::to_string(legacy_index[i]) +
                                " names no partition of the desired layout of its GPU"});
      continue;
    }
    w.device.partition_start = (*parts)[static_cast<size_t>(legacy_index[i])].start;
    d.workloads.push_back(std::move(w));
  }
  d.unreadable = std::move(unreadable);
  return d;
}
Result<StatusReport> StatusReportFromJson(const nlohmann::json& j) {
  CARVE_ASSIGN_OR_RETURN(auto r, Parse<StatusReport>(j, "status report"));
  CARVE_RETURN_IF_ERROR(CheckNodeId(r.node_id, "status report"));
  CARVE_RETURN_IF_ERROR(CheckLines(r.events, "status report: events"));
  if (r.workloads.size() > kMaxReportedWorkloads) {
    return InvalidArgument("status report: " + std::to_string(r.workloads.size()) +
                           " workloads; at most " + std::to_string(kMaxReportedWorkloads));
  }
  for (const auto& w : r.workloads) {
    if (w.status_body.size() > kMaxStatusBody) {
      return InvalidArgument("status report: workloads[" + w.id + "].status_body is " +
                             std::to_string(w.status_body.size()) + " bytes; at most " +
                             std::to_string(kMaxStatusBody));
    }
  }
  return r;
}
Result<StatusReply> StatusReplyFromJson(const nlohmann::json& j) {
  return Parse<StatusReply>(j, "status reply");
}
Result<Heartbeat> HeartbeatFromJson(const nlohmann::json& j) {
  CARVE_ASSIGN_OR_RETURN(auto r, Parse<Heartbeat>(j, "heartbeat"));
  CARVE_RETURN_IF_ERROR(CheckNodeId(r.node_id, "heartbeat"));
  return r;
}
Result<HeartbeatReply> HeartbeatReplyFromJson(const nlohmann::json& j) {
  return Parse<HeartbeatReply>(j, "heartbeat reply");
}

}  // namespace carve::protocol
