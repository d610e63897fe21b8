// Real etcd members for tests: Debian's `etcd` binary on free loopback ports with data under a
// temporary directory, each started as a child that dies with the test (PR_SET_PDEATHSIG).
// Members fsync as in production; elections are tuned short (50 ms heartbeats, 500 ms election
// timeout) so failover tests finish quickly.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace carve::store {

// A TCP port on 127.0.0.1 that nothing listened on a moment ago.
inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return -1;
  }
  close(fd);
  return ntohs(a.sin_port);
}

// A CA, a certificate for 127.0.0.1 signed by it, and a client certificate, made with the
// openssl command under `dir`, for members that serve TLS and require client certificates.
struct EtcdTestCerts {
  std::string ca, server_cert, server_key, client_cert, client_key;
  bool ok = false;
};

inline EtcdTestCerts MakeEtcdTestCerts(const std::filesystem::path& dir) {
  const std::string d = dir.string();
  EtcdTestCerts c{d + "/ca.crt", d + "/server.crt", d + "/server.key", d + "/client.crt",
                  d + "/client.key"};
  {
    std::ofstream script(d + "/make-certs.sh");
    script << "set -e\ncd '" << d << "'\n"
           << "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 "
              "-subj /CN=carve-test-ca\n"
           << "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n'"
              " > ext\n"
           << "for n in server client; do\n"
           << "  openssl req -newkey rsa:2048 -nodes -keyout $n.key -out $n.csr "
              "-subj /CN=carve-test-$n\n"
           << "  openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $n.crt "
              "-days 1 -extfile ext\n"
           << "done\n";
  }
  c.ok =
      std::system(("bash '" + d + "/make-certs.sh' > '" + d + "/openssl.log' 2>&1").c_str()) == 0;
  return c;
}

class EtcdCluster {
 public:
  // Starts `members` members under `dir` and waits until every one reports healthy. With
  // `certs`, clients reach them over TLS and must present a certificate the CA signed.
  // `extra_args` go to every member (e.g. a small --quota-backend-bytes).
  EtcdCluster(std::filesystem::path dir, int members, const EtcdTestCerts* certs = nullptr,
              std::vector<std::string> extra_args = {})
      : dir_(std::move(dir)), certs_(certs), extra_args_(std::move(extra_args)) {
    std::string initial;
    for (int i = 0; i < members; ++i) {
      Member m;
      m.name = "m" + std::to_string(i);
      m.client_port = FreeLoopbackPort();
      m.peer_port = FreeLoopbackPort();
      initial += (initial.empty() ? "" : ",") + m.name +
                 "=http://127.0.0.1:" + std::to_string(m.peer_port);
      members_.push_back(m);
    }
    initial_cluster_ = initial;
    for (int i = 0; i < members; ++i) Launch(i);
    for (int i = 0; i < members; ++i) EXPECT_TRUE(AwaitHealthy(i)) << "etcd member " << i;
  }
  ~EtcdCluster() {
    for (int i = 0; i < static_cast<int>(members_.size()); ++i) Kill(i);
  }
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  int size() const { return static_cast<int>(members_.size()); }
  std::string endpoint(int i) const {
    return "127.0.0.1:" + std::to_string(members_[static_cast<size_t>(i)].client_port);
  }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (int i = 0; i < size(); ++i) out.push_back(endpoint(i));
    return out;
  }
  // etcd://m0,m1,...PREFIX
  std::string url(const std::string& prefix = "/carve") const {
    std::string u = "etcd://";
    for (int i = 0; i < size(); ++i) u += (i ? "," : "") + endpoint(i);
    return u + prefix;
  }
  pid_t pid(int i) const { return members_[static_cast<size_t>(i)].pid; }

  // The index of the member that leads the raft group now, or -1 when none answers as leader.
  int Leader() const {
    for (int i = 0; i < size(); ++i) {
      if (members_[static_cast<size_t>(i)].pid <= 0) continue;
      httplib::Client c("http://" + endpoint(i));
      c.set_connection_timeout(0, 300'000);
      auto r = c.Post("/v3/maintenance/status", "{}", "application/json");
      if (!r || r->status != 200) continue;
      // {"header":{"member_id":"X",...},...,"leader":"X"}: this member leads when they match.
      auto field = [&](const std::string& name) {
        const size_t at = r->body.find("\"" + name + "\":\"");
        if (at == std::string::npos) return std::string();
        const size_t from = at + name.size() + 4;
        return r->body.substr(from, r->body.find('"', from) - from);
      };
      if (!field("leader").empty() && field("leader") == field("member_id")) return i;
    }
    return -1;
  }
  // etcd://LEADER,OTHERS...PREFIX: a client that starts on the leader.
  std::string url_leader_first(int leader, const std::string& prefix) const {
    std::string u = "etcd://" + endpoint(leader);
    for (int i = 0; i < size(); ++i) {
      if (i != leader) u += "," + endpoint(i);
    }
    return u + prefix;
  }

  // SIGKILL, then reap.
  void Kill(int i) {
    Member& m = members_[static_cast<size_t>(i)];
    if (m.pid <= 0) return;
    ::kill(m.pid, SIGKILL);
    waitpid(m.pid, nullptr, 0);
    m.pid = -1;
  }
  // Starts a killed member again from its data directory.
  bool Restart(int i) {
    Launch(i);
    return AwaitHealthy(i);
  }
  bool AwaitHealthy(int i, std::chrono::seconds timeout = std::chrono::seconds(20)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_ptr<httplib::Client> c =
        certs_ == nullptr ? std::make_unique<httplib::Client>("http://" + endpoint(i))
                          : std::make_unique<httplib::Client>(
                                "https://" + endpoint(i), certs_->client_cert, certs_->client_key);
    if (certs_ != nullptr) c->set_ca_cert_path(certs_->ca);
    c->set_connection_timeout(0, 200'000);
    c->set_read_timeout(1, 0);
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = c->Get("/health");
      if (r && r->status == 200 && r->body.find("\"true\"") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    pid_t pid = -1;
  };

  void Launch(int i) {
    Member& m = members_[static_cast<size_t>(i)];
    const std::string client = (certs_ != nullptr ? "https" : "http") +
                               std::string("://127.0.0.1:") + std::to_string(m.client_port);
    const std::string peer = "http://127.0.0.1:" + std::to_string(m.peer_port);
    const std::string data = (dir_ / m.name).string();
    const std::string log = (dir_ / (m.name + ".log")).string();
    std::vector<std::string> args = {"etcd",
                                     "--name=" + m.name,
                                     "--data-dir=" + data,
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + peer,
                                     "--initial-advertise-peer-urls=" + peer,
                                     "--initial-cluster=" + initial_cluster_,
                                     "--initial-cluster-state=new",
                                     "--initial-cluster-token=carve-test",
                                     "--heartbeat-interval=50",
                                     "--election-timeout=500",
                                     "--auto-compaction-mode=revision",
                                     "--auto-compaction-retention=100000",
                                     "--logger=zap",
                                     "--log-level=warn"};
    if (certs_ != nullptr) {
      for (std::string a :
           {"--cert-file=" + certs_->server_cert, "--key-file=" + certs_->server_key,
            std::string("--client-cert-auth"), "--trusted-ca-file=" + certs_->ca}) {
        args.push_back(std::move(a));
      }
    }
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      FILE* out = fopen(log.c_str(), "a");
      if (out != nullptr) {
        dup2(fileno(out), STDOUT_FILENO);
        dup2(fileno(out), STDERR_FILENO);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp("etcd", argv.data());
      _exit(127);
    }
    m.pid = pid;
  }

  std::filesystem::path dir_;
  const EtcdTestCerts* certs_ = nullptr;  // Must outlive the cluster.
  std::vector<std::string> extra_args_;
  std::string initial_cluster_;
  std::vector<Member> members_;
};

}  // namespace carve::store
