// The tenant sandbox's uid ranges and port guard flags, which `carve server` (for its embedded
// agents) and `carve agent` take alike. docs/security.md, "Sandbox".
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace carve::cli {

// --sandbox-uid-base, --sandbox-uid-count, --sandbox-container-uid-base and --sandbox-network
// (env CARVE_SANDBOX_NETWORK), each checked for its range or values, bound to the variables
// given, which hold the defaults.
void AddSandboxRangeFlags(CLI::App* cmd, uint32_t& uid_base, uint32_t& uid_count,
                          uint32_t& container_uid_base, std::string& network);

}  // namespace carve::cli
