// `carve testmodel`: runs the simulated model server (src/testmodel/server.h).
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/commands.h"
#include "testmodel/server.h"

namespace carve::cli {
namespace {

// Serves until SIGTERM or SIGINT. The signals are blocked before any server thread exists and
// taken by sigwait in a helper thread, so stopping runs outside a signal handler.
int RunTestmodel(const testmodel::TestmodelOptions& options, const Context& ctx) {
  auto server = testmodel::TestmodelServer::Create(options);
  if (!server) {
    std::cerr << "carve testmodel: " << server.error().message << "\n";
    return 2;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto port = (*server)->Bind();
  if (!port) {
    std::cerr << "carve testmodel: " << port.error().message << "\n";
    return 2;
  }
  if (ctx.json) {
    std::cout << nlohmann::json{{"host", options.host}, {"port", *port}, {"simulator", true}}
              << std::endl;
  } else {
    std::cout << "carve testmodel (SIMULATOR: no real model runs) serving " << options.model
              << " on " << options.target << " at speed " << options.speed << "\n"
              << "listening on " << options.host << ":" << *port << std::endl;
  }
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    (*server)->Stop();
  });
  (*server)->Serve();
  // Serve also returns when the listener fails; wake the stopper so it can be joined.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  return 0;
}

}  // namespace

void RegisterTestmodelCommands(CLI::App& app, Context& ctx) {
  auto options = std::make_shared<testmodel::TestmodelOptions>();
  CLI::App* cmd = app.add_subcommand(
      "testmodel",
      "Run a SIMULATED model server for demos and tests. It runs no neural network: it answers "
      "SageMaker /ping and /invocations and OpenAI /v1/completions and /v1/chat/completions "
      "(stream: true as server-sent events) with filler text, paced token by token by carve's "
      "planner performance model for the model and GPU target given. GET /info shows the pacing.");
  cmd->add_option("--host", options->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", options->port, "Port; 0 picks a free one (printed on stdout)")
      ->envname("CARVE_PORT")
      ->capture_default_str();
  cmd->add_option("--model", options->model, "Model to simulate (planner catalog id)")
      ->envname("CARVE_MODEL")
      ->capture_default_str();
  cmd->add_option("--target", options->target,
                  "GPU or partition it is bound to, e.g. h100-80gb:3g.40gb")
      ->envname("CARVE_TARGET")
      ->capture_default_str();
  cmd->add_option("--precision", options->precision, "bf16, fp8 or w=fp8,kv=bf16")
      ->envname("CARVE_PRECISION")
      ->capture_default_str();
  cmd->add_option("--speed", options->speed, "Time scale: 10 runs ten times faster than modelled")
      ->envname("CARVE_TESTMODEL_SPEED")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--model-data", options->model_data, "Model data path (reported, never read)")
      ->envname("CARVE_MODEL_DATA");
  cmd->add_flag("--fail-invocations", options->fail_invocations,
                "Failure test: every generation request answers HTTP 500")
      ->envname("CARVE_TESTMODEL_FAIL_INVOCATIONS");
  cmd->add_option("--fail-after-tokens", options->fail_after_tokens,
                  "Failure test: cut every stream after K tokens (an SSE error event first)")
      ->envname("CARVE_TESTMODEL_FAIL_AFTER_TOKENS");
  cmd->add_flag("--fail-ping", options->fail_ping, "Failure test: /ping answers 503")
      ->envname("CARVE_TESTMODEL_FAIL_PING");
  cmd->add_flag("--control", options->control,
                "Failure test: serve POST /control, e.g. {\"exit_on_invocation\": 1} kills the "
                "process with SIGKILL when that generation request arrives, without answering")
      ->envname("CARVE_TESTMODEL_CONTROL");
  cmd->add_option("--threads", options->threads, "HTTP worker threads (max concurrent requests)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->callback([options, &ctx] { ctx.exit_code = RunTestmodel(*options, ctx); });
}

}  // namespace carve::cli
