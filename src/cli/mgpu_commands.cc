#include "cli/commands.h"

namespace carve::cli {

void RegisterMgpuCommands(CLI::App& /*app*/, Context& /*ctx*/) {}

}  // namespace carve::cli
