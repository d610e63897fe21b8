// How an mGPU queue enforces its shares: carve's interposer (default), NVIDIA MPS, or not at all
// ("none", which a queue must ask for: the share is placed and accounted, and the worker gets its
// limits as CARVE_MGPU_* variables only).
#pragma once

#include <string_view>

#include "common/result.h"

namespace carve::agent::mps {

enum class Enforcement {
  kInterposer,  // libcarve-mgpu.so: exact memory quota, time-share limiter (the default)
  kMps,         // NVIDIA MPS: active-thread percentage and pinned device-memory limit
  kNone,        // unenforced: the limits travel as environment variables only
};

// "interposer", "mps" or "none"; an empty string means the default (interposer). InvalidArgument
// naming the value and the accepted ones otherwise.
Result<Enforcement> ParseEnforcement(std::string_view text);
std::string_view EnforcementName(Enforcement e);

}  // namespace carve::agent::mps
