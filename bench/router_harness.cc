// router_harness: carve's runtime router alone (HttpServer + Router, SigV4 on) in front of one
// copy, for bench/router_overhead.sh. Every endpoint/component name resolves to that copy, so
// the benchmark measures the router's own path: SigV4 verification, routing, balancing, the
// pooled keep-alive connection to the copy and the response relay. It does not include the
// control plane's CopyDirectory lookup (a map lookup under a mutex in the SageMaker service).
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>

#include "http/http_server.h"
#include "runtime/router.h"

namespace {

using carve::runtime::CopyDirectory;
using carve::runtime::RouteInfo;

class OneCopyDirectory final : public CopyDirectory {
 public:
  explicit OneCopyDirectory(std::string address) {
    route_.variant = "AllTraffic";
    route_.component = "bench";
    route_.copies = {{"copy-0", std::move(address)}};
  }
  carve::Result<RouteInfo> Resolve(const std::string&, const std::string&, const std::string&,
                                   carve::runtime::Unnamed) override {
    return route_;
  }

 private:
  RouteInfo route_;
};

carve::http::HttpServer* g_server = nullptr;
extern "C" void OnSignal(int) {
  if (g_server != nullptr) g_server->Stop();
}

}  // namespace

int main(int argc, char** argv) {
  std::string copy;
  std::string access_key = "AKIABENCH00000000000";
  std::string secret = "benchsecret0000000000000000000000000000";
  std::string account = "123456789012";
  int port = 0;
  int threads = 128;
  CLI::App app{"The runtime router alone in front of one copy (router-overhead benchmark)"};
  app.add_option("--copy", copy, "host:port of the copy")->required();
  app.add_option("--port", port, "Listen port on 127.0.0.1 (0: any)")->capture_default_str();
  app.add_option("--access-key", access_key)->capture_default_str();
  app.add_option("--secret", secret)->capture_default_str();
  app.add_option("--threads", threads, "HTTP worker threads")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  carve::aws::Credentials creds({{"default", access_key, secret, account}});
  carve::http::MetricsRegistry metrics;
  OneCopyDirectory directory(copy);
  carve::runtime::Router router(directory, metrics);
  carve::http::HttpServerOptions options;
  options.threads = threads;
  carve::http::HttpServer server(options, creds, metrics);
  carve::runtime::RegisterRuntimeRoutes(server, router);
  auto bound = server.Start("127.0.0.1", port);
  if (!bound) {
    std::fprintf(stderr, "%s\n", bound.error().message.c_str());
    return 1;
  }
  g_server = &server;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::printf("listening on http://127.0.0.1:%d\n", *bound);
  std::fflush(stdout);
  server.Wait();
  return 0;
}
