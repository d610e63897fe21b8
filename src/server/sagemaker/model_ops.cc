// CreateModel, DescribeModel, DeleteModel, ListModels. A model is metadata here: carve keeps the
// container definition and hands it to the node when copies start (agent issue).
#include "common/bounded_json.h"
#include "server/sagemaker/ops.h"

#include "protocol/launch_inputs.h"

namespace carve::server::sagemaker {
namespace {

constexpr StringRule kImageRule = PatternRule(0, 255, "[\\S]+", &MatchesNoSpace);
// SageMaker's pattern, and carve's addition: model data already on the nodes, as file:///path
// or /path inside an operator's model root (mounted at /opt/ml/model for an OCI image; see
// workload_command.h and protocol/launch_inputs.h).
constexpr StringRule kUrlRule =
    PatternRule(0, 1024, "(https|s3)://([^/]+)/?(.*)|file:///.*|/.*", &MatchesModelDataUrl);
constexpr StringRule kHostnameRule =
    PatternRule(0, 63, "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", &MatchesEndpointName);
constexpr std::string_view kModes[] = {"SingleModel", "MultiModel"};

// CreateModel and ContainerDefinition members carve does not implement (docs/api.md).
constexpr UnsupportedMember kUnsupportedModel[] = {
    {"InferenceExecutionConfig", "inference pipelines are not implemented; give one container"},
    {"VpcConfig", "copies run on their nodes' own network; there is no VPC to attach"},
    {"EnableNetworkIsolation", "copies can reach the network of their node; omit it or set false",
     false},
};
constexpr UnsupportedMember kUnsupportedContainer[] = {
    {"ImageConfig", "images are pulled with the node's own podman or docker credentials; omit it"},
    {"ModelDataSource", "give the model data as ModelDataUrl"},
    {"AdditionalModelDataSources", "give the model data as ModelDataUrl"},
    {"ModelPackageName", "model packages are not implemented; give an Image"},
    {"InferenceSpecificationName", "model packages are not implemented; give an Image"},
    {"MultiModelConfig", "multi-model endpoints are not implemented; use inference components"},
};

void ValidateContainer(Validator& v, const OpContext& ctx, const json& c,
                       const std::string& path) {
  v.Unsupported(c, kUnsupportedContainer, path);
  v.String(c, "ContainerHostname", path, kHostnameRule, false);
  ValidateLaunchInputs(v, ctx, c, path, "ModelDataUrl");
  if (auto mode = v.String(c, "Mode", path, EnumRule(kModes), false); mode == "MultiModel") {
    v.Fail(MemberPath(path, "Mode"), *mode,
           "carve does not support Mode MultiModel: multi-model endpoints are not implemented; "
           "use inference components");
  }
}

}  // namespace

void ValidateLaunchInputs(Validator& v, const OpContext& ctx, const json& c,
                          const std::string& path, std::string_view url_member) {
  if (auto image = v.String(c, "Image", path, kImageRule, false)) {
    if (Status s = protocol::CheckImageReference(*image); !s.ok()) {
      v.Fail(MemberPath(path, "Image"), protocol::Preview(*image), s.error().message);
    }
  }
  if (auto url = v.String(c, url_member, path, kUrlRule, false);
      url && protocol::IsLocalModelData(*url)) {
    auto resolved = protocol::ResolveModelData(*url, ctx.model_roots(), /*must_exist=*/false);
    if (!resolved.has_value()) {
      v.Fail(MemberPath(path, url_member), protocol::Preview(*url), resolved.error().message);
    }
  }
  if (const json* env = v.Object(c, "Environment", path, false)) {
    if (env->size() > 100) {
      v.Fail(MemberPath(path, "Environment"), JsonPreview(*env, kMaxShownValueBytes),
             "Member must have length less than or equal to 100");
    }
    std::map<std::string, std::string> vars;
    for (const auto& [k, val] : env->items()) {
      if (!val.is_string()) {
        v.Fail(MemberPath(path, "Environment") + "." + TextPreview(k, kMaxShownValueBytes),
               JsonPreview(val, kMaxShownValueBytes), "Member must be a string");
      } else {
        vars[k] = val.get<std::string>();
      }
    }
    if (Status s = protocol::CheckEnvironment(vars, "Environment"); !s.ok()) {
      v.Fail(MemberPath(path, "Environment"), std::nullopt, s.error().message);
    }
  }
}

namespace {

json Summary(const OpContext& ctx, const store::Record& r, const json&) {
  return {{"ModelName", r.key.name},
          {"ModelArn", ctx.Arn(r.key.account, kModel, r.key.name)},
          {"CreationTime", EpochSeconds(r.created_ms)}};
}

}  // namespace

Result<json> CreateModel(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "ModelName", "", kModelNameRule, true);
  v.String(in, "ExecutionRoleArn", "", kRoleArnRule, false);
  if (const json* c = v.Object(in, "PrimaryContainer", "", false)) {
    ValidateContainer(v, ctx, *c, "primaryContainer");
  }
  if (const json* list = v.List(in, "Containers", "", 0, 15, false)) {
    for (size_t i = 0; i < list->size(); ++i) {
      ValidateContainer(v, ctx, (*list)[i], ElementPath("containers", i));
    }
    if (list->size() > 1) {
      v.Fail("containers", "[...]",
             "carve does not support more than one container: inference pipelines are not "
             "implemented; give one container");
    }
  }
  v.Unsupported(in, kUnsupportedModel, "");
  auto tags = ValidateTags(v, in, "Tags", "");
  CARVE_RETURN_IF_ERROR(v.ToStatus());

  json body = in;
  body["Tags"] = tags.value_or(json::array());
  CARVE_RETURN_IF_ERROR(ctx.CheckRoomFor(req.account_id, kModel));
  auto rec = ctx.store().Create({req.account_id, std::string(kModel), *name}, body.dump());
  if (!rec.has_value()) {
    if (rec.error().code == ErrorCode::kAlreadyExists) {
      return ctx.AlreadyExists(req.account_id, kModel, *name);
    }
    return rec.error();
  }
  return json{{"ModelArn", ctx.Arn(req.account_id, kModel, *name)}};
}

Result<json> DescribeModel(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "ModelName", "", kModelNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kModel, *name));
  CARVE_ASSIGN_OR_RETURN(json body, Body(rec));
  body.erase("Tags");
  body["ModelArn"] = ctx.Arn(req.account_id, kModel, *name);
  body["CreationTime"] = EpochSeconds(rec.created_ms);
  return body;
}

Result<json> DeleteModel(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "ModelName", "", kModelNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  Status st = ctx.store().Delete({req.account_id, std::string(kModel), *name});
  if (!st.ok() && st.error().code == ErrorCode::kNotFound) {
    return ctx.Get(req.account_id, kModel, *name).error();  // The service's wording.
  }
  CARVE_RETURN_IF_ERROR(st);
  return json::object();
}

Result<json> ListModels(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  static const ListSpec spec{kModel, "Models", "", false, {}, &Summary, {}, nullptr};
  return ListResources(ctx, req, in, spec);
}

}  // namespace carve::server::sagemaker
