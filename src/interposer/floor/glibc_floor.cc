// The wrappers behind libcarve-mgpu.so's glibc floor (glibc_floor.h). Each __wrap_<name> is what
// a reference to <name> becomes under -Wl,--wrap=<name>; the .symver lines bind carve_old_<name>
// to the version every glibc since the floor has.
#include "interposer/floor/glibc_floor.h"

#include <link.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#if defined(__x86_64__)
#define CARVE_GLIBC_BASE "GLIBC_2.2.5"
#define CARVE_GLIBC_ROBUST "GLIBC_2.12"
#elif defined(__aarch64__)
#define CARVE_GLIBC_BASE "GLIBC_2.17"
#define CARVE_GLIBC_ROBUST "GLIBC_2.17"
#else
#error "libcarve-mgpu.so's glibc floor is defined for x86-64 and aarch64"
#endif

// The names below are reserved identifiers by necessity: --wrap=<name> binds references to
// __wrap_<name>, and the old versions are glibc's own symbols.
// NOLINTBEGIN(bugprone-reserved-identifier)
#define CARVE_OLD(name, version) __asm__(".symver carve_old_" #name ", " #name "@" version)
CARVE_OLD(dlopen, CARVE_GLIBC_BASE);
CARVE_OLD(dladdr, CARVE_GLIBC_BASE);
CARVE_OLD(dladdr1, "GLIBC_2.3.3");
CARVE_OLD(dlvsym, CARVE_GLIBC_BASE);
CARVE_OLD(pthread_once, CARVE_GLIBC_BASE);
CARVE_OLD(__pthread_key_create, CARVE_GLIBC_BASE);
CARVE_OLD(pthread_mutexattr_init, CARVE_GLIBC_BASE);
CARVE_OLD(pthread_mutexattr_destroy, CARVE_GLIBC_BASE);
CARVE_OLD(pthread_mutexattr_setpshared, CARVE_GLIBC_BASE);
CARVE_OLD(pthread_mutexattr_setrobust, CARVE_GLIBC_ROBUST);
CARVE_OLD(pthread_mutex_consistent, CARVE_GLIBC_ROBUST);

extern "C" {

void* carve_old_dlopen(const char*, int);
int carve_old_dladdr(const void*, Dl_info*);
int carve_old_dladdr1(const void*, Dl_info*, void**, int);
void* carve_old_dlvsym(void*, const char*, const char*);
int carve_old_pthread_once(pthread_once_t*, void (*)());
int carve_old___pthread_key_create(pthread_key_t*, void (*)(void*));
int carve_old_pthread_mutexattr_init(pthread_mutexattr_t*);
int carve_old_pthread_mutexattr_destroy(pthread_mutexattr_t*);
int carve_old_pthread_mutexattr_setpshared(pthread_mutexattr_t*, int);
int carve_old_pthread_mutexattr_setrobust(pthread_mutexattr_t*, int);
int carve_old_pthread_mutex_consistent(pthread_mutex_t*);

#define CARVE_VISIBLE __attribute__((visibility("hidden")))

CARVE_VISIBLE void* __wrap_dlopen(const char* file, int mode) {
  return carve_old_dlopen(file, mode);
}
CARVE_VISIBLE int __wrap_dladdr(const void* addr, Dl_info* info) {
  return carve_old_dladdr(addr, info);
}
CARVE_VISIBLE int __wrap_dladdr1(const void* addr, Dl_info* info, void** extra, int flags) {
  return carve_old_dladdr1(addr, info, extra, flags);
}
CARVE_VISIBLE void* __wrap_dlvsym(void* handle, const char* name, const char* version) {
  return carve_old_dlvsym(handle, name, version);
}
CARVE_VISIBLE int __wrap_pthread_once(pthread_once_t* once, void (*init)()) {
  return carve_old_pthread_once(once, init);
}
CARVE_VISIBLE int __wrap___pthread_key_create(pthread_key_t* key, void (*destructor)(void*)) {
  return carve_old___pthread_key_create(key, destructor);
}
CARVE_VISIBLE int __wrap_pthread_mutexattr_init(pthread_mutexattr_t* attr) {
  return carve_old_pthread_mutexattr_init(attr);
}
CARVE_VISIBLE int __wrap_pthread_mutexattr_destroy(pthread_mutexattr_t* attr) {
  return carve_old_pthread_mutexattr_destroy(attr);
}
CARVE_VISIBLE int __wrap_pthread_mutexattr_setpshared(pthread_mutexattr_t* attr, int shared) {
  return carve_old_pthread_mutexattr_setpshared(attr, shared);
}
CARVE_VISIBLE int __wrap_pthread_mutexattr_setrobust(pthread_mutexattr_t* attr, int robust) {
  return carve_old_pthread_mutexattr_setrobust(attr, robust);
}
CARVE_VISIBLE int __wrap_pthread_mutex_consistent(pthread_mutex_t* mutex) {
  return carve_old_pthread_mutex_consistent(mutex);
}

// glibc's struct stat is the kernel's on x86-64 and on aarch64 (the generic layout), so the
// system call fills it exactly as glibc 2.33's fstat and the older __fxstat do.
CARVE_VISIBLE int __wrap_fstat(int fd, struct stat* st) {
  return static_cast<int>(syscall(SYS_fstat, fd, st));
}

// libstdc++ skips atomic reference counts when this says the process is single-threaded; 0 is
// always a correct answer, only a slower one.
CARVE_VISIBLE char __wrap___libc_single_threaded = 0;

// GCC 12's unwinder finds a frame's .eh_frame_hdr with _dl_find_object (glibc 2.35); without it
// an exception thrown inside the library could not be caught. The same answer, from
// dl_iterate_phdr (GLIBC_2.2.5), as libgcc computed it before. Segment addresses are integers
// in the program headers, hence the casts.
// NOLINTBEGIN(performance-no-int-to-ptr)
int CarveFindObject(void* pc, struct dl_find_object* result) {
  struct Search {
    uintptr_t pc;
    struct dl_find_object* out;
    bool found;
  } search{reinterpret_cast<uintptr_t>(pc), result, false};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        uintptr_t start = UINTPTR_MAX;
        uintptr_t end = 0;
        bool contains = false;
        const void* eh_frame = nullptr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t at = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD) {
            start = at < start ? at : start;
            end = at + ph.p_memsz > end ? at + ph.p_memsz : end;
            contains = contains || (s->pc >= at && s->pc < at + ph.p_memsz);
          } else if (ph.p_type == PT_GNU_EH_FRAME) {
            eh_frame = reinterpret_cast<const void*>(at);
          }
        }
        if (!contains) return 0;
        *s->out = {};
        s->out->dlfo_map_start = reinterpret_cast<void*>(start);
        s->out->dlfo_map_end = reinterpret_cast<void*>(end);
        s->out->dlfo_eh_frame = const_cast<void*>(eh_frame);
        Dl_info dl{};
        void* map = nullptr;
        if (carve_old_dladdr1(reinterpret_cast<void*>(s->pc), &dl, &map, RTLD_DL_LINKMAP) != 0) {
          s->out->dlfo_link_map = static_cast<struct link_map*>(map);
        }
        s->found = true;
        return 1;
      },
      &search);
  return search.found ? 0 : -1;
}
// NOLINTEND(performance-no-int-to-ptr)

CARVE_VISIBLE int __wrap__dl_find_object(void* pc, struct dl_find_object* result) {
  return CarveFindObject(pc, result);
}
// NOLINTEND(bugprone-reserved-identifier)

}  // extern "C"
