#include "interposer/ledger.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>

namespace carve::interposer {
namespace {

// A probe whose answers the test sets; unknown pids are alive with start time 1.
class FakeProcessProbe final : public ProcessProbe {
 public:
  uint64_t StartTime(int32_t pid) const override {
    auto it = starts_.find(pid);
    return it == starts_.end() ? 1 : it->second;
  }
  void Set(int32_t pid, uint64_t start) { starts_[pid] = start; }

 private:
  std::map<int32_t, uint64_t> starts_;
};

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/carve-ledger-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/w.ledger";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  LedgerSettings Settings(uint64_t limit = 1000) {
    return LedgerSettings{"worker-1", limit, 30, false, 100};
  }
  std::unique_ptr<Ledger> MakeLedger(uint64_t limit = 1000) {
    auto l = Ledger::Create(path_, Settings(limit), std::make_shared<ProcfsProcessProbe>());
    EXPECT_TRUE(l.has_value());
    return std::move(l).value();
  }

  std::string dir_;
  std::string path_;
};

TEST_F(LedgerTest, OpenReadsTheSettingsCreateWrote) {
  MakeLedger();
  auto opened = Ledger::Open(path_, std::make_shared<ProcfsProcessProbe>());
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ((*opened)->settings(), Settings());
}

// A worker's ledger descriptor is opened close-on-exec; KeepAcrossExec makes it inheritable, so
// a child exec'd with a cleared environment still finds the ledger among its open files.
TEST_F(LedgerTest, KeepAcrossExecMakesTheDescriptorInheritable) {
  MakeLedger();
  auto opened = Ledger::Open(path_, std::make_shared<ProcfsProcessProbe>());
  ASSERT_TRUE(opened.has_value());
  Ledger& l = **opened;
  ASSERT_NE(::fcntl(l.fd(), F_GETFD) & FD_CLOEXEC, 0) << "opened close-on-exec";
  ASSERT_TRUE(l.KeepAcrossExec().ok());
  EXPECT_EQ(::fcntl(l.fd(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST_F(LedgerTest, CreateRefusesToReplaceAnExistingLedger) {
  MakeLedger();
  auto again = Ledger::Create(path_, Settings(), std::make_shared<ProcfsProcessProbe>());
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code, ErrorCode::kAlreadyExists);
}

TEST_F(LedgerTest, OpenRejectsAFileThatIsNotALedger) {
  int fd = ::open(path_.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_EQ(::write(fd, "hello", 5), 5);
  ::close(fd);
  auto opened = Ledger::Open(path_, std::make_shared<ProcfsProcessProbe>());
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code, ErrorCode::kInvalidArgument);
}

TEST_F(LedgerTest, OpenOfAMissingFileIsNotFound) {
  auto opened = Ledger::Open(path_, std::make_shared<ProcfsProcessProbe>());
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code, ErrorCode::kNotFound);
}

TEST(LedgerSettings, ValidationNamesTheFieldAndTheRule) {
  LedgerSettings s{"w", 1, 0, false, 100};
  Status st = ValidateSettings(s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("core_percent 0"), std::string::npos);
  s.core_percent = 101;
  EXPECT_FALSE(ValidateSettings(s).ok());
  s = {"bad/name", 1, 50, false, 100};
  EXPECT_NE(ValidateSettings(s).error().message.find("worker_id 'bad/name'"), std::string::npos);
  s = {"w", 0, 50, false, 100};
  EXPECT_NE(ValidateSettings(s).error().message.find("memory_limit_bytes"), std::string::npos);
  s = {"w", 1, 50, false, 0};
  EXPECT_NE(ValidateSettings(s).error().message.find("window_ms 0"), std::string::npos);
}

TEST_F(LedgerTest, TheLastByteFitsAndOneMoreIsRefused) {
  auto ledger = MakeLedger(1000);
  ASSERT_TRUE(ledger->Reserve(999).ok());
  ASSERT_TRUE(ledger->Reserve(1).ok());
  Status over = ledger->Reserve(1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(over.error().message.find("quota is 1000 bytes with 1000 in use"), std::string::npos);
  EXPECT_EQ(ledger->UsedBytes(), 1000u);
}

TEST_F(LedgerTest, ARefusedRequestChangesNothing) {
  auto ledger = MakeLedger(1000);
  ASSERT_TRUE(ledger->Reserve(600).ok());
  EXPECT_FALSE(ledger->Reserve(401).ok());
  EXPECT_FALSE(ledger->Reserve(UINT64_MAX).ok());
  EXPECT_EQ(ledger->UsedBytes(), 600u);
  EXPECT_TRUE(ledger->Reserve(400).ok());
}

TEST_F(LedgerTest, ReleaseReturnsBytesAndNeverGoesBelowZero) {
  auto ledger = MakeLedger(1000);
  ASSERT_TRUE(ledger->Reserve(700).ok());
  ledger->Release(200);
  EXPECT_EQ(ledger->UsedBytes(), 500u);
  ledger->Release(10'000);
  EXPECT_EQ(ledger->UsedBytes(), 0u);
}

TEST_F(LedgerTest, ProcessesOfOneWorkerShareOneQuota) {
  auto ledger = MakeLedger(1000);
  ASSERT_TRUE(ledger->Reserve(300).ok());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    auto mine = Ledger::Open(path_, std::make_shared<ProcfsProcessProbe>());
    bool ok = mine.has_value() && (*mine)->Reserve(700).ok() && !(*mine)->Reserve(1).ok();
    char c = ok ? 'y' : 'n';
    (void)::write(ready[1], &c, 1);
    ::pause();  // hold the memory until killed
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_EQ(c, 'y');
  EXPECT_EQ(ledger->UsedBytes(), 1000u);
  EXPECT_FALSE(ledger->Reserve(1).ok());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // The killed child never released: its slot is reclaimed because its pid is gone.
  EXPECT_EQ(ledger->UsedBytes(), 300u);
  EXPECT_TRUE(ledger->Reserve(700).ok());
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_F(LedgerTest, ASlotWhosePidWasReusedIsReclaimed) {
  auto probe = std::make_shared<FakeProcessProbe>();
  probe->Set(::getpid(), 42);
  auto created = Ledger::Create(path_, Settings(1000), probe);
  ASSERT_TRUE(created.has_value());
  ASSERT_TRUE((*created)->Reserve(800).ok());
  // Same pid, different start time: another process now; the old holder is gone.
  probe->Set(::getpid(), 43);
  EXPECT_EQ((*created)->UsedBytes(), 0u);
  EXPECT_TRUE((*created)->Reserve(1000).ok());
  // The new process's bytes stay charged: the old holder's slot was freed, not left with a pid
  // the new process would take for its own.
  EXPECT_EQ((*created)->UsedBytes(), 1000u);
  EXPECT_FALSE((*created)->Reserve(1).ok());
}

// A probe that kills its caller: the process dies inside the ledger's critical section.
class DyingProbe final : public ProcessProbe {
 public:
  uint64_t StartTime(int32_t) const override { _exit(0); }
};

// Runs `check` in a child with a deadline; true when it returned true in time. A lock that is
// never released would block forever, so the wait must not happen in the test process.
template <typename F>
bool InChildWithin(unsigned seconds, F check) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(seconds);
    _exit(check() ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The slot table's mutex is robust: when a process dies holding it (killed mid-update), the next
// locker recovers it, and it keeps working for every process after that.
TEST_F(LedgerTest, ALockHolderThatDiesIsRecoveredByTheNextLocker) {
  auto ledger = MakeLedger(1000);
  ASSERT_TRUE(ledger->Reserve(100).ok());
  pid_t holder = ::fork();
  if (holder == 0) {
    auto mine = Ledger::Open(path_, std::make_shared<DyingProbe>());
    if (mine.has_value()) (void)(*mine)->Reserve(1);  // dies inside, holding the mutex
    _exit(2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the holder died in the lock";
  ASSERT_TRUE(InChildWithin(10, [&] {
    auto l = Ledger::Open(path_, std::make_shared<ProcfsProcessProbe>());
    return l.has_value() && (*l)->Reserve(200).ok() && (*l)->Reserve(300).ok() &&
           (*l)->UsedBytes() == 600;
  })) << "a second process could not take the ledger's mutex after its holder died";
  EXPECT_TRUE(ledger->Reserve(400).ok());  // and this one still can, twice
  EXPECT_TRUE(ledger->Reserve(500).ok());
  EXPECT_EQ(ledger->UsedBytes(), 1000u);  // the child that reserved 500 has exited
}

TEST_F(LedgerTest, AnInheritedDescriptorIsFound) {
  MakeLedger();
  EXPECT_FALSE(Ledger::FindInheritedFd().has_value());  // the ledger object above is gone
  int fd = ::open(path_.c_str(), O_RDWR);
  auto found = Ledger::FindInheritedFd();
  ASSERT_TRUE(found.has_value());
  auto opened = Ledger::OpenFd(*found, std::make_shared<ProcfsProcessProbe>());
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ((*opened)->settings().worker_id, "worker-1");
  ::close(fd);
}

}  // namespace
}  // namespace carve::interposer
