#include "agent/nvml/fake_node_config.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "catalog/catalog.h"
#include "catalog/driver_version.h"

namespace carve::agent {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

Result<uint32_t> ParseNumber(std::string_view text, std::string_view clause) {
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return InvalidArgument(fmt::format(
        "fake NVML config clause '{}': '{}' is not a non-negative integer", clause, text));
  }
  return v;
}

// "8 x a100-40gb" or "a100-40gb".
Status ParseGpus(std::string_view value, std::string_view clause, FakeNodeConfig& config) {
  uint32_t count = 1;
  std::string_view name = value;
  if (size_t x = value.find(" x "); x != std::string_view::npos) {
    CARVE_ASSIGN_OR_RETURN(count, ParseNumber(Trim(value.substr(0, x)), clause));
    name = Trim(value.substr(x + 3));
  }
  if (count == 0 || count > 64) {
    return InvalidArgument(fmt::format(
        "fake NVML config clause '{}': GPU count must be 1..64, got {}", clause, count));
  }
  auto gpu = catalog::FindGpu(name);
  if (!gpu) {
    return InvalidArgument(
        fmt::format("fake NVML config clause '{}': {}", clause, gpu.error().message));
  }
  for (uint32_t i = 0; i < count; ++i) {
    config.gpus.push_back(*gpu);
  }
  return OkStatus();
}

// "pid=4242 gpu=0 mib=512"
Status ParseProcess(std::string_view value, std::string_view clause, FakeNodeConfig& config) {
  FakeProcessConfig p;
  bool have_pid = false;
  std::istringstream words{std::string(value)};
  std::string word;
  while (words >> word) {
    size_t eq = word.find('=');
    std::string_view key = std::string_view(word).substr(0, eq);
    if (eq == std::string::npos) {
      key = "";
    }
    std::string_view v = eq == std::string::npos ? "" : std::string_view(word).substr(eq + 1);
    if (key == "pid") {
      CARVE_ASSIGN_OR_RETURN(p.pid, ParseNumber(v, clause));
      have_pid = true;
    } else if (key == "gpu") {
      CARVE_ASSIGN_OR_RETURN(p.gpu, ParseNumber(v, clause));
    } else if (key == "mib") {
      CARVE_ASSIGN_OR_RETURN(uint32_t mib, ParseNumber(v, clause));
      p.used_mib = mib;
    } else {
      return InvalidArgument(fmt::format(
          "fake NVML config clause '{}': '{}' is not pid=N, gpu=N or mib=N", clause, word));
    }
  }
  if (!have_pid) {
    return InvalidArgument(fmt::format("fake NVML config clause '{}': needs pid=N", clause));
  }
  config.processes.push_back(p);
  return OkStatus();
}

Status ParseClause(std::string_view clause, FakeNodeConfig& config) {
  size_t sep = clause.find_first_of(": ");
  std::string_view key = Trim(clause.substr(0, sep));
  std::string_view value = sep == std::string_view::npos ? "" : Trim(clause.substr(sep + 1));
  if (key == "gpus" || key == "gpu") {
    return ParseGpus(value, clause, config);
  }
  if (key == "driver") {
    if (auto v = catalog::DriverVersion::Parse(value); !v) {
      return InvalidArgument(
          fmt::format("fake NVML config clause '{}': {}", clause, v.error().message));
    }
    config.driver_version = std::string(value);
    return OkStatus();
  }
  if (key == "mig") {
    if (value == "enabled") {
      config.mig = FakeMigState::kEnabled;
    } else if (value == "disabled") {
      config.mig = FakeMigState::kDisabled;
    } else if (value == "pending-enable") {
      config.mig = FakeMigState::kPendingEnable;
    } else if (value == "pending-disable") {
      config.mig = FakeMigState::kPendingDisable;
    } else {
      return InvalidArgument(fmt::format(
          "fake NVML config clause '{}': mig must be enabled, disabled, pending-enable or "
          "pending-disable",
          clause));
    }
    return OkStatus();
  }
  if (key == "fail-create") {
    CARVE_ASSIGN_OR_RETURN(uint32_t n, ParseNumber(value, clause));
    config.fail_nth_create = static_cast<int>(n);
    return OkStatus();
  }
  if (key == "lost") {
    CARVE_ASSIGN_OR_RETURN(uint32_t gpu, ParseNumber(value, clause));
    config.lost_gpus.push_back(gpu);
    return OkStatus();
  }
  if (key == "process") {
    return ParseProcess(value, clause, config);
  }
  if (key == "seed") {
    CARVE_ASSIGN_OR_RETURN(config.seed, ParseNumber(value, clause));
    return OkStatus();
  }
  if (key == "user") {
    if (value != "root" && value != "unprivileged") {
      return InvalidArgument(
          fmt::format("fake NVML config clause '{}': user must be root or unprivileged", clause));
    }
    config.privileged = value == "root";
    return OkStatus();
  }
  return InvalidArgument(fmt::format(
      "fake NVML config clause '{}': unknown key '{}'; known: gpus, driver, mig, fail-create, "
      "lost, process, seed, user",
      clause, key));
}

}  // namespace

Result<FakeNodeConfig> ParseFakeNodeConfig(std::string_view text) {
  FakeNodeConfig config;
  std::string clause;
  auto flush = [&]() -> Status {
    std::string_view c = Trim(clause);
    Status s = c.empty() ? OkStatus() : ParseClause(c, config);
    clause.clear();
    return s;
  };
  bool in_comment = false;
  for (char ch : text) {
    if (ch == '\n') {
      in_comment = false;
    }
    if (in_comment) {
      continue;
    }
    if (ch == '#') {
      in_comment = true;
      continue;
    }
    if (ch == ',' || ch == ';' || ch == '\n') {
      CARVE_RETURN_IF_ERROR(flush());
    } else {
      clause.push_back(ch);
    }
  }
  CARVE_RETURN_IF_ERROR(flush());
  if (config.gpus.empty()) {
    return InvalidArgument(fmt::format(
        "fake NVML config '{}' names no GPUs; add a clause such as 'gpus: 8 x a100-40gb'", text));
  }
  for (uint32_t lost : config.lost_gpus) {
    if (lost >= config.gpus.size()) {
      return InvalidArgument(fmt::format("fake NVML config: lost GPU {} but the node has {} GPUs",
                                         lost, config.gpus.size()));
    }
  }
  for (const auto& p : config.processes) {
    if (p.gpu >= config.gpus.size()) {
      return InvalidArgument(
          fmt::format("fake NVML config: process {} on GPU {} but the node has {} GPUs", p.pid,
                      p.gpu, config.gpus.size()));
    }
  }
  return config;
}

Result<FakeNodeConfig> FakeNodeConfigFromEnvironment() {
  const char* env = std::getenv("CARVE_FAKE_NVML_CONFIG");
  if (env == nullptr || *env == '\0') {
    return ParseFakeNodeConfig("gpus: 8 x a100-40gb");
  }
  std::string value(env);
  if (value.front() != '/') {
    return ParseFakeNodeConfig(value);
  }
  std::ifstream in(value);
  if (!in) {
    return NotFound(
        fmt::format("CARVE_FAKE_NVML_CONFIG names file {}, which cannot be read", value));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseFakeNodeConfig(text.str());
}

}  // namespace carve::agent
