// RegisterUiRoutes, apart from the Dashboard so that only `carve` links the generated asset
// table; the tests link carve_server_ui_core with tables of their own.
#include "server/ui/ui_routes.h"

namespace carve::server::ui {

std::unique_ptr<Dashboard> RegisterUiRoutes(http::HttpServer& server,
                                            const aws::Credentials& credentials,
                                            http::MetricsRegistry& metrics,
                                            http::ApiHandler sagemaker, UiOptions options) {
  if (options.assets.empty()) options.assets = EmbeddedAssets();
  auto dashboard = std::make_unique<Dashboard>(options, credentials, metrics, std::move(sagemaker));
  dashboard->Register(server);
  dashboard->Start();
  return dashboard;
}

}  // namespace carve::server::ui
