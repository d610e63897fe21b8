// Plain-text tables for the `carve` commands: left-aligned columns, two spaces apart.
#pragma once

#include <string>
#include <vector>

namespace carve::cli {

// Prints `rows` to stdout with every column but the last padded to its widest cell; a line
// carries no trailing spaces.
void PrintTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace carve::cli
