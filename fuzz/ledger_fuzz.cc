// The interposer's shared ledger (src/interposer/ledger.h) opened from a corrupt or hostile
// file: any process of a worker can write it, and the agent maps it too. The target starts from
// a ledger made by Ledger::Create, applies the input as patches, opens the result by path and by
// descriptor, and drives it as a worker process and as the agent do. Properties, beyond "no
// crash, no leak, no UB":
//  - Open refuses anything but a whole version-1 ledger, and the settings it reports are the
//    file's;
//  - a request above the limit is refused whatever the slots hold; a grant is charged to the
//    caller's own slot and a release gives it back;
//  - Snapshot's total is the sum of the processes it lists.
// Totals are not compared with the limit: a hostile file's slots sum to anything (mod 2^64), and
// a process that can write the file can give itself any quota anyway. What matters is that
// neither the worker's processes nor the agent, which maps the file too, crash or misbehave.
//
// Input: records of [offset u16 LE][length u8][bytes], each copied into the file at
// offset % file size. Bytes of the process-shared mutex are left as Create wrote them: a forged
// lock word makes every locker wait forever (reported as an interposer finding, docs/testing.md),
// and fuzzing it would only find that again.
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "interposer/ledger.h"

namespace {

namespace ip = carve::interposer;

// Processes whose pid is a multiple of 3 are alive, with a start time derived from the pid.
class FakeProbe final : public ip::ProcessProbe {
 public:
  uint64_t StartTime(int32_t pid) const override {
    if (pid == self_) return 1000;
    return pid > 0 && pid % 3 == 0 ? static_cast<uint64_t>(pid) * 7 : 0;
  }
  int32_t self_ = static_cast<int32_t>(::getpid());
};

// Where the mutex lies in the file (after magic, version, slot count, worker id, limit, core,
// window, burstable and a reserved word). Checked against the template at start.
constexpr size_t kMutexOffset = 8 + 4 + 4 + 64 + 8 + 4 + 4 + 4 + 4;
constexpr size_t kMutexBytes = sizeof(pthread_mutex_t);

struct Template {
  std::string dir;
  std::string bytes;
};

const Template& GetTemplate() {
  static const Template* t = [] {
    auto* out = new Template;
    char dir[] = "/tmp/carve-ledger-fuzz-XXXXXX";
    FUZZ_CHECK(::mkdtemp(dir) != nullptr, "mkdtemp: %s", std::strerror(errno));
    out->dir = dir;
    const std::string path = out->dir + "/template";
    ip::LedgerSettings s{"worker-1", 1 << 30, 30, false, 100};
    auto created = ip::Ledger::Create(path, s, std::make_shared<FakeProbe>());
    FUZZ_CHECK(created.has_value(), "Create: %s", created.error().message.c_str());
    created->reset();
    int fd = ::open(path.c_str(), O_RDONLY);
    struct stat st {};
    FUZZ_CHECK(fd >= 0 && ::fstat(fd, &st) == 0, "reading the template");
    out->bytes.resize(static_cast<size_t>(st.st_size));
    FUZZ_CHECK(::pread(fd, out->bytes.data(), out->bytes.size(), 0) == st.st_size, "pread");
    ::close(fd);
    ::unlink(path.c_str());
    // The layout assumption above: the worker id sits at offset 16 and the mutex's kind word
    // (robust | process-shared, glibc) is non-zero where the mutex is said to be.
    FUZZ_CHECK(out->bytes.compare(16, 8, "worker-1") == 0, "the ledger layout changed");
    FUZZ_CHECK(out->bytes.find_first_not_of('\0', kMutexOffset) < kMutexOffset + kMutexBytes,
               "the ledger layout changed: no mutex at offset %zu", kMutexOffset);
    return out;
  }();
  return *t;
}

std::string Patched(std::string_view input) {
  std::string file = GetTemplate().bytes;
  size_t pos = 0;
  while (pos + 3 <= input.size()) {
    size_t offset = (static_cast<uint8_t>(input[pos]) | static_cast<uint8_t>(input[pos + 1]) << 8);
    size_t len = static_cast<uint8_t>(input[pos + 2]);
    pos += 3;
    len = std::min(len, input.size() - pos);
    for (size_t i = 0; i < len; ++i) {
      const size_t at = (offset + i) % file.size();
      if (at >= kMutexOffset && at < kMutexOffset + kMutexBytes) continue;
      file[at] = input[pos + i];
    }
    pos += len;
  }
  // A tail shorter than a record truncates the file by that many bytes (Open must refuse it).
  file.resize(file.size() - (input.size() - pos));
  return file;
}

// What the slots of this process hold, as Snapshot lists them (a hostile file may hold several
// slots with our pid).
uint64_t Mine(ip::Ledger& ledger) {
  uint64_t mine = 0;
  for (const ip::ProcessUsage& p : ledger.Snapshot().processes) {
    if (p.pid == static_cast<int32_t>(::getpid())) mine += p.used_bytes;
  }
  return mine;
}

void Drive(ip::Ledger& ledger, std::string_view input) {
  const ip::LedgerSettings settings = ledger.settings();
  ip::LedgerSnapshot snap = ledger.Snapshot();
  uint64_t sum = 0;
  for (const ip::ProcessUsage& p : snap.processes) sum += p.used_bytes;
  FUZZ_CHECK(sum == snap.used_bytes, "Snapshot total %llu, processes sum to %llu",
             static_cast<unsigned long long>(snap.used_bytes),
             static_cast<unsigned long long>(sum));

  // Whatever the slots hold, a request above the limit is refused and changes nothing. (First
  // let the ledger reclaim the slots of dead processes, forged ones with our pid included, so
  // that what is left of ours stays put.)
  (void)ledger.UsedBytes();
  const uint64_t before = Mine(ledger);
  if (settings.memory_limit_bytes < ~uint64_t{0}) {
    FUZZ_CHECK(!ledger.Reserve(settings.memory_limit_bytes + 1).ok(),
               "granted more than the whole limit of %llu",
               static_cast<unsigned long long>(settings.memory_limit_bytes));
  }
  // A grant is charged to this process's slot and a release gives it back. (Totals are not
  // compared: the slots of a hostile file can sum to anything, modulo 2^64.)
  const uint64_t mine = Mine(ledger);
  FUZZ_CHECK(mine == before, "a refused request changed the caller's slot");
  const uint64_t request = input.size() * 4096;
  if (ledger.Reserve(request).ok()) {
    FUZZ_CHECK(Mine(ledger) == mine + request, "a grant of %llu was not charged to its slot",
               static_cast<unsigned long long>(request));
    ledger.Release(request);
    FUZZ_CHECK(Mine(ledger) == mine, "a release did not give the grant back");
  }
  ledger.Release(~uint64_t{0});
  (void)ledger.UsedBytes();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = carve::fuzz::AsView(data, size);
  const std::string file = Patched(input);
  const std::string path = GetTemplate().dir + "/ledger";
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FUZZ_CHECK(fd >= 0, "open: %s", std::strerror(errno));
  FUZZ_CHECK(::write(fd, file.data(), file.size()) == static_cast<ssize_t>(file.size()), "write");

  auto probe = std::make_shared<FakeProbe>();
  auto by_path = ip::Ledger::Open(path, probe);
  auto by_fd = ip::Ledger::OpenFd(fd, probe);
  FUZZ_CHECK(by_path.has_value() == by_fd.has_value(), "Open and OpenFd disagree");
  if (by_path) {
    FUZZ_CHECK(file.size() == GetTemplate().bytes.size(), "a %zu-byte file opened as a ledger",
               file.size());
    FUZZ_CHECK((*by_path)->settings() == (*by_fd)->settings(), "two views of one file differ");
    Drive(**by_path, input);
    Drive(**by_fd, input);
  }
  ::close(fd);
  ::unlink(path.c_str());
  return 0;
}
