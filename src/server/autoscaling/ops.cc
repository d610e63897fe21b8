// What the Application Auto Scaling handlers share: the operation table, errors as the service
// words them, keys, paging, filters and writes.
#include "server/autoscaling/ops.h"

#include <fmt/format.h>

#include <map>
#include <random>

namespace carve::server::autoscaling {

Handler FindHandler(std::string_view operation) {
  static const std::map<std::string, Handler, std::less<>> kHandlers = {
      {"RegisterScalableTarget", &RegisterScalableTarget},
      {"DeregisterScalableTarget", &DeregisterScalableTarget},
      {"DescribeScalableTargets", &DescribeScalableTargets},
      {"PutScalingPolicy", &PutScalingPolicy},
      {"DescribeScalingPolicies", &DescribeScalingPolicies},
      {"DeleteScalingPolicy", &DeleteScalingPolicy},
      {"DescribeScalingActivities", &DescribeScalingActivities},
      {"PutScheduledAction", &PutScheduledAction},
      {"DescribeScheduledActions", &DescribeScheduledActions},
      {"DeleteScheduledAction", &DeleteScheduledAction},
  };
  auto it = kHandlers.find(operation);
  return it == kHandlers.end() ? nullptr : it->second;
}

std::string OpContext::Arn(const std::string& account, const std::string& what) const {
  return fmt::format("arn:aws:application-autoscaling:{}:{}:{}", region, account, what);
}

Result<ScalableTarget> GetTarget(const OpContext& ctx, const std::string& account,
                                 const ScalableKey& key) {
  auto rec = ctx.store.Get({account, std::string(kTargetKind), key.Name()});
  if (!rec.has_value()) {
    if (rec.error().code == ErrorCode::kNotFound) return NotFound(TargetNotFound(key));
    return rec.error();
  }
  return ScalableTarget::FromJson(json::parse(rec->body));
}

http::ApiResponse AasError(int status, std::string_view type, const std::string& message) {
  return {status,
          json{{"__type", type}, {"message", message}}.dump(-1, ' ', false,
                                                            json::error_handler_t::replace),
          std::string(type)};
}

http::ApiResponse ToAasError(const carve::Error& e) {
  switch (e.code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kAlreadyExists:
      return AasError(400, "ValidationException", e.message);
    case ErrorCode::kNotFound:
      return AasError(400, "ObjectNotFoundException", e.message);
    case ErrorCode::kFailedPrecondition:
      return AasError(400, "ConcurrentUpdateException", e.message);
    case ErrorCode::kResourceExhausted:
      return AasError(400, "LimitExceededException", e.message);
    case ErrorCode::kUnimplemented:
      return AasError(400, "UnknownOperationException", e.message);
    case ErrorCode::kUnavailable:
      return AasError(503, "ServiceUnavailable", e.message);
    case ErrorCode::kInternal:
      break;
  }
  return AasError(500, "InternalServiceException", e.message);
}

std::string TargetNotFound(const ScalableKey& k) {
  return fmt::format(
      "No scalable target registered for service namespace: {}, resource ID: {}, scalable "
      "dimension: {}",
      kNamespace, k.resource_id, k.dimension);
}

std::string RandomId(size_t digits) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string out;
  while (out.size() < digits) out += fmt::format("{:016x}", rng());
  return out.substr(0, digits);
}

std::optional<ScalableKey> KeyOf(Validator& v, const json& in) {
  v.String(in, "ServiceNamespace", "", EnumRule(kNamespaces), true);
  auto id = v.String(in, "ResourceId", "", kIdRule, true);
  auto dim = v.String(in, "ScalableDimension", "", EnumRule(kDimensions), true);
  if (!id || !dim) return std::nullopt;
  return ScalableKey{*dim, *id};
}

std::optional<Page> PageOf(Validator& v, const json& in) {
  Page p;
  if (auto n = v.Integer(in, "MaxResults", "", {1, 50}, false)) p.limit = static_cast<int>(*n);
  if (auto t = v.String(in, "NextToken", "", LengthRule(0, 2048), false)) p.after = *t;
  return p;
}

Filters FiltersOf(Validator& v, const json& in, std::string_view names_member) {
  Filters f;
  v.String(in, "ServiceNamespace", "", EnumRule(kNamespaces), true);
  f.id = v.String(in, "ResourceId", "", kIdRule, false);
  f.dim = v.String(in, "ScalableDimension", "", EnumRule(kDimensions), false);
  if (!names_member.empty()) {
    if (const json* list = v.List(in, names_member, "", 0, 50, false)) {
      for (const auto& n : *list) {
        if (n.is_string()) f.names.insert(n.get<std::string>());
      }
    }
  }
  return f;
}

Status Write(store::Store& store, const store::Key& key, const std::string& body,
             std::optional<int64_t> version) {
  auto written = version ? store.Update(key, body, *version) : store.Create(key, body);
  if (written.has_value()) return OkStatus();
  if (written.error().code == ErrorCode::kAlreadyExists) {
    return FailedPrecondition(key.name +
                              " was created by another request meanwhile; read it "
                              "and try again");
  }
  return written.error();
}

Result<json> RemoveNamed(store::Store& store, const std::string& account, std::string_view kind,
                         const ScalableKey& key, const std::string& name,
                         const std::string& missing) {
  auto rec = store.Get({account, std::string(kind), key.Name() + " " + name});
  if (!rec.has_value()) return NotFound(missing);
  CARVE_RETURN_IF_ERROR(store.Commit({store::Remove{rec->key, rec->version}}));
  return json::object();
}

}  // namespace carve::server::autoscaling
