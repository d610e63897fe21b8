// `carve testmodel`: a SIMULATED model server for demos and tests. It speaks SageMaker's
// `GET /ping` + `POST /invocations` and OpenAI's `POST /v1/completions` +
// `POST /v1/chat/completions` (with `stream: true` as server-sent events), and paces tokens with
// the planner's PerfModel for the model and target it is bound to (see engine.h). It runs no
// neural network: the text is filler, only the timing and the token counts mean anything.
//
// `GET /info` reports what it simulates and the pacing it uses (decode step at batch 1, KV
// capacity), so tests and `carve bench` can compare what they measure with the model.
//
// Failure knobs for tests: every invocation answers HTTP 500; streams fail after K tokens (an
// SSE error event, then the connection is cut without the final chunk); /ping answers 503; and,
// with `control`, POST /control {"exit_on_invocation": N}: the N-th generation request from then
// on kills the process (SIGKILL, a copy dying with a request in flight), before any answer.
// N = 0 disarms it. Answers 200 {"exit_on_invocation": N}, 400 for another body.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/result.h"
#include "testmodel/engine.h"

namespace httplib {
class Server;
}

namespace carve::testmodel {

struct TestmodelOptions {
  std::string host = "127.0.0.1";
  int port = 0;                        // 0: any free port (printed by the CLI)
  std::string model = "llama-3.1-8b";  // planner model catalog id or HF name
  std::string target = "h100-80gb";    // planner target, "gpu" or "gpu:profile"
  std::string precision = "bf16";
  double speed = 1.0;              // time scale factor (> 0)
  bool fail_invocations = false;   // every generation request answers 500
  int64_t fail_after_tokens = -1;  // >= 0: streams are cut after that many tokens
  bool fail_ping = false;          // /ping answers 503
  bool control = false;            // serve POST /control (see above)
  std::string model_data;          // echoed in /info; the simulator reads nothing
  int threads = 64;                // HTTP worker threads (one per concurrent request)
};

// The PerfModel for a model name, target and precision. Errors are the planner's (NotFound
// lists known models / GPUs; FailedPrecondition when the weights do not fit the target).
Result<planner::PerfModel> PacingModel(const TestmodelOptions& options);

class TestmodelServer {
 public:
  // Builds the pacing model and the engine. Errors: PacingModel's, InvalidArgument for speed.
  static Result<std::unique_ptr<TestmodelServer>> Create(TestmodelOptions options);
  ~TestmodelServer();

  // Binds the listening socket; returns the port (the chosen one when options.port is 0).
  // Unavailable when the address cannot be bound.
  Result<int> Bind();
  // Serves until Stop(); call after Bind. Blocks.
  void Serve();
  // Thread-safe; Serve returns soon after.
  void Stop();

  const Engine& engine() const { return *engine_; }

 private:
  TestmodelServer(TestmodelOptions options, std::unique_ptr<Engine> engine);
  void Routes();
  // Counts one generation request against POST /control's countdown; the last one kills us.
  void CountInvocation();

  const TestmodelOptions options_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<int64_t> exit_countdown_{0};  // > 0: generation requests left before the kill
};

}  // namespace carve::testmodel
