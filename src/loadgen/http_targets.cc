#include "loadgen/http_targets.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <ctime>
#include <nlohmann/json.hpp>
#include <regex>

#include "aws/sigv4.h"
#include "loadgen/body_decoder.h"
#include "loadgen/stream_tracker.h"

namespace carve::loadgen {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The socket of a session's connection, recorded when httplib opens it, so TCP_QUICKACK can be
// re-armed: Linux turns quick ACKs off again after a while. Quick ACKs keep a server that does
// not set TCP_NODELAY (Nagle) from holding each small SSE write until our delayed ACK (~40 ms),
// which would inflate TTFT and ITL by the client's ACK policy rather than the server's pacing.
struct QuickAck {
  std::atomic<int> fd{-1};
  void Arm() const {
    const int s = fd.load();
    if (s < 0) return;
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
  }
};

struct Call {
  std::string path;
  httplib::Headers headers;  // Host and Content-Type included
  std::string body;
  bool require_done = false;
};

// Sends `call` on `client` and times its stream. The read timeout is the request timeout, so a
// server that stops sending is cut too; an answer completed after the deadline is a deadline
// failure as well (genai-bench's serving-path deadline).
RequestOutcome StreamCall(httplib::Client& client, const QuickAck& quick_ack, const Call& call,
                          BodyDecoder& decoder, RequestShape shape,
                          std::chrono::milliseconds timeout) {
  quick_ack.Arm();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const auto usecs = std::chrono::duration_cast<std::chrono::microseconds>(timeout - secs);
  client.set_read_timeout(secs.count(), usecs.count());
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + timeout;
  StreamTracker tracker(shape, start);
  int status = 0;
  std::string error_body;
  bool past_deadline = false;

  httplib::Request req;
  req.method = "POST";
  req.path = call.path;
  req.headers = call.headers;
  req.body = call.body;
  req.response_handler = [&status, &quick_ack](const httplib::Response& r) {
    quick_ack.Arm();
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const Clock::time_point now = Clock::now();
    quick_ack.Arm();
    if (status != 200) {
      error_body.append(data, std::min(n, size_t{400} - std::min(error_body.size(), size_t{400})));
      return true;
    }
    Result<std::vector<std::string>> events = decoder.Feed(std::string_view(data, n));
    if (!events) {
      tracker.Fail(events.error().message);
      return false;
    }
    for (const std::string& d : *events) tracker.OnEvent(InterpretEvent(d), now);
    if (now > deadline) past_deadline = true;
    return !tracker.failed() && !past_deadline;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = client.send(req, res, err);
  StreamTracker::End end{Clock::now(), "", false, call.require_done};
  if (sent && status == 200) {
    if (std::optional<std::string> last = decoder.Finish()) {
      tracker.OnEvent(InterpretEvent(*last), end.at);
    }
  } else if (status != 0 && status != 200) {
    tracker.Fail("HTTP " + std::to_string(status) + ": " + error_body);
  }
  if (end.at > deadline) past_deadline = true;
  if (!sent && !tracker.failed() && !past_deadline) {
    end.transport_error = "POST " + call.path + ": " + httplib::to_string(err);
  }
  end.deadline = past_deadline && !tracker.failed();
  return tracker.Finish(end);
}

std::unique_ptr<httplib::Client> NewClient(const std::string& origin, QuickAck& quick_ack) {
  auto client = std::make_unique<httplib::Client>(origin);
  client->set_socket_options([&quick_ack](socket_t sock) {
    quick_ack.fd = static_cast<int>(sock);
    quick_ack.Arm();
  });
  client->set_keep_alive(true);
  // Without TCP_NODELAY the request body waits behind the headers for the server's delayed
  // ACK (Nagle), adding ~40 ms to TTFT.
  client->set_tcp_nodelay(true);
  client->set_connection_timeout(std::chrono::seconds(5));
  client->set_write_timeout(std::chrono::seconds(30));
  return client;
}

class OpenAiSession : public TargetSession {
 public:
  OpenAiSession(const OpenAiTargetOptions& options, const ParsedUrl& url)
      : options_(options), url_(url), client_(NewClient(url.origin, quick_ack_)) {}

  RequestOutcome Send(const BenchRequest& request, std::chrono::milliseconds timeout) override {
    Call call;
    call.path =
        url_.path + (options_.api == OpenAiApi::kChat ? "/v1/chat/completions" : "/v1/completions");
    call.headers = {{"Host", url_.host_header}, {"Content-Type", "application/json"}};
    call.body = OpenAiBody(options_, request);
    call.require_done = true;
    SseBodyDecoder decoder;
    return StreamCall(*client_, quick_ack_, call, decoder, request.shape, timeout);
  }

 private:
  const OpenAiTargetOptions& options_;
  const ParsedUrl& url_;
  QuickAck quick_ack_;  // before client_: the client's socket callback writes it
  std::unique_ptr<httplib::Client> client_;
};

class OpenAiTarget : public Target {
 public:
  OpenAiTarget(OpenAiTargetOptions options, ParsedUrl url)
      : options_(std::move(options)), url_(std::move(url)) {}
  std::unique_ptr<TargetSession> NewSession() const override {
    return std::make_unique<OpenAiSession>(options_, url_);
  }
  std::string Describe() const override {
    return std::string(options_.api == OpenAiApi::kChat ? "openai-chat " : "openai-completions ") +
           url_.origin + url_.path;
  }

 private:
  const OpenAiTargetOptions options_;
  const ParsedUrl url_;
};

class RuntimeSession : public TargetSession {
 public:
  RuntimeSession(const RuntimeTargetOptions& options, const ParsedUrl& url)
      : options_(options), url_(url), client_(NewClient(url.origin, quick_ack_)) {}

  RequestOutcome Send(const BenchRequest& request, std::chrono::milliseconds timeout) override {
    aws::SigV4Request sig;
    sig.method = "POST";
    sig.path = url_.path + "/endpoints/" + options_.endpoint + "/invocations-response-stream";
    sig.body = RuntimeBody(request);
    sig.headers = {{"Host", url_.host_header}, {"Content-Type", "application/json"}};
    if (!options_.component.empty()) {
      sig.headers.emplace_back("X-Amzn-SageMaker-Inference-Component", options_.component);
    }
    if (!options_.credentials.access_key_id.empty()) {
      aws::sigv4::SignRequest(sig, options_.credentials.access_key_id,
                              options_.credentials.secret_access_key, options_.credentials.region,
                              "sagemaker", aws::sigv4::FormatAmzDate(std::time(nullptr)));
    }
    Call call;
    call.path = sig.path;
    for (auto& [k, v] : sig.headers) call.headers.emplace(k, v);
    call.body = std::move(sig.body);
    call.require_done = false;  // SageMaker streams end with the body; TGI's final is optional
    EventStreamBodyDecoder decoder;
    return StreamCall(*client_, quick_ack_, call, decoder, request.shape, timeout);
  }

 private:
  const RuntimeTargetOptions& options_;
  const ParsedUrl& url_;
  QuickAck quick_ack_;  // before client_: the client's socket callback writes it
  std::unique_ptr<httplib::Client> client_;
};

class RuntimeTarget : public Target {
 public:
  RuntimeTarget(RuntimeTargetOptions options, ParsedUrl url)
      : options_(std::move(options)), url_(std::move(url)) {}
  std::unique_ptr<TargetSession> NewSession() const override {
    return std::make_unique<RuntimeSession>(options_, url_);
  }
  std::string Describe() const override {
    std::string s = "sagemaker-runtime " + url_.origin + " endpoint " + options_.endpoint;
    if (!options_.component.empty()) s += " component " + options_.component;
    return s;
  }

 private:
  const RuntimeTargetOptions options_;
  const ParsedUrl url_;
};

// SageMaker's pattern for endpoint and inference component names.
bool ValidName(const std::string& name) {
  static const std::regex kName("^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$");
  return name.size() <= 63 && std::regex_match(name, kName);
}

}  // namespace

std::string OpenAiBody(const OpenAiTargetOptions& options, const BenchRequest& request) {
  json body = {{"max_tokens", request.shape.output_tokens},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (options.api == OpenAiApi::kChat) {
    body["messages"] = json::array({{{"role", "user"}, {"content", request.prompt}}});
  } else {
    body["prompt"] = request.prompt;
  }
  if (!options.model.empty()) body["model"] = options.model;
  if (options.ignore_eos) body["ignore_eos"] = true;
  return body.dump();
}

std::string RuntimeBody(const BenchRequest& request) {
  return json{{"inputs", request.prompt},
              {"parameters", {{"max_new_tokens", request.shape.output_tokens}}},
              {"stream", true}}
      .dump();
}

Result<ParsedUrl> ParseHttpUrl(std::string_view url) {
  static const std::regex kUrl(
      R"(^http://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:]+\])(:[0-9]{1,5})?(/.*)?$)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_match(url.begin(), url.end(), m, kUrl)) {
    return InvalidArgument("URL '" + std::string(url) +
                           "' is not of the form http://host[:port][/path] (only http is "
                           "supported)");
  }
  ParsedUrl p;
  p.host_header = m[1].str() + m[2].str();
  p.origin = "http://" + p.host_header;
  p.path = m[3].str();
  while (!p.path.empty() && p.path.back() == '/') p.path.pop_back();
  return p;
}

Result<std::unique_ptr<Target>> MakeOpenAiTarget(OpenAiTargetOptions options) {
  CARVE_ASSIGN_OR_RETURN(ParsedUrl url, ParseHttpUrl(options.url));
  if (url.path.ends_with("/v1")) url.path.resize(url.path.size() - 3);
  return std::unique_ptr<Target>(std::make_unique<OpenAiTarget>(std::move(options), url));
}

Result<std::unique_ptr<Target>> MakeRuntimeTarget(RuntimeTargetOptions options) {
  CARVE_ASSIGN_OR_RETURN(ParsedUrl url, ParseHttpUrl(options.endpoint_url));
  if (!ValidName(options.endpoint)) {
    return InvalidArgument("endpoint name '" + options.endpoint +
                           "' must match ^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$, <= 63 chars");
  }
  if (!options.component.empty() && !ValidName(options.component)) {
    return InvalidArgument("inference component name '" + options.component +
                           "' must match ^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$, <= 63 chars");
  }
  return std::unique_ptr<Target>(std::make_unique<RuntimeTarget>(std::move(options), url));
}

}  // namespace carve::loadgen
