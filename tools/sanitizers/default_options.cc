// Runtime options of the sanitizer builds (cmake/sanitizers.cmake), compiled into every
// executable so that they hold in processes started with a rebuilt environment: the agent's
// copies, the interposer probes, a child exec'ed with envp = {NULL}. ASAN_OPTIONS and friends,
// when set, still override them key by key.
//
// log_path: every report lands in <build>/sanitizer-reports/<tool>.<pid>; scripts/sanitize.sh
// fails the run when that directory is not empty afterwards, and prints what it holds.
// verify_asan_link_order=0: the interposer test preloads libcarve-mgpu.so (itself instrumented,
// so the ASan runtime is its dependency) ahead of the instrumented probe; the runtime is still
// initialised first, from the executable's preinit array.

#ifndef CARVE_SANITIZER_REPORT_DIR
#error "CARVE_SANITIZER_REPORT_DIR must be defined by cmake/sanitizers.cmake"
#endif

#define CARVE_VISIBLE extern "C" __attribute__((visibility("default"), used))

CARVE_VISIBLE const char* __asan_default_options() {
  return "log_path=" CARVE_SANITIZER_REPORT_DIR
         "/asan"
         ":verify_asan_link_order=0:detect_leaks=1:check_initialization_order=1"
         ":strict_init_order=1:halt_on_error=1";
}

CARVE_VISIBLE const char* __lsan_default_options() {
  return "suppressions=" CARVE_SANITIZER_SUPPRESSIONS_DIR "/lsan.supp:print_suppressions=0";
}

CARVE_VISIBLE const char* __ubsan_default_options() {
  return "log_path=" CARVE_SANITIZER_REPORT_DIR "/ubsan:print_stacktrace=1:halt_on_error=1";
}

CARVE_VISIBLE const char* __tsan_default_options() {
  return "log_path=" CARVE_SANITIZER_REPORT_DIR
         "/tsan"
         ":suppressions=" CARVE_SANITIZER_SUPPRESSIONS_DIR
         "/tsan.supp"
         ":halt_on_error=1:second_deadlock_stack=1:print_suppressions=0";
}
