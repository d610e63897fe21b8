// Test helper: loads a private copy of the fake libnvidia-ml.so.1 through LibNvml.
//
// The fake keeps one node per loaded copy, so each call copies the library to a fresh temp path
// (a new path means a new dlopen, hence a new node) configured by `config`
// (CARVE_FAKE_NVML_CONFIG, read at nvmlInit_v2). Header-only; used by tests alone.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "agent/nvml/lib_nvml.h"

namespace carve::agent {

inline Result<std::unique_ptr<LibNvml>> LoadFakeLibNvml(const std::string& fake_library_path,
                                                        const std::string& config) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path dir = fs::temp_directory_path() / ("carve-fake-nvml-" + std::to_string(getpid()) +
                                                    "-" + std::to_string(++counter));
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path lib = dir / "libnvidia-ml.so.1";
  fs::copy_file(fake_library_path, lib, fs::copy_options::overwrite_existing, ec);
  if (ec) return Internal("copying " + fake_library_path + ": " + ec.message());
  setenv("CARVE_FAKE_NVML_CONFIG", config.c_str(), 1);
  auto nvml = LibNvml::Load(lib.string());
  fs::remove_all(dir, ec);  // The mapping outlives the file.
  if (!nvml) return nvml.error();
  CARVE_RETURN_IF_ERROR((*nvml)->Init());
  return nvml;
}

}  // namespace carve::agent
