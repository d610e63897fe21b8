#include "server/ui/ui_routes.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "server/ui/catalog_json.h"

namespace carve::server::ui {
namespace {

using nlohmann::json;

http::NativeResponse Json(int status, const json& body) {
  http::NativeResponse r;
  r.http_status = status;
  r.body = body.dump() + "\n";
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

http::NativeResponse JsonError(int status, const std::string& code, const std::string& message) {
  return Json(status, json{{"error", message}, {"code", code}});
}

// "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sagemaker/aws4_request, ..." -> "AKID".
std::string AccessKeyOf(const http::NativeRequest& r) {
  auto it = r.headers.find("authorization");
  if (it == r.headers.end()) return "";
  const std::string& v = it->second;
  const size_t at = v.find("Credential=");
  if (at == std::string::npos) return "";
  const size_t start = at + 11;
  const size_t slash = v.find('/', start);
  return slash == std::string::npos ? "" : v.substr(start, slash - start);
}

}  // namespace

Dashboard::Dashboard(UiOptions options, const aws::Credentials& credentials,
                     http::MetricsRegistry& metrics, http::ApiHandler sagemaker)
    : options_(options),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Get()),
      credentials_(credentials),
      metrics_(metrics),
      sagemaker_(std::move(sagemaker)),
      assets_(options_.assets, clock_),
      history_(options_.history),
      catalog_body_(CatalogJson().dump() + "\n") {}

Dashboard::~Dashboard() { Stop(); }

void Dashboard::Register(http::HttpServer& server) {
  auto serve = [this](const http::NativeRequest& r) { return assets_.Serve(r); };
  server.AddRoute("GET", "/ui", http::kForAnyone, serve);
  server.AddRoute("GET", "/ui/", http::kForAnyone, serve);
  server.AddRoute("GET", "/ui/{file}", http::kForAnyone, serve);
  server.AddRoute("GET", "/ui/assets/{file}", http::kForAnyone, serve);
  server.AddRoute("GET", "/v1/ui/whoami", http::kForTenants,
                  [this](const http::NativeRequest& r) { return WhoAmI(r); });
  server.AddRoute("GET", "/v1/ui/metrics", http::kForTenants,
                  [this](const http::NativeRequest& r) { return Metrics(r); });
  server.AddRoute("GET", "/v1/catalog", http::kForTenants, [this](const http::NativeRequest&) {
    http::NativeResponse r;
    r.body = catalog_body_;
    r.headers.emplace_back("Cache-Control", "private, max-age=300");
    return r;
  });
}

void Dashboard::Start() {
  std::lock_guard lock(mu_);
  if (sampler_.joinable() || stopping_) return;
  sampler_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      if (Status st = SampleNow(); !st.ok()) {
        spdlog::warn("dashboard: cannot read the metrics registry: {}", st.error().message);
      }
      lock.lock();
      wake_.wait_for(lock, std::chrono::milliseconds(options_.history.step_ms),
                     [this] { return stopping_; });
    }
  });
}

void Dashboard::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

Status Dashboard::SampleNow() { return history_.Record(clock_.UnixMillis(), metrics_.Expose()); }

Result<std::set<ComponentKey>> Dashboard::ComponentsOf(const std::string& account,
                                                       const std::string& request_id) const {
  std::set<ComponentKey> out;
  std::string token;
  for (int page = 0; page < 1000; ++page) {
    json body{{"MaxResults", 100}};
    if (!token.empty()) body["NextToken"] = token;
    http::ApiResponse res =
        sagemaker_(http::ApiRequest{"ListInferenceComponents", body.dump(), account, request_id});
    if (res.http_status != 200) {
      return Unavailable("ListInferenceComponents answered " + std::to_string(res.http_status) +
                         " " + res.error_type + ": " + res.body);
    }
    json list = json::parse(res.body, nullptr, false);
    if (list.is_discarded()) return Internal("ListInferenceComponents answered malformed JSON");
    for (const json& c : list.value("InferenceComponents", json::array())) {
      out.emplace(c.value("EndpointName", ""), c.value("InferenceComponentName", ""));
    }
    token = list.value("NextToken", "");
    if (token.empty()) break;
  }
  return out;
}

http::NativeResponse Dashboard::WhoAmI(const http::NativeRequest& r) const {
  const std::string key = AccessKeyOf(r);
  const std::optional<aws::Credential> c = credentials_.Find(key);
  return Json(200, json{{"account_id", r.account_id},
                        {"access_key_id", key},
                        {"profile", c.has_value() ? c->profile : ""},
                        {"operator", c.has_value() && c->operator_role},
                        {"server_time_ms", clock_.UnixMillis()}});
}

http::NativeResponse Dashboard::Metrics(const http::NativeRequest& r) const {
  auto owned = ComponentsOf(r.account_id, r.request_id);
  if (!owned.has_value()) return JsonError(503, "Unavailable", owned.error().message);
  return Json(200, history_.Query(r.account_id, *owned, clock_.UnixMillis()));
}

}  // namespace carve::server::ui
