#include "app/cluster_view.h"

#include <memory>
#include <utility>

#include "http/native_reply.h"

namespace carve::app {

namespace {

using json = nlohmann::json;

json EtcdMembers(store::EtcdStore& etcd) {
  json out = json::array();
  auto members = etcd.client().MemberList();
  if (!members.has_value()) {
    // No member answered for the list: show what was configured, each with its own error.
    for (const auto& endpoint : etcd.client().endpoints()) {
      Status health = etcd.client().Health(endpoint);
      out.push_back({{"client_urls", {"http://" + endpoint}},
                     {"healthy", health.ok()},
                     {"error", health.ok() ? members.error().message : health.error().message}});
    }
    return out;
  }
  for (const auto& m : *members) {
    json entry = {{"name", m.name}, {"id", std::to_string(m.id)}, {"client_urls", m.client_urls}};
    std::string endpoint = m.client_urls.empty() ? "" : m.client_urls.front();
    if (endpoint.starts_with("http://")) endpoint.erase(0, 7);
    if (endpoint.starts_with("https://")) endpoint.erase(0, 8);
    Status health = endpoint.empty() ? Status(Unavailable("the member has no client URL"))
                                     : etcd.client().Health(endpoint);
    entry["healthy"] = health.ok();
    if (!health.ok()) entry["error"] = health.error().message;
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

json ClusterJson(const ClusterSources& s) {
  if (s.etcd == nullptr || s.leadership == nullptr) {
    return {{"self", s.self()},
            {"leader", s.self()},
            {"replicas", {{{"url", s.self()}, {"leader", true}}}},
            {"store", {{"kind", "sqlite"}, {"file", s.sqlite_file}}}};
  }
  json view = {{"self", s.self()},
               {"store",
                {{"kind", "etcd"},
                 {"url", s.store_url},
                 {"prefix", s.etcd->prefix()},
                 {"members", EtcdMembers(*s.etcd)}}}};
  auto leader = s.leadership->Leader();
  view["leader"] = leader.has_value() ? json(*leader) : json(nullptr);
  if (!leader.has_value()) view["error"] = leader.error().message;
  json replicas = json::array();
  if (auto listed = s.leadership->Replicas(); listed.has_value()) {
    for (const auto& r : *listed) {
      json entry = json::parse(r.details, nullptr, false);
      if (!entry.is_object()) entry = json::object();
      entry["url"] = r.identity;
      entry["leader"] = leader.has_value() && *leader == r.identity;
      replicas.push_back(std::move(entry));
    }
  } else {
    view["error"] = listed.error().message;
  }
  view["replicas"] = std::move(replicas);
  return view;
}

void RegisterClusterRoute(http::HttpServer& http, ClusterSources sources) {
  http.AddRoute("GET", "/v1/cluster", http::kForOperators,
                [sources = std::move(sources)](const http::NativeRequest&) {
                  return http::JsonReply(200, ClusterJson(sources));
                });
}

void RegisterStoreCacheMetrics(http::MetricsRegistry& metrics, const store::EtcdStore& etcd) {
  auto& reads = metrics.AddCounter(
      "carve_store_cache_reads_total",
      "Store reads on this replica by where they were answered: from the watch cache, or from "
      "etcd because the cache had not caught up in time",
      {"served"});
  auto& records = metrics.AddGauge("carve_store_cache_records",
                                   "Records held in this replica's watch cache", {});
  // The store counts; the collector adds what it counted since the last scrape.
  auto last = std::make_shared<std::pair<int64_t, int64_t>>(0, 0);
  metrics.AddCollector([&reads, &records, &etcd, last] {
    const int64_t hits = etcd.cache_hits();
    const int64_t fallbacks = etcd.cache_fallbacks();
    reads.Increment({"cache"}, static_cast<double>(hits - last->first));
    reads.Increment({"etcd"}, static_cast<double>(fallbacks - last->second));
    *last = {hits, fallbacks};
    records.Set({}, static_cast<double>(etcd.cached_records()));
  });
}

}  // namespace carve::app
