// StaticAssets: serves the dashboard's files at /ui/ from an EmbeddedAsset table.
//
// GET /ui/ is index.html; GET /ui/<path> the file of that path; anything else 404. Every
// answer carries the dashboard's security headers: a Content-Security-Policy that allows
// scripts, styles and connections to this origin only (no inline script, no framing, no form
// posts), nosniff, no referrer, and a Date header (the page reads the server's clock from it,
// since SigV4 refuses a signature more than 15 minutes off). Hashed assets are cacheable
// forever, index.html is revalidated every time (ETag / If-None-Match -> 304). A gzip body is
// sent when the client accepts gzip. The files hold no account data, so they are public.
#pragma once

#include <span>

#include "common/clock.h"
#include "http/http_server.h"
#include "server/ui/embedded_asset.h"

namespace carve::server::ui {

class StaticAssets {
 public:
  // `assets` and `clock` must outlive this object.
  StaticAssets(std::span<const EmbeddedAsset> assets, const Clock& clock);

  http::NativeResponse Serve(const http::NativeRequest& request) const;

  // The headers every /ui/ answer carries (Date excepted).
  static const std::vector<std::pair<std::string, std::string>>& SecurityHeaders();

 private:
  const EmbeddedAsset* Find(std::string_view path) const;

  std::span<const EmbeddedAsset> assets_;
  const Clock& clock_;
};

// "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 IMF-fixdate) for Unix milliseconds.
std::string HttpDate(int64_t unix_ms);

// Whether an Accept-Encoding value accepts gzip ("gzip, deflate, br" yes; "gzip;q=0" no).
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace carve::server::ui
