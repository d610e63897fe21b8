#include "testmodel/engine.h"

#include <algorithm>
#include <string>

namespace carve::testmodel {

Sequence::Progress Sequence::WaitBeyond(int64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return generated_ > seen || finished_; });
  return {generated_, finished_};
}

Sequence::Progress Sequence::WaitFinished(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return finished_; });
  return {generated_, finished_};
}

Sequence::Progress Sequence::Current() const {
  std::lock_guard lock(mu_);
  return {generated_, finished_};
}

void Sequence::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
}

Result<std::unique_ptr<Engine>> Engine::Create(planner::PerfModel model, EngineOptions options,
                                               Sleeper sleeper) {
  if (!(options.speed > 0)) {
    return InvalidArgument("testmodel speed is " + std::to_string(options.speed) +
                           "; it must be > 0 (1 = the model's own pace)");
  }
  return std::unique_ptr<Engine>(new Engine(std::move(model), options, std::move(sleeper)));
}

Engine::Engine(planner::PerfModel model, EngineOptions options, Sleeper sleeper)
    : model_(std::move(model)), options_(options), sleeper_(std::move(sleeper)) {}

Engine::~Engine() { Stop(); }

Result<std::shared_ptr<Sequence>> Engine::Submit(int64_t prompt_tokens, int64_t max_new_tokens) {
  if (prompt_tokens < 1 || max_new_tokens < 1) {
    return InvalidArgument("prompt tokens (" + std::to_string(prompt_tokens) +
                           ") and max new tokens (" + std::to_string(max_new_tokens) +
                           ") must both be >= 1");
  }
  if (prompt_tokens + max_new_tokens > model_.KvCapacityTokens()) {
    return InvalidArgument("request needs " + std::to_string(prompt_tokens + max_new_tokens) +
                           " KV tokens (prompt " + std::to_string(prompt_tokens) + " + new " +
                           std::to_string(max_new_tokens) + "); the target's KV cache holds " +
                           std::to_string(model_.KvCapacityTokens()));
  }
  auto seq = std::make_shared<Sequence>(prompt_tokens, max_new_tokens);
  {
    std::lock_guard lock(mu_);
    waiting_.push_back(seq);
  }
  work_cv_.notify_all();
  return seq;
}

void Engine::AdmitLocked() {
  // Drop cancelled sequences first so their KV is free for newcomers.
  std::erase_if(running_, [&](const Running& r) {
    std::lock_guard seq_lock(r.seq->mu_);
    if (!r.seq->cancelled_) return false;
    kv_reserved_ -= r.seq->prompt_tokens_ + r.seq->max_new_tokens_;
    return true;
  });
  std::erase_if(waiting_, [](const std::shared_ptr<Sequence>& s) {
    std::lock_guard seq_lock(s->mu_);
    return s->cancelled_;
  });
  // Arrival order: a large request at the head is not overtaken (no starvation).
  while (!waiting_.empty() && static_cast<int>(running_.size()) < model_.serving().max_num_seqs) {
    const auto& next = waiting_.front();
    const int64_t need = next->prompt_tokens_ + next->max_new_tokens_;
    if (kv_reserved_ + need > model_.KvCapacityTokens()) break;
    kv_reserved_ += need;
    running_.push_back({next, 0});
    waiting_.pop_front();
  }
}

std::chrono::nanoseconds Engine::StepOnce() {
  planner::StepLoad load;
  // What each running sequence does in this step: -1 decodes, otherwise the prefill chunk.
  std::vector<int64_t> chunk;
  {
    std::lock_guard lock(mu_);
    AdmitLocked();
    if (running_.empty()) return std::chrono::nanoseconds(0);
    int64_t budget = model_.serving().max_batched_tokens;
    chunk.assign(running_.size(), 0);
    for (size_t i = 0; i < running_.size(); ++i) {
      const Running& r = running_[i];
      if (r.prefilled < r.seq->prompt_tokens_) continue;
      load.decode_seqs += 1;
      load.decode_context_tokens += r.seq->prompt_tokens_ + r.seq->Current().generated;
      budget -= 1;
      chunk[i] = -1;
    }
    for (size_t i = 0; i < running_.size(); ++i) {
      const Running& r = running_[i];
      if (chunk[i] == -1 || budget <= 0) continue;
      const int64_t c = std::min(budget, r.seq->prompt_tokens_ - r.prefilled);
      load.AddPrefillChunk(r.prefilled, c, r.prefilled + c == r.seq->prompt_tokens_);
      chunk[i] = c;
      budget -= c;
    }
  }
  const double seconds = model_.Step(load).seconds / options_.speed;
  const auto step = std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9));
  sleeper_(step);

  std::lock_guard lock(mu_);
  ++steps_;
  // Only this thread changes running_, so the indexes taken above still hold.
  std::vector<Running> still;
  for (size_t i = 0; i < running_.size(); ++i) {
    Running& r = running_[i];
    bool emits = chunk[i] == -1;
    if (chunk[i] > 0) {
      r.prefilled += chunk[i];
      emits = r.prefilled == r.seq->prompt_tokens_;  // prefill yields the first token
    }
    bool done = false;
    if (emits) {
      std::lock_guard seq_lock(r.seq->mu_);
      ++r.seq->generated_;
      ++tokens_generated_;
      done = r.seq->generated_ >= r.seq->max_new_tokens_;
      r.seq->finished_ = done;
    }
    if (emits) r.seq->cv_.notify_all();
    if (done) {
      kv_reserved_ -= r.seq->prompt_tokens_ + r.seq->max_new_tokens_;
    } else {
      still.push_back(std::move(r));
    }
  }
  running_ = std::move(still);
  return step;
}

void Engine::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Engine::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Engine::Loop() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !waiting_.empty() || !running_.empty(); });
      if (stop_) return;
    }
    if (StepOnce() == std::chrono::nanoseconds(0)) {
      // Everything waiting was cancelled, or the head does not fit yet; avoid spinning.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

EngineStats Engine::Stats() const {
  std::lock_guard lock(mu_);
  return {static_cast<int64_t>(waiting_.size()), static_cast<int64_t>(running_.size()),
          kv_reserved_, steps_, tokens_generated_};
}

}  // namespace carve::testmodel
