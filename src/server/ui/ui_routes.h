// The dashboard's server side (docs/dashboard.md): the built page at /ui/ and the read routes
// only the dashboard needs, on the server's own listener.
//
//   GET /ui/, /ui/<file>     the page and its assets (public: they hold no data)
//   GET /v1/ui/whoami        SigV4: the caller's account, access key id and profile, and the
//                            server's clock ({"account_id", "access_key_id", "profile",
//                            "server_time_ms"})
//   GET /v1/ui/metrics       SigV4: the last minutes of the caller's components and queues
//                            (MetricsHistory::Query), sampled from the registry every step
//   GET /v1/catalog          SigV4: instance prices and MIG geometry (catalog_json.h)
//
// Everything else the page shows comes from the server's existing read APIs (/v1/fleet,
// /v1/queues..., the SageMaker API), which scope every answer to the caller's account.
// A request without a valid signature gets 403 and nothing else.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <thread>

#include "aws/credentials.h"
#include "common/clock.h"
#include "http/http_server.h"
#include "http/metrics.h"
#include "server/ui/embedded_asset.h"
#include "server/ui/metrics_history.h"
#include "server/ui/static_assets.h"

namespace carve::server::ui {

struct UiOptions {
  HistoryOptions history;
  // The files served at /ui/ (RegisterUiRoutes: the table built into the binary when empty).
  std::span<const EmbeddedAsset> assets;
  const Clock* clock = nullptr;  // nullptr: SystemClock.
};

class Dashboard {
 public:
  // `credentials` and `metrics` must outlive the dashboard. `sagemaker` answers SageMaker API
  // calls (the server's ApiHandler); the dashboard asks it which inference components an account
  // owns, so that a component without traffic yet is listed too, and reads each from the series
  // labelled with the caller's account.
  Dashboard(UiOptions options, const aws::Credentials& credentials, http::MetricsRegistry& metrics,
            http::ApiHandler sagemaker);
  ~Dashboard();  // Stops the sampler.
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  // Adds the routes above to `http` (before it starts).
  void Register(http::HttpServer& server);
  // Samples the registry now and then every history.step_ms on a thread until Stop().
  void Start();
  void Stop();  // Idempotent.
  // Records one exposition of the registry now (the sampler's step; tests call it directly).
  Status SampleNow();

  // The inference components `account` owns, as (endpoint, component); Unavailable when the
  // SageMaker API does not answer.
  Result<std::set<ComponentKey>> ComponentsOf(const std::string& account,
                                              const std::string& request_id) const;

  const MetricsHistory& history() const { return history_; }
  // The last minutes of `components` of `account`, as GET /v1/ui/metrics answers them.
  nlohmann::json HistoryOf(const std::string& account,
                           const std::set<ComponentKey>& components) const {
    return history_.Query(account, components, clock_.UnixMillis());
  }

 private:
  http::NativeResponse WhoAmI(const http::NativeRequest& r) const;
  http::NativeResponse Metrics(const http::NativeRequest& r) const;

  const UiOptions options_;
  const Clock& clock_;
  const aws::Credentials& credentials_;
  http::MetricsRegistry& metrics_;
  const http::ApiHandler sagemaker_;
  const StaticAssets assets_;
  MetricsHistory history_;
  const std::string catalog_body_;  // GET /v1/catalog: fixed for the binary's life.

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // Guarded by mu_.
  std::thread sampler_;    // Started by Start(); joined by Stop().
};

// The entry point `carve server` calls: a Dashboard serving the dashboard built into the binary
// (EmbeddedAssets(), unless options.assets names others), with its routes on `http` and its
// sampler running. Keep it alive while `http` serves. Defined in register_ui_routes.cc, which
// links the generated table (library carve_server_ui).
std::unique_ptr<Dashboard> RegisterUiRoutes(http::HttpServer& server,
                                            const aws::Credentials& credentials,
                                            http::MetricsRegistry& metrics,
                                            http::ApiHandler sagemaker, UiOptions options = {});

}  // namespace carve::server::ui
