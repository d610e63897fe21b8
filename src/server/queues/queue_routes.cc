// HTTP handlers of the queue API: JSON in, service call, JSON out. No logic beyond that.
#include "server/queues/queue_routes.h"

#include <fmt/format.h>

#include <deque>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/bounded_json.h"
#include "http/native_reply.h"

namespace carve::server::queues {
namespace {

using nlohmann::json;

// Bounded nesting, no repeated keys (common/bounded_json.h).
Result<json> Body(const http::NativeRequest& r) {
  Result<json> body = ParseJson(r.body.empty() ? std::string_view("{}") : r.body);
  if (!body.has_value()) return InvalidArgument("request body " + body.error().message);
  return body;
}

json QueueJson(const QueueRecord& q, const std::vector<JobRecord>* jobs) {
  json j = ToJson(q);
  j.erase("next_job_seq");
  if (jobs != nullptr) {
    std::map<std::string, int> counts;
    for (const auto& job : *jobs) ++counts[std::string(NameOf(job.state))];
    j["jobs"] = counts;
  }
  return j;
}

// The last `max_lines` lines of a file, or nullopt when it cannot be read here.
std::optional<std::string> Tail(const std::string& path, size_t max_lines) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::deque<std::string> lines;  // The newest max_lines: dropping the oldest is O(1).
  for (std::string line; std::getline(in, line);) {
    lines.push_back(std::move(line));
    if (lines.size() > max_lines) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

constexpr int kMaxJobsPage = 1000;

// A whole number of at most 18 digits; nullopt otherwise.
std::optional<int64_t> ParseWhole(const std::string& text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

json LogsJson(const JobRecord& job, size_t max_lines) {
  json tasks = json::array();
  for (const auto& t : job.tasks) {
    json e{{"task", t.index},
           {"role", NameOf(t.role)},
           {"state", NameOf(t.state)},
           {"node", t.node},
           {"log_dir", t.log_dir}};
    if (!t.log_dir.empty()) {
      e["stdout_path"] = t.log_dir + "/stdout.log";
      e["stderr_path"] = t.log_dir + "/stderr.log";
      if (auto s = Tail(t.log_dir + "/stdout.log", max_lines)) e["stdout"] = *s;
      if (auto s = Tail(t.log_dir + "/stderr.log", max_lines)) e["stderr"] = *s;
    }
    tasks.push_back(std::move(e));
  }
  return json{{"job", job.id}, {"queue", job.queue}, {"tasks", tasks}};
}

// GET .../jobs' paging: max_results (1..1000, default 1000) and the next_token the previous page
// gave (the last job number it held).
struct JobsPageQuery {
  int limit = kMaxJobsPage;
  int64_t after = 0;
};
Result<JobsPageQuery> PageQuery(const http::NativeRequest& r) {
  JobsPageQuery q;
  if (auto it = r.query.find("max_results"); it != r.query.end()) {
    auto n = ParseWhole(it->second);
    if (!n || *n < 1 || *n > kMaxJobsPage) {
      return InvalidArgument(fmt::format("max_results={}: must be a whole number from 1 to {}",
                                         it->second, kMaxJobsPage));
    }
    q.limit = static_cast<int>(*n);
  }
  if (auto it = r.query.find("next_token"); it != r.query.end()) {
    auto n = ParseWhole(it->second);
    if (!n) {
      return InvalidArgument(fmt::format(
          "next_token={}: not a token this server gave (pass the last page's next_token)",
          it->second));
    }
    q.after = *n;
  }
  return q;
}

// GET .../logs' lines: 1..kMaxLogLines, default 100.
constexpr int64_t kMaxLogLines = 10'000;
Result<size_t> LinesQuery(const http::NativeRequest& r) {
  auto it = r.query.find("lines");
  if (it == r.query.end()) return size_t{100};
  auto n = ParseWhole(it->second);
  if (!n || *n < 1 || *n > kMaxLogLines) {
    return InvalidArgument(fmt::format("lines={}: must be a whole number from 1 to {}",
                                       it->second.substr(0, 64), kMaxLogLines));
  }
  return static_cast<size_t>(*n);
}

void RegisterQueueResourceRoutes(http::HttpServer& server, QueueService& svc) {
  const http::Access auth = http::kForTenants;
  server.AddRoute("POST", "/v1/queues", auth, [&svc](const http::NativeRequest& r) {
    auto body = Body(r);
    if (!body.has_value()) return http::ErrorReply(body.error());
    auto request = ParseCreateQueue(*body);
    if (!request.has_value()) return http::ErrorReply(request.error());
    return http::Answer(svc.CreateQueue(r.account_id, *request), 201,
                        [](const QueueRecord& q) { return QueueJson(q, nullptr); });
  });
  server.AddRoute("GET", "/v1/queues", auth, [&svc](const http::NativeRequest& r) {
    json list = json::array();
    for (const auto& q : svc.ListQueues(r.account_id)) {
      auto jobs = svc.ListJobs(r.account_id, q.name);
      list.push_back(QueueJson(q, jobs.has_value() ? &*jobs : nullptr));
    }
    return http::JsonReply(200, json{{"queues", list}});
  });
  server.AddRoute("GET", "/v1/queues/{q}", auth, [&svc](const http::NativeRequest& r) {
    const std::string& name = r.path_params.at("q");
    auto jobs = svc.ListJobs(r.account_id, name);
    return http::Answer(svc.GetQueue(r.account_id, name), 200, [&](const QueueRecord& q) {
      return QueueJson(q, jobs.has_value() ? &*jobs : nullptr);
    });
  });
  server.AddRoute("PUT", "/v1/queues/{q}", auth, [&svc](const http::NativeRequest& r) {
    auto body = Body(r);
    if (!body.has_value()) return http::ErrorReply(body.error());
    return http::Answer(svc.UpdateQueue(r.account_id, r.path_params.at("q"), *body), 200,
                        [](const QueueRecord& q) { return QueueJson(q, nullptr); });
  });
  server.AddRoute("DELETE", "/v1/queues/{q}", auth, [&svc](const http::NativeRequest& r) {
    Status st = svc.DeleteQueue(r.account_id, r.path_params.at("q"));
    if (!st.ok()) return http::ErrorReply(st.error());
    return http::JsonReply(200, json{{"deleted", r.path_params.at("q")}});
  });
  server.AddRoute("GET", "/v1/queues/{q}/gpu", auth, [&svc](const http::NativeRequest& r) {
    return http::Answer(svc.GpuView(r.account_id, r.path_params.at("q")), 200,
                        [](const QueueGpuView& v) { return ToJson(v); });
  });
}

void RegisterJobRoutes(http::HttpServer& server, QueueService& svc) {
  const http::Access auth = http::kForTenants;
  server.AddRoute("POST", "/v1/queues/{q}/jobs", auth, [&svc](const http::NativeRequest& r) {
    auto body = Body(r);
    if (!body.has_value()) return http::ErrorReply(body.error());
    auto sub = ParseJobSubmission(*body);
    if (!sub.has_value()) return http::ErrorReply(sub.error());
    return http::Answer(svc.SubmitJob(r.account_id, r.path_params.at("q"), *sub), 201,
                        [](const JobRecord& j) { return ToJson(j); });
  });
  server.AddRoute("GET", "/v1/queues/{q}/jobs", auth, [&svc](const http::NativeRequest& r) {
    auto page = PageQuery(r);
    if (!page.has_value()) return http::ErrorReply(page.error());
    return http::Answer(
        svc.ListJobsPage(r.account_id, r.path_params.at("q"), page->after, page->limit), 200,
        [](const QueueService::JobPage& page) {
          json list = json::array();
          for (const auto& j : page.jobs) list.push_back(ToJson(j));
          json out{{"jobs", list}};
          if (page.next_after) out["next_token"] = std::to_string(*page.next_after);
          return out;
        });
  });
  server.AddRoute("GET", "/v1/queues/{q}/jobs/{id}", auth, [&svc](const http::NativeRequest& r) {
    return http::Answer(svc.GetJob(r.account_id, r.path_params.at("q"), r.path_params.at("id")),
                        200, [](const JobRecord& j) { return ToJson(j); });
  });
  server.AddRoute("POST", "/v1/queues/{q}/jobs/{id}/cancel", auth,
                  [&svc](const http::NativeRequest& r) {
                    return http::Answer(
                        svc.CancelJob(r.account_id, r.path_params.at("q"), r.path_params.at("id")),
                        200, [](const JobRecord& j) { return ToJson(j); });
                  });
  server.AddRoute(
      "GET", "/v1/queues/{q}/jobs/{id}/logs", auth, [&svc](const http::NativeRequest& r) {
        auto lines = LinesQuery(r);
        if (!lines.has_value()) return http::ErrorReply(lines.error());
        return http::Answer(svc.GetJob(r.account_id, r.path_params.at("q"), r.path_params.at("id")),
                            200, [&](const JobRecord& j) { return LogsJson(j, *lines); });
      });
}

}  // namespace

void RegisterQueueRoutes(http::HttpServer& server, QueueService& svc) {
  RegisterQueueResourceRoutes(server, svc);
  RegisterJobRoutes(server, svc);
}

void RegisterQueueMetrics(http::MetricsRegistry& m, QueueService& svc) {
  const std::vector<std::string> card = {"account", "queue", "node", "gpu"};
  const std::vector<std::string> worker = {"account", "queue", "job", "task", "node", "gpu"};
  auto& core_alloc = m.AddGauge("carve_queue_card_core_allocated_percent",
                                "mGPU core percent placed on a queue's card", card);
  auto& mem_alloc = m.AddGauge("carve_queue_card_memory_allocated_bytes",
                               "Card memory reserved by a queue's shares", card);
  auto& mem_cap = m.AddGauge("carve_queue_card_memory_capacity_bytes",
                             "Card memory shares may take (card memory less the reserve)", card);
  auto& workers = m.AddGauge("carve_queue_card_workers", "Workers placed on a queue's card", card);
  auto& util = m.AddGauge("carve_queue_card_utilization_percent",
                          "Measured card utilization (absent when not measured)", card);
  auto& mem_used = m.AddGauge("carve_queue_card_memory_used_bytes",
                              "Measured card memory use (absent when not measured)", card);
  auto& w_core = m.AddGauge("carve_queue_worker_core_limit_percent",
                            "A worker's core limit (its share)", worker);
  auto& w_used = m.AddGauge("carve_queue_worker_core_used_percent",
                            "A worker's achieved compute share as the enforcement layer measures "
                            "it (absent when not measured)",
                            worker);
  auto& w_mem =
      m.AddGauge("carve_queue_worker_memory_limit_bytes", "A worker's card memory quota", worker);
  auto& w_mem_used =
      m.AddGauge("carve_queue_worker_memory_used_bytes",
                 "A worker's measured card memory (absent when not measured)", worker);
  auto& jobs =
      m.AddGauge("carve_queue_jobs", "Jobs per queue and state", {"account", "queue", "state"});
  m.AddCollector([&, &svc = svc] {
    for (http::Gauge* g : {&core_alloc, &mem_alloc, &mem_cap, &workers, &util, &mem_used, &w_core,
                           &w_used, &w_mem, &w_mem_used, &jobs}) {
      g->Clear();
    }
    constexpr double kMib = 1024.0 * 1024.0;
    for (const auto& v : svc.AllGpuViews()) {
      for (const auto& c : v.cards) {
        const http::LabelValues l = {v.account, v.queue, c.node, std::to_string(c.gpu)};
        core_alloc.Set(l, c.core_allocated_percent);
        mem_alloc.Set(l, static_cast<double>(c.memory_allocated_mib) * kMib);
        mem_cap.Set(l, static_cast<double>(c.memory_capacity_mib) * kMib);
        workers.Set(l, c.workers);
        if (c.utilization_percent) util.Set(l, *c.utilization_percent);
        if (c.memory_used_mib) mem_used.Set(l, static_cast<double>(*c.memory_used_mib) * kMib);
        for (const auto& w : c.worker_views) {
          const http::LabelValues wl = {
              v.account, v.queue, w.job, std::to_string(w.task), c.node, std::to_string(c.gpu)};
          w_core.Set(wl, w.core_limit_percent);
          w_mem.Set(wl, static_cast<double>(w.memory_limit_mib) * kMib);
          if (w.core_used_percent) w_used.Set(wl, *w.core_used_percent);
          if (w.memory_used_mib) w_mem_used.Set(wl, static_cast<double>(*w.memory_used_mib) * kMib);
        }
      }
    }
    for (const auto& [key, n] : svc.JobCounts()) {
      jobs.Set({std::get<0>(key), std::get<1>(key), std::get<2>(key)}, n);
    }
  });
}

}  // namespace carve::server::queues
