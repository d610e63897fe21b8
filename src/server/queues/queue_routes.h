// The /v1/queues REST API (JSON, SigV4, scoped to the caller's account) and the queue gauges.
//
//   POST   /v1/queues                         create          -> 201 queue
//   GET    /v1/queues                         list            -> {"queues": [...]}
//   GET    /v1/queues/{q}                     describe        -> queue + job counts
//   PUT    /v1/queues/{q}                     update          -> queue (mgpu fixed: 400)
//   DELETE /v1/queues/{q}                     delete          -> 409 while jobs run
//   GET    /v1/queues/{q}/gpu                 GPU view (queue_service.h GpuView)
//   POST   /v1/queues/{q}/jobs                submit          -> 201 job (Failed when a share
//                                                                 rule is broken)
//   GET    /v1/queues/{q}/jobs                list            -> {"jobs": [...]}
//   GET    /v1/queues/{q}/jobs/{id}           describe
//   POST   /v1/queues/{q}/jobs/{id}/cancel    cancel          -> 409 when finished
//   GET    /v1/queues/{q}/jobs/{id}/logs      where each task's logs are (and their tail when
//                                             the server can read them: embedded agent)
// Errors are http/native_reply.h's: {"error": message, "code": name}, 400 / 404 / 409 / 503.
#pragma once

#include "http/http_server.h"
#include "http/metrics.h"
#include "server/queues/queue_service.h"

namespace carve::server::queues {

void RegisterQueueRoutes(http::HttpServer& server, QueueService& service);

// Gauges, refreshed on every scrape, with the figures of the GPU view:
//   carve_queue_card_core_allocated_percent{account,queue,node,gpu}
//   carve_queue_card_memory_allocated_bytes / _capacity_bytes / carve_queue_card_workers
//   carve_queue_card_utilization_percent / carve_queue_card_memory_used_bytes (when measured)
//   carve_queue_worker_core_limit_percent{account,queue,job,task,node,gpu}
//   carve_queue_worker_core_used_percent (achieved share; only when measured)
//   carve_queue_worker_memory_limit_bytes / carve_queue_worker_memory_used_bytes (when measured)
//   carve_queue_jobs{account,queue,state}
void RegisterQueueMetrics(http::MetricsRegistry& metrics, QueueService& service);

}  // namespace carve::server::queues
