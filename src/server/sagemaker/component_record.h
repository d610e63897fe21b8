// ComponentRecord: the body of an InferenceComponent record in the Store: the specification as
// the user gave it, the requirements derived from it, the desired copy count and the status.
// Where each copy runs is not here: every copy has its own record (copy_record.h), so this record
// stays the same size whatever the copy count.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/placement.h"
#include "server/sagemaker/deployment.h"
#include "server/sagemaker/statuses.h"
#include "store/store.h"

namespace carve::server::sagemaker {

// A copy placement as records written before issue 13 kept it, inside the component record and
// by position: (gpu index, index of the partition type in the variant's declared layout). Read
// only, so Recover() can migrate it to a copy record.
struct V1CopyPlacement {
  std::string id;
  int index = 0;
  std::string node;
  std::vector<std::pair<int, int>> slots;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
};

struct ComponentRecord {
  std::string name;
  std::string endpoint;
  std::string variant;
  nlohmann::json specification = nlohmann::json::object();
  std::string partition_type;  // SageMaker spelling ("mig-1g.5gb"); "" for whole GPUs.
  int devices = 1;             // Whole GPUs per copy when partition_type is "".
  int64_t cpu_milli = 0;       // Host CPU per copy, thousandths of a vCPU.
  int64_t memory_mib = 0;      // Host memory per copy.
  core::Strategy strategy = core::Strategy::kSpread;
  int desired = 0;
  // Copies that serve (agent mode: their process answers /ping; simulated mode: placed). This
  // is DescribeInferenceComponent's CurrentCopyCount.
  int running = 0;
  ComponentStatus status = ComponentStatus::kCreating;
  std::string status_message;  // What waiting copies wait for; "" when none wait.
  std::string failure_reason;  // Set with status Failed.
  bool ever_in_service = false;
  nlohmann::json tags = nlohmann::json::array();
  // The version of the specification above: 1 at creation, one more per deployment. Each copy
  // records the version it runs.
  int64_t spec_version = 1;
  std::optional<Deployment> deployment;    // A rolling update in progress.
  nlohmann::json last_deployment_config;   // DescribeInferenceComponent's; null before the first.
  std::vector<V1CopyPlacement> v1_copies;  // Non-empty only in a record not yet migrated.
  // The container of the model each specification version named, as it was when the version
  // was created ({"<version>": {"Image": ..., ...}}). A copy runs it once the model is
  // deleted: DeleteModel removes only the model's entry, and what is deployed keeps serving
  // (docs/endpoint-lifecycle.md). Records written before it have none.
  nlohmann::json model_containers = nlohmann::json::object();

  // What one copy asks the variant's pool for.
  core::Request CopyRequest() const;
  // The current specification and what it asks for, and the other way round.
  CopySpec Current() const;
  void Apply(const CopySpec& spec);
  // The specification copies of `version` run: the current one, or the one a deployment
  // replaces; nullptr for any other.
  const nlohmann::json* SpecificationOf(int64_t version) const;
  // Keeps the container of `model_body` (a model record's body: its PrimaryContainer, else the
  // first of its Containers) for `version`, and drops those of versions no copy can run.
  void KeepModelContainer(int64_t version, const std::string& model_body);
  // The container kept for `version`; nullptr when none was.
  const nlohmann::json* ModelContainerOf(int64_t version) const;
  // The model the current specification names; "" when it names none.
  std::string ModelName() const;
  nlohmann::json ToJson() const;  // Never writes v1 placements.
  // Internal when the stored body is malformed.
  static Result<ComponentRecord> FromRecord(const store::Record& record);
  // The id of a copy's process on its node's agent: "<account>/<component>/<copy id>".
  static std::string WorkloadId(const std::string& account, const std::string& name,
                                const std::string& copy_id) {
    return account + "/" + name + "/" + copy_id;
  }
};

// The container a model runs (a model record's body): its PrimaryContainer, else the first of
// its Containers; nullptr when it has neither.
const nlohmann::json* ServingContainer(const nlohmann::json& model);

// A record and its parsed body, read once per reconcile pass.
struct ComponentEntry {
  store::Record record;
  ComponentRecord component;
};

// Recover's migration of records written before components kept their models' containers:
// each specification version that names a model and has no container kept gets the model's
// container now, if the model still exists, and the record is written back. A version whose
// model is gone keeps none: its copies cannot be started again, and say so.
Status MigrateModelContainers(store::Store& store, std::vector<ComponentEntry>& components);

}  // namespace carve::server::sagemaker
