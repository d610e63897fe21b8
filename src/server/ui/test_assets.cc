// The asset table the server_ui tests serve instead of the generated one, so they need no
// front-end build.
#include "server/ui/test_assets.h"

namespace carve::server::ui {

std::span<const EmbeddedAsset> TestAssets() {
  static const EmbeddedAsset kAssets[] = {
      {"index.html", "text/html; charset=utf-8", "<!doctype html><p>test dashboard</p>", "",
       "\"sha256:index\"", false},
      {"assets/main-TEST.js", "text/javascript; charset=utf-8", "console.log('test')",
       std::string_view("\x1f\x8b-not-really-gzip", 18), "\"sha256:js\"", true},
  };
  return kAssets;
}

}  // namespace carve::server::ui
