// The SageMaker awsJson1_1 inputs through validation and the operations
// (src/server/sagemaker/service.h) on a FakeStore and the simulated fleet: every body comes
// from any authenticated caller. Input: records separated by NUL, each an operation selector
// byte followed by the JSON body; the selector also names two pseudo-operations, a reconcile
// pass and a restart (a new service recovering from the same store). Properties, beyond "no
// crash, no leak, no UB, no exception escaping":
//  - every answer is a JSON object; a failure carries an error type and a 4xx status (the store
//    never fails here, so nothing may be a 5xx);
//  - Recover() succeeds on whatever the operations left in the store.
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "fuzz_util.h"
#include "server/nodes/node_claims.h"
#include "server/nodes/testing/simulated_node_driver.h"
#include "server/sagemaker/service.h"
#include "store/fake_store.h"

namespace {

namespace sm = carve::server::sagemaker;
namespace nodes = carve::server::nodes;

constexpr const char* kOperations[] = {"CreateModel",
                                       "DescribeModel",
                                       "DeleteModel",
                                       "ListModels",
                                       "CreateEndpointConfig",
                                       "DescribeEndpointConfig",
                                       "DeleteEndpointConfig",
                                       "ListEndpointConfigs",
                                       "CreateEndpoint",
                                       "DescribeEndpoint",
                                       "DeleteEndpoint",
                                       "ListEndpoints",
                                       "UpdateEndpoint",
                                       "CreateInferenceComponent",
                                       "DescribeInferenceComponent",
                                       "DeleteInferenceComponent",
                                       "ListInferenceComponents",
                                       "UpdateInferenceComponent",
                                       "UpdateInferenceComponentRuntimeConfig",
                                       "AddTags",
                                       "ListTags",
                                       "DeleteTags"};
constexpr size_t kOperationCount = std::size(kOperations);
constexpr size_t kReconcile = kOperationCount;
constexpr size_t kRestart = kOperationCount + 1;

struct World {
  carve::FakeClock clock;
  carve::store::FakeStore store{clock};
  nodes::SimulatedNodeDriver driver{std::chrono::milliseconds(0), [](std::chrono::milliseconds) {}};
  std::unique_ptr<nodes::NodeClaims> claims;
  std::unique_ptr<sm::SageMakerService> service;

  // A fresh process over the same store: the default fleet's nodes, all Ready, and a service
  // that recovers from the store.
  void Boot() {
    service.reset();
    claims = std::make_unique<nodes::NodeClaims>();
    auto added = nodes::ClaimTestFleet(*claims);
    FUZZ_CHECK(added.ok(), "default fleet: %s", added.error().message.c_str());
    sm::ServiceOptions options;
    options.clock = &clock;
    service = std::make_unique<sm::SageMakerService>(store, *claims, driver, options);
    auto recovered = service->Recover();
    FUZZ_CHECK(recovered.ok(), "Recover() refused what the operations stored: %s",
               recovered.error().message.c_str());
  }
};

void CheckAnswer(const char* op, const carve::http::ApiResponse& r) {
  const nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
  FUZZ_CHECK(!body.is_discarded() && body.is_object(), "%s answered with a non-object: %s", op,
             r.body.c_str());
  if (r.http_status == 200) return;
  FUZZ_CHECK(r.http_status >= 400 && r.http_status < 500 && !r.error_type.empty(),
             "%s answered %d %s: %s", op, r.http_status, r.error_type.c_str(), r.body.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // Recover() logs on every input otherwise
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto records = carve::fuzz::Split(carve::fuzz::AsView(data, size), '\0');
  if (records.size() > 32) return 0;
  World w;
  w.Boot();
  for (std::string_view record : records) {
    if (record.empty()) continue;
    const size_t which = static_cast<uint8_t>(record[0]) % (kOperationCount + 2);
    if (which == kReconcile) {
      w.clock.Advance(std::chrono::seconds(1));
      w.service->ReconcileOnce();
      w.service->WaitForCarves();
      continue;
    }
    if (which == kRestart) {
      w.Boot();
      continue;
    }
    const char* op = kOperations[which];
    carve::http::ApiRequest req{op, std::string(record.substr(1)), "111111111111", "req"};
    if (req.body.empty()) req.body = "{}";
    CheckAnswer(op, w.service->Handle(req));
  }
  w.service->ReconcileOnce();
  w.service->WaitForCarves();
  (void)w.service->FleetJson("111111111111");
  w.Boot();
  return 0;
}
