// ReconcilerLoop: the one background-loop shape of carve's controllers (the SageMaker service,
// the mGPU queues). It runs `pass` on its own thread, then waits until Wake() or `interval`,
// whichever comes first; a Wake() during a pass makes the next pass start right after it, so
// no change is missed and wakes never pile up.
//
// Thread-safe. Stop() waits for the pass in progress and is idempotent; a stopped loop does not
// start again. The destructor stops.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace carve::server {

class ReconcilerLoop {
 public:
  ReconcilerLoop(std::chrono::milliseconds interval, std::function<void()> pass);
  ~ReconcilerLoop();
  ReconcilerLoop(const ReconcilerLoop&) = delete;
  ReconcilerLoop& operator=(const ReconcilerLoop&) = delete;

  void Start();
  void Stop();
  // Asks for a pass soon. Never blocks on a pass.
  void Wake();
  // Passes completed since Start (tests and metrics).
  uint64_t passes() const;

 private:
  void Run();

  const std::chrono::milliseconds interval_;
  const std::function<void()> pass_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool wake_ = false;      // Guarded by mu_.
  bool stopping_ = false;  // Guarded by mu_.
  uint64_t passes_ = 0;    // Guarded by mu_.
  std::thread thread_;     // Started and joined under mu_'s protocol (Start/Stop).
};

}  // namespace carve::server
