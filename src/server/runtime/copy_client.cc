#include "server/runtime/copy_client.h"

#include <httplib.h>

#include <utility>

namespace carve::server::runtime {

std::string_view CopyOutcomeName(CopyOutcome outcome) {
  switch (outcome) {
    case CopyOutcome::kOk: return "ok";
    case CopyOutcome::kConnectFailed: return "connect failed";
    case CopyOutcome::kTimedOut: return "timed out";
    case CopyOutcome::kBroken: return "connection broken";
    case CopyOutcome::kAborted: return "aborted";
  }
  return "unknown";
}

CopyClient::CopyClient(std::chrono::milliseconds connect_timeout, size_t max_idle_per_address)
    : connect_timeout_(connect_timeout), max_idle_per_address_(max_idle_per_address) {}

CopyClient::~CopyClient() = default;

std::unique_ptr<httplib::Client> CopyClient::Borrow(const std::string& address) {
  {
    std::lock_guard lock(mu_);
    auto it = idle_.find(address);
    if (it != idle_.end() && !it->second.empty()) {
      auto client = std::move(it->second.back());
      it->second.pop_back();
      return client;
    }
  }
  auto client = std::make_unique<httplib::Client>("http://" + address);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  const auto ms = connect_timeout_.count();
  client->set_connection_timeout(ms / 1000, (ms % 1000) * 1000);
  return client;
}

void CopyClient::Return(const std::string& address, std::unique_ptr<httplib::Client> client) {
  std::lock_guard lock(mu_);
  auto& pool = idle_[address];
  if (pool.size() < max_idle_per_address_) pool.push_back(std::move(client));
}

void CopyClient::Forget(const std::string& address) {
  std::vector<std::unique_ptr<httplib::Client>> drop;
  {
    std::lock_guard lock(mu_);
    auto it = idle_.find(address);
    if (it == idle_.end()) return;
    drop = std::move(it->second);
    idle_.erase(it);
  }
}

CopyReply CopyClient::Call(const std::string& address, const CopyRequest& request) {
  return Send(address, request, nullptr, nullptr);
}

CopyReply CopyClient::Stream(const std::string& address, const CopyRequest& request,
                             const std::function<bool(const CopyReply&)>& on_headers,
                             const std::function<bool(std::string_view)>& on_data) {
  return Send(address, request, &on_headers, &on_data);
}

CopyReply CopyClient::Send(const std::string& address, const CopyRequest& request,
                           const std::function<bool(const CopyReply&)>* on_headers,
                           const std::function<bool(std::string_view)>* on_data) {
  std::unique_ptr<httplib::Client> client = Borrow(address);
  const auto ms = request.timeout.count();
  client->set_read_timeout(ms / 1000, (ms % 1000) * 1000);

  CopyReply reply;
  auto last_byte = std::chrono::steady_clock::now();
  bool streaming_body = false;
  bool aborted = false;
  httplib::Request req;
  req.method = "POST";
  req.path = request.path;
  req.body = request.body;
  req.set_header("Content-Type",
                 request.content_type.empty() ? "application/octet-stream" : request.content_type);
  if (!request.accept.empty()) req.set_header("Accept", request.accept);
  if (!request.custom_attributes.empty()) {
    req.set_header("X-Amzn-SageMaker-Custom-Attributes", request.custom_attributes);
  }
  req.response_handler = [&](const httplib::Response& res) {
    last_byte = std::chrono::steady_clock::now();
    reply.status = res.status;
    reply.content_type = res.get_header_value("Content-Type");
    reply.custom_attributes = res.get_header_value("X-Amzn-SageMaker-Custom-Attributes");
    streaming_body = on_data != nullptr && res.status >= 200 && res.status < 300;
    if (on_headers != nullptr && !(*on_headers)(reply)) aborted = true;
    return !aborted;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    last_byte = std::chrono::steady_clock::now();
    if (!streaming_body) {
      reply.body.append(data, n);
      return true;
    }
    if (!(*on_data)(std::string_view(data, n))) aborted = true;
    return !aborted;
  };

  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const bool ok = client->send(req, res, error);
  if (ok) {
    Return(address, std::move(client));
    return reply;
  }
  // A failed connection is not reused: its state is unknown.
  reply.detail = httplib::to_string(error);
  if (aborted || error == httplib::Error::Canceled) {
    reply.outcome = CopyOutcome::kAborted;
  } else if (error == httplib::Error::Connection || error == httplib::Error::ConnectionTimeout) {
    reply.outcome = CopyOutcome::kConnectFailed;
  } else if (error == httplib::Error::Read &&
             std::chrono::steady_clock::now() - last_byte >= request.timeout * 9 / 10) {
    // cpp-httplib reports an expired read timeout as a read error; the silence before it tells
    // the two apart.
    reply.outcome = CopyOutcome::kTimedOut;
  } else {
    reply.outcome = CopyOutcome::kBroken;
  }
  return reply;
}

}  // namespace carve::server::runtime
