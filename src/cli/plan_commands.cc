#include "cli/commands.h"

namespace carve::cli {

void RegisterPlanCommands(CLI::App& /*app*/, Context& /*ctx*/) {}

}  // namespace carve::cli
