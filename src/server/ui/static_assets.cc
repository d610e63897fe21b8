#include "server/ui/static_assets.h"

#include <ctime>
#include <string>

namespace carve::server::ui {
namespace {

constexpr std::string_view kPrefix = "/ui/";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

http::NativeResponse Plain(int status, std::string body) {
  http::NativeResponse r;
  r.http_status = status;
  r.body = std::move(body);
  r.content_type = "text/plain; charset=utf-8";
  return r;
}

}  // namespace

std::string HttpDate(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

bool AcceptsGzip(std::string_view accept_encoding) {
  std::string_view rest = accept_encoding;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t semi = item.find(';');
    const std::string_view coding = Trim(item.substr(0, semi));
    if (coding != "gzip" && coding != "*") continue;
    if (semi == std::string_view::npos) return true;
    std::string_view param = Trim(item.substr(semi + 1));
    if (!param.starts_with("q=")) return true;
    param.remove_prefix(2);
    // q=0, q=0.0, q=0.00, q=0.000 refuse; any other weight accepts.
    return param.find_first_not_of("0.") != std::string_view::npos;
  }
  return false;
}

const std::vector<std::pair<std::string, std::string>>& StaticAssets::SecurityHeaders() {
  static const std::vector<std::pair<std::string, std::string>> kHeaders = {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"},
      {"Cross-Origin-Opener-Policy", "same-origin"},
      {"Cross-Origin-Resource-Policy", "same-origin"},
  };
  return kHeaders;
}

StaticAssets::StaticAssets(std::span<const EmbeddedAsset> assets, const Clock& clock)
    : assets_(assets), clock_(clock) {}

const EmbeddedAsset* StaticAssets::Find(std::string_view path) const {
  for (const EmbeddedAsset& a : assets_) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

http::NativeResponse StaticAssets::Serve(const http::NativeRequest& request) const {
  std::string_view path = request.path;
  http::NativeResponse out;
  if (path == "/ui") {
    out = Plain(308, "the dashboard is at /ui/\n");
    out.headers.emplace_back("Location", "/ui/");
  } else if (!path.starts_with(kPrefix)) {
    out = Plain(404, "not found\n");
  } else {
    path.remove_prefix(kPrefix.size());
    const EmbeddedAsset* a = Find(path.empty() ? std::string_view("index.html") : path);
    if (a == nullptr) {
      out = Plain(404, "no dashboard file " + std::string(request.path) + "\n");
    } else {
      out.content_type = std::string(a->content_type);
      out.headers.emplace_back("ETag", std::string(a->etag));
      out.headers.emplace_back("Cache-Control",
                               a->immutable ? "public, max-age=31536000, immutable" : "no-cache");
      auto inm = request.headers.find("if-none-match");
      if (inm != request.headers.end() && inm->second == a->etag) {
        out.http_status = 304;
      } else {
        auto ae = request.headers.find("accept-encoding");
        if (!a->gzip_body.empty() && ae != request.headers.end() && AcceptsGzip(ae->second)) {
          out.body = std::string(a->gzip_body);
          out.headers.emplace_back("Content-Encoding", "gzip");
        } else {
          out.body = std::string(a->body);
        }
      }
      if (!a->gzip_body.empty()) out.headers.emplace_back("Vary", "Accept-Encoding");
    }
  }
  for (const auto& h : SecurityHeaders()) out.headers.push_back(h);
  out.headers.emplace_back("Date", HttpDate(clock_.UnixMillis()));
  return out;
}

}  // namespace carve::server::ui
