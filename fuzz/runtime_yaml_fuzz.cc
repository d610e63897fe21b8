// The runtimes and ray sections of the server's --config YAML (src/server/sagemaker/runtimes.h,
// src/server/queues/ray_runtime.h). Properties, beyond "no crash, no leak, no UB, no hang, no
// exception escaping":
//  - an accepted catalog has unique images, non-empty commands, and a default runtime that is
//    one of them (or none); Find() of every image returns that runtime;
//  - written back as YAML, it parses to the same catalog;
//  - an accepted ray section keeps its own rules (ValidateRayRuntime) and has no empty template.
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

#include "fuzz_util.h"
#include "server/queues/ray_runtime.h"
#include "server/sagemaker/runtimes.h"

namespace {

namespace sm = carve::server::sagemaker;

std::string Write(const sm::RuntimeCatalog& c) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "runtimes" << YAML::Value << YAML::BeginMap;
  if (!c.default_runtime.empty()) {
    out << YAML::Key << "default_runtime" << YAML::Value << YAML::DoubleQuoted << c.default_runtime;
  }
  out << YAML::Key << "images" << YAML::Value << YAML::BeginSeq;
  for (const sm::Runtime& r : c.runtimes) {
    out << YAML::BeginMap << YAML::Key << "image" << YAML::Value << YAML::DoubleQuoted << r.image;
    out << YAML::Key << "command" << YAML::Value << YAML::BeginSeq;
    for (const std::string& a : r.command) out << YAML::DoubleQuoted << a;
    out << YAML::EndSeq;
    out << YAML::Key << "environment" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : r.environment) {
      out << YAML::Key << YAML::DoubleQuoted << k << YAML::Value << YAML::DoubleQuoted << v;
    }
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str(), out.size());  // the text may hold NUL bytes
}

bool Same(const sm::RuntimeCatalog& a, const sm::RuntimeCatalog& b) {
  if (a.default_runtime != b.default_runtime || a.runtimes.size() != b.runtimes.size()) {
    return false;
  }
  for (size_t i = 0; i < a.runtimes.size(); ++i) {
    const sm::Runtime& x = a.runtimes[i];
    const sm::Runtime& y = b.runtimes[i];
    if (x.image != y.image || x.command != y.command || x.environment != y.environment) {
      return false;
    }
  }
  return true;
}

void CheckRay(std::string_view text) {
  auto ray = carve::server::queues::ParseRayConfig(text);
  if (!ray) return;
  auto valid = carve::server::queues::ValidateRayRuntime(*ray);
  FUZZ_CHECK(valid.ok(), "an accepted ray section breaks its rules: %s",
             valid.error().message.c_str());
  FUZZ_CHECK(!ray->head_command.empty() && !ray->worker_command.empty() &&
                 !ray->driver_command.empty() && !ray->serve_command.empty(),
             "an accepted ray section has an empty template");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CheckRay(carve::fuzz::AsView(data, size));
  auto catalog = sm::ParseRuntimeConfig(carve::fuzz::AsView(data, size));
  if (!catalog) return 0;
  std::set<std::string> images;
  for (const sm::Runtime& r : catalog->runtimes) {
    FUZZ_CHECK(images.insert(r.image).second, "image '%s' listed twice", r.image.c_str());
    FUZZ_CHECK(!r.command.empty(), "image '%s' has no command", r.image.c_str());
    FUZZ_CHECK(catalog->Find(r.image) == &r, "Find('%s') returns another runtime", r.image.c_str());
  }
  FUZZ_CHECK(catalog->default_runtime.empty() || images.count(catalog->default_runtime) == 1,
             "default runtime '%s' is not a runtime", catalog->default_runtime.c_str());
  const std::string written = Write(*catalog);
  auto again = sm::ParseRuntimeConfig(written);
  FUZZ_CHECK(again.has_value(), "the catalog written back is refused: %s\n%s",
             again.error().message.c_str(), written.c_str());
  FUZZ_CHECK(Same(*again, *catalog), "the catalog changed on a round trip:\n%s", written.c_str());
  return 0;
}
