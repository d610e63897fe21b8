#include "agent/fleetsim/keepalive_client.h"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace carve::agent::fleetsim {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct KeepAliveClient::Request {
  std::string method;
  std::string target;
  std::chrono::milliseconds timeout{};
  Callback done;
  http::request<http::string_body> message;
  http::response<http::string_body> response;
  int attempts = 0;
};

struct KeepAliveClient::Connection {
  explicit Connection(asio::io_context& io) : stream(io) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool reused = false;  // carried an earlier request
};

KeepAliveClient::KeepAliveClient(asio::io_context& io, asio::ip::tcp::endpoint server,
                                 const protocol::SignedClient& signer)
    : io_(io), server_(server), signer_(signer) {}

KeepAliveClient::~KeepAliveClient() {
  state_.reset();  // Handlers still queued see another request (or none) and do nothing.
  if (conn_) conn_->stream.socket().close();
}

void KeepAliveClient::Send(std::string method, std::string target, std::string body,
                           std::chrono::milliseconds timeout, Callback done) {
  if (state_ != nullptr) {
    done(FailedPrecondition("a request to " + target + " is already in flight"));
    return;
  }
  auto req = std::make_shared<Request>();
  req->method = std::move(method);
  req->target = std::move(target);
  req->timeout = timeout;
  req->done = std::move(done);
  req->message.method_string(req->method);
  req->message.target(req->target);
  req->message.version(11);
  for (auto& [name, value] : signer_.SignedHeaders(req->method, req->target, body)) {
    req->message.set(name, value);
  }
  req->message.body() = std::move(body);
  req->message.prepare_payload();
  state_ = std::move(req);
  if (conn_ && conn_->stream.socket().is_open()) {
    Write();
  } else {
    Connect();
  }
}

void KeepAliveClient::Connect() {
  if (conn_) conn_->stream.socket().close();
  conn_ = std::make_shared<Connection>(io_);
  std::shared_ptr<Request> req = state_;
  std::shared_ptr<Connection> conn = conn_;
  conn->stream.expires_after(req->timeout);
  conn->stream.async_connect(server_, [this, req, conn](const boost::system::error_code& ec) {
    if (req != state_) return;
    if (ec) return Fail("connect", ec);
    Write();
  });
}

void KeepAliveClient::Write() {
  std::shared_ptr<Request> req = state_;
  std::shared_ptr<Connection> conn = conn_;
  ++req->attempts;
  req->response = {};
  conn->stream.expires_after(req->timeout);
  http::async_write(conn->stream, req->message,
                    [this, req, conn](const boost::system::error_code& ec, size_t) {
                      if (req != state_) return;
                      if (ec) return Fail("write", ec);
                      Read();
                    });
}

void KeepAliveClient::Read() {
  std::shared_ptr<Request> req = state_;
  std::shared_ptr<Connection> conn = conn_;
  http::async_read(conn->stream, conn->buffer, req->response,
                   [this, req, conn](const boost::system::error_code& ec, size_t) {
                     if (req != state_) return;
                     if (ec) return Fail("read", ec);
                     protocol::HttpReply reply;
                     reply.status = static_cast<int>(req->response.result_int());
                     reply.body = std::move(req->response.body());
                     for (const auto& field : req->response) {
                       reply.headers.emplace(std::string(field.name_string()),
                                             std::string(field.value()));
                     }
                     if (req->response.need_eof()) {
                       conn->stream.socket().close();
                     } else {
                       conn->reused = true;
                       conn->stream.expires_never();
                     }
                     Finish(std::move(reply));
                   });
}

void KeepAliveClient::Fail(const std::string& step, const boost::system::error_code& ec) {
  std::shared_ptr<Request> req = state_;
  const bool reused = conn_ && conn_->reused;
  if (conn_) conn_->stream.socket().close();
  // A keep-alive connection the server closed while it sat idle fails on first use; that is not
  // the server being down, so the request goes once more on a fresh connection.
  const bool stale = reused && req->attempts == 1 && step != "connect" &&
                     ec != beast::error::timeout && ec != asio::error::operation_aborted;
  if (stale) return Connect();
  Finish(Unavailable(req->method + " " + req->target + ": " + step + ": " + ec.message()));
}

void KeepAliveClient::Finish(Result<protocol::HttpReply> reply) {
  std::shared_ptr<Request> req = std::move(state_);
  req->done(std::move(reply));
}

void KeepAliveClient::Close() {
  if (conn_) conn_->stream.socket().close();
  conn_.reset();
  if (state_ != nullptr) Finish(Unavailable("connection to the server closed"));
}

}  // namespace carve::agent::fleetsim
