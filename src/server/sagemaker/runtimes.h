// Runtimes: what process serves a model's container image on a node.
//
// CreateModel's PrimaryContainer.Image (or the component's Specification.Container.Image) is
// looked up by exact name among the configured runtimes; a runtime is a command template run by
// the node's agent with placeholders {carve} (the carve executable), {port} (the copy's own port)
// and {model_data} (ModelDataUrl / ArtifactUrl), plus environment variables. An image no runtime
// names is an OCI reference: the agent runs it with podman or docker, or reports that neither is
// installed. A config may name a `default_runtime` that serves every unnamed image instead; the
// embedded demo configuration does this (its fleet is simulated, so the simulator serves every
// model) and says so in the server's log.
//
// YAML, in the server's --config file:
//   runtimes:
//     default_runtime: carve/testmodel        # optional
//     images:
//       - image: carve/testmodel
//         command: ["{carve}", "testmodel", "--port", "{port}", "--model-data", "{model_data}"]
//       - image: vllm
//         command: ["vllm", "serve", "{model_data}", "--port", "{port}"]
//         environment: {VLLM_LOGGING_LEVEL: INFO}
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace carve::server::sagemaker {

struct Runtime {
  std::string image;
  std::vector<std::string> command;
  std::map<std::string, std::string> environment;
};

struct RuntimeCatalog {
  std::vector<Runtime> runtimes;
  std::string default_runtime;  // an image name in `runtimes`; "" for none

  // The runtime for `image`: exact match, else the default runtime, else nullptr (OCI image).
  const Runtime* Find(std::string_view image) const;
};

// The built-in `carve/testmodel` runtime (simulating llama-3.2-1b unless the model's Environment
// sets CARVE_MODEL); with `simulate_all` it is also the default runtime.
RuntimeCatalog BuiltinRuntimes(bool simulate_all);

// Parses the `runtimes:` section of a YAML document (absent: the built-ins, no default) and
// adds the built-ins unless the file redefines them. InvalidArgument naming the key and value.
Result<RuntimeCatalog> ParseRuntimeConfig(std::string_view yaml_text);

}  // namespace carve::server::sagemaker
