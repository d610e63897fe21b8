// A RayServe job's Serve config: checked when the job is submitted, written for the node with
// the ingress port carve picked, and the application status read back from the head's Serve
// REST API (GET /api/serve/applications/, what `serve status` reads).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "server/queues/queue_model.h"

namespace carve::server::queues {

inline constexpr size_t kMaxServeConfigBytes = 64 * 1024;

// The config `serve deploy` takes, as YAML or JSON text: a mapping whose `applications` is a
// non-empty list of mappings, each with a string `import_path` and a distinct `name` (optional
// when there is one application). InvalidArgument naming serve_config's field and the rule.
// `warnings` gets a line when the config sets http_options.port, which carve replaces.
Status ValidateServeConfig(std::string_view text, std::vector<std::string>* warnings = nullptr);

// The config as deployed on the head's node: http_options.port is `port` (the head's Serve
// port) and http_options.host is 0.0.0.0 unless the config sets one. Expects a valid config.
Result<std::string> RenderServeConfig(std::string_view text, int port);

// `body` as the Serve REST API answers GET /api/serve/applications/: the applications and the
// summary status (ServeStatus). A body that is not that JSON, or an agent's "error: ..." line,
// is UNKNOWN with the reason.
ServeStatus ServeStatusFromBody(std::string_view body);

}  // namespace carve::server::queues
