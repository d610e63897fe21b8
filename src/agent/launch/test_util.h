// Helpers shared by the launch tests: temp dirs and requests for /bin/sh scripts.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "agent/launch/launcher.h"

namespace carve::launch::testing {

inline std::string TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "carve-launch-XXXXXX").string();
  return ::mkdtemp(tmpl.data());
}

inline LaunchRequest Shell(const std::string& dir, const std::string& script) {
  LaunchRequest r;
  r.argv = {"/bin/sh", "-c", script};
  r.env = {{"PATH", "/usr/bin:/bin"}};
  r.stdout_path = dir + "/out.log";
  r.stderr_path = dir + "/err.log";
  return r;
}

// Polls `done` every 5 ms until it is true or 10 s pass.
template <typename F>
bool Eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace carve::launch::testing
