// The interval search: concrete, non-overlapping starts for MIG instances on one GPU.
//
// Pure geometry. NVML's rule (nvml.h, nvmlGpuInstancePlacement_t): an instance occupies
// placement units [start, start + size); creating one fails if it overlaps an existing one. The
// counting rules (caps, +me, slice sums, drivers) are layout_rules.h's.
//
// Search order: additions are placed largest placement size first (ties: fewer allowed starts
// first, then catalog order), each at its lowest free allowed start first, with full
// backtracking. Backtracking makes the search complete: when any non-overlapping assignment
// exists it is found, so an early choice never strands a profile that could fit. Worked example,
// A100 [3g.20gb, 2g.10gb, 2g.10gb]: 3g@0 leaves only units 4-7, where 2g (starts {0,2,4}) fits
// once; the search backs up to 3g@4 and places 2g@0, 2g@2. Largest-first only makes the answer
// come sooner: big instances have the fewest starts, and small ones fill what is left. Copies of
// one profile are placed at increasing starts, so no assignment is tried twice.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "catalog/gpu_model.h"
#include "core/layout.h"

namespace carve::core {

// True when the GPU's rows carry usable placement data: 1 to 64 placement units and, for every
// profile, a positive placement size and at least one start, each with start + size within the
// units. GPUs whose geometry the reference does not know fail this.
bool HasPlacementGeometry(const catalog::GpuModel& gpu);

// Bit i set for each unit i in [start, start + size).
uint64_t UnitMask(int start, int size);
// Units the instances occupy.
uint64_t OccupiedUnits(std::span<const PlacedInstance> instances);

// True when `start` is one of the profile's allowed starts and its units are clear of
// `occupied`.
bool StartFree(const catalog::MigProfile& profile, int start, uint64_t occupied);

// Starts for every addition, none overlapping each other or `occupied`; nullopt when no such
// assignment exists. The result is in creation order (see SortForCreation). Requires
// HasPlacementGeometry(gpu) and additions drawn from gpu.profiles.
std::optional<std::vector<PlacedInstance>> FindPlacement(
    const catalog::GpuModel& gpu, uint64_t occupied,
    std::span<const catalog::MigProfile* const> additions);

// "mig-3g.20gb starts at {0,4} size 4": a profile's geometry, for messages.
std::string PlacementsText(const catalog::MigProfile& profile);
// The same for each distinct profile of `profiles`, joined by "; ".
std::string PlacementsText(std::span<const catalog::MigProfile* const> profiles);

// Orders instances for creation: largest placement first, then lowest start. With explicit
// placements the driver accepts any order; this one also follows the MIG guide's advice for
// auto-placement (create the 3g before the 1g's).
void SortForCreation(std::vector<PlacedInstance>& instances);

}  // namespace carve::core
