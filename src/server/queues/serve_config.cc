#include "server/queues/serve_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <set>

#include "common/bounded_json.h"
#include "common/utf8.h"

namespace carve::server::queues {
namespace {

Result<YAML::Node> Load(std::string_view text) {
  if (text.size() > kMaxServeConfigBytes) {
    return InvalidArgument(
        fmt::format("serve_config: {} bytes; at most {}", text.size(), kMaxServeConfigBytes));
  }
  if (auto bad = FirstNonTextByte(text)) {
    return InvalidArgument(fmt::format("serve_config: byte {} is not UTF-8 text", *bad));
  }
  try {
    return YAML::Load(std::string(text));  // JSON is YAML too.
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("serve_config: not valid YAML: ") + e.what());
  }
}

bool IsString(const YAML::Node& n) { return n && n.IsScalar() && !n.Scalar().empty(); }

}  // namespace

Status ValidateServeConfig(std::string_view text, std::vector<std::string>* warnings) {
  CARVE_ASSIGN_OR_RETURN(YAML::Node root, Load(text));
  if (!root.IsMap()) {
    return InvalidArgument("serve_config: must be a mapping, the config `serve deploy` takes");
  }
  const YAML::Node apps = root["applications"];
  if (!apps || !apps.IsSequence() || apps.size() == 0) {
    return InvalidArgument(
        "serve_config.applications: must be a non-empty list of applications (name, "
        "route_prefix, import_path, ...)");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < apps.size(); ++i) {
    const std::string where = fmt::format("serve_config.applications[{}]", i);
    if (!apps[i].IsMap()) return InvalidArgument(where + ": must be a mapping");
    if (!IsString(apps[i]["import_path"])) {
      return InvalidArgument(where +
                             ".import_path: is required, the application's module:attribute");
    }
    const YAML::Node name = apps[i]["name"];
    if (name && !IsString(name)) return InvalidArgument(where + ".name: must be a string");
    if (!name && apps.size() > 1) {
      return InvalidArgument(where +
                             ".name: is required when the config has several "
                             "applications");
    }
    const std::string n = name ? name.Scalar() : "default";
    if (!names.insert(n).second) {
      return InvalidArgument(fmt::format("{}.name: '{}' names another application too", where, n));
    }
  }
  const YAML::Node http = root["http_options"];
  if (http && !http.IsMap()) return InvalidArgument("serve_config.http_options: must be a mapping");
  if (http && http["port"] && warnings != nullptr) {
    warnings->push_back(fmt::format(
        "serve_config.http_options.port={}: replaced by the port carve picks on the head's node, "
        "reported as serve.ingress",
        http["port"].IsScalar() ? http["port"].Scalar() : "?"));
  }
  return OkStatus();
}

Result<std::string> RenderServeConfig(std::string_view text, int port) {
  CARVE_ASSIGN_OR_RETURN(YAML::Node root, Load(text));
  if (!root.IsMap()) return InvalidArgument("serve_config: must be a mapping");
  YAML::Node http = root["http_options"];
  if (!http || !http.IsMap()) {
    root["http_options"] = YAML::Node(YAML::NodeType::Map);
    http = root["http_options"];
  }
  http["port"] = port;
  if (!http["host"]) http["host"] = "0.0.0.0";
  YAML::Emitter out;
  out << root;
  if (!out.good()) return Internal("serve_config: cannot write YAML: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

ServeStatus ServeStatusFromBody(std::string_view body) {
  ServeStatus s;
  if (body.starts_with("error: ")) {
    s.status = "UNKNOWN";
    s.message = std::string(body.substr(7));
    return s;
  }
  // The head runs in the tenant's job: its answer is the tenant's bytes, parsed bounded.
  const nlohmann::json j = ParseJson(body).value_or(nlohmann::json());
  if (!j.is_object() || !j.contains("applications") || !j.at("applications").is_object()) {
    s.status = "UNKNOWN";
    s.message = "the head's Serve API answered something that is not its applications: " +
                std::string(body.substr(0, 200));
    return s;
  }
  auto text = [](const nlohmann::json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  bool all_running = true, failed = false, unhealthy = false;
  for (const auto& [name, app] : j.at("applications").items()) {
    if (!app.is_object()) continue;
    ServeApplication a{name, text(app, "status"), text(app, "route_prefix"), text(app, "message")};
    all_running = all_running && a.status == "RUNNING";
    failed = failed || a.status == "DEPLOY_FAILED";
    unhealthy = unhealthy || a.status == "UNHEALTHY";
    s.applications.push_back(std::move(a));
  }
  if (failed) {
    s.status = "DEPLOY_FAILED";
  } else if (unhealthy) {
    s.status = "UNHEALTHY";
  } else if (all_running && !s.applications.empty()) {
    s.status = "RUNNING";
  } else {
    s.status = "DEPLOYING";
  }
  for (const auto& a : s.applications) {
    if (!a.message.empty() && a.status != "RUNNING") {
      s.message = fmt::format("{}: {}", a.name, a.message);
      break;
    }
  }
  return s;
}

}  // namespace carve::server::queues
