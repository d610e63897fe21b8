// store_crash_driver STORE THREADS: opens STORE (a SQLite file path, or etcd://HOST:PORT,... for
// an EtcdStore) and has THREADS threads create
// Model records "t<thread>-<n>" forever. After each Commit returns success, the key is written
// to stdout with one write(2) (no user-space buffering), so anything a reader sees was
// acknowledged. The kill -9 test SIGKILLs this process and checks every printed key survived.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd_store.h"
#include "store/sqlite_store.h"

namespace {

void WriteLine(const std::string& line) {
  std::string out = line + "\n";
  const char* p = out.data();
  size_t left = out.size();
  while (left > 0) {
    ssize_t n = write(STDOUT_FILENO, p, left);
    if (n <= 0) std::_Exit(3);  // The reader went away; nothing more to prove.
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s STORE THREADS\n", argv[0]);
    return 2;
  }
  const std::string target = argv[1];
  auto open = [&]() -> carve::Result<std::unique_ptr<carve::store::Store>> {
    if (target.starts_with("etcd://")) {
      CARVE_ASSIGN_OR_RETURN(auto etcd, carve::store::EtcdStore::OpenUrl(target, {.watch = false}));
      return std::unique_ptr<carve::store::Store>(std::move(etcd));
    }
    CARVE_ASSIGN_OR_RETURN(auto sqlite, carve::store::SqliteStore::Open(target));
    return std::unique_ptr<carve::store::Store>(std::move(sqlite));
  };
  auto store = open();
  if (!store.has_value()) {
    std::fprintf(stderr, "open failed: %s\n", store.error().message.c_str());
    return 1;
  }
  const int threads = std::atoi(argv[2]);
  WriteLine("ready");
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&store, t] {
      for (int n = 0;; ++n) {
        std::string name = "t" + std::to_string(t) + "-" + std::to_string(n);
        auto r =
            (*store)->Create({"111111111111", "Model", name}, "{\"n\":" + std::to_string(n) + "}");
        // An etcd member that dies mid-write makes a commit's outcome unknown until the client
        // has failed over and re-read; that is Unavailable, and the same create is retried (a
        // create is safe to retry: it lands once or is AlreadyExists because it landed).
        for (int tries = 0;
             !r.has_value() && r.error().code == carve::ErrorCode::kUnavailable && tries < 20;
             ++tries) {
          r = (*store)->Create({"111111111111", "Model", name},
                               "{\"n\":" + std::to_string(n) + "}");
          if (!r.has_value() && r.error().code == carve::ErrorCode::kAlreadyExists) {
            r = (*store)->Get({"111111111111", "Model", name});
          }
        }
        if (!r.has_value()) {
          std::fprintf(stderr, "create %s failed: %s\n", name.c_str(), r.error().message.c_str());
          std::_Exit(1);
        }
        WriteLine(name);
      }
    });
  }
  for (auto& w : workers) w.join();
  return 0;
}
