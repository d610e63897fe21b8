// AddTags, ListTags, DeleteTags on models, endpoint configs, endpoints and inference components.
// Tags live in the resource's own record, so they go away with it. Endpoint and component
// records are also written by the reconciler, so their tag edits take the state lock.
#include <fmt/format.h>

#include "server/sagemaker/ops.h"

namespace carve::server::sagemaker {
namespace {

constexpr int kMaxTags = 50;

// Resolves the ARN to a record key of the caller's account: another account's ARN reads as
// not found, so accounts cannot probe each other.
Result<store::Key> KeyFor(const OpContext& ctx, const http::ApiRequest& req,
                          const std::string& arn) {
  auto parsed = ParseArn(arn);
  if (!parsed) {
    return InvalidArgument(
        fmt::format("Resource ARN {} is not a model, endpoint-config, "
                    "endpoint or inference-component ARN.",
                    arn));
  }
  if (parsed->account != req.account_id) {
    return NotFound(fmt::format("Could not find resource \"{}\".", arn));
  }
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, parsed->kind, parsed->name));
  return rec.key;
}

// Applies `edit` to the record's Tags and writes it back, retrying if another writer raced.
Result<json> EditTags(const OpContext& ctx, const store::Key& key,
                      const std::function<Status(json&)>& edit) {
  std::unique_lock<std::mutex> lock(ctx.state_mu(), std::defer_lock);
  if (key.kind == kEndpoint || key.kind == kInferenceComponent) lock.lock();
  for (int attempt = 0; attempt < 5; ++attempt) {
    CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.store().Get(key));
    CARVE_ASSIGN_OR_RETURN(json body, Body(rec));
    json tags = body.value("Tags", json::array());
    CARVE_RETURN_IF_ERROR(edit(tags));
    body["Tags"] = tags;
    auto st = ctx.store().Update(key, body.dump(), rec.version);
    if (st.has_value()) return tags;
    if (st.error().code != ErrorCode::kFailedPrecondition) return st.error();
  }
  return Unavailable("the resource kept changing while its tags were edited; retry");
}

}  // namespace

Result<json> AddTags(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto arn = v.String(in, "ResourceArn", "", kResourceArnRule, true);
  v.List(in, "Tags", "", 0, kMaxTags, true);
  auto tags = ValidateTags(v, in, "Tags", "");
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_ASSIGN_OR_RETURN(store::Key key, KeyFor(ctx, req, *arn));
  CARVE_ASSIGN_OR_RETURN(json all, EditTags(ctx, key, [&](json& current) -> Status {
                           for (const auto& t : *tags) {
                             bool replaced = false;
                             for (auto& c : current) {
                               if (c["Key"] == t["Key"]) {
                                 c["Value"] = t["Value"];
                                 replaced = true;
                               }
                             }
                             if (!replaced) current.push_back(t);
                           }
                           if (current.size() > kMaxTags) {
                             return ResourceExhausted(
                                 fmt::format("A resource can have at most {} tags; this request "
                                             "would give {} {}.",
                                             kMaxTags, *arn, current.size()));
                           }
                           return OkStatus();
                         }));
  return json{{"Tags", *tags}};
}

Result<json> DeleteTags(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto arn = v.String(in, "ResourceArn", "", kResourceArnRule, true);
  std::vector<std::string> keys;
  if (const json* list = v.List(in, "TagKeys", "", 1, kMaxTags, true)) {
    for (size_t i = 0; i < list->size(); ++i) {
      json holder = {{"member", (*list)[i]}};
      auto k = v.String(holder, "member", fmt::format("tagKeys.{}", i + 1), kTagKeyRule, true);
      if (k) keys.push_back(*k);
    }
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_ASSIGN_OR_RETURN(store::Key key, KeyFor(ctx, req, *arn));
  CARVE_RETURN_IF_ERROR(EditTags(ctx, key, [&](json& current) -> Status {
    json kept = json::array();
    for (const auto& c : current) {
      if (std::find(keys.begin(), keys.end(), c.value("Key", "")) == keys.end()) {
        kept.push_back(c);
      }
    }
    current = kept;
    return OkStatus();
  }));
  return json::object();
}

Result<json> ListTags(const OpContext& ctx, const http::ApiRequest& req, const json& in) {
  Validator v;
  auto arn = v.String(in, "ResourceArn", "", kResourceArnRule, true);
  auto token = v.String(in, "NextToken", "", LengthRule(0, 8192), false);
  auto max = v.Integer(in, "MaxResults", "", {50, {}}, false);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_ASSIGN_OR_RETURN(store::Key key, KeyFor(ctx, req, *arn));
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.store().Get(key));
  CARVE_ASSIGN_OR_RETURN(json body, Body(rec));
  json tags = body.value("Tags", json::array());
  size_t offset = 0;
  if (token && !token->empty()) {
    try {
      offset = std::stoul(*token);
    } catch (const std::exception&) {
      return InvalidArgument(fmt::format("NextToken '{}' was not returned by ListTags.", *token));
    }
  }
  const size_t limit = static_cast<size_t>(max.value_or(kMaxTags));
  json page = json::array();
  for (size_t i = offset; i < tags.size() && i < offset + limit; ++i) page.push_back(tags[i]);
  json out = {{"Tags", page}};
  if (offset + limit < tags.size()) out["NextToken"] = std::to_string(offset + limit);
  return out;
}

}  // namespace carve::server::sagemaker
