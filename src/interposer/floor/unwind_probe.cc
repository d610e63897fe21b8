// A shared library linked the way libcarve-mgpu.so is (static libstdc++ and libgcc, the glibc
// floor's wrappers): an exception thrown and caught inside it must unwind, which needs the
// _dl_find_object replacement to find this library's .eh_frame_hdr.
#include <stdexcept>

extern "C" __attribute__((visibility("default"))) int carve_floor_catch(int value) {
  try {
    if (value >= 0) throw std::runtime_error("thrown inside the library");
    return -1;
  } catch (const std::exception&) {
    return value + 1;
  }
}
