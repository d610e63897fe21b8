// The Application Auto Scaling operation handlers, one .cc per resource (targets, policies,
// scheduled actions), as free functions over an OpContext. Each takes the request body as JSON
// and returns the response body, or an Error that ToAasError maps to the wire. Handlers run
// under the service's lock (AutoScalingService::Handle).
#pragma once

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "aws/validator.h"
#include "common/clock.h"
#include "common/result.h"
#include "http/api.h"
#include "http/metrics.h"
#include "server/autoscaling/activity_log.h"
#include "server/autoscaling/scalable_resources.h"
#include "server/autoscaling/scaling_records.h"
#include "store/store.h"

namespace carve::server::autoscaling {

using nlohmann::json;
// The awsJson validator's vocabulary, which every handler speaks.
using aws::EnumRule;
using aws::LengthRule;
using aws::MemberPath;
using aws::StringRule;
using aws::UnsupportedMember;
using aws::Validator;

// What a handler works with. Owned by the service.
struct OpContext {
  store::Store& store;
  ScalableResources& resources;
  ActivityLog& activities;
  const Clock& clock;
  std::string region;
  const http::MetricsRegistry* metrics = nullptr;  // Where customized metrics are read.
  // Drops the engine's samples of a target that was deregistered.
  std::function<void(const std::string& account, const ScalableKey& key)> forget_samples;

  std::string Arn(const std::string& account, const std::string& what) const;
};

using Handler = Result<json> (*)(const OpContext&, const std::string& account, const json& in);
// nullptr for an operation this service does not implement.
Handler FindHandler(std::string_view operation);

// target_ops.cc
Result<json> RegisterScalableTarget(const OpContext&, const std::string&, const json&);
Result<json> DeregisterScalableTarget(const OpContext&, const std::string&, const json&);
Result<json> DescribeScalableTargets(const OpContext&, const std::string&, const json&);
Result<json> DescribeScalingActivities(const OpContext&, const std::string&, const json&);
// policy_ops.cc
Result<json> PutScalingPolicy(const OpContext&, const std::string&, const json&);
Result<json> DescribeScalingPolicies(const OpContext&, const std::string&, const json&);
Result<json> DeleteScalingPolicy(const OpContext&, const std::string&, const json&);
// scheduled_ops.cc
Result<json> PutScheduledAction(const OpContext&, const std::string&, const json&);
Result<json> DescribeScheduledActions(const OpContext&, const std::string&, const json&);
Result<json> DeleteScheduledAction(const OpContext&, const std::string&, const json&);

// Shared by the handlers (ops.cc).

inline constexpr std::string_view kNamespaces[] = {kNamespace};
inline constexpr std::string_view kDimensions[] = {kCopyCount, kInstanceCount};
inline constexpr aws::StringRule kIdRule = aws::LengthRule(1, 1600);
inline constexpr aws::StringRule kNameRule = aws::LengthRule(1, 256);
inline constexpr int64_t kMaxCapacity = 1'000'000;

// An error in Application Auto Scaling's shape. The message may quote the caller's raw bytes
// (a body that is not JSON): they never throw.
http::ApiResponse AasError(int status, std::string_view type, const std::string& message);
// carve's error codes as Application Auto Scaling's.
http::ApiResponse ToAasError(const carve::Error& e);

std::string TargetNotFound(const ScalableKey& k);
// `digits` random lowercase hex digits, for the ids in ARNs.
std::string RandomId(size_t digits);
// A key from the request: namespace, resource id and dimension, all required.
std::optional<ScalableKey> KeyOf(aws::Validator& v, const json& in);
Result<ScalableTarget> GetTarget(const OpContext& ctx, const std::string& account,
                                 const ScalableKey& key);

// Paging over records listed by name: NextToken is the last name returned.
struct Page {
  int limit = 50;
  std::string after;
};
std::optional<Page> PageOf(aws::Validator& v, const json& in);

// The filters of the Describe operations: the namespace (required), a resource id, a
// dimension and, where the operation has one, a list of names.
struct Filters {
  std::optional<std::string> id;
  std::optional<std::string> dim;
  std::set<std::string> names;
  bool Keep(const ScalableKey& k, const std::string& name = "") const {
    return (!id || k.resource_id == *id) && (!dim || k.dimension == *dim) &&
           (names.empty() || names.contains(name));
  }
};
Filters FiltersOf(aws::Validator& v, const json& in, std::string_view names_member = "");

// Lists records of `kind` for targets matching the filters, paged: NextToken is the name of the
// last record returned, given only when more follow.
template <typename T, typename Keep>
Result<json> ListPage(store::Store& store, const std::string& account, std::string_view kind,
                      const Page& page, const char* member, Keep keep, bool newest_first = false) {
  CARVE_ASSIGN_OR_RETURN(auto records, store.List(account, std::string(kind), {}));
  if (newest_first) std::reverse(records.begin(), records.end());
  size_t i = 0;
  if (!page.after.empty()) {
    auto it = std::find_if(records.begin(), records.end(),
                           [&](const store::Record& r) { return r.key.name == page.after; });
    if (it == records.end()) return InvalidArgument("NextToken '" + page.after + "' is not valid");
    i = static_cast<size_t>(it - records.begin()) + 1;
  }
  json out = {{member, json::array()}};
  json& items = out[member];
  std::string last;
  for (; i < records.size(); ++i) {
    auto item = T::FromJson(json::parse(records[i].body));
    if (!item.has_value() || !keep(*item)) continue;
    if (static_cast<int>(items.size()) == page.limit) {
      out["NextToken"] = last;
      break;
    }
    json j = item->ToJson();
    j.erase("Carve");
    items.push_back(std::move(j));
    last = records[i].key.name;
  }
  return out;
}

// Creates the record, or updates it at `version` (what the caller read). Either way a refusal
// of the store's means another writer came first: a create finding the record made since it was
// read absent, an update finding a newer version. Both are ConcurrentUpdateException, as AWS
// answers a race; the caller may read again and retry.
Status Write(store::Store& store, const store::Key& key, const std::string& body,
             std::optional<int64_t> version);

// Removes a target's named record (a policy, a scheduled action); `missing` is the
// ObjectNotFoundException message when there is none.
Result<json> RemoveNamed(store::Store& store, const std::string& account, std::string_view kind,
                         const ScalableKey& key, const std::string& name,
                         const std::string& missing);

}  // namespace carve::server::autoscaling
