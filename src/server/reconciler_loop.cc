#include "server/reconciler_loop.h"

namespace carve::server {

ReconcilerLoop::ReconcilerLoop(std::chrono::milliseconds interval, std::function<void()> pass)
    : interval_(interval), pass_(std::move(pass)) {}

ReconcilerLoop::~ReconcilerLoop() { Stop(); }

void ReconcilerLoop::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Run(); });
}

void ReconcilerLoop::Stop() {
  std::thread thread;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    thread.swap(thread_);
  }
  cv_.notify_all();
  if (thread.joinable()) thread.join();
}

void ReconcilerLoop::Wake() {
  {
    std::lock_guard lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

uint64_t ReconcilerLoop::passes() const {
  std::lock_guard lock(mu_);
  return passes_;
}

void ReconcilerLoop::Run() {
  while (true) {
    pass_();
    std::unique_lock lock(mu_);
    ++passes_;
    cv_.wait_for(lock, interval_, [this] { return wake_ || stopping_; });
    if (stopping_) return;
    wake_ = false;
  }
}

}  // namespace carve::server
