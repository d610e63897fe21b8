// etcd_transport_bench --etcd HOST:PORT[,...] [--seconds S] [--clients 1,16,64] [--grpc-first 1]
//
// The commit EtcdStore sends for a create (a Txn: the key's create_revision must be 0, then one
// put of a ~200-byte carve value, with a range of the key on failure) sent two ways to the same
// member, one after the other for each client count: through etcd's JSON gateway with carve's
// EtcdClient (HTTP/1.1, JSON, base64; one keep-alive connection per client thread), and through
// gRPC with stubs generated from etcd's protos (one HTTP/2 channel shared by every thread, as
// etcd's own Go client does). A write counts when etcd answered it succeeded, i.e. after a
// quorum fsynced it. Prints acks/s and p50/p99 per transport and client count.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/base64.h"
#include "etcd_kv.grpc.pb.h"
#include "store/etcd_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

const std::string kValue =
    "carve1 1 1764680000000 1764680000000 0123456789abcdef0123456789abcdef\n"
    R"({"EndpointName":"bench","Status":"Creating","Variants":[{"VariantName":"AllTraffic",)"
    R"("InstanceType":"ml.p4d.24xlarge","Nodes":["p4d-0"]}]})";

struct Figures {
  size_t acks = 0;
  double seconds = 0;
  double p50_ms = 0, p99_ms = 0;
  int errors = 0;
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const auto idx = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(idx), v.end());
  return v[idx];
}

// Runs `create(client, key)` from `clients` threads for `seconds`; it returns whether etcd
// acknowledged the write.
Figures Run(int clients, double seconds,
            const std::function<bool(int client, const std::string& key)>& create,
            const std::string& tag) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::atomic<bool> go{false}, stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      while (!go) std::this_thread::yield();
      for (int n = 0; !stop; ++n) {
        const std::string key = "/bench/" + tag + "/" + std::to_string(c) + "/" + std::to_string(n);
        const auto t0 = Clock::now();
        if (!create(c, key)) {
          ++errors;
          return;
        }
        lat[static_cast<size_t>(c)].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    });
  }
  const auto start = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  Figures f;
  f.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  f.acks = all.size();
  f.p50_ms = Percentile(all, 0.5);
  f.p99_ms = Percentile(all, 0.99);
  f.errors = errors;
  return f;
}

bool GatewayCreate(carve::store::EtcdClient& client, const std::string& key) {
  const json txn = {
      {"compare",
       {{{"key", carve::Base64Encode(key)},
         {"target", "CREATE"},
         {"result", "EQUAL"},
         {"create_revision", "0"}}}},
      {"success",
       {{{"request_put",
          {{"key", carve::Base64Encode(key)}, {"value", carve::Base64Encode(kValue)}}}}}},
      {"failure", {{{"request_range", {{"key", carve::Base64Encode(key)}}}}}}};
  auto r = client.Call("kv/txn", txn, carve::store::EtcdCall::kWrite);
  if (!r.body.has_value()) std::fprintf(stderr, "gateway: %s\n", r.body.error().message.c_str());
  return r.body.has_value() && r.body->value("succeeded", false);
}

bool GrpcCreate(etcdserverpb::KV::Stub& stub, const std::string& key) {
  etcdserverpb::TxnRequest req;
  auto* cmp = req.add_compare();
  cmp->set_key(key);
  cmp->set_target(etcdserverpb::Compare::CREATE);
  cmp->set_result(etcdserverpb::Compare::EQUAL);
  cmp->set_create_revision(0);
  auto* put = req.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(kValue);
  req.add_failure()->mutable_request_range()->set_key(key);
  etcdserverpb::TxnResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  const grpc::Status s = stub.Txn(&ctx, req, &resp);
  if (!s.ok()) std::fprintf(stderr, "grpc: %s\n", s.error_message().c_str());
  return s.ok() && resp.succeeded();
}

void Print(const char* transport, int clients, const Figures& f) {
  std::printf("%10s %8d %10zu %10.0f %9.3f %9.3f%s\n", transport, clients, f.acks,
              static_cast<double>(f.acks) / f.seconds, f.p50_ms, f.p99_ms,
              f.errors > 0 ? "  (errors)" : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string etcd;
  double seconds = 5;
  std::vector<int> client_counts = {1, 16, 64};
  bool grpc_first = false;  // Which transport runs first for each client count.
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--etcd") {
      etcd = argv[i + 1];
    } else if (flag == "--grpc-first") {
      grpc_first = std::atoi(argv[i + 1]) != 0;
    } else if (flag == "--seconds") {
      seconds = std::atof(argv[i + 1]);
    } else if (flag == "--clients") {
      client_counts.clear();
      for (char* tok = std::strtok(argv[i + 1], ","); tok != nullptr;
           tok = std::strtok(nullptr, ",")) {
        client_counts.push_back(std::atoi(tok));
      }
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (etcd.starts_with("etcd://")) etcd = etcd.substr(7);
  etcd = etcd.substr(0, etcd.find_first_of(",/"));  // The first member only: one transport each.
  if (etcd.empty()) {
    std::fprintf(stderr, "usage: etcd_transport_bench --etcd HOST:PORT [--seconds S]\n");
    return 2;
  }
  std::printf("member %s, %.0f s per run\n", etcd.c_str(), seconds);
  std::printf("%10s %8s %10s %10s %9s %9s\n", "transport", "clients", "acks", "acks/s", "p50_ms",
              "p99_ms");
  auto channel = grpc::CreateChannel(etcd, grpc::InsecureChannelCredentials());
  auto stub = etcdserverpb::KV::NewStub(channel);
  int rc = 0;
  for (size_t run = 0; run < client_counts.size(); ++run) {
    const int c = client_counts[run];
    std::vector<std::unique_ptr<carve::store::EtcdClient>> gateways;
    for (int i = 0; i < c; ++i) {
      gateways.push_back(std::make_unique<carve::store::EtcdClient>(
          carve::store::EtcdClientOptions{.endpoints = {etcd}}));
    }
    const std::string tag = std::to_string(run);
    auto gateway = [&] {
      Figures f = Run(
          c, seconds, [&](int i, const std::string& k) { return GatewayCreate(*gateways[i], k); },
          "gw" + tag);
      Print("gateway", c, f);
      return f;
    };
    auto grpc = [&] {
      Figures f = Run(
          c, seconds, [&](int, const std::string& k) { return GrpcCreate(*stub, k); },
          "grpc" + tag);
      Print("grpc", c, f);
      return f;
    };
    Figures g, r;
    if (grpc_first) {
      r = grpc();
      g = gateway();
    } else {
      g = gateway();
      r = grpc();
    }
    if (g.acks == 0 || r.acks == 0 || g.errors > 0 || r.errors > 0) rc = 1;
  }
  return rc;
}
