// The dashboard's built files as the binary carries them. The table is generated at build time
// (tools/embed_assets.py from ui/'s build output) into the build tree; tests build their own.
#pragma once

#include <span>
#include <string_view>

namespace carve::server::ui {

struct EmbeddedAsset {
  std::string_view path;          // Below /ui/: "index.html", "assets/main-4KX2ZK.js".
  std::string_view content_type;  // "text/javascript; charset=utf-8".
  std::string_view body;
  std::string_view gzip_body;  // The body gzip-compressed; empty when that is not smaller.
  std::string_view etag;       // A strong validator, quotes included: "\"sha256:1f2e...\"".
  bool immutable = false;      // The name carries a content hash: cacheable forever.
};

// The table linked into `carve` (generated).
std::span<const EmbeddedAsset> EmbeddedAssets();

}  // namespace carve::server::ui
