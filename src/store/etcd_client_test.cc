// EtcdClient against real etcd members: URL parsing, failover between members, what it resends
// and what it reports as an unknown outcome, leases, and the gateway's errors.
#include "store/etcd_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <thread>
#include <vector>

#include "common/base64.h"
#include "store/etcd_json.h"
#include "store/store_test_env.h"

namespace carve::store {
namespace {

using json = nlohmann::json;

TEST(EtcdUrl, ParsesMembersAndPrefix) {
  auto u = ParseEtcdUrl("etcd://10.0.0.1:2379,etcd-b:2379/prod/carve/");
  ASSERT_TRUE(u.has_value()) << u.error().message;
  EXPECT_EQ(u->endpoints, (std::vector<std::string>{"10.0.0.1:2379", "etcd-b:2379"}));
  EXPECT_EQ(u->prefix, "/prod/carve");
  EXPECT_EQ(ParseEtcdUrl("etcd://h:1")->prefix, "/carve");
  EXPECT_FALSE(ParseEtcdUrl("etcd://h:1")->tls);
  EXPECT_TRUE(ParseEtcdUrl("etcds://h:1")->tls);
}

TEST(EtcdUrl, RefusesWhatIsNotAMemberListNamingThePart) {
  for (const char* bad : {"http://h:2379", "etcd://", "etcd://h", "etcd://h:0", "etcd://h:99999",
                          "etcd://h:23a", "etcd://:2379", "etcd://h:1,/x", "etcd://h:1/"}) {
    auto u = ParseEtcdUrl(bad);
    ASSERT_FALSE(u.has_value()) << bad;
    EXPECT_EQ(u.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(u.error().message.find(bad), std::string::npos) << u.error().message;
  }
}

TEST(EtcdPrefixEnd, IncrementsTheLastByteThatCan) {
  EXPECT_EQ(PrefixEnd("/carve/"), "/carve0");
  EXPECT_EQ(PrefixEnd("a\xff"), "b");
  EXPECT_EQ(PrefixEnd("\xff\xff"), std::string(1, '\0'));
}

EtcdClient ClientOf(std::vector<std::string> endpoints,
                    std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return EtcdClient({.endpoints = std::move(endpoints), .request_timeout = timeout});
}

json PutTxn(const std::string& key, const std::string& value) {
  return {{"compare", json::array()},
          {"success",
           {{{"request_put", {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}}}}}}};
}

TEST(EtcdClient, MovesToTheNextMemberWhenOneRefusesConnections) {
  const std::string dead = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  EtcdClient client = ClientOf({dead, SharedEtcd().endpoint(0)});
  // A write that could not connect never left, so it is sent on to the next member.
  EtcdReply put = client.Call("kv/txn", PutTxn("/client/failover", "x"), EtcdCall::kWrite);
  ASSERT_TRUE(put.body.has_value()) << put.body.error().message;
  EXPECT_TRUE(put.body->value("succeeded", false));
  EXPECT_EQ(client.current_endpoint(), SharedEtcd().endpoint(0));
  auto got = client.Read("kv/range", {{"key", Base64Encode("/client/failover")}});
  ASSERT_TRUE(got.has_value()) << got.error().message;
  EXPECT_EQ(JsonBytes(got->at("kvs").at(0), "value"), "x");
}

TEST(EtcdClient, NoMemberAnsweringIsUnavailableNamingTheMembers) {
  const std::string dead = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  EtcdClient client = ClientOf({dead}, std::chrono::milliseconds(300));
  auto r = client.Read("kv/range", {{"key", Base64Encode("k")}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find(dead), std::string::npos) << r.error().message;
  // And what went wrong with the last one tried.
  EXPECT_NE(r.error().message.find("(last: " + dead + ": Connection)"), std::string::npos)
      << r.error().message;
}

// A member that answers every request at once with `status` and `body` (by default, 200 and an
// empty JSON object), and records the client port each request came from: requests on one
// kept-alive connection share it.
class RecordingMember {
 public:
  explicit RecordingMember(int status = 200, std::string body = "{}") {
    server_.Post(".*", [this, status, body](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ports_.push_back(req.remote_port);
      res.status = status;
      res.set_content(body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~RecordingMember() {
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  std::vector<int> ports() {
    std::lock_guard lock(mu_);
    return ports_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<int> ports_;  // Guarded by mu_.
};

// The gateway's error answers carry a gRPC code; each maps to the carve code the callers act on.
TEST(EtcdClient, EachGrpcCodeOfAGatewayErrorMapsToItsCarveCode) {
  struct Case {
    int grpc;
    std::string message;
    ErrorCode want;
    std::string says;
  };
  const Case cases[] = {
      {5, "requested lease not found", ErrorCode::kNotFound, ""},
      {9, "etcdserver: a precondition failed", ErrorCode::kFailedPrecondition, ""},
      {11, "etcdserver: mvcc: required revision has been compacted", ErrorCode::kFailedPrecondition,
       ""},
      {7, "etcdserver: permission denied", ErrorCode::kFailedPrecondition, "client certificate"},
      {16, "etcdserver: invalid auth token", ErrorCode::kFailedPrecondition, "client certificate"},
      {8, "etcdserver: mvcc: database space exceeded", ErrorCode::kUnavailable, "NOSPACE"},
      {8, "grpc: received message larger than max", ErrorCode::kInvalidArgument, ""},
      {3, "etcdserver: duplicate key given in txn request", ErrorCode::kInvalidArgument,
       "(HTTP 400)"},
  };
  for (const Case& c : cases) {
    RecordingMember member(400, json{{"code", c.grpc}, {"message", c.message}}.dump());
    EtcdClient client = ClientOf({member.endpoint()});
    auto r = client.Read("kv/range", {{"key", Base64Encode("k")}});
    ASSERT_FALSE(r.has_value()) << c.grpc;
    EXPECT_EQ(r.error().code, c.want) << c.grpc << ": " << r.error().message;
    EXPECT_NE(r.error().message.find("etcd kv/range: " + c.message), std::string::npos)
        << r.error().message;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
}

// A member answering 5xx (no leader, shutting down) may not serve now while another can: a read
// is asked of the next member, a write is not resent (it may have been proposed).
TEST(EtcdClient, AServerErrorOfOneMemberIsTransient) {
  RecordingMember sick(503, json{{"code", 14}, {"message", "etcdserver: leader changed"}}.dump());
  RecordingMember well;
  EtcdClient client = ClientOf({sick.endpoint(), well.endpoint()});
  auto r = client.Read("kv/range", {{"key", Base64Encode("k")}});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(client.current_endpoint(), well.endpoint());
  EtcdClient writer = ClientOf({sick.endpoint(), well.endpoint()});
  EtcdReply put = writer.Call("kv/txn", PutTxn("k", "v"), EtcdCall::kWrite);
  ASSERT_FALSE(put.body.has_value());
  EXPECT_EQ(put.body.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(put.outcome_unknown);
  EXPECT_EQ(well.ports().size(), 1u);  // Only the read reached it.
}

TEST(EtcdClient, KeepsItsConnectionToAMemberForTheNextCall) {
  RecordingMember member;
  EtcdClient client = ClientOf({member.endpoint()});
  for (int i = 0; i < 3; ++i) {
    auto r = client.Read("kv/range", {{"key", Base64Encode("k")}});
    ASSERT_TRUE(r.has_value()) << r.error().message;
  }
  const std::vector<int> ports = member.ports();
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[1], ports[0]);
  EXPECT_EQ(ports[2], ports[0]);
}

// A member that takes requests and answers too late, as one does while it loses its leader.
class SlowMember {
 public:
  SlowMember() {
    server_.Post(".*", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~SlowMember() {
    server_.stop();
    thread_.join();
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(EtcdClient, AWriteThatTimedOutAfterSendingHasAnUnknownOutcomeAndIsNotResent) {
  SlowMember slow;
  EtcdClient client =
      ClientOf({slow.endpoint(), SharedEtcd().endpoint(0)}, std::chrono::milliseconds(200));
  EtcdReply put = client.Call("kv/txn", PutTxn("/client/unknown", "x"), EtcdCall::kWrite);
  ASSERT_FALSE(put.body.has_value());
  EXPECT_TRUE(put.outcome_unknown);
  EXPECT_EQ(put.body.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(put.body.error().message.find("may have been applied"), std::string::npos);
  EXPECT_NE(put.body.error().message.find("at " + slow.endpoint() + ": "), std::string::npos)
      << put.body.error().message;
  // It was not resent to the real member.
  EtcdClient direct = ClientOf({SharedEtcd().endpoint(0)});
  auto got = direct.Read("kv/range", {{"key", Base64Encode("/client/unknown")}});
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->contains("kvs"));
}

TEST(EtcdClient, AReadThatTimedOutIsAskedOfTheNextMember) {
  SlowMember slow;
  // The slow member uses up the whole budget; the next one still gets its try.
  EtcdClient client =
      ClientOf({slow.endpoint(), SharedEtcd().endpoint(0)}, std::chrono::milliseconds(300));
  auto r = client.Read("kv/range", {{"key", Base64Encode("/client/none")}});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(client.current_endpoint(), SharedEtcd().endpoint(0));
}

TEST(EtcdClient, LeasesAreGrantedKeptAliveAndRevoked) {
  EtcdClient client = ClientOf(SharedEtcd().endpoints());
  auto lease = client.LeaseGrant(std::chrono::seconds(5));
  ASSERT_TRUE(lease.has_value()) << lease.error().message;
  auto ttl = client.LeaseKeepAlive(*lease);
  ASSERT_TRUE(ttl.has_value()) << ttl.error().message;
  EXPECT_GT(*ttl, 0);
  EXPECT_LE(*ttl, 5);
  ASSERT_TRUE(client.LeaseRevoke(*lease).ok());
  auto gone = client.LeaseKeepAlive(*lease);
  ASSERT_FALSE(gone.has_value());
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(client.LeaseRevoke(*lease).ok());  // Already gone is fine.
}

TEST(EtcdClient, GatewayErrorsKeepEtcdsWordsAndCode) {
  EtcdClient client = ClientOf(SharedEtcd().endpoints());
  // A put with a lease that does not exist: etcd's NotFound.
  EtcdReply r = client.Call(
      "kv/put", {{"key", Base64Encode("/client/l")}, {"value", "eA=="}, {"lease", "12345"}},
      EtcdCall::kWrite);
  ASSERT_FALSE(r.body.has_value());
  EXPECT_FALSE(r.outcome_unknown);  // A refusal, not a lost answer.
  EXPECT_EQ(r.body.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.body.error().message.find("requested lease not found"), std::string::npos);
  // The same key twice in one Txn: InvalidArgument.
  json twice = PutTxn("/client/d", "1");
  twice["success"].push_back(twice["success"][0]);
  EtcdReply dup = client.Call("kv/txn", twice, EtcdCall::kWrite);
  ASSERT_FALSE(dup.body.has_value());
  EXPECT_EQ(dup.body.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(dup.body.error().message.find("duplicate key"), std::string::npos);
}

// A member that serves TLS and requires client certificates: carve connects with its
// certificate and the CA, and without the certificate etcd refuses it.
TEST(EtcdClient, TalksTlsWithAClientCertificate) {
  TempDir dir;
  const EtcdTestCerts certs = MakeEtcdTestCerts(dir.path());
  ASSERT_TRUE(certs.ok) << "openssl failed; see " << dir.path() / "openssl.log";
  EtcdCluster etcd(dir.path(), 1, &certs);
  auto store = EtcdStore::OpenUrl(
      "etcds://" + etcd.endpoint(0) + "/tls", {},
      {.ca_file = certs.ca, .cert_file = certs.client_cert, .key_file = certs.client_key});
  ASSERT_TRUE(store.has_value()) << store.error().message;
  ASSERT_TRUE((*store)->Create(K("Model", "over-tls"), "{}").has_value());
  EXPECT_TRUE((*store)->client().Health(etcd.endpoint(0)).ok());
  auto members = (*store)->client().MemberList();
  ASSERT_TRUE(members.has_value());
  EXPECT_EQ(members->front().client_urls.front(), "https://" + etcd.endpoint(0));

  EtcdClient no_cert({.endpoints = {etcd.endpoint(0)},
                      .request_timeout = std::chrono::milliseconds(1000),
                      .tls = {.enabled = true, .ca_file = certs.ca}});
  auto refused = no_cert.Read("kv/range", {{"key", Base64Encode("/tls/")}});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  // A plain etcd:// URL with certificates is a mistake, said before anything connects.
  auto mixed = EtcdStore::OpenUrl("etcd://" + etcd.endpoint(0), {}, {.ca_file = certs.ca});
  ASSERT_FALSE(mixed.has_value());
  EXPECT_NE(mixed.error().message.find("etcds://"), std::string::npos);
}

TEST(EtcdClient, ListsMembersAndTheirHealth) {
  EtcdClient client = ClientOf(SharedEtcd().endpoints());
  auto members = client.MemberList();
  ASSERT_TRUE(members.has_value()) << members.error().message;
  ASSERT_EQ(members->size(), 1u);
  EXPECT_EQ(members->front().name, "m0");
  EXPECT_EQ(members->front().client_urls,
            (std::vector<std::string>{"http://" + SharedEtcd().endpoint(0)}));
  EXPECT_NE(members->front().id, 0u);
  EXPECT_TRUE(client.Health(SharedEtcd().endpoint(0)).ok());
  const std::string dead = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  EXPECT_EQ(client.Health(dead).error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace carve::store
