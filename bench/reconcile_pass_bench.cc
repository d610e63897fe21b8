// What one reconcile pass of the SageMaker service costs at fleet scale (issue 14), measured in
// process so that the figure is the pass itself, not HTTP or the agents.
//
// Setup: a SqliteStore in a temp directory, a NodeRegistry with N registered ml.p4d.24xlarge
// nodes (8 x A100-40GB), one endpoint over all N carved with the seed's layout
// [mig-4g.20gb, mig-2g.10gb, mig-1g.5gb], and one inference component of `--copies` mig-1g.5gb
// copies, all reported running. The agents are played in process: after each pass, every node
// whose desired state changed reports it applied.
//
// Then it times, `--trials` times each, with the median and the slowest:
//   quiet:  a pass when nothing changed;
//   scale:  the pass after UpdateInferenceComponentRuntimeConfig moves the copy count by one
//           (alternately down and up), and the pass after that copy's agent reported;
// and, for each, how many nodes got a new desired-state version (what the agents would fetch).
//
//   cmake --build build --target reconcile_pass_bench
//   build/bench/reconcile_pass_bench --nodes 1250 --copies 9999 --trials 20
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "server/nodes/agent_node_driver.h"
#include "server/nodes/node_claims.h"
#include "server/nodes/node_registry.h"
#include "server/sagemaker/fake_agents_test_util.h"
#include "server/sagemaker/service.h"
#include "store/sqlite_store.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kAccount[] = "111111111111";

struct Args {
  int nodes = 1250;
  int copies = 9999;
  int trials = 20;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--nodes") {
      a.nodes = value;
    } else if (flag == "--copies") {
      a.copies = value;
    } else if (flag == "--trials") {
      a.trials = value;
    } else {
      fmt::print(stderr, "unknown flag {} (--nodes N --copies N --trials N)\n", flag);
      std::exit(2);
    }
  }
  if (a.nodes < 1 || a.copies < 1 || a.copies >= a.nodes * 8 || a.trials < 1) {
    fmt::print(stderr, "need nodes >= 1, 1 <= copies < nodes * 8 (one 1g per GPU), trials >= 1\n");
    std::exit(2);
  }
  return a;
}

class Bench {
 public:
  explicit Bench(const Args& args)
      : args_(args),
        dir_(std::filesystem::temp_directory_path() / fmt::format("carve-pass-{}", getpid())),
        store_(OpenStore(dir_)),
        registry_(*store_, RegistryOptions()),
        driver_(registry_, std::chrono::minutes(5)) {
    for (int i = 0; i < args.nodes; ++i) {
      protocol::Registration r;
      r.node_id = fmt::format("node-{:05}", i);
      r.instance_type = "ml.p4d.24xlarge";
      r.driver = "sim";
      if (!registry_.Register(r).has_value()) Die("register " + r.node_id);
      applied_[r.node_id] = 0;
    }
    ServiceOptions options;
    options.registry = &registry_;
    service_ = std::make_unique<SageMakerService>(*store_, claims_, driver_, options);
    if (!service_->Recover().ok()) Die("recover");
  }
  ~Bench() {
    service_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void Setup() {
    Ok("CreateModel", {{"ModelName", "m"},
                       {"PrimaryContainer",
                        {{"Image", "carve/testmodel"}, {"ModelDataUrl", "s3://bucket/m.tar.gz"}}}});
    json variant = {
        {"VariantName", "AllTraffic"},
        {"InstanceType", "ml.p4d.24xlarge"},
        {"InitialInstanceCount", args_.nodes},
        {"AcceleratorPartitionLayouts",
         {{{"AcceleratorPartitionTypes", {"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"}}}}}};
    Ok("CreateEndpointConfig", {{"EndpointConfigName", "ep"}, {"ProductionVariants", {variant}}});
    Ok("CreateEndpoint", {{"EndpointName", "ep"}, {"EndpointConfigName", "ep"}});
    // The carve waits for the agents' reports, so they are pumped on another thread meanwhile.
    const auto t0 = Clock::now();
    SettleUntil("DescribeEndpoint", {{"EndpointName", "ep"}}, "EndpointStatus", "InService");
    fmt::print("endpoint over {} instances InService after {:.1f} s\n", args_.nodes, Since(t0));
    json spec = {{"ModelName", "m"},
                 {"ComputeResourceRequirements",
                  {{"AcceleratorPartitionType", "mig-1g.5gb"},
                   {"NumberOfAcceleratorDevicesRequired", 1},
                   {"NumberOfCpuCoresRequired", 1},
                   {"MinMemoryRequiredInMb", 1024}}}};
    Ok("CreateInferenceComponent", {{"InferenceComponentName", "ic"},
                                    {"EndpointName", "ep"},
                                    {"VariantName", "AllTraffic"},
                                    {"Specification", spec},
                                    {"RuntimeConfig", {{"CopyCount", args_.copies}}}});
    const auto t1 = Clock::now();
    SettleUntil("DescribeInferenceComponent", {{"InferenceComponentName", "ic"}},
                "InferenceComponentStatus", "InService");
    fmt::print("{} copies InService after {:.1f} s\n", args_.copies, Since(t1));
  }

  void Measure() {
    std::vector<Sample> quiet;
    std::vector<Sample> scale;
    std::vector<Sample> report;
    for (int t = 0; t < args_.trials; ++t) quiet.push_back(TimedPass());
    for (int t = 0; t < args_.trials; ++t) {
      const int copies = args_.copies + (t % 2 == 0 ? 1 : 0);
      Ok("UpdateInferenceComponentRuntimeConfig",
         {{"InferenceComponentName", "ic"}, {"DesiredRuntimeConfig", {{"CopyCount", copies}}}});
      scale.push_back(TimedPass());
      PumpChanged();
      report.push_back(TimedPass());
      PumpChanged();
    }
    fmt::print("\n{} nodes, {} copies, {} trials (SqliteStore, in process)\n", args_.nodes,
               args_.copies, args_.trials);
    fmt::print("{:<34} {:>12} {:>12} {:>18}\n", "pass", "median ms", "max ms", "nodes republished");
    Print("quiet (nothing changed)", quiet);
    Print("copy count +-1", scale);
    Print("after that copy's report", report);
  }

 private:
  struct Sample {
    double ms = 0;
    size_t republished = 0;
  };

  static std::unique_ptr<store::SqliteStore> OpenStore(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    auto s = store::SqliteStore::Open((dir / "carve.db").string());
    if (!s.has_value()) Die("open store: " + s.error().message);
    return std::move(s).value();
  }
  static nodes::NodeRegistryOptions RegistryOptions() {
    nodes::NodeRegistryOptions o;
    o.node_timeout = std::chrono::hours(1);  // Liveness is not what is measured.
    return o;
  }
  [[noreturn]] static void Die(const std::string& what) {
    fmt::print(stderr, "reconcile_pass_bench: {}\n", what);
    std::exit(1);
  }
  static double Since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

  json Ok(const std::string& op, const json& body) {
    http::ApiResponse r = service_->Handle({op, body.dump(), kAccount, "req"});
    if (r.http_status != 200) Die(op + ": " + r.body);
    return json::parse(r.body);
  }

  // Each node whose desired version moved past what it last applied reports it applied.
  size_t PumpChanged() {
    size_t n = 0;
    for (auto& [node, applied] : applied_) {
      auto d = registry_.WaitDesired(node, registry_.epoch(), 0, std::chrono::milliseconds(0));
      if (!d.has_value() || d->version == applied) continue;
      ReportApplied(registry_, node,
                    [](const protocol::WorkloadDesired&, protocol::WorkloadStatus&) {});
      applied = d->version;
      ++n;
    }
    return n;
  }

  void SettleUntil(const std::string& op, const json& body, const std::string& field,
                   const std::string& want) {
    std::atomic<bool> done{false};
    std::thread pump([&] {
      while (!done) {
        PumpChanged();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    for (int i = 0; i < 2000 && Ok(op, body)[field] != want; ++i) {
      service_->ReconcileOnce();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    done = true;
    pump.join();
    service_->WaitForCarves();
    PumpChanged();
    service_->ReconcileOnce();
    if (Ok(op, body)[field] != want) Die(op + " never reached " + want);
  }

  Sample TimedPass() {
    std::map<std::string, uint64_t> before;
    for (const auto& [node, applied] : applied_) before[node] = Version(node);
    const auto t0 = Clock::now();
    service_->ReconcileOnce();
    Sample s{std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), 0};
    for (const auto& [node, version] : before) s.republished += Version(node) != version;
    return s;
  }
  uint64_t Version(const std::string& node) {
    auto d = registry_.WaitDesired(node, registry_.epoch(), 0, std::chrono::milliseconds(0));
    return d.has_value() ? d->version : 0;
  }

  static void Print(const std::string& what, std::vector<Sample> samples) {
    std::sort(samples.begin(), samples.end(),
              [](const Sample& a, const Sample& b) { return a.ms < b.ms; });
    size_t most = 0;
    for (const auto& s : samples) most = std::max(most, s.republished);
    fmt::print("{:<34} {:>12.2f} {:>12.2f} {:>18}\n", what, samples[samples.size() / 2].ms,
               samples.back().ms, most);
  }

  const Args args_;
  const std::filesystem::path dir_;
  std::unique_ptr<store::SqliteStore> store_;
  nodes::NodeRegistry registry_;
  nodes::AgentNodeDriver driver_;
  nodes::NodeClaims claims_;
  std::unique_ptr<SageMakerService> service_;
  std::map<std::string, uint64_t> applied_;
};

}  // namespace
}  // namespace carve::server::sagemaker

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  const auto args = carve::server::sagemaker::Parse(argc, argv);
  carve::server::sagemaker::Bench bench(args);
  bench.Setup();
  bench.Measure();
  return 0;
}
