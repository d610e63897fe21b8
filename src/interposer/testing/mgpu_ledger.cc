// Test and operator tool: creates or shows a worker ledger.
//   mgpu_ledger create PATH WORKER_ID LIMIT_BYTES CORE_PERCENT WINDOW_MS [burstable]
//   mgpu_ledger show PATH       -> "used=<bytes> limit=<bytes> processes=<n> busy_ns=<ns>"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "interposer/ledger.h"

using carve::interposer::Ledger;
using carve::interposer::LedgerSettings;
using carve::interposer::ProcfsProcessProbe;

int main(int argc, char** argv) {
  auto probe = std::make_shared<ProcfsProcessProbe>();
  if (argc >= 7 && std::strcmp(argv[1], "create") == 0) {
    LedgerSettings s;
    s.worker_id = argv[3];
    s.memory_limit_bytes = std::strtoull(argv[4], nullptr, 10);
    s.core_percent = static_cast<uint32_t>(std::strtoul(argv[5], nullptr, 10));
    s.window_ms = static_cast<uint32_t>(std::strtoul(argv[6], nullptr, 10));
    s.burstable = argc >= 8 && std::strcmp(argv[7], "burstable") == 0;
    auto ledger = Ledger::Create(argv[2], s, probe);
    if (!ledger) {
      std::fprintf(stderr, "mgpu_ledger: %s\n", ledger.error().message.c_str());
      return 1;
    }
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "show") == 0) {
    auto ledger = Ledger::Open(argv[2], probe);
    if (!ledger) {
      std::fprintf(stderr, "mgpu_ledger: %s\n", ledger.error().message.c_str());
      return 1;
    }
    uint64_t used = (*ledger)->UsedBytes();  // reclaims dead processes, like a worker would
    auto snap = (*ledger)->Snapshot();
    std::printf("used=%llu limit=%llu processes=%zu busy_ns=%lld\n",
                static_cast<unsigned long long>(used),
                static_cast<unsigned long long>(snap.settings.memory_limit_bytes),
                snap.processes.size(),
                static_cast<long long>((*ledger)->bucket().busy_ns_total.load()));
    return 0;
  }
  std::fprintf(stderr,
               "usage: mgpu_ledger create PATH WORKER_ID LIMIT_BYTES CORE_PERCENT WINDOW_MS "
               "[burstable]\n       mgpu_ledger show PATH\n");
  return 2;
}
