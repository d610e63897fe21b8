// What `carve bench` drives: a Target hands each worker thread a Session, and a Session sends
// one streamed generation request at a time and reports its RequestOutcome. The HTTP targets
// live in http_targets.h; tests use fakes (fake_target.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "loadgen/cell_metrics.h"
#include "loadgen/load_scenario.h"

namespace carve::loadgen {

struct BenchRequest {
  RequestShape shape;
  std::string prompt;  // PromptOfTokens(shape.input_tokens, ...)
};

class TargetSession {
 public:
  virtual ~TargetSession() = default;
  // Sends `request` and follows its stream to the end or to `timeout` after the start. Failures
  // are outcomes (kError, kDeadline), never exceptions. Called from one thread at a time.
  virtual RequestOutcome Send(const BenchRequest& request, std::chrono::milliseconds timeout) = 0;
};

class Target {
 public:
  virtual ~Target() = default;
  // One session per worker; a session may keep a connection open between its requests.
  // Thread-safe.
  virtual std::unique_ptr<TargetSession> NewSession() const = 0;
  // For the report: "openai-completions http://127.0.0.1:8000".
  virtual std::string Describe() const = 0;
};

}  // namespace carve::loadgen
