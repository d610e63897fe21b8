// How carve starts Ray for RayJob, RayCluster and RayServe jobs: the command templates of the
// head, the workers, the driver and the Serve deployment, the variables every Ray process gets,
// and the container image a queue's Ray processes run in. The server's --config YAML sets them
// under `ray:` (docs/mgpu.md, "Ray runtimes"); without it they are Ray's own CLI on the node.
//
// Placeholders, expanded by the agent on the node, and where each may appear:
//   {port}            every template: a free port the agent picked for the process; the head
//                     listens there (its address is host:{port})
//   {port_dashboard}  head: a second free port, the Ray dashboard's
//   {port_serve}      head of a RayServe job: a third, the Serve HTTP ingress
//   {num_gpus}        head, worker: the cards the process was given
//   {head_address}    worker, driver, serve: the head's host:port (RAY_ADDRESS holds it too)
//   {dashboard_url}   driver, serve: http://host:{port_dashboard} of the head
//   {entrypoint}      driver: the RayJob's entrypoint
//   {serve_config}    serve: the path of the job's Serve config, written on the node
//   {carve}           every template: the agent's carve binary
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace carve::server::queues {

struct RayRuntime {
  std::vector<std::string> head_command = {"ray",
                                           "start",
                                           "--head",
                                           "--port={port}",
                                           "--dashboard-port={port_dashboard}",
                                           "--num-gpus={num_gpus}",
                                           "--block"};
  std::vector<std::string> worker_command = {"ray", "start", "--address={head_address}",
                                             "--num-gpus={num_gpus}", "--block"};
  std::vector<std::string> driver_command = {"/bin/sh", "-c", "{entrypoint}"};
  std::vector<std::string> serve_command = {"serve", "deploy", "{serve_config}",
                                            "--address={dashboard_url}"};
  // Every Ray process's variables; a job's own environment wins over them.
  std::map<std::string, std::string> environment;
  // The image Ray processes run in (podman or docker on the node, host network); "" runs them on
  // the node itself. `queue_images` overrides it for the queues of that name.
  std::string image;
  std::map<std::string, std::string> queue_images;

  const std::string& ImageFor(const std::string& queue) const;
};

// The `ray:` section of the server's config YAML; defaults when there is none. InvalidArgument
// naming the key and the rule: a template that is not a non-empty list of strings, a placeholder
// the template's process does not get, a template that lacks the one it needs ({port} and
// {port_dashboard} for the head, {head_address} for workers, {entrypoint} for the driver,
// {serve_config} for Serve), an unknown key.
Result<RayRuntime> ParseRayConfig(std::string_view yaml_text);

// The same rules for a runtime built in code.
Status ValidateRayRuntime(const RayRuntime& ray);

}  // namespace carve::server::queues
