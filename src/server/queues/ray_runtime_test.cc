#include "server/queues/ray_runtime.h"

#include <gtest/gtest.h>

namespace carve::server::queues {
namespace {

std::string ErrorOf(std::string_view yaml) {
  auto r = ParseRayConfig(yaml);
  return r.has_value() ? "<accepted>" : r.error().message;
}

TEST(RayConfig, WithoutARaySectionTheTemplatesAreRaysOwnCli) {
  auto r = ParseRayConfig("fleet:\n  nodes: []\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->head_command, RayRuntime{}.head_command);
  EXPECT_EQ(r->head_command.front(), "ray");
  EXPECT_EQ(r->serve_command.front(), "serve");
  EXPECT_TRUE(r->image.empty());
  EXPECT_TRUE(ValidateRayRuntime(RayRuntime{}).ok()) << "the defaults keep their own rules";
}

TEST(RayConfig, AVirtualenvRuntimeWithImagesPerQueue) {
  auto r = ParseRayConfig(R"(
ray:
  head_command: [/opt/venv/bin/ray, start, --head, "--port={port}",
                 "--dashboard-port={port_dashboard}", "--num-gpus={num_gpus}", --block]
  worker_command: [/opt/venv/bin/ray, start, "--address={head_address}", --block]
  serve_command: [/opt/venv/bin/serve, deploy, "{serve_config}", "-a", "{dashboard_url}"]
  environment: {RAY_DEDUP_LOGS: "0", PATH: /opt/venv/bin:/usr/bin:/bin}
  image: rayproject/ray:2.9.0-gpu
  queues:
    cpu-only: {image: rayproject/ray:2.9.0}
)");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->head_command[0], "/opt/venv/bin/ray");
  EXPECT_EQ(r->worker_command.size(), 4u);
  EXPECT_EQ(r->driver_command, RayRuntime{}.driver_command) << "unset keys keep the default";
  EXPECT_EQ(r->environment.at("RAY_DEDUP_LOGS"), "0");
  EXPECT_EQ(r->ImageFor("cpu-only"), "rayproject/ray:2.9.0");
  EXPECT_EQ(r->ImageFor("q1"), "rayproject/ray:2.9.0-gpu");
}

TEST(RayConfig, BadTemplatesAreRefusedNamingTheKeyAndTheRule) {
  EXPECT_EQ(ErrorOf("ray:\n  worker_command: []\n"),
            "ray.worker_command: must be a non-empty list of arguments");
  EXPECT_EQ(ErrorOf("ray:\n  worker_command: ray start --block\n"),
            "ray.worker_command: must be a non-empty list of arguments");
  EXPECT_EQ(ErrorOf("ray:\n  worker_command: [ray, start, \"--address={head_addr}\"]\n"),
            "ray.worker_command[2]: '--address={head_addr}' uses {head_addr}, which this process "
            "does not get; it gets {carve}, {head_address}, {num_gpus}, {port}");
  EXPECT_EQ(ErrorOf("ray:\n  worker_command: [ray, start, --block]\n"),
            "ray.worker_command: must use {head_address}: a worker joins the head at "
            "{head_address}");
  EXPECT_EQ(ErrorOf("ray:\n  head_command: [ray, start, --head, \"--port={port}\"]\n"),
            "ray.head_command: must use {port_dashboard}: the head listens on {port} and serves "
            "its dashboard on {port_dashboard}, which carve reports and Serve deploys through");
  EXPECT_EQ(ErrorOf("ray:\n  driver_command: [python, \"{entrypoint}\", \"{serve_config}\"]\n"),
            "ray.driver_command[2]: '{serve_config}' uses {serve_config}, which this process does "
            "not get; it gets {carve}, {dashboard_url}, {entrypoint}, {head_address}, {port}");
  EXPECT_EQ(ErrorOf("ray:\n  serve_command: [serve, deploy, [nested]]\n"),
            "ray.serve_command[2]: must be a string");
  EXPECT_EQ(ErrorOf("ray:\n  head: [ray]\n"),
            "ray.head: not a key carve reads (head_command, worker_command, driver_command, "
            "serve_command, environment, image, queues)");
  EXPECT_EQ(ErrorOf("ray:\n  queues:\n    q1: {image: a, gpus: 2}\n"),
            "ray.queues.q1.gpus: not a key carve reads (a queue takes only image: IMAGE)");
  EXPECT_EQ(ErrorOf("ray:\n  environment: [A]\n"), "ray.environment: must be a mapping");
  EXPECT_NE(ErrorOf("ray:\n  queues:\n    a/b: {image: x}\n").find("ray.queues.a/b: "),
            std::string::npos);
  EXPECT_EQ(ErrorOf("ray: [x]\n"), "ray: must be a mapping");
}

// An image lands on podman's command line: it must be a reference, never an option.
TEST(ParseRayConfig, RefusesAnImageThatIsNotAReference) {
  EXPECT_EQ(ErrorOf("ray:\n  image: --privileged\n").rfind("ray.image: '--privileged' is not a "
                                                          "valid image",
                                                          0),
            0u);
  EXPECT_NE(ErrorOf("ray:\n  queues:\n    q1: {image: \"-v=/:/host\"}\n")
                .find("ray.queues.q1.image: "),
            std::string::npos);
}

TEST(RayConfig, BracesThatAreNoPlaceholderStayAsWritten) {
  auto r = ParseRayConfig(
      "ray:\n  driver_command: [/bin/sh, -c, \"{entrypoint}\", '{\"json\": 1}', '{Upper}']\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->driver_command[3], "{\"json\": 1}");
}

}  // namespace
}  // namespace carve::server::queues
