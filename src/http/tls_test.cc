// The front end over TLS (tls_context.h, tls_stream.h): what it negotiates, what it refuses, that
// every limit of a plain connection holds for a TLS one (a stalled handshake included), and that
// carve's client trusts exactly the pinned key or the given CA file.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "http/http_server.h"
#include "http/tls_context.h"
#include "protocol/server_trust.h"
#include "protocol/signed_client.h"

namespace carve::http {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A self-signed P-256 certificate for 127.0.0.1 and localhost, written as PEM into `dir`.
void WriteCertificate(const fs::path& dir, const std::string& cn) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_basic_constraints, "critical,CA:FALSE"},
                            std::pair{NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert, key, EVP_sha256());
  FILE* c = fopen((dir / "cert.pem").c_str(), "w");
  PEM_write_X509(c, cert);
  fclose(c);
  FILE* k = fopen((dir / "key.pem").c_str(), "w");
  PEM_write_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr);
  fclose(k);
  X509_free(cert);
  EVP_PKEY_free(key);
}

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// Reads until EOF or `timeout`; returns what arrived and whether the peer closed.
std::pair<std::string, bool> ReadToClose(int fd, std::chrono::milliseconds timeout) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {got, false};
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return {got, false};
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return {got, true};
    got.append(buf, static_cast<size_t>(n));
  }
}

// A blocking OpenSSL client on its own socket, verifying nothing: it looks at what the server
// negotiates.
class RawTlsClient {
 public:
  RawTlsClient(int port, int max_version = 0, const std::string& alpn = "http/1.1")
      : ctx_(SSL_CTX_new(TLS_client_method())), fd_(Connect(port)) {
    ::signal(SIGPIPE, SIG_IGN);  // OpenSSL write()s to a socket the server may have closed.
    if (max_version != 0) {
      SSL_CTX_set_min_proto_version(ctx_, TLS1_VERSION);
      SSL_CTX_set_max_proto_version(ctx_, max_version);
      SSL_CTX_set_security_level(ctx_, 0);
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    if (!alpn.empty()) {
      std::string wire(1, static_cast<char>(alpn.size()));
      wire += alpn;
      SSL_set_alpn_protos(ssl_, reinterpret_cast<const unsigned char*>(wire.data()),
                          static_cast<unsigned>(wire.size()));
    }
  }
  ~RawTlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  bool Handshake() { return SSL_connect(ssl_) == 1; }
  std::string Version() const { return SSL_get_version(ssl_); }
  std::string Alpn() const {
    const unsigned char* p = nullptr;
    unsigned n = 0;
    SSL_get0_alpn_selected(ssl_, &p, &n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  void Send(const std::string& text) {
    ASSERT_EQ(SSL_write(ssl_, text.data(), static_cast<int>(text.size())),
              static_cast<int>(text.size()));
  }
  // Reads until `text` holds `want` (or the connection ends).
  std::string ReadUntil(const std::string& want) {
    std::string got;
    char buf[4096];
    while (got.find(want) == std::string::npos) {
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
  int fd() const { return fd_; }

 private:
  SSL_CTX* ctx_;
  int fd_;
  SSL* ssl_ = nullptr;
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "carve-tls-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(t.data()), nullptr);
    dir_ = t;
    WriteCertificate(dir_, "carve test");
    auto tls = TlsContext::Load((dir_ / "cert.pem").string(), (dir_ / "key.pem").string());
    ASSERT_TRUE(tls.has_value()) << tls.error().message;
    tls_ = *tls;
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }
  // On 0.0.0.0 the server is also reached as 127.0.0.2, a name its certificate does not hold.
  void Start(HttpServerOptions o = {}, const std::string& host = "127.0.0.1") {
    o.insecure_no_auth = true;
    o.tls = tls_;
    server_ = std::make_unique<HttpServer>(o, creds_, metrics_);
    server_->AddRoute("POST", "/v1/echo", kForAnyone, [this](const NativeRequest& r) {
      ++posts_;
      return NativeResponse{200, std::to_string(r.body.size()), "text/plain"};
    });
    server_->AddRoute("GET", "/v1/big", kForAnyone, [](const NativeRequest&) {
      return NativeResponse{200, std::string(size_t{4} << 20, 'x'), "text/plain"};
    });
    server_->AddRoute("GET", "/v1/stream", kForAnyone, [](const NativeRequest&) {
      NativeResponse r;
      r.content_type = "text/plain";
      r.stream = [](const StreamWriter& write) {
        for (int i = 0; i < 100; ++i) write("chunk " + std::to_string(i) + "\n");
      };
      return r;
    });
    auto port = server_->Start(host, 0);
    ASSERT_TRUE(port.has_value()) << port.error().message;
    port_ = *port;
    url_ = "https://127.0.0.1:" + std::to_string(port_);
  }
  protocol::SignedClient Client(protocol::ServerTrust trust) const {
    return protocol::SignedClient(url_, {}, std::move(trust));
  }

  fs::path dir_;
  std::shared_ptr<const TlsContext> tls_;
  aws::Credentials creds_;
  MetricsRegistry metrics_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::string url_;
  std::atomic<int> posts_{0};
};

TEST_F(TlsTest, TheListenerNegotiatesTls13AndHttp11AndServesRequests) {
  Start();
  RawTlsClient c(port_);
  ASSERT_TRUE(c.Handshake());
  EXPECT_EQ(c.Version(), "TLSv1.3");
  EXPECT_EQ(c.Alpn(), "http/1.1");
  // Two requests in one write: pipelined, answered in order on the one connection.
  c.Send(
      "GET /ping HTTP/1.1\r\nHost: x\r\n\r\nPOST /v1/echo HTTP/1.1\r\nHost: x\r\n"
      "Content-Length: 5\r\n\r\nhello");
  const std::string got = c.ReadUntil("\r\n\r\n5");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
  EXPECT_NE(got.find("\r\n\r\n5"), std::string::npos) << got;
}

TEST_F(TlsTest, Tls12IsTheOldestVersionServed) {
  Start();
  RawTlsClient tls12(port_, TLS1_2_VERSION);
  ASSERT_TRUE(tls12.Handshake());
  EXPECT_EQ(tls12.Version(), "TLSv1.2");
  RawTlsClient tls11(port_, TLS1_1_VERSION);
  EXPECT_FALSE(tls11.Handshake());
}

TEST_F(TlsTest, AClientThatOffersOnlyOtherProtocolsIsRefusedInTheHandshake) {
  Start();
  RawTlsClient h2(port_, 0, "h2");
  EXPECT_FALSE(h2.Handshake());
  RawTlsClient none(port_, 0, "");  // No ALPN at all: HTTP/1.1 is assumed.
  EXPECT_TRUE(none.Handshake());
}

TEST_F(TlsTest, PlainHttpToTheTlsPortGetsAPlain400SayingHttps) {
  Start();
  const int fd = Connect(port_);
  ASSERT_EQ(::write(fd, "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n", 31), 31);
  auto [got, closed] = ReadToClose(fd, 5s);
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got;
  EXPECT_NE(got.find("this port speaks HTTPS only"), std::string::npos) << got;
}

TEST_F(TlsTest, AConnectionThatNeverStartsItsHandshakeIsClosedAtTheHeaderDeadline) {
  HttpServerOptions o;
  o.header_timeout = 300ms;
  Start(o);
  const int fd = Connect(port_);
  const auto began = std::chrono::steady_clock::now();
  auto [got, closed] = ReadToClose(fd, 5s);
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
}

// A handshake record announced and never finished (a slowloris on the handshake) holds the
// connection no longer than the header deadline.
TEST_F(TlsTest, AHandshakeThatStallsHalfwayIsClosedAtTheHeaderDeadline) {
  HttpServerOptions o;
  o.header_timeout = 300ms;
  Start(o);
  const int fd = Connect(port_);
  const unsigned char partial[] = {22, 3, 1, 2, 0, 1, 0};  // 512 bytes promised, 2 sent.
  ASSERT_EQ(::write(fd, partial, sizeof partial), static_cast<ssize_t>(sizeof partial));
  const auto began = std::chrono::steady_clock::now();
  auto [got, closed] = ReadToClose(fd, 5s);
  ::close(fd);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(got.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
}

TEST_F(TlsTest, ABodyThatStopsComingIsClosedAtTheBodyDeadline) {
  HttpServerOptions o;
  o.body_timeout = 300ms;
  Start(o);
  RawTlsClient c(port_);
  ASSERT_TRUE(c.Handshake());
  c.Send("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc");
  const auto began = std::chrono::steady_clock::now();
  EXPECT_EQ(c.ReadUntil("never"), "");
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
  EXPECT_EQ(posts_, 0);
}

TEST_F(TlsTest, AnIdleConnectionIsClosedAfterTheKeepAliveTimeout) {
  HttpServerOptions o;
  o.keep_alive_timeout = 300ms;
  Start(o);
  RawTlsClient c(port_);
  ASSERT_TRUE(c.Handshake());
  c.Send("GET /ping HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(c.ReadUntil("\r\n\r\n").rfind("HTTP/1.1 200 ", 0), 0u);
  const auto began = std::chrono::steady_clock::now();
  c.ReadUntil("never");  // Returns when the server closes.
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
}

TEST_F(TlsTest, ABodyOverTheLimitGets413) {
  HttpServerOptions o;
  o.max_body_bytes = 1000;
  Start(o);
  RawTlsClient c(port_);
  ASSERT_TRUE(c.Handshake());
  c.Send("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" +
         std::string(5000, 'a'));
  const std::string got = c.ReadUntil("}");
  EXPECT_EQ(got.rfind("HTTP/1.1 413 ", 0), 0u) << got;
  EXPECT_EQ(posts_, 0);
}

TEST_F(TlsTest, ExpectContinueGetsItsInterim100) {
  Start();
  RawTlsClient c(port_);
  ASSERT_TRUE(c.Handshake());
  c.Send("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(c.ReadUntil("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  c.Send("abc");
  const std::string got = c.ReadUntil("\r\n\r\n3");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
}

// Past the cap a TLS client is closed before any handshake: a plain 503 would be noise to it,
// and the handshake is the cost the cap saves.
TEST_F(TlsTest, OverTheConnectionCapTheNextConnectionIsClosedAndCounted) {
  HttpServerOptions o;
  o.max_connections = 2;
  Start(o);
  RawTlsClient a(port_);
  RawTlsClient b(port_);
  ASSERT_TRUE(a.Handshake());
  ASSERT_TRUE(b.Handshake());
  RawTlsClient c(port_);
  EXPECT_FALSE(c.Handshake());
  EXPECT_NE(
      metrics_.Expose().find("carve_http_connections_refused_total{reason=\"max_connections\"} 1"),
      std::string::npos);
}

TEST_F(TlsTest, LargeBodiesAndStreamedAnswersCrossIntact) {
  Start();
  auto pin = protocol::PemCertificatePin(std::string(
      std::istreambuf_iterator<char>(*std::make_unique<std::ifstream>(dir_ / "cert.pem")), {}));
  ASSERT_TRUE(pin.has_value());
  protocol::SignedClient client = Client({.pins = {*pin}});
  auto big = client.Send("GET", "/v1/big", "");
  ASSERT_TRUE(big.has_value()) << big.error().message;
  EXPECT_EQ(big->body.size(), size_t{4} << 20);
  auto echo = client.Send("POST", "/v1/echo", std::string(size_t{3} << 20, 'y'));
  ASSERT_TRUE(echo.has_value()) << echo.error().message;
  EXPECT_EQ(echo->body, std::to_string(size_t{3} << 20));
  auto streamed = client.Send("GET", "/v1/stream", "");
  ASSERT_TRUE(streamed.has_value()) << streamed.error().message;
  EXPECT_EQ(streamed->body.rfind("chunk 0\n", 0), 0u);
  EXPECT_NE(streamed->body.find("chunk 99\n"), std::string::npos);
}

TEST_F(TlsTest, TheClientTrustsThePinnedKeyWhateverTheNameItDialled) {
  Start({}, "0.0.0.0");
  protocol::SignedClient client = Client({.pins = {tls_->pin()}});
  auto r = client.Send("POST", "/v1/echo", "abc");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->body, "3");
  // The certificate names 127.0.0.1 and localhost only; a pin does not care.
  auto other = protocol::SignedClient("https://127.0.0.2:" + std::to_string(port_), {},
                                      {.pins = {tls_->pin()}});
  EXPECT_TRUE(other.Send("GET", "/ping", "").has_value());
}

TEST_F(TlsTest, AnotherKeyIsRefusedInTheHandshakeNamingBothPinsAndNothingIsSent) {
  Start();
  const std::string wanted = "sha256:" + std::string(64, '0');
  protocol::SignedClient client = Client({.pins = {wanted}});
  auto r = client.Send("POST", "/v1/echo", "secret token");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("has pin " + tls_->pin()), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("not the expected " + wanted), std::string::npos);
  EXPECT_NE(r.error().message.find("refused before sending anything"), std::string::npos);
  EXPECT_EQ(posts_, 0);
}

TEST_F(TlsTest, TheClientTrustsTheCaFileForTheNamesItHolds) {
  Start({}, "0.0.0.0");
  protocol::SignedClient client = Client({.ca_file = (dir_ / "cert.pem").string()});
  auto r = client.Send("POST", "/v1/echo", "abc");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  // A name the certificate does not hold is refused, and so is a server no CA given vouches for.
  auto wrong_name = protocol::SignedClient("https://127.0.0.2:" + std::to_string(port_), {},
                                           {.ca_file = (dir_ / "cert.pem").string()})
                        .Send("POST", "/v1/echo", "abc");
  ASSERT_FALSE(wrong_name.has_value());
  EXPECT_EQ(wrong_name.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(wrong_name.error().message.find("not trusted"), std::string::npos)
      << wrong_name.error().message;
  auto system = Client({}).Send("POST", "/v1/echo", "abc");
  ASSERT_FALSE(system.has_value());
  EXPECT_EQ(system.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(system.error().message.find("the system's"), std::string::npos)
      << system.error().message;
  EXPECT_EQ(posts_, 1);
}

TEST_F(TlsTest, AKeyThatIsNotTheCertificatesIsRefusedAtLoad) {
  const fs::path other = dir_ / "other";
  fs::create_directories(other);
  WriteCertificate(other, "other");
  auto tls = TlsContext::Load((dir_ / "cert.pem").string(), (other / "key.pem").string());
  ASSERT_FALSE(tls.has_value());
  EXPECT_EQ(tls.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(tls.error().message.find("does not belong to the certificate"), std::string::npos)
      << tls.error().message;
}

}  // namespace
}  // namespace carve::http
