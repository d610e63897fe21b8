// kill -9 durability: a real process commits concurrently and prints each acknowledged key;
// we SIGKILL it mid-run, reopen the database and require every printed key to be present.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>

#include "store/sqlite_store.h"
#include "store/store_test_env.h"

namespace carve::store {
namespace {

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
};

Child Spawn(const std::string& db, int threads) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::string t = std::to_string(threads);
    execl(CARVE_STORE_CRASH_DRIVER, CARVE_STORE_CRASH_DRIVER, db.c_str(), t.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  return Child{pid, fds[0]};
}

// Reads whole lines from `fd` into `lines` until `want` lines or EOF or the deadline.
// Returns false on EOF.
bool ReadLines(int fd, std::string& partial, std::vector<std::string>& lines, size_t want,
               std::chrono::steady_clock::time_point deadline) {
  char buf[4096];
  while (lines.size() < want && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    partial.append(buf, static_cast<size_t>(n));
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      lines.push_back(partial.substr(0, nl));
      partial.erase(0, nl + 1);
    }
  }
  return true;
}

void KillAndCheck(int threads, size_t acks_before_kill) {
  TempDir dir;
  const std::string db = (dir.path() / "carve.db").string();
  Child child = Spawn(db, threads);
  ASSERT_GT(child.pid, 0);
  std::string partial;
  std::vector<std::string> lines;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  ASSERT_TRUE(ReadLines(child.out_fd, partial, lines, acks_before_kill + 1, deadline))
      << "driver exited early";
  ASSERT_GE(lines.size(), acks_before_kill + 1) << "driver too slow before the deadline";
  ASSERT_EQ(lines.front(), "ready");
  ASSERT_EQ(kill(child.pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child.pid, &status, 0), child.pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  // Everything already in the pipe was acknowledged before the kill too.
  ReadLines(child.out_fd, partial, lines, SIZE_MAX,
            std::chrono::steady_clock::now() + std::chrono::seconds(5));
  close(child.out_fd);

  auto store = SqliteStore::Open(db);
  ASSERT_TRUE(store.has_value()) << store.error().message;
  // The Result must live as long as the loop: `*List(...)` alone would iterate a vector owned by
  // a temporary destroyed before the loop body runs (ASan: stack-use-after-scope).
  auto listed = (*store)->List("111111111111", "Model", {});
  ASSERT_TRUE(listed.has_value()) << listed.error().message;
  std::set<std::string> present;
  for (const Record& r : *listed) present.insert(r.key.name);
  size_t missing = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (!present.count(lines[i])) {
      ++missing;
      ADD_FAILURE() << "acknowledged key " << lines[i] << " lost after kill -9";
    }
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_GE(present.size(), lines.size() - 1);
  ::testing::Test::RecordProperty("acknowledged", static_cast<int>(lines.size() - 1));
}

TEST(StoreKill, EveryAcknowledgedCreateSurvivesKill9WithOneWriter) { KillAndCheck(1, 100); }

TEST(StoreKill, EveryAcknowledgedCreateSurvivesKill9WithConcurrentWriters) {
  KillAndCheck(16, 400);
}

}  // namespace
}  // namespace carve::store
