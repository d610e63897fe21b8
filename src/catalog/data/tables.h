// The catalog's data tables, one function per GPU family file. Each returns a span over a
// constexpr array with static storage, so the rows and everything they point at live for the
// whole program. Only catalog.cc should call these; everyone else uses catalog.h.
#pragma once

#include <span>

#include "catalog/gpu_model.h"
#include "catalog/instance_type.h"

namespace carve::catalog::data {

std::span<const GpuModel> AmpereGpus();         // ampere.cc (generated)
std::span<const GpuModel> HopperGpus();         // hopper.cc (generated)
std::span<const GpuModel> BlackwellGpus();      // blackwell.cc (generated)
std::span<const GpuModel> RtxProGpus();         // rtx_pro.cc (generated)
std::span<const GpuModel> WholeGpus();          // whole_gpus.cc: GPUs without MIG
std::span<const InstanceType> InstanceTypes();  // instance_types.cc

}  // namespace carve::catalog::data
