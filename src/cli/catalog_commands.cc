#include "cli/commands.h"

namespace carve::cli {

void RegisterCatalogCommands(CLI::App& /*app*/, Context& /*ctx*/) {}

}  // namespace carve::cli
