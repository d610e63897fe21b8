#include "server/sagemaker/runtimes.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/yaml_text.h"

namespace carve::server::sagemaker {

namespace {
constexpr std::string_view kTestmodelImage = "carve/testmodel";
}  // namespace

const Runtime* RuntimeCatalog::Find(std::string_view image) const {
  for (const auto& r : runtimes) {
    if (r.image == image) return &r;
  }
  if (!default_runtime.empty()) {
    for (const auto& r : runtimes) {
      if (r.image == default_runtime) return &r;
    }
  }
  return nullptr;
}

RuntimeCatalog BuiltinRuntimes(bool simulate_all) {
  RuntimeCatalog c;
  // The simulator's default model is small enough for the smallest partition (1g.5gb); a
  // model's Environment sets CARVE_MODEL to simulate another.
  c.runtimes.push_back(
      {std::string(kTestmodelImage),
       {"{carve}", "testmodel", "--port", "{port}", "--model-data", "{model_data}"},
       {{"CARVE_MODEL", "llama-3.2-1b"}}});
  if (simulate_all) c.default_runtime = std::string(kTestmodelImage);
  return c;
}

Result<RuntimeCatalog> ParseRuntimeConfig(std::string_view yaml_text) {
  RuntimeCatalog out = BuiltinRuntimes(false);
  CARVE_ASSIGN_OR_RETURN(YAML::Node root, LoadConfigText(yaml_text));
  if (!root.IsMap() || !root["runtimes"]) return out;
  const YAML::Node section = root["runtimes"];
  if (!section.IsMap()) return InvalidArgument("runtimes: must be a mapping");
  try {
    if (const YAML::Node images = section["images"]) {
      if (!images.IsSequence()) return InvalidArgument("runtimes.images: must be a list");
      for (size_t i = 0; i < images.size(); ++i) {
        const YAML::Node n = images[i];
        const std::string where = fmt::format("runtimes.images[{}]", i);
        if (!n["image"] || n["image"].as<std::string>().empty()) {
          return InvalidArgument(where + ".image: is required");
        }
        Runtime r;
        CARVE_ASSIGN_OR_RETURN(r.image, YamlText(n["image"], where + ".image"));
        if (!n["command"] || !n["command"].IsSequence() || n["command"].size() == 0) {
          return InvalidArgument(where + ".command: must be a non-empty list of arguments");
        }
        for (size_t j = 0; j < n["command"].size(); ++j) {
          CARVE_ASSIGN_OR_RETURN(
              auto arg, YamlText(n["command"][j], fmt::format("{}.command[{}]", where, j)));
          r.command.push_back(std::move(arg));
        }
        if (const YAML::Node env = n["environment"]) {
          if (!env.IsMap()) return InvalidArgument(where + ".environment: must be a mapping");
          for (const auto& kv : env) {
            CARVE_ASSIGN_OR_RETURN(auto name, YamlText(kv.first, where + ".environment"));
            CARVE_ASSIGN_OR_RETURN(r.environment[name],
                                   YamlText(kv.second, where + ".environment." + name));
          }
        }
        std::erase_if(out.runtimes, [&](const Runtime& x) { return x.image == r.image; });
        out.runtimes.push_back(std::move(r));
      }
    }
    if (const YAML::Node d = section["default_runtime"]) {
      CARVE_ASSIGN_OR_RETURN(out.default_runtime, YamlText(d, "runtimes.default_runtime"));
      bool known = false;
      for (const auto& r : out.runtimes) known = known || r.image == out.default_runtime;
      if (!known) {
        return InvalidArgument("runtimes.default_runtime: '" + out.default_runtime +
                               "' is not one of the runtimes' images");
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("runtimes: ") + e.what());
  }
  return out;
}

}  // namespace carve::server::sagemaker
