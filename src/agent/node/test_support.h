// Helpers shared by the node agent's tests: temp dirs, polling with a deadline, desired
// workloads running /bin/sh scripts, and a tiny python3 /ping server script.
#pragma once

#include <signal.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "protocol/agent_protocol.h"

namespace carve::agent::node::testing {

inline std::string TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "carve-node-XXXXXX").string();
  return ::mkdtemp(tmpl.data());
}

// Polls `done` every 10 ms until it is true or `limit` passes.
template <typename F>
bool Eventually(F done, std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

inline bool ProcessExists(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A copy that writes its environment to `env_file` and then sleeps.
inline protocol::WorkloadDesired ShellCopy(const std::string& id, const std::string& script) {
  protocol::WorkloadDesired w;
  w.id = id;
  w.kind = protocol::WorkloadKind::kCopy;
  w.name = "ic-test";
  w.index = 0;
  w.command = {"/bin/sh", "-c", script};
  w.health_check = false;
  return w;
}

// python3 HTTP server on {port}: GET /ping answers 200, or 503 while <dir>/sick exists.
inline std::string WritePingServer(const std::string& dir) {
  const std::string path = dir + "/ping_server.py";
  std::ofstream(path) << R"(import http.server, os, sys
sick = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 503 if os.path.exists(sick) else 200
        self.send_response(code); self.send_header('Content-Length', '0'); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
)";
  return path;
}

}  // namespace carve::agent::node::testing
