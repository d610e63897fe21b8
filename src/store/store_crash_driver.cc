// store_crash_driver DB_PATH THREADS: opens a SqliteStore and has THREADS threads create
// Model records "t<thread>-<n>" forever. After each Commit returns success, the key is written
// to stdout with one write(2) (no user-space buffering), so anything a reader sees was
// acknowledged. The kill -9 test SIGKILLs this process and checks every printed key survived.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

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
    std::fprintf(stderr, "usage: %s DB_PATH THREADS\n", argv[0]);
    return 2;
  }
  auto store = carve::store::SqliteStore::Open(argv[1]);
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
