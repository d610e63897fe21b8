#include "server/ui/static_assets.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "server/ui/test_assets.h"

namespace carve::server::ui {
namespace {

std::string HeaderOf(const http::NativeResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

http::NativeRequest Get(std::string path, std::map<std::string, std::string> headers = {}) {
  http::NativeRequest r;
  r.method = "GET";
  r.path = std::move(path);
  r.headers = std::move(headers);
  return r;
}

class StaticAssetsTest : public ::testing::Test {
 protected:
  FakeClock clock_{784111777000};  // Sun, 06 Nov 1994 08:49:37 GMT.
  StaticAssets assets_{TestAssets(), clock_};
};

TEST_F(StaticAssetsTest, ServesIndexHtmlAtTheRootAndRevalidatesIt) {
  http::NativeResponse r = assets_.Serve(Get("/ui/"));
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(r.body, "<!doctype html><p>test dashboard</p>");
  EXPECT_EQ(HeaderOf(r, "Cache-Control"), "no-cache");
  EXPECT_EQ(HeaderOf(r, "ETag"), "\"sha256:index\"");
}

TEST_F(StaticAssetsTest, CachesHashedAssetsForever) {
  http::NativeResponse r = assets_.Serve(Get("/ui/assets/main-TEST.js"));
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(HeaderOf(r, "Cache-Control"), "public, max-age=31536000, immutable");
}

TEST_F(StaticAssetsTest, AnswersNotModifiedToAMatchingValidator) {
  http::NativeResponse r = assets_.Serve(Get("/ui/", {{"if-none-match", "\"sha256:index\""}}));
  EXPECT_EQ(r.http_status, 304);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(assets_.Serve(Get("/ui/", {{"if-none-match", "\"other\""}})).http_status, 200);
}

TEST_F(StaticAssetsTest, SendsTheGzipBodyOnlyToClientsThatAcceptIt) {
  http::NativeResponse plain = assets_.Serve(Get("/ui/assets/main-TEST.js"));
  EXPECT_EQ(plain.body, "console.log('test')");
  EXPECT_EQ(HeaderOf(plain, "Content-Encoding"), "");
  EXPECT_EQ(HeaderOf(plain, "Vary"), "Accept-Encoding");
  http::NativeResponse gz =
      assets_.Serve(Get("/ui/assets/main-TEST.js", {{"accept-encoding", "gzip, deflate, br"}}));
  EXPECT_EQ(HeaderOf(gz, "Content-Encoding"), "gzip");
  EXPECT_EQ(gz.body.substr(0, 2), "\x1f\x8b");
}

TEST_F(StaticAssetsTest, AnswersUnknownFilesWith404AndTheSecurityHeaders) {
  http::NativeResponse r = assets_.Serve(Get("/ui/assets/nope.js"));
  EXPECT_EQ(r.http_status, 404);
  EXPECT_EQ(r.body, "no dashboard file /ui/assets/nope.js\n");
  EXPECT_NE(HeaderOf(r, "Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(HeaderOf(r, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(HeaderOf(r, "Date"), "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST_F(StaticAssetsTest, RedirectsTheBarePathToTheDirectory) {
  http::NativeResponse r = assets_.Serve(Get("/ui"));
  EXPECT_EQ(r.http_status, 308);
  EXPECT_EQ(HeaderOf(r, "Location"), "/ui/");
}

TEST(AcceptsGzip, ReadsCodingsAndWeights) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, gzip;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.000"));
  EXPECT_FALSE(AcceptsGzip("br, deflate"));
  EXPECT_FALSE(AcceptsGzip(""));
}

TEST(HttpDate, FormatsTheImfFixdate) {
  EXPECT_EQ(HttpDate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(HttpDate(1'700'000'000'999), "Tue, 14 Nov 2023 22:13:20 GMT");
}

}  // namespace
}  // namespace carve::server::ui
