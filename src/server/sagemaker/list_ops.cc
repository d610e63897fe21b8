// The List operations' shared filtering, sorting and paging. NextToken is the offset of the next
// item in the filtered, sorted sequence (opaque to clients; the CLI's paginator passes it back).
#include <algorithm>
#include <charconv>

#include "server/sagemaker/ops.h"

namespace carve::server::sagemaker {
namespace {

constexpr std::string_view kOrders[] = {"Ascending", "Descending"};
constexpr std::string_view kSortWithStatus[] = {"Name", "CreationTime", "Status"};
constexpr std::string_view kSortPlain[] = {"Name", "CreationTime"};
constexpr int kDefaultMaxResults = 10;

struct Row {
  store::Record record;
  json body;
};

std::optional<int64_t> Millis(Validator& v, const json& in, std::string_view member) {
  auto secs = v.Number(in, member, "", {}, false);
  if (!secs) return std::nullopt;
  return static_cast<int64_t>(*secs * 1000.0);
}

}  // namespace

Result<json> ListResources(const OpContext& ctx, const http::ApiRequest& req, const json& in,
                           const ListSpec& spec) {
  const bool has_status = !spec.status_member.empty();
  Validator v;
  auto sort_by = v.String(in, "SortBy", "",
                          EnumRule(has_status ? std::span<const std::string_view>(kSortWithStatus)
                                              : std::span<const std::string_view>(kSortPlain)),
                          false);
  auto order = v.String(in, "SortOrder", "", EnumRule(kOrders), false);
  auto token = v.String(in, "NextToken", "", LengthRule(0, 8192), false);
  auto max_results = v.Integer(in, "MaxResults", "", {1, 100}, false);
  auto contains = v.String(in, "NameContains", "", kNameContainsRule, false);
  auto created_before = Millis(v, in, "CreationTimeBefore");
  auto created_after = Millis(v, in, "CreationTimeAfter");
  std::optional<int64_t> modified_before, modified_after;
  if (spec.has_last_modified) {
    modified_before = Millis(v, in, "LastModifiedTimeBefore");
    modified_after = Millis(v, in, "LastModifiedTimeAfter");
  }
  std::optional<std::string> status;
  if (has_status) status = v.String(in, "StatusEquals", "", EnumRule(spec.status_values), false);
  std::vector<std::pair<std::string_view, std::string>> equals;
  for (auto [member, body_member] : spec.equals) {
    if (auto val = v.String(in, member, "", *spec.equals_rule, false)) {
      equals.emplace_back(body_member, *val);
    }
  }
  size_t offset = 0;
  if (token && !token->empty()) {
    auto [p, ec] = std::from_chars(token->data(), token->data() + token->size(), offset);
    if (ec != std::errc() || p != token->data() + token->size()) {
      v.Fail("nextToken", *token, "Member must be a token returned by a previous call");
    }
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());

  CARVE_ASSIGN_OR_RETURN(auto records,
                         ctx.store().List(req.account_id, std::string(spec.kind), {}));
  std::vector<Row> rows;
  for (auto& r : records) {
    if (contains && r.key.name.find(*contains) == std::string::npos) continue;
    if (created_before && r.created_ms >= *created_before) continue;
    if (created_after && r.created_ms <= *created_after) continue;
    if (modified_before && r.updated_ms >= *modified_before) continue;
    if (modified_after && r.updated_ms <= *modified_after) continue;
    CARVE_ASSIGN_OR_RETURN(json body, Body(r));
    if (status && body.value(std::string(spec.status_member), "") != *status) continue;
    bool keep = true;
    for (const auto& [member, want] : equals) keep = keep && body.value(member, "") == want;
    if (!keep) continue;
    rows.push_back({std::move(r), std::move(body)});
  }
  const std::string by = sort_by.value_or("CreationTime");
  const bool descending = order.value_or("Descending") == "Descending";
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    auto key = [&](const Row& r) {
      if (by == "Name") return std::make_pair(std::string(), r.record.key.name);
      if (by == "Status") {
        return std::make_pair(r.body.value(std::string(spec.status_member), ""), r.record.key.name);
      }
      return std::make_pair(std::string(), std::string());
    };
    if (by == "CreationTime") {
      if (a.record.created_ms != b.record.created_ms) {
        return descending ? a.record.created_ms > b.record.created_ms
                          : a.record.created_ms < b.record.created_ms;
      }
      return descending ? a.record.key.name > b.record.key.name
                        : a.record.key.name < b.record.key.name;
    }
    return descending ? key(a) > key(b) : key(a) < key(b);
  });
  const size_t limit = static_cast<size_t>(max_results.value_or(kDefaultMaxResults));
  json items = json::array();
  for (size_t i = offset; i < rows.size() && i < offset + limit; ++i) {
    items.push_back(spec.summary(ctx, rows[i].record, rows[i].body));
  }
  json out = {{std::string(spec.result_member), items}};
  if (offset + limit < rows.size()) out["NextToken"] = std::to_string(offset + limit);
  return out;
}

}  // namespace carve::server::sagemaker
