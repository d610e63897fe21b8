#include "server/sagemaker/service.h"

#include <spdlog/spdlog.h>

#include "server/sagemaker/aws_error.h"
#include "server/sagemaker/ops.h"

namespace carve::server::sagemaker {

using Ops = SageMakerService::Ops;

SageMakerService::SageMakerService(store::Store& store, fleet::Fleet fleet,
                                   fleet::NodeDriver& driver, ServiceOptions options)
    : store_(store),
      driver_(driver),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : SystemClock::Get()),
      fleet_(std::move(fleet)) {
  // Agent reports that change a copy's state or a node's readiness wake the reconciler.
  if (options_.registry != nullptr) options_.registry->AddListener([this] { Notify(); });
}

SageMakerService::~SageMakerService() { Stop(); }

Status SageMakerService::Recover() {
  std::lock_guard lock(mu_);
  Ops::SyncNodes(*this);
  CARVE_RETURN_IF_ERROR(Ops::RecoverLocked(*this));
  Ops::PublishWorkloads(*this);  // Agents that reconnect find their copies still desired.
  return OkStatus();
}

ApiResponse SageMakerService::Handle(const ApiRequest& request) {
  Ops::Handler handler = Ops::Find(request.operation);
  if (handler == nullptr) {
    return ToAwsError(Unimplemented("Unknown operation SageMaker." + request.operation));
  }
  json body;
  try {
    body = request.body.empty() ? json::object() : json::parse(request.body);
  } catch (const json::exception& e) {
    return ToAwsError(InvalidArgument(std::string("Request body is not valid JSON: ") + e.what()));
  }
  if (!body.is_object()) return ToAwsError(InvalidArgument("Request body must be a JSON object"));
  Result<json> out = [&]() -> Result<json> {
    try {
      return handler(*this, request, body);
    } catch (const std::exception& e) {  // A JSON access on stored data; never a user error.
      return Internal(std::string("internal error: ") + e.what());
    }
  }();
  if (!out.has_value()) {
    if (out.error().code == ErrorCode::kInternal || out.error().code == ErrorCode::kUnavailable) {
      spdlog::error("{} for account {} failed: {}", request.operation, request.account_id,
                    out.error().message);
    }
    return ToAwsError(out.error());
  }
  return JsonOk(*out);
}

void SageMakerService::Notify() {
  {
    std::lock_guard lock(cv_mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

void SageMakerService::Start() {
  std::lock_guard lock(cv_mu_);
  if (loop_.joinable() || stopping_) return;
  loop_ = std::thread([this] { Loop(); });
}

void SageMakerService::Stop() {
  {
    std::lock_guard lock(cv_mu_);
    stopping_ = true;
  }
  abort_carves_ = true;
  cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  WaitForCarves();
}

void SageMakerService::Loop() {
  while (true) {
    {
      std::unique_lock lock(cv_mu_);
      cv_.wait_for(lock, options_.reconcile_interval, [this] { return wake_ || stopping_; });
      if (stopping_) return;
      wake_ = false;
    }
    ReconcileOnce();
  }
}

void SageMakerService::ReconcileOnce() {
  if (options_.registry != nullptr) options_.registry->Sweep();
  std::lock_guard lock(mu_);
  Ops::SyncNodes(*this);
  Ops::ReconcileEndpoints(*this);
  Ops::ReconcileComponents(*this);
  Ops::PublishWorkloads(*this);
}

void SageMakerService::WaitForCarves() {
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    workers.swap(workers_);
  }
  for (auto& w : workers) w.join();
}

json SageMakerService::FleetJson() const {
  std::lock_guard lock(mu_);
  return fleet_.ToJson();
}

Result<json> SageMakerService::EndpointCarveJson(const std::string& account,
                                                 const std::string& endpoint) const {
  std::lock_guard lock(mu_);
  auto rec = store_.Get({account, std::string(kEndpoint), endpoint});
  if (!rec.has_value()) {
    if (rec.error().code != ErrorCode::kNotFound) return rec.error();
    return NotFound("Could not find endpoint \"" +
                    MakeArn(options_.region, account, kEndpoint, endpoint) + "\".");
  }
  json out = fleet_.EndpointJson(account, endpoint);
  try {
    json body = json::parse(rec->body);
    out["status"] = body.value("EndpointStatus", "");
    out["variants"] = body.value("Variants", json::array());
  } catch (const json::exception&) {
  }
  return out;
}

std::string Ops::Arn(const SageMakerService& s, std::string_view account, std::string_view kind,
                     std::string_view name) {
  return MakeArn(s.options_.region, account, kind, name);
}

Result<store::Record> Ops::Get(SageMakerService& s, const std::string& account,
                               std::string_view kind, const std::string& name) {
  auto rec = s.store_.Get({account, std::string(kind), name});
  if (!rec.has_value() && rec.error().code == ErrorCode::kNotFound) {
    return NotFound("Could not find " + std::string(HumanName(kind)) + " \"" +
                    Arn(s, account, kind, name) + "\".");
  }
  return rec;
}

Error Ops::AlreadyExistsError(const SageMakerService& s, std::string_view account,
                              std::string_view kind, std::string_view name) {
  return AlreadyExists("Cannot create already existing " + std::string(HumanName(kind)) + " \"" +
                       Arn(s, account, kind, name) + "\".");
}

Result<json> Ops::Body(const store::Record& record) {
  try {
    return json::parse(record.body);
  } catch (const json::exception& e) {
    return Internal("stored " + record.key.kind + " '" + record.key.name +
                    "' is not valid JSON: " + e.what());
  }
}

Ops::Handler Ops::Find(std::string_view op) {
  static const std::map<std::string_view, Handler> kOps = {
      {"CreateModel", &Ops::CreateModel},
      {"DescribeModel", &Ops::DescribeModel},
      {"DeleteModel", &Ops::DeleteModel},
      {"ListModels", &Ops::ListModels},
      {"CreateEndpointConfig", &Ops::CreateEndpointConfig},
      {"DescribeEndpointConfig", &Ops::DescribeEndpointConfig},
      {"DeleteEndpointConfig", &Ops::DeleteEndpointConfig},
      {"ListEndpointConfigs", &Ops::ListEndpointConfigs},
      {"CreateEndpoint", &Ops::CreateEndpoint},
      {"DescribeEndpoint", &Ops::DescribeEndpoint},
      {"DeleteEndpoint", &Ops::DeleteEndpoint},
      {"ListEndpoints", &Ops::ListEndpoints},
      {"UpdateEndpoint", &Ops::UpdateEndpoint},
      {"CreateInferenceComponent", &Ops::CreateInferenceComponent},
      {"DescribeInferenceComponent", &Ops::DescribeInferenceComponent},
      {"DeleteInferenceComponent", &Ops::DeleteInferenceComponent},
      {"ListInferenceComponents", &Ops::ListInferenceComponents},
      {"UpdateInferenceComponent", &Ops::UpdateInferenceComponent},
      {"UpdateInferenceComponentRuntimeConfig", &Ops::UpdateInferenceComponentRuntimeConfig},
      {"AddTags", &Ops::AddTags},
      {"ListTags", &Ops::ListTags},
      {"DeleteTags", &Ops::DeleteTags},
  };
  auto it = kOps.find(op);
  return it == kOps.end() ? nullptr : it->second;
}

}  // namespace carve::server::sagemaker
