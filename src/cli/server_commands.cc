#include "cli/commands.h"

namespace carve::cli {

void RegisterServerCommands(CLI::App& /*app*/, Context& /*ctx*/) {}

}  // namespace carve::cli
