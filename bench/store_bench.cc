// store_bench [--dir DIR] [--seconds S] [--clients 1,16,64] [--etcd etcd://HOST:PORT,...]
//
// Acknowledged durable writes: each client thread loops Commit({Put create}) of a fresh key on
// a SqliteStore (WAL, synchronous=FULL, group commit) in a temp dir under DIR (default: the
// current directory, i.e. the real disk, not /tmp which may be tmpfs). A write counts when
// Commit returned success, i.e. after its transaction's fsync. Reports acks/s and the p50/p99
// Commit latency per client count. With --etcd, the same runs follow against an EtcdStore on
// that cluster (a fresh key prefix), so the two stores are measured side by side in one run.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd_store.h"
#include "store/sqlite_store.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  int clients;
  size_t acks;
  double seconds;
  double p50_ms, p99_ms, max_ms;
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t idx = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(idx), v.end());
  return v[idx];
}

Figures Run(carve::store::Store& store, int run, int clients, double seconds) {
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(clients));
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      while (!go) std::this_thread::yield();
      auto& mine = lat[static_cast<size_t>(c)];
      for (int n = 0; !stop; ++n) {
        // Appends, not operator+ chains: GCC 12 -O3 reports a false -Wrestrict on those.
        std::string name = "r";
        name.append(std::to_string(run)).append("-").append(std::to_string(c));
        name.append("-").append(std::to_string(n));
        std::string body = R"({"EndpointName":")";
        body.append(name).append(R"(","Status":"Creating"})");
        auto t0 = Clock::now();
        auto r = store.Create({"111111111111", "BenchRecord", name}, std::move(body));
        auto t1 = Clock::now();
        if (!r.has_value()) {
          ++errors;
          std::fprintf(stderr, "commit failed: %s\n", r.error().message.c_str());
          return;
        }
        mine.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    });
  }
  auto start = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  Figures f{clients, all.size(), elapsed, 0, 0, 0};
  f.max_ms = all.empty() ? 0 : *std::max_element(all.begin(), all.end());
  f.p50_ms = Percentile(all, 0.50);
  f.p99_ms = Percentile(all, 0.99);
  if (errors > 0) std::fprintf(stderr, "%d clients hit errors\n", errors.load());
  return f;
}

int RunAll(carve::store::Store& store, const char* name, const std::vector<int>& client_counts,
           double seconds) {
  int rc = 0;
  std::printf("%8s %8s %10s %12s %9s %9s %9s\n", "store", "clients", "acks", "acks/s", "p50_ms",
              "p99_ms", "max_ms");
  for (size_t run = 0; run < client_counts.size(); ++run) {
    const int c = client_counts[run];
    Figures f = Run(store, static_cast<int>(run), c, seconds);
    if (f.acks == 0) rc = 1;
    std::printf("%8s %8d %10zu %12.0f %9.3f %9.3f %9.3f\n", name, f.clients, f.acks,
                static_cast<double>(f.acks) / f.seconds, f.p50_ms, f.p99_ms, f.max_ms);
    std::fflush(stdout);
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = ".";
  double seconds = 5;
  std::string etcd;
  std::vector<int> client_counts = {1, 16, 64};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--dir") {
      dir = argv[i + 1];
    } else if (flag == "--etcd") {
      etcd = argv[i + 1];
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
  std::string tmpl = (std::filesystem::path(dir) / "carve-store-bench-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  int rc = 0;
  {
    auto store = carve::store::SqliteStore::Open(tmpl + "/bench.db");
    if (!store.has_value()) {
      std::fprintf(stderr, "open: %s\n", store.error().message.c_str());
      return 1;
    }
    std::printf("db: %s/bench.db  journal_mode=%s synchronous=%d (2=FULL)\n", tmpl.c_str(),
                (*store)->journal_mode().c_str(), (*store)->synchronous());
    rc = RunAll(**store, "sqlite", client_counts, seconds);
  }
  if (!etcd.empty()) {
    const std::string prefix = "/carve-store-bench-" + std::to_string(getpid());
    auto store = carve::store::EtcdStore::OpenUrl(etcd + prefix, {.watch = false});
    if (!store.has_value()) {
      std::fprintf(stderr, "open %s: %s\n", etcd.c_str(), store.error().message.c_str());
      return 1;
    }
    std::printf("etcd: %s%s\n", etcd.c_str(), prefix.c_str());
    rc |= RunAll(**store, "etcd", client_counts, seconds);
  }
  std::filesystem::remove_all(tmpl);
  return rc;
}
