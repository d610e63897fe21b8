#include "server/sagemaker/component_plan.h"

#include <fmt/format.h>

#include "common/utf8.h"
#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {

CopyTriage TriageCopies(const ComponentRecord& c, std::span<const LiveCopy> copies,
                        const nodes::NodePool* pool, bool stopped) {
  CopyTriage out;
  for (size_t i = 0; i < copies.size(); ++i) {
    const LiveCopy& copy = copies[i];
    const bool placed = pool != nullptr && copy.allocation.value() != 0;
    const bool current = c.SpecificationOf(copy.record.spec_version) != nullptr;
    if (!stopped && placed && current && pool->Ready(copy.record.placement.node)) {
      out.keep.push_back(i);
      continue;
    }
    if (!stopped && pool != nullptr && current) {
      out.lost.push_back(
          fmt::format("copy {} on {}", copy.record.index, copy.record.placement.node));
    }
    out.release.push_back(i);
  }
  return out;
}

std::string BlockedReason(const EndpointEntry* ep, const ComponentRecord& c, bool has_pool) {
  if (ep == nullptr) return "waiting for endpoint " + c.endpoint + ", which does not exist";
  if (ep->endpoint.status == EndpointStatus::kFailed) {
    return "endpoint " + c.endpoint + " failed: " + ep->endpoint.failure_reason;
  }
  if (!IsCarved(ep->endpoint.status)) {
    return fmt::format("waiting for endpoint {} to be InService (it is {})", c.endpoint,
                       Name(ep->endpoint.status));
  }
  if (!has_pool) return "waiting for the endpoint's instances to be carved and Ready";
  return "";
}

bool SetStatus(ComponentRecord& c, const StatusInputs& in) {
  if (c.status == ComponentStatus::kDeleting) return in.all_released;
  if (c.status == ComponentStatus::kFailed || !in.fail_now.empty()) {
    if (!in.fail_now.empty() && c.status != ComponentStatus::kFailed) {
      c.failure_reason = FitUtf8(in.fail_now, ComponentPlacement::kMaxFailureReason);
    }
    c.status = ComponentStatus::kFailed;
    c.status_message.clear();
  } else if (c.deployment) {
    c.status = ComponentStatus::kUpdating;
    c.status_message = in.reason.empty() ? in.progress : in.progress + "; " + in.reason;
  } else if (in.count == c.desired && c.running == c.desired) {
    c.status = ComponentStatus::kInService;
    c.ever_in_service = true;
    c.status_message.clear();
  } else {
    c.status = c.ever_in_service ? ComponentStatus::kUpdating : ComponentStatus::kCreating;
    c.status_message = in.count < c.desired
                           ? fmt::format("{} of {} copies are not placed: {}", c.desired - in.count,
                                         c.desired, in.reason)
                           : fmt::format("{} of {} copies are not serving yet: {}",
                                         c.desired - c.running, c.desired, in.starting);
  }
  return false;
}

std::vector<store::Mutation> PassWrites(const store::Record& record, const std::string& before,
                                        const ComponentRecord& after, bool remove_record,
                                        std::span<const LiveCopy> copies,
                                        std::span<const size_t> release,
                                        std::span<const LiveCopy> placed) {
  const std::string& account = record.key.account;
  std::vector<store::Mutation> writes;
  for (size_t i : release) {
    writes.push_back(store::Remove{copies[i].record.Key(account), copies[i].version});
  }
  for (const auto& p : placed) {
    writes.push_back(store::Put{p.record.Key(account), p.record.ToJson().dump(), std::nullopt});
  }
  const std::string body = after.ToJson().dump();
  if (remove_record) {
    writes.push_back(store::Remove{record.key, record.version});
  } else if (body != before) {
    writes.push_back(store::Put{record.key, body, record.version});
  }
  return writes;
}

}  // namespace carve::server::sagemaker
