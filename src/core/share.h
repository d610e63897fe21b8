// mGPU shares: how much of a GPU card one worker may use, and the rules a share must follow.
//
// The rules are exactly those of the EMR Serverless mGPU text (shared/seeds/000_*.txt):
//   - a share is a core percentage plus a memory quota on one card, or N whole cards;
//   - a fraction of one card has an integer core of 5..100;
//   - at 100 or above only whole multiples of 100 are allowed (200 = two full cards);
//   - memory is at least 256 MiB, and cannot be set when core is 100 or above;
//   - a card holds at most 16 mGPU workers (enforced by placement, see placement.h).
// Shares are exact integers (core percent, MiB), never floating point.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace carve::core {

inline constexpr int kMinCorePercent = 5;
inline constexpr int kFullCardCorePercent = 100;
inline constexpr int64_t kMinShareMemoryMib = 256;
inline constexpr int kMaxWorkersPerCard = 16;
// Sanity bounds so that sums stay far from overflow; no real card or node comes near them.
inline constexpr int kMaxCorePercent = 100 * 1024;
inline constexpr int64_t kMaxShareMemoryMib = int64_t{1} << 30;

// A validated share. Construct through ValidateShare; the fields are then guaranteed to follow
// the rules above.
struct MgpuShare {
  int core_percent = kFullCardCorePercent;
  // Memory quota on the card; unset means "proportional to core": the placement engine gives the
  // worker core_percent% of the card's shareable memory (floor, in MiB). Always unset for whole
  // cards.
  std::optional<int64_t> memory_mib;

  bool whole_cards() const { return core_percent >= kFullCardCorePercent; }
  // Cards the share occupies: core/100 for whole cards, otherwise 1.
  int card_count() const { return whole_cards() ? core_percent / kFullCardCorePercent : 1; }
  // "core=30% memory=1000 MiB", "core=200% (2 whole cards)".
  std::string ToString() const;

  friend bool operator==(const MgpuShare&, const MgpuShare&) = default;
};

// Names used in rejection messages, so that a message can point at the parameter the user wrote.
struct ShareParamNames {
  std::string_view core = "core";
  std::string_view memory = "memory";
};

// Checks core (and memory, when set) against the share rules. InvalidArgument names the
// parameter, the value and the rule, e.g.
//   "emr.serverless.mgpu.core=150: above 100 only whole multiples of 100 are allowed
//    (200 = two full cards)".
Result<MgpuShare> ValidateShare(int64_t core_percent, std::optional<int64_t> memory_mib,
                                const ShareParamNames& names = {});

}  // namespace carve::core
