// The definition of carve_next_probe after libcarve_next_a.so's (see next_a.cc).
extern "C" __attribute__((visibility("default"))) int carve_next_probe() { return 2; }
