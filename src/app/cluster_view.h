// GET /v1/cluster: the control plane as an operator checks it. Which replicas are alive, which
// one leads, and the store under them: the SQLite file, or every etcd member with its health as
// the member itself reports it (`carve cluster status` prints this).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "http/http_server.h"
#include "http/metrics.h"
#include "store/etcd_leadership.h"
#include "store/etcd_store.h"

namespace carve::app {

struct ClusterSources {
  std::function<std::string()> self;            // This replica's URL (known once bound).
  std::string sqlite_file;                      // The store, when it is SQLite.
  std::string store_url;                        // The store, when it is etcd...
  store::EtcdStore* etcd = nullptr;             // ...opened here,
  store::EtcdLeadership* leadership = nullptr;  // ...with this replica's leadership.
};

// The view; etcd members that do not answer are listed unhealthy with the reason.
nlohmann::json ClusterJson(const ClusterSources& sources);

void RegisterClusterRoute(http::HttpServer& http, ClusterSources sources);

// The etcd store's read cache: carve_store_cache_reads_total{served="cache"|"etcd"} (reads it
// answered, and reads that went to etcd because it was behind) and carve_store_cache_records.
void RegisterStoreCacheMetrics(http::MetricsRegistry& metrics, const store::EtcdStore& etcd);

}  // namespace carve::app
