// Starts and stops the NVIDIA MPS control daemon of one shared card
// (`nvidia-cuda-mps-control -d`, and `echo quit | nvidia-cuda-mps-control`).
//
// The binary path is injected so tests run a stand-in. Start is idempotent: a daemon whose pid
// file (CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid) names a live process is left alone.
// Thread-compatible: one MpsControl per agent, calls serialized by the caller.
#pragma once

#include <chrono>
#include <string>

#include "agent/mps/mps_env.h"
#include "common/result.h"

namespace carve::agent::mps {

inline constexpr const char* kDefaultMpsControlPath = "/usr/bin/nvidia-cuda-mps-control";

class MpsControl {
 public:
  explicit MpsControl(std::string binary_path = kDefaultMpsControlPath,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : binary_(std::move(binary_path)), timeout_(timeout) {}

  // FailedPrecondition (naming the path and the alternative) when the binary does not exist or
  // is not executable; Internal when it fails or does not return within the timeout.
  Status Start(const MpsDirs& dirs, const std::string& gpu_uuid);
  // Sends "quit" to the daemon of `dirs`. OK when none is running.
  Status Stop(const MpsDirs& dirs, const std::string& gpu_uuid);
  bool Running(const MpsDirs& dirs) const;

 private:
  Status CheckBinary() const;
  // Runs the binary with `args`, the daemon environment and `stdin_text`; waits for exit.
  Status Run(const MpsDirs& dirs, const std::string& gpu_uuid, const char* arg,
             const std::string& stdin_text);

  std::string binary_;
  std::chrono::milliseconds timeout_;
};

}  // namespace carve::agent::mps
