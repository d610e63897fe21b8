// Which exported entry point of the driver a cuGetProcAddress caller means: the driver picks it
// by the base name, the CUDA version the caller was built for and whether it asked for
// per-thread default-stream semantics (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM). The rows
// restate CUDA 13's cudaTypedefs.h, where each ABI revision of a symbol is a PFN_<base>_v<version>
// typedef (PFN_cuMemAlloc_v3020 is cuMemAlloc_v2, PFN_cuGetProcAddress_v12000 is
// cuGetProcAddress_v2, PFN_cuLaunchKernel_v7000_ptsz is cuLaunchKernel_ptsz), and cuda.h's
// `#define cuX cuX_vN` table that maps base names to the newest revision.
//
// The interposer uses this only when the driver hands back a pointer that is none of its exports
// (hooks_resolve.cc): a by-name guess must give a CUDA 11.8 caller the 4-argument
// cuGetProcAddress, not the 5-argument cuGetProcAddress_v2 it would write a status through.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace carve::interposer {

struct SymbolVariant {
  std::string_view base;      // what callers pass to cuGetProcAddress: "cuMemAlloc"
  std::string_view exported;  // the driver's export for this revision: "cuMemAlloc_v2"
  int since_version;          // the CUDA version (1000 x major + 10 x minor) that introduced it
  bool per_thread;            // the _ptsz revision, chosen under per-thread default streams
};

// The revisions of every symbol the interposer hooks.
std::span<const SymbolVariant> HookedSymbolVariants();

// The export a caller of `version` gets for `base`: among the rows of `base` introduced at or
// before `version`, the newest; with `per_thread`, the newest per-thread row if there is one,
// else the newest plain one (symbols without a stream have no _ptsz revision). nullopt when
// `base` has no row that old (the driver answers CUDA_ERROR_NOT_FOUND then).
std::optional<std::string_view> SelectVariant(std::span<const SymbolVariant> rows,
                                              std::string_view base, int version, bool per_thread);

}  // namespace carve::interposer
