// The HTTP front end (src/http/http_server.h; the per-connection parser and state machine in
// http_connection.cc): the bytes of any connection to the listener. One HttpServer runs for the
// whole fuzzing session on 127.0.0.1, configured as `carve server` configures it (one Asio loop,
// Beast's incremental parser with the header and body limits, SigV4 on), with an API handler,
// parameterised native routes (one signed, one public), an async route (as the agents'
// long-poll is) and a streamed route. Each input is written to a fresh connection, which is then
// half-closed; everything the server sends back is read until it closes. Properties, beyond "no
// crash, no leak, no UB, no hang" on the loop or a worker:
//  - the server always closes the connection (a missing close is a hang: libFuzzer's -timeout);
//  - what it sends is a sequence of well-formed HTTP/1.1 responses, each with x-amzn-RequestId;
//  - no status is a 5xx: nothing a client sends may reach the "handler failed" path.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>

#include "aws/credentials.h"
#include "fuzz_util.h"
#include "http/http_server.h"

namespace {

namespace beast = boost::beast;

constexpr size_t kMaxBody = 64 * 1024;  // small, so the 413 path is within the fuzzer's reach

int Port() {
  static const int port = [] {
    auto* creds = new carve::aws::Credentials(
        {carve::aws::Credential{"default", "AKIAIOSFODNN7EXAMPLE",
                                "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "123456789012"}});
    auto* metrics = new carve::http::MetricsRegistry();
    carve::http::HttpServerOptions options;
    options.threads = 4;
    options.max_body_bytes = kMaxBody;
    options.header_timeout = std::chrono::seconds(2);
    options.body_timeout = std::chrono::seconds(2);
    options.keep_alive_timeout = std::chrono::seconds(2);
    // Lives for the whole run (the pointer is kept, so LeakSanitizer sees it reachable).
    static carve::http::HttpServer* s = new carve::http::HttpServer(options, *creds, *metrics);
    s->SetApiHandler([](const carve::http::ApiRequest& r) {
      return carve::http::ApiResponse{200, "{\"op\":\"" + r.operation + "\"}", ""};
    });
    s->AddRoute("GET", "/v1/things/{name}", carve::http::kForAnyone,
                [](const carve::http::NativeRequest& r) {
                  return carve::http::NativeResponse{200, r.path_params.at("name")};
                });
    s->AddRoute("POST", "/v1/things/{name}/act", carve::http::kForTenants,
                [](const carve::http::NativeRequest& r) {
                  return carve::http::NativeResponse{200, r.account_id + r.body};
                });
    s->AddAsyncRoute("GET", "/v1/wait/{name}", carve::http::kForAnyone,
                     [](carve::http::NativeRequest r, carve::http::Responder respond) {
                       respond(carve::http::NativeResponse{200, r.path_params.at("name")});
                     });
    s->AddRoute("GET", "/v1/stream/{n}", carve::http::kForAnyone,
                [](const carve::http::NativeRequest& r) {
                  carve::http::NativeResponse out;
                  const size_t n = r.path_params.at("n").size();
                  out.stream = [n](const carve::http::StreamWriter& write) {
                    for (size_t i = 0; i < n && write(std::string(i, 'x')); ++i) {
                    }
                  };
                  return out;
                });
    auto port = s->Start("127.0.0.1", 0);
    FUZZ_CHECK(port.has_value(), "cannot start the server: %s", port.error().message.c_str());
    return *port;
  }();
  return port;
}

// Writes `input`, half-closes, and reads until the server closes. Reading and writing are
// interleaved so that a server answering pipelined requests never blocks on a full socket.
std::string Exchange(std::string_view input) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  FUZZ_CHECK(fd >= 0, "socket: %s", std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(Port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  FUZZ_CHECK(rc == 0 || errno == EINPROGRESS, "connect: %s", std::strerror(errno));
  std::string reply;
  size_t sent = 0;
  bool write_open = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    FUZZ_CHECK(std::chrono::steady_clock::now() < deadline,
               "the server neither answered nor closed within 20 s");
    if (write_open && sent == input.size()) {
      ::shutdown(fd, SHUT_WR);
      write_open = false;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (write_open ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    if (write_open && (p.revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      const ssize_t n = ::send(fd, input.data() + sent, input.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (n < 0 && errno != EAGAIN) {
        write_open = false;  // the server closed first (it refused the request)
      }
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      char buf[16384];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN)) break;
      if (n > 0) reply.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return reply;
}

void CheckResponses(const std::string& reply) {
  boost::beast::flat_buffer buffer;
  buffer.commit(boost::asio::buffer_copy(buffer.prepare(reply.size()),
                                         boost::asio::buffer(reply.data(), reply.size())));
  while (buffer.size() > 0) {
    beast::http::response_parser<beast::http::string_body> parser;
    parser.body_limit(std::numeric_limits<uint64_t>::max());
    parser.eager(true);
    boost::beast::error_code ec;
    while (!parser.is_done()) {
      const size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == beast::http::error::need_more && used > 0) continue;
      if (ec == beast::http::error::need_more) parser.put_eof(ec);  // a body that runs to the close
      break;
    }
    FUZZ_CHECK(!ec && parser.is_done(), "the server sent a malformed response (%s): %s",
               ec.message().c_str(), reply.c_str());
    const auto& res = parser.get();
    FUZZ_CHECK(res.result_int() == 100 || res.count("x-amzn-RequestId") == 1,
               "a response without x-amzn-RequestId: %s", reply.c_str());
    FUZZ_CHECK(res.result_int() < 500, "a %u answer to client bytes: %s", res.result_int(),
               reply.c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)Port();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CheckResponses(Exchange(carve::fuzz::AsView(data, size)));
  return 0;
}
