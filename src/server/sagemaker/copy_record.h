// CopyRecord: one inference-component copy and the partition (or GPUs) it occupies, as its own
// Store record: kind InferenceComponentCopy, name "<component>/<copy id>", in the component's
// account. Per-copy records keep every record small whatever a component's copy count (a
// 10,000-copy component is 10,000 small records, not one that grows with it), and scaling by one
// copy writes one record.
//
// The copy id is fresh for each placement (12 hex digits) and is part of the copy's workload id
// on its node's agent, so "same id" means "the same process may stay".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"
#include "core/placement.h"
#include "store/store.h"

namespace carve::server::sagemaker {

inline constexpr std::string_view kInferenceComponentCopy = "InferenceComponentCopy";

struct CopyRecord {
  std::string component;
  std::string id;
  int index = 0;  // The copy's number within its component ("carve logs IC --copy N").
  core::AllocationRecord placement;  // Its id is the live pool's, never persisted.
  int64_t spec_version = 1;  // The component's specification version it runs (deployment.h).

  static store::Key KeyOf(const std::string& account, const std::string& component,
                          const std::string& id) {
    return {account, std::string(kInferenceComponentCopy), component + "/" + id};
  }
  // The name prefix that lists one component's copies.
  static std::string Prefix(const std::string& component) { return component + "/"; }
  store::Key Key(const std::string& account) const { return KeyOf(account, component, id); }
  nlohmann::json ToJson() const;
  // Internal when the stored body is malformed.
  static Result<CopyRecord> FromRecord(const store::Record& record);
  friend bool operator==(const CopyRecord&, const CopyRecord&) = default;
};

}  // namespace carve::server::sagemaker
