#include "core/share.h"

#include <fmt/format.h>

namespace carve::core {

std::string MgpuShare::ToString() const {
  if (whole_cards()) {
    int n = card_count();
    return fmt::format("core={}% ({} whole card{})", core_percent, n, n == 1 ? "" : "s");
  }
  if (memory_mib) {
    return fmt::format("core={}% memory={} MiB", core_percent, *memory_mib);
  }
  return fmt::format("core={}% memory=proportional", core_percent);
}

Result<MgpuShare> ValidateShare(int64_t core_percent, std::optional<int64_t> memory_mib,
                                const ShareParamNames& names) {
  // Seed: "When mGPU core is set to not exceed the computing power of a single GPU card: the
  // range is 5-100" and "the minimum core is 5".
  if (core_percent < kMinCorePercent) {
    return InvalidArgument(fmt::format(
        "{}={}: core must be at least {} (percent of one card; the range for a fraction of one "
        "card is {}-{})",
        names.core, core_percent, kMinCorePercent, kMinCorePercent, kFullCardCorePercent));
  }
  // Seed: "When mGPU core is set to greater than or equal to 100, only integer multiples of 100
  // can be set."
  if (core_percent > kFullCardCorePercent && core_percent % kFullCardCorePercent != 0) {
    return InvalidArgument(fmt::format(
        "{}={}: above 100 only whole multiples of 100 are allowed (200 = two full cards)",
        names.core, core_percent));
  }
  if (core_percent > kMaxCorePercent) {
    return InvalidArgument(fmt::format("{}={}: at most {} ({} whole cards) is accepted", names.core,
                                       core_percent, kMaxCorePercent,
                                       kMaxCorePercent / kFullCardCorePercent));
  }
  if (memory_mib) {
    // Seed: "When mGPU core is set to greater than or equal to 100, mGPU memory cannot be set."
    if (core_percent >= kFullCardCorePercent) {
      return InvalidArgument(fmt::format(
          "{}={}: memory cannot be set when core is 100 or above ({}={} takes whole cards with "
          "all their memory)",
          names.memory, *memory_mib, names.core, core_percent));
    }
    // Seed: "The minimum GPU memory setting for mGPU is 256 MiB".
    if (*memory_mib < kMinShareMemoryMib) {
      return InvalidArgument(fmt::format("{}={}: memory must be at least {} MiB", names.memory,
                                         *memory_mib, kMinShareMemoryMib));
    }
    if (*memory_mib > kMaxShareMemoryMib) {
      return InvalidArgument(fmt::format("{}={}: at most {} MiB is accepted", names.memory,
                                         *memory_mib, kMaxShareMemoryMib));
    }
  }
  MgpuShare share;
  share.core_percent = static_cast<int>(core_percent);
  share.memory_mib = memory_mib;
  return share;
}

}  // namespace carve::core
