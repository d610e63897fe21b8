// Test library for RTLD_NEXT through the interposer's dlsym: it defines carve_next_probe and,
// like any library that wraps a function, finds "the next one" with dlsym(RTLD_NEXT, ...). Loaded
// after libcarve-mgpu.so and before libcarve_next_b.so, which defines the next one.
#include <dlfcn.h>

extern "C" __attribute__((visibility("default"))) int carve_next_probe() { return 1; }

extern "C" __attribute__((visibility("default"))) int carve_next_resolve() {
  auto next = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "carve_next_probe"));
  return next == nullptr ? 0 : next();
}
