#include "interposer/symbol_variant.h"

namespace carve::interposer {

std::optional<std::string_view> SelectVariant(std::span<const SymbolVariant> rows,
                                              std::string_view base, int version, bool per_thread) {
  const SymbolVariant* plain = nullptr;
  const SymbolVariant* threaded = nullptr;
  for (const SymbolVariant& row : rows) {
    if (row.base != base || row.since_version > version) continue;
    const SymbolVariant*& best = row.per_thread ? threaded : plain;
    if (best == nullptr || row.since_version > best->since_version) best = &row;
  }
  if (per_thread && threaded != nullptr) return threaded->exported;
  if (plain != nullptr) return plain->exported;
  return std::nullopt;
}

}  // namespace carve::interposer
