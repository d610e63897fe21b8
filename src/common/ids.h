// Strongly typed ids: a GpuIndex cannot be passed where a GpuInstanceId is wanted.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace carve {

template <typename Tag, typename T>
class StrongId {
 public:
  using value_type = T;
  constexpr StrongId() = default;
  constexpr explicit StrongId(T v) : value_(std::move(v)) {}
  constexpr const T& value() const { return value_; }
  friend constexpr auto operator<=>(const StrongId&, const StrongId&) = default;

 private:
  T value_{};
};

// Position of a GPU within its node (NVML index).
using GpuIndex = StrongId<struct GpuIndexTag, uint32_t>;
// NVML GPU-instance id on one GPU.
using GpuInstanceId = StrongId<struct GpuInstanceIdTag, uint32_t>;
// NVML compute-instance id within one GPU instance.
using ComputeInstanceId = StrongId<struct ComputeInstanceIdTag, uint32_t>;
// NVML GPU-instance profile id (what `nvidia-smi mig -lgip` prints), not the profile enum.
using NvmlProfileId = StrongId<struct NvmlProfileIdTag, uint32_t>;
// A fleet node, by its stable name.
using NodeId = StrongId<struct NodeIdTag, std::string>;

}  // namespace carve

template <typename Tag, typename T>
struct std::hash<carve::StrongId<Tag, T>> {
  size_t operator()(const carve::StrongId<Tag, T>& id) const noexcept {
    return std::hash<T>{}(id.value());
  }
};
