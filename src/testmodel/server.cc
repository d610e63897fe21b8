#include "testmodel/server.h"

#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "planner/model_catalog.h"
#include "planner/target.h"
#include "testmodel/protocol.h"

namespace carve::testmodel {
namespace {

using nlohmann::json;

// A stream waits at most this long for one token; far beyond any simulated step.
constexpr std::chrono::milliseconds kTokenWait{60'000};

void RealSleep(std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); }

void ErrorReply(httplib::Response& res, int status, std::string_view message) {
  res.status = status;
  res.set_content(json{{"error", {{"message", message}, {"code", status}}}}.dump(),
                  "application/json");
}

}  // namespace

Result<planner::PerfModel> PacingModel(const TestmodelOptions& options) {
  CARVE_ASSIGN_OR_RETURN(planner::ModelSpec model, planner::FindModel(options.model));
  CARVE_ASSIGN_OR_RETURN(planner::Target target, planner::ParseTarget(options.target));
  CARVE_ASSIGN_OR_RETURN(planner::Precision precision, planner::ParsePrecision(options.precision));
  CARVE_ASSIGN_OR_RETURN(planner::Hardware hw, planner::HardwareFor(target, precision));
  return planner::PerfModel::Create(std::move(model), precision, hw, planner::EfficiencyFactors{});
}

Result<std::unique_ptr<TestmodelServer>> TestmodelServer::Create(TestmodelOptions options) {
  CARVE_ASSIGN_OR_RETURN(planner::PerfModel model, PacingModel(options));
  CARVE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                         Engine::Create(std::move(model), {options.speed}, RealSleep));
  auto server =
      std::unique_ptr<TestmodelServer>(new TestmodelServer(std::move(options), std::move(engine)));
  server->Routes();
  return server;
}

TestmodelServer::TestmodelServer(TestmodelOptions options, std::unique_ptr<Engine> engine)
    : options_(std::move(options)),
      engine_(std::move(engine)),
      http_(std::make_unique<httplib::Server>()) {
  const int threads = options_.threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // Tokens and small answers go out at once: without TCP_NODELAY, Nagle holds a write behind the
  // peer's delayed ACK (up to 40 ms on Linux) whenever a response takes two writes.
  http_->set_tcp_nodelay(true);
  // Keep client connections (a router's pool) open: cpp-httplib closes after 5 requests by
  // default, and the reconnect churn exhausts ephemeral ports under load.
  http_->set_keep_alive_max_count(1000000);
}

TestmodelServer::~TestmodelServer() {
  Stop();
  engine_->Stop();
}

Result<int> TestmodelServer::Bind() {
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
    if (port < 0) return Unavailable("cannot bind " + options_.host + " to any port");
  } else if (!http_->bind_to_port(options_.host, port)) {
    return Unavailable("cannot bind " + options_.host + ":" + std::to_string(port) +
                       " (in use, or not an address of this host)");
  }
  engine_->Start();
  return port;
}

void TestmodelServer::Serve() { http_->listen_after_bind(); }

void TestmodelServer::Stop() { http_->stop(); }

void TestmodelServer::CountInvocation() {
  int64_t left = exit_countdown_.load();
  while (left > 0 && !exit_countdown_.compare_exchange_weak(left, left - 1)) {
  }
  if (left != 1) return;
  std::fprintf(stderr, "testmodel: killing myself on this invocation, as POST /control asked\n");
  std::fflush(stderr);
  ::kill(::getpid(), SIGKILL);
}

void TestmodelServer::Routes() {
  http_->Get("/ping", [this](const httplib::Request&, httplib::Response& res) {
    if (options_.fail_ping) return ErrorReply(res, 503, "ping failure injected (--fail-ping)");
    res.set_content("{}", "application/json");
  });
  http_->Get("/info", [this](const httplib::Request&, httplib::Response& res) {
    const planner::PerfModel& m = engine_->model();
    const EngineStats s = engine_->Stats();
    json j = {{"simulator", true},
              {"model", m.model().id},
              {"target", options_.target},
              {"precision", planner::PrecisionName(m.precision())},
              {"speed", options_.speed},
              {"model_data", options_.model_data},
              {"kv_capacity_tokens", m.KvCapacityTokens()},
              {"max_num_seqs", m.serving().max_num_seqs},
              // Decode step of one sequence at a 128-token context, already divided by speed.
              {"decode_step_ms_batch1", m.DecodeStep(1, 128).seconds * 1e3 / options_.speed},
              {"prefill_ms_128", m.Prefill(128).seconds * 1e3 / options_.speed},
              {"running", s.running},
              {"waiting", s.waiting},
              {"tokens_generated", s.tokens_generated}};
    res.set_content(j.dump(), "application/json");
  });
  if (options_.control) {
    http_->Post("/control", [this](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body, nullptr, false);
      if (!body.is_object() || !body.contains("exit_on_invocation") ||
          !body["exit_on_invocation"].is_number_integer() ||
          body["exit_on_invocation"].get<int64_t>() < 0) {
        return ErrorReply(res, 400, "POST /control takes {\"exit_on_invocation\": N >= 0}");
      }
      const int64_t n = body["exit_on_invocation"].get<int64_t>();
      exit_countdown_.store(n);
      res.set_content(json{{"exit_on_invocation", n}}.dump(), "application/json");
    });
  }
  auto generate = [this](Api api) {
    return [this, api](const httplib::Request& req, httplib::Response& res) {
      CountInvocation();
      if (options_.fail_invocations) {
        return ErrorReply(res, 500, "invocation failure injected (--fail-invocations)");
      }
      Result<GenerationRequest> parsed = ParseRequest(api, req.body);
      if (!parsed) return ErrorReply(res, 400, parsed.error().message);
      GenerationRequest gen = std::move(parsed).value();
      Result<std::shared_ptr<Sequence>> seq =
          engine_->Submit(gen.prompt_tokens, gen.max_new_tokens);
      if (!seq) return ErrorReply(res, 400, seq.error().message);
      const AnswerId id = NewAnswerId(
          api, std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count());
      if (!gen.stream) {
        Sequence::Progress p = seq.value()->WaitFinished(kTokenWait * gen.max_new_tokens);
        if (!p.finished) {
          seq.value()->Cancel();
          return ErrorReply(res, 504, "simulated generation did not finish in time");
        }
        return res.set_content(FinalResponse(gen, p.generated, id), "application/json");
      }
      const int64_t fail_after = options_.fail_after_tokens;
      auto sequence = seq.value();
      auto sent = std::make_shared<int64_t>(0);
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          [gen, id, fail_after, sequence, sent](size_t, httplib::DataSink& sink) {
            if (fail_after >= 0 && *sent >= fail_after) {
              const std::string err = StreamError("stream failure injected after " +
                                                  std::to_string(fail_after) + " tokens");
              sink.write(err.data(), err.size());
              sequence->Cancel();
              return false;  // cut the connection: no terminating chunk
            }
            Sequence::Progress p = sequence->WaitBeyond(*sent, kTokenWait);
            if (p.generated <= *sent) {
              sequence->Cancel();
              return false;
            }
            for (; *sent < p.generated; ++*sent) {
              if (fail_after >= 0 && *sent >= fail_after) return true;  // fail on next call
              const bool last = *sent + 1 == gen.max_new_tokens;
              const std::string chunk = StreamChunk(gen, *sent, last, id);
              if (!sink.write(chunk.data(), chunk.size())) {
                sequence->Cancel();
                return false;
              }
            }
            if (p.finished) {
              const std::string end = StreamEnd(gen, p.generated, id);
              if (!end.empty()) sink.write(end.data(), end.size());
              sink.done();
            }
            return true;
          },
          [sequence](bool) { sequence->Cancel(); });
    };
  };
  http_->Post("/invocations", generate(Api::kSageMaker));
  http_->Post("/v1/completions", generate(Api::kCompletions));
  http_->Post("/v1/chat/completions", generate(Api::kChat));
}

}  // namespace carve::testmodel
