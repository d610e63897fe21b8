#include "planner/model_yaml.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "planner/model_catalog.h"

namespace carve::planner {
namespace {

template <typename T>
Status ReadField(const YAML::Node& doc, const char* key, T& out) {
  if (!doc[key]) return OkStatus();
  try {
    out = doc[key].as<T>();
  } catch (const YAML::Exception&) {
    return InvalidArgument(fmt::format("model field '{}': value '{}' is not a valid {}", key,
                                       doc[key].Scalar(),
                                       std::is_same_v<T, bool> ? "boolean" : "number"));
  }
  return OkStatus();
}

}  // namespace

Result<ModelSpec> CompleteModel(ModelSpec m) {
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  if (m.head_dim == 0 && m.heads > 0) m.head_dim = m.hidden / m.heads;
  if (m.display_name.empty()) m.display_name = m.id;
  if (m.params == 0) {
    m.params = EstimateParams(m);
    if (m.params > 0) m.note += (m.note.empty() ? "" : "; ") + std::string("params estimated");
  }
  if (m.source.empty()) m.source = "user-described";
  CARVE_RETURN_IF_ERROR(ValidateModel(m));
  return m;
}

Result<ModelSpec> ParseModelYaml(std::string_view text) {
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("model YAML does not parse: {}", e.what()));
  }
  if (!doc.IsMap()) return InvalidArgument("model YAML must be a mapping of field: value");
  ModelSpec m;
  if (doc["base"]) {
    CARVE_ASSIGN_OR_RETURN(m, FindModel(doc["base"].Scalar()));
    m.source = fmt::format("{} with user overrides", m.id);
  }
  if (doc["id"]) m.id = doc["id"].Scalar();
  if (m.id.empty()) return InvalidArgument("model YAML: field 'id' is required");
  if (doc["display_name"]) m.display_name = doc["display_name"].Scalar();
  if (doc["kind"]) {
    std::string kind = doc["kind"].Scalar();
    if (kind == "decoder") {
      m.kind = ModelKind::kDecoder;
    } else if (kind == "encoder") {
      m.kind = ModelKind::kEncoder;
    } else {
      return InvalidArgument(
          fmt::format("model field 'kind': '{}' is not one of decoder, encoder", kind));
    }
  }
  bool architecture_changed = false;
  for (const char* key : {"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab"}) {
    if (doc[key]) architecture_changed = true;
  }
  if (architecture_changed && doc["base"] && !doc["params"]) m.params = 0;  // re-estimate
  CARVE_RETURN_IF_ERROR(ReadField(doc, "params", m.params));
  CARVE_RETURN_IF_ERROR(ReadField(doc, "layers", m.layers));
  CARVE_RETURN_IF_ERROR(ReadField(doc, "hidden", m.hidden));
  CARVE_RETURN_IF_ERROR(ReadField(doc, "heads", m.heads));
  CARVE_RETURN_IF_ERROR(ReadField(doc, "kv_heads", m.kv_heads));
  CARVE_RETURN_IF_ERROR(ReadField(doc, "head_dim", m.head_dim));
  CARVE_RETURN_IF_ERROR(ReadField(doc, "ffn", m.ffn));
  CARVE_RETURN_IF_ERROR(ReadField(doc, "vocab", m.vocab));
  CARVE_RETURN_IF_ERROR(ReadField(doc, "default_context", m.default_context));
  CARVE_RETURN_IF_ERROR(ReadField(doc, "tied_embeddings", m.tied_embeddings));
  if (doc["source"]) m.source = doc["source"].Scalar();
  return CompleteModel(std::move(m));
}

Result<ModelSpec> LoadModelFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(fmt::format("model file '{}' cannot be read", path));
  std::stringstream buf;
  buf << in.rdbuf();
  auto m = ParseModelYaml(buf.str());
  if (!m) return InvalidArgument(fmt::format("{}: {}", path, m.error().message));
  return m;
}

}  // namespace carve::planner
