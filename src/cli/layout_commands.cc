#include "cli/commands.h"

namespace carve::cli {

void RegisterLayoutCommands(CLI::App& /*app*/, Context& /*ctx*/) {}

}  // namespace carve::cli
