#include "server/reconciler_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace carve::server {
namespace {

using namespace std::chrono_literals;

// Waits (bounded) until `pred` holds; the loop runs on its own thread.
template <typename P>
bool Eventually(P pred) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::yield();
  }
  return pred();
}

TEST(ReconcilerLoop, RunsAPassAtStartAndAnotherOnEachWake) {
  std::atomic<int> passes{0};
  ReconcilerLoop loop(std::chrono::hours(1), [&] { ++passes; });
  loop.Start();
  ASSERT_TRUE(Eventually([&] { return loop.passes() == 1; }));
  loop.Wake();
  ASSERT_TRUE(Eventually([&] { return loop.passes() == 2; }));
  EXPECT_EQ(passes.load(), 2);
}

TEST(ReconcilerLoop, AWakeDuringAPassIsNotLost) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> passes{0};
  ReconcilerLoop loop(std::chrono::hours(1), [&] {
    if (passes++ == 0) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
    }
  });
  loop.Start();
  ASSERT_TRUE(Eventually([&] { return passes.load() == 1; }));
  loop.Wake();  // Arrives while the first pass is still running.
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_TRUE(Eventually([&] { return passes.load() == 2; }));
}

TEST(ReconcilerLoop, StopWaitsForThePassAndIsFinal) {
  std::atomic<int> passes{0};
  ReconcilerLoop loop(std::chrono::hours(1), [&] { ++passes; });
  loop.Start();
  ASSERT_TRUE(Eventually([&] { return loop.passes() == 1; }));
  loop.Stop();
  loop.Stop();
  loop.Start();  // A stopped loop does not start again.
  loop.Wake();
  EXPECT_EQ(passes.load(), 1);
}

TEST(ReconcilerLoop, RunsAgainAfterTheIntervalWithoutAWake) {
  std::atomic<int> passes{0};
  ReconcilerLoop loop(1ms, [&] { ++passes; });
  loop.Start();
  EXPECT_TRUE(Eventually([&] { return passes.load() >= 3; }));
}

}  // namespace
}  // namespace carve::server
