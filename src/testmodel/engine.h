// The testmodel's simulated inference engine: a continuous-batching loop paced by the planner's
// PerfModel (planner/perf_model.h), so a simulated copy serves tokens at the rate the planner
// predicts for its model and target. It generates no real text; it is a SIMULATOR.
//
// One engine thread advances every admitted sequence one step at a time, like vLLM's scheduler:
//   - each step gives every decoding sequence one token and spends the rest of the step's token
//     budget (ServingConfig::max_batched_tokens) on prompt chunks (chunked prefill);
//   - the step lasts PerfModel::Step(load) / speed, so prefill is bound by compute and decode by
//     bandwidth, and concurrent sequences share decode steps;
//   - a sequence is admitted only while the KV cache (PerfModel::KvCapacityTokens) holds its
//     prompt plus all its new tokens, and while fewer than ServingConfig::max_num_seqs run;
//     others wait in arrival order. Nothing is ever preempted.
// Worked example (llama-3.1-8b on h100-80gb:3g.40gb, bf16, defaults): one request alone gets its
// first token after Prefill(prompt), then one token every DecodeStep(1, context) ~= 15 ms;
// eight concurrent requests each get a token every DecodeStep(8, ...) ~= 15.3 ms, so throughput
// is ~8x (decode is bound by reading the weights once per step).
//
// Thread-safety: Submit, Sequence methods and Stop are safe from any thread. StepOnce is for
// tests that run the engine without its thread (do not call it after Start).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/result.h"
#include "planner/perf_model.h"

namespace carve::testmodel {

// One request's progress, shared between the engine and the HTTP handler reading it.
class Sequence {
 public:
  Sequence(int64_t prompt_tokens, int64_t max_new_tokens)
      : prompt_tokens_(prompt_tokens), max_new_tokens_(max_new_tokens) {}

  struct Progress {
    int64_t generated = 0;  // tokens produced so far
    bool finished = false;  // all max_new_tokens produced
  };
  // Blocks until more than `seen` tokens exist, the sequence finished, or `timeout` passed.
  Progress WaitBeyond(int64_t seen, std::chrono::milliseconds timeout);
  // Blocks until finished (or `timeout`).
  Progress WaitFinished(std::chrono::milliseconds timeout);
  Progress Current() const;
  // The reader is gone (client disconnect, injected failure): the engine drops the sequence at
  // its next step and frees its KV reservation.
  void Cancel();

  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t max_new_tokens() const { return max_new_tokens_; }

 private:
  friend class Engine;
  const int64_t prompt_tokens_;
  const int64_t max_new_tokens_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t generated_ = 0;   // guarded by mu_
  bool finished_ = false;   // guarded by mu_
  bool cancelled_ = false;  // guarded by mu_
};

struct EngineOptions {
  double speed = 1.0;  // time scale: 10 runs ten times faster than the model predicts; > 0
};

// Waits `d`; the real one sleeps, tests record or advance a FakeClock.
using Sleeper = std::function<void(std::chrono::nanoseconds d)>;

struct EngineStats {
  int64_t waiting = 0;
  int64_t running = 0;
  int64_t kv_reserved_tokens = 0;
  int64_t steps = 0;
  int64_t tokens_generated = 0;
};

class Engine {
 public:
  // InvalidArgument when speed <= 0.
  static Result<std::unique_ptr<Engine>> Create(planner::PerfModel model, EngineOptions options,
                                                Sleeper sleeper);
  ~Engine();  // Stops the thread if started.
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. InvalidArgument when a count is < 1 or when prompt + new tokens exceed
  // the whole KV capacity (it could never be admitted; the message gives both numbers).
  Result<std::shared_ptr<Sequence>> Submit(int64_t prompt_tokens, int64_t max_new_tokens);

  // Admits what fits, builds the step's load, waits its time through the sleeper, then hands
  // out the step's tokens. Returns the step's (scaled) duration, zero when there was no work.
  std::chrono::nanoseconds StepOnce();

  void Start();  // runs StepOnce in a thread whenever there is work
  void Stop();

  EngineStats Stats() const;
  const planner::PerfModel& model() const { return model_; }
  const EngineOptions& options() const { return options_; }

 private:
  Engine(planner::PerfModel model, EngineOptions options, Sleeper sleeper);
  struct Running {
    std::shared_ptr<Sequence> seq;
    int64_t prefilled = 0;  // prompt tokens already in the KV cache
  };
  void AdmitLocked();  // requires mu_
  void Loop();

  const planner::PerfModel model_;
  const EngineOptions options_;
  const Sleeper sleeper_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::deque<std::shared_ptr<Sequence>> waiting_;  // guarded by mu_
  std::vector<Running> running_;                   // guarded by mu_
  int64_t kv_reserved_ = 0;                        // guarded by mu_
  int64_t steps_ = 0;                              // guarded by mu_
  int64_t tokens_generated_ = 0;                   // guarded by mu_
  bool stop_ = false;                              // guarded by mu_
  std::thread thread_;
};

}  // namespace carve::testmodel
