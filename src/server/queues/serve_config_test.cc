#include "server/queues/serve_config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace carve::server::queues {
namespace {

constexpr std::string_view kConfig = R"(
proxy_location: HeadOnly
applications:
  - name: echo
    route_prefix: /echo
    import_path: echo:app
  - name: sum
    route_prefix: /sum
    import_path: sum:app
)";

std::string ErrorOf(std::string_view text) {
  Status s = ValidateServeConfig(text);
  return s.ok() ? "<accepted>" : s.error().message;
}

TEST(ServeConfig, AcceptsWhatServeDeployTakesAsYamlOrJson) {
  EXPECT_TRUE(ValidateServeConfig(kConfig).ok());
  EXPECT_TRUE(ValidateServeConfig(R"({"applications": [{"import_path": "echo:app"}]})").ok());
}

TEST(ServeConfig, RefusesAConfigServeWouldNotDeployNamingTheField) {
  EXPECT_EQ(ErrorOf("[1, 2]"), "serve_config: must be a mapping, the config `serve deploy` takes");
  EXPECT_EQ(ErrorOf("applications: []"),
            "serve_config.applications: must be a non-empty list of applications (name, "
            "route_prefix, import_path, ...)");
  EXPECT_EQ(ErrorOf("applications: [{name: a}]"),
            "serve_config.applications[0].import_path: is required, the application's "
            "module:attribute");
  EXPECT_EQ(ErrorOf("applications: [{import_path: a:b}, {import_path: c:d}]"),
            "serve_config.applications[0].name: is required when the config has several "
            "applications");
  EXPECT_EQ(ErrorOf("applications: [{name: a, import_path: a:b}, {name: a, import_path: c:d}]"),
            "serve_config.applications[1].name: 'a' names another application too");
  EXPECT_EQ(ErrorOf("applications: [{import_path: a:b}]\nhttp_options: 8000"),
            "serve_config.http_options: must be a mapping");
  EXPECT_NE(ErrorOf("applications: [").find("serve_config: not valid YAML"), std::string::npos);
  EXPECT_EQ(ErrorOf(std::string(kMaxServeConfigBytes + 1, ' ')),
            "serve_config: 65537 bytes; at most 65536");
}

TEST(ServeConfig, APortInTheConfigIsReplacedWithAWarning) {
  std::vector<std::string> warnings;
  ASSERT_TRUE(ValidateServeConfig("applications: [{import_path: a:b}]\nhttp_options: {port: 8000}",
                                  &warnings)
                  .ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("http_options.port=8000: replaced"), std::string::npos);
  auto rendered = RenderServeConfig(
      "applications: [{import_path: a:b}]\nhttp_options: {port: 8000, host: 127.0.0.1}", 31001);
  ASSERT_TRUE(rendered.has_value());
  const YAML::Node n = YAML::Load(*rendered);
  EXPECT_EQ(n["http_options"]["port"].as<int>(), 31001);
  EXPECT_EQ(n["http_options"]["host"].as<std::string>(), "127.0.0.1") << "the user's host stays";
  EXPECT_EQ(n["applications"][0]["import_path"].as<std::string>(), "a:b");
}

TEST(ServeConfig, RenderingSetsTheIngressPortAndAReachableHost) {
  auto rendered = RenderServeConfig(kConfig, 31002);
  ASSERT_TRUE(rendered.has_value()) << rendered.error().message;
  const YAML::Node n = YAML::Load(*rendered);
  EXPECT_EQ(n["http_options"]["port"].as<int>(), 31002);
  EXPECT_EQ(n["http_options"]["host"].as<std::string>(), "0.0.0.0");
  EXPECT_EQ(n["applications"].size(), 2u);
  EXPECT_EQ(n["proxy_location"].as<std::string>(), "HeadOnly");
}

TEST(ServeStatus, SummarisesTheApplicationsTheServeApiReports) {
  // The shape of Ray's ServeInstanceDetails, trimmed to what carve reads.
  ServeStatus s = ServeStatusFromBody(R"({
    "proxy_location": "HeadOnly", "http_options": {"host": "0.0.0.0", "port": 31002},
    "applications": {
      "echo": {"name": "echo", "route_prefix": "/echo", "status": "RUNNING", "message": ""},
      "sum": {"name": "sum", "route_prefix": "/sum", "status": "DEPLOYING", "message": "3/4"}}})");
  EXPECT_EQ(s.status, "DEPLOYING");
  ASSERT_EQ(s.applications.size(), 2u);
  EXPECT_EQ(s.applications[0], (ServeApplication{"echo", "RUNNING", "/echo", ""}));
  EXPECT_EQ(s.message, "sum: 3/4");
  EXPECT_EQ(ServeStatusFromBody(R"({"applications": {"a": {"status": "RUNNING"}}})").status,
            "RUNNING");
  EXPECT_EQ(ServeStatusFromBody(
                R"({"applications": {"a": {"status": "RUNNING"}, "b": {"status": "DEPLOY_FAILED",
                     "message": "ImportError"}}})")
                .status,
            "DEPLOY_FAILED");
  EXPECT_EQ(ServeStatusFromBody(R"({"applications": {}})").status, "DEPLOYING");
}

TEST(ServeStatus, AnAnswerThatIsNotTheApiIsUnknownWithTheReason) {
  ServeStatus s = ServeStatusFromBody("error: GET http://127.0.0.1:1/x: Connection");
  EXPECT_EQ(s.status, "UNKNOWN");
  EXPECT_EQ(s.message, "GET http://127.0.0.1:1/x: Connection");
  EXPECT_EQ(ServeStatusFromBody("<html>").status, "UNKNOWN");
  EXPECT_EQ(ServeStatusFromBody(R"({"applications": []})").status, "UNKNOWN");
}

}  // namespace
}  // namespace carve::server::queues
