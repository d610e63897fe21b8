#include "server/queues/ray_runtime.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "common/yaml_text.h"
#include "protocol/launch_inputs.h"
#include "server/queues/queue_request.h"

namespace carve::server::queues {
namespace {

struct TemplateRule {
  std::string_view key;
  std::vector<std::string> RayRuntime::*field;
  std::set<std::string_view> allowed;
  std::vector<std::string_view> required;
  std::string_view why;  // why the required placeholders are needed
};

const std::vector<TemplateRule>& Rules() {
  static const std::vector<TemplateRule> rules = {
      {"head_command",
       &RayRuntime::head_command,
       {"port", "port_dashboard", "port_serve", "num_gpus", "carve"},
       {"port", "port_dashboard"},
       "the head listens on {port} and serves its dashboard on {port_dashboard}, which carve "
       "reports and Serve deploys through"},
      {"worker_command",
       &RayRuntime::worker_command,
       {"port", "head_address", "num_gpus", "carve"},
       {"head_address"},
       "a worker joins the head at {head_address}"},
      {"driver_command",
       &RayRuntime::driver_command,
       {"port", "head_address", "dashboard_url", "entrypoint", "carve"},
       {"entrypoint"},
       "the driver runs the RayJob's {entrypoint}"},
      {"serve_command",
       &RayRuntime::serve_command,
       {"port", "head_address", "dashboard_url", "serve_config", "carve"},
       {"serve_config"},
       "Serve deploys the job's config file, {serve_config}"},
  };
  return rules;
}

// The "{name}" placeholders of one argument, by the agent's rule (name of [a-z0-9_]).
std::vector<std::string> Placeholders(const std::string& arg) {
  std::vector<std::string> out;
  for (size_t open = arg.find('{'); open != std::string::npos; open = arg.find('{', open + 1)) {
    const size_t close = arg.find('}', open + 1);
    if (close == std::string::npos) break;
    const std::string name = arg.substr(open + 1, close - open - 1);
    const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (ok) out.push_back(name);
  }
  return out;
}

Status CheckTemplate(const TemplateRule& rule, const std::vector<std::string>& command) {
  const std::string key = fmt::format("ray.{}", rule.key);
  if (command.empty()) return InvalidArgument(key + ": must be a non-empty list of arguments");
  std::set<std::string> seen;
  for (size_t i = 0; i < command.size(); ++i) {
    for (const auto& name : Placeholders(command[i])) {
      if (!rule.allowed.contains(name)) {
        std::vector<std::string> known;
        for (auto a : rule.allowed) known.push_back("{" + std::string(a) + "}");
        return InvalidArgument(
            fmt::format("{}[{}]: '{}' uses {{{}}}, which this process does not get; it gets {}",
                        key, i, command[i], name, fmt::join(known, ", ")));
      }
      seen.insert(name);
    }
  }
  for (auto need : rule.required) {
    if (!seen.contains(std::string(need))) {
      return InvalidArgument(fmt::format("{}: must use {{{}}}: {}", key, need, rule.why));
    }
  }
  return OkStatus();
}

Result<std::vector<std::string>> ReadArgs(const YAML::Node& n, const std::string& key) {
  if (!n.IsSequence() || n.size() == 0) {
    return InvalidArgument(key + ": must be a non-empty list of arguments");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string where = fmt::format("{}[{}]", key, i);
    if (!n[i].IsScalar()) return InvalidArgument(where + ": must be a string");
    CARVE_ASSIGN_OR_RETURN(auto arg, YamlText(n[i], where));
    out.push_back(std::move(arg));
  }
  return out;
}

Result<std::map<std::string, std::string>> ReadMap(const YAML::Node& n, const std::string& key) {
  if (!n.IsMap()) return InvalidArgument(key + ": must be a mapping");
  std::map<std::string, std::string> out;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
      return InvalidArgument(key + ": names and values must be strings");
    }
    CARVE_ASSIGN_OR_RETURN(auto name, YamlText(kv.first, key));
    if (name.empty()) return InvalidArgument(key + ": a name is empty");
    CARVE_ASSIGN_OR_RETURN(out[name], YamlText(kv.second, key + "." + name));
  }
  return out;
}

}  // namespace

const std::string& RayRuntime::ImageFor(const std::string& queue) const {
  auto it = queue_images.find(queue);
  return it == queue_images.end() ? image : it->second;
}

Status ValidateRayRuntime(const RayRuntime& ray) {
  for (const auto& rule : Rules()) {
    CARVE_RETURN_IF_ERROR(CheckTemplate(rule, ray.*rule.field));
  }
  for (const auto& [name, value] : ray.environment) {
    if (name.find('=') != std::string::npos) {
      return InvalidArgument("ray.environment: name '" + name + "' must not contain '='");
    }
  }
  return OkStatus();
}

Result<RayRuntime> ParseRayConfig(std::string_view yaml_text) {
  RayRuntime out;
  CARVE_ASSIGN_OR_RETURN(YAML::Node root, LoadConfigText(yaml_text));
  if (!root.IsMap() || !root["ray"]) return out;
  const YAML::Node section = root["ray"];
  if (!section.IsMap()) return InvalidArgument("ray: must be a mapping");
  try {
    for (const auto& kv : section) {
      const std::string key = kv.first.as<std::string>();
      const std::string where = "ray." + key;
      auto rule = std::find_if(Rules().begin(), Rules().end(),
                               [&](const TemplateRule& r) { return r.key == key; });
      if (rule != Rules().end()) {
        CARVE_ASSIGN_OR_RETURN(out.*rule->field, ReadArgs(kv.second, where));
      } else if (key == "environment") {
        CARVE_ASSIGN_OR_RETURN(out.environment, ReadMap(kv.second, where));
      } else if (key == "image") {
        if (!kv.second.IsScalar()) return InvalidArgument(where + ": must be a string");
        CARVE_ASSIGN_OR_RETURN(out.image, YamlText(kv.second, where));
        if (Status s = protocol::CheckImageReference(out.image); !out.image.empty() && !s.ok()) {
          return InvalidArgument(where + ": " + s.error().message);
        }
      } else if (key == "queues") {
        if (!kv.second.IsMap()) return InvalidArgument(where + ": must be a mapping of queues");
        for (const auto& q : kv.second) {
          const std::string name = q.first.as<std::string>();
          const std::string qwhere = where + "." + name;
          if (Status valid = ValidateQueueName(name); !valid.ok()) {
            return InvalidArgument(qwhere + ": " + valid.error().message);
          }
          if (!q.second.IsMap()) return InvalidArgument(qwhere + ": must be a mapping");
          for (const auto& field : q.second) {
            const std::string fkey = field.first.as<std::string>();
            if (fkey != "image" || !field.second.IsScalar()) {
              return InvalidArgument(qwhere + "." + fkey +
                                     ": not a key carve reads (a queue takes only image: IMAGE)");
            }
            CARVE_ASSIGN_OR_RETURN(out.queue_images[name],
                                   YamlText(field.second, qwhere + ".image"));
            const std::string& image = out.queue_images[name];  // "": on the node itself
            if (Status s = protocol::CheckImageReference(image); !image.empty() && !s.ok()) {
              return InvalidArgument(qwhere + ".image: " + s.error().message);
            }
          }
        }
      } else {
        return InvalidArgument(where +
                               ": not a key carve reads (head_command, worker_command, "
                               "driver_command, serve_command, environment, image, queues)");
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("ray: ") + e.what());
  }
  CARVE_RETURN_IF_ERROR(ValidateRayRuntime(out));
  return out;
}

}  // namespace carve::server::queues
