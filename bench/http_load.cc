// http_load: a closed-loop HTTP load generator for the router-overhead benchmark
// (bench/router_overhead.sh). N connections, each a thread with its own keep-alive cpp-httplib
// client, send the same POST back to back for a fixed duration; the samples of a warm-up period
// are dropped. Prints one JSON object: requests/s, latency percentiles (microseconds), errors.
// With --sigv4 the request is SigV4-signed once at start (the signature stays valid within the
// server's clock-skew window), so the server pays for verification and the client does not.
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "aws/sigv4.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string target;  // host:port
  std::string path = "/invocations";
  std::string body = R"({"inputs":"x","parameters":{"max_new_tokens":1}})";
  std::vector<std::string> headers{"Content-Type: application/json"};
  int connections = 64;
  double duration_s = 10;
  double warmup_s = 2;
  std::string sigv4;  // ACCESS_KEY:SECRET
  std::string region = "us-east-1";
  std::string service = "sagemaker";
  std::string label;
};

struct ThreadResult {
  std::vector<int64_t> latencies_ns;
  int64_t errors = 0;
  std::map<std::string, int64_t> error_kinds;  // HTTP status or transport error -> count
};

httplib::Headers BuildHeaders(const Options& o) {
  httplib::Headers h;
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& line : o.headers) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    pairs.emplace_back(line.substr(0, colon), value);
  }
  if (!o.sigv4.empty()) {
    auto colon = o.sigv4.find(':');
    carve::aws::SigV4Request r{"POST", o.path, "", pairs, o.body};
    r.headers.emplace_back("Host", o.target);
    carve::aws::sigv4::SignRequest(r, o.sigv4.substr(0, colon), o.sigv4.substr(colon + 1), o.region,
                                   o.service, carve::aws::sigv4::FormatAmzDate(std::time(nullptr)));
    pairs = r.headers;
  }
  for (auto& [k, v] : pairs) {
    if (k != "Host" && k != "Content-Type") h.emplace(k, v);
  }
  return h;
}

std::string ContentType(const Options& o) {
  for (const std::string& line : o.headers) {
    if (line.rfind("Content-Type:", 0) == 0) {
      std::string v = line.substr(13);
      v.erase(0, v.find_first_not_of(' '));
      return v;
    }
  }
  return "application/octet-stream";
}

int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Closed-loop HTTP POST load generator (router-overhead benchmark)"};
  app.add_option("--target", o.target, "host:port")->required();
  app.add_option("--path", o.path, "Request path")->capture_default_str();
  app.add_option("--body", o.body, "Request body")->capture_default_str();
  app.add_option("--header", o.headers, "Extra header 'Name: value' (repeatable)");
  app.add_option("--connections", o.connections, "Concurrent connections")->capture_default_str();
  app.add_option("--duration-s", o.duration_s, "Measured seconds")->capture_default_str();
  app.add_option("--warmup-s", o.warmup_s, "Unmeasured seconds first")->capture_default_str();
  app.add_option("--sigv4", o.sigv4, "ACCESS_KEY:SECRET to SigV4-sign the request");
  app.add_option("--region", o.region)->capture_default_str();
  app.add_option("--service", o.service)->capture_default_str();
  app.add_option("--label", o.label, "Name echoed in the output");
  CLI11_PARSE(app, argc, argv);

  const httplib::Headers headers = BuildHeaders(o);
  const std::string content_type = ContentType(o);
  const auto colon = o.target.rfind(':');
  const std::string host = o.target.substr(0, colon);
  const int port = std::stoi(o.target.substr(colon + 1));

  const auto start = Clock::now();
  const auto measure_from = start + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(o.warmup_s));
  const auto stop_at = measure_from + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(o.duration_s));
  std::vector<ThreadResult> results(static_cast<size_t>(o.connections));
  std::vector<std::thread> threads;
  for (int t = 0; t < o.connections; ++t) {
    threads.emplace_back([&, t] {
      ThreadResult& r = results[static_cast<size_t>(t)];
      r.latencies_ns.reserve(1 << 16);
      httplib::Client cli(host, port);
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);
      cli.set_read_timeout(30, 0);
      for (;;) {
        const auto t0 = Clock::now();
        if (t0 >= stop_at) break;
        auto res = cli.Post(o.path.c_str(), headers, o.body, content_type.c_str());
        const auto t1 = Clock::now();
        if (t0 < measure_from || t1 > stop_at) continue;
        if (!res || res->status < 200 || res->status >= 300) {
          ++r.errors;
          ++r.error_kinds[res ? std::to_string(res->status) + " " +
                                    res->get_header_value("X-Amzn-ErrorType")
                              : httplib::to_string(res.error())];
          continue;
        }
        r.latencies_ns.push_back(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
      }
    });
  }
  for (auto& th : threads) th.join();

  std::vector<int64_t> all;
  int64_t errors = 0;
  std::map<std::string, int64_t> error_kinds;
  for (auto& r : results) {
    for (const auto& [k, n] : r.error_kinds) error_kinds[k] += n;
    all.insert(all.end(), r.latencies_ns.begin(), r.latencies_ns.end());
    errors += r.errors;
  }
  std::sort(all.begin(), all.end());
  nlohmann::json out{{"label", o.label},
                     {"connections", o.connections},
                     {"duration_s", o.duration_s},
                     {"requests", all.size()},
                     {"errors", errors},
                     {"error_kinds", error_kinds},
                     {"rps", static_cast<double>(all.size()) / o.duration_s},
                     {"p50_us", Percentile(all, 0.50) / 1000.0},
                     {"p90_us", Percentile(all, 0.90) / 1000.0},
                     {"p99_us", Percentile(all, 0.99) / 1000.0}};
  std::printf("%s\n", out.dump().c_str());
  return all.empty() ? 1 : 0;
}
