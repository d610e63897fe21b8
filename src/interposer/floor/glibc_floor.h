// What lets libcarve-mgpu.so load in the containers GPU workloads run in: glibc 2.28 (RHEL 8,
// Debian 10) or newer, and any libstdc++ or none. The library links libstdc++ and libgcc
// statically (-static-libstdc++ -static-libgcc) and sends every reference to a glibc symbol
// whose default version is newer than GLIBC_2.28 through a wrapper (-Wl,--wrap=<name>, the
// names listed in wraps.txt) that binds the old version of the same function, or replaces it:
//   dlopen, dladdr, dladdr1, dlvsym                 moved into libc at 2.34; old GLIBC_2.2.5/2.3.3
//   pthread_once, __pthread_key_create,             moved into libc at 2.34 (libstdc++.a uses
//   pthread_mutexattr_{init,destroy,setpshared}       them); old versions GLIBC_2.2.5
//   pthread_mutexattr_setrobust,                    old version GLIBC_2.12
//   pthread_mutex_consistent
//   fstat                                           a function since 2.33: the fstat system call
//   __libc_single_threaded (2.32)                   libstdc++'s "may skip atomics" flag: always 0
//   _dl_find_object (2.35)                          libgcc's unwinder: dl_iterate_phdr instead
// On glibc < 2.34 the dl* and pthread functions live in libdl.so.2 and libpthread.so.0, which
// the library therefore lists as needed (they are empty stubs on 2.34+). aarch64 takes the same
// route with its base version GLIBC_2.17. check_symbol_floor.sh proves the result in
// `make test`; docs/interposer.md states the floor.
#pragma once

#include <dlfcn.h>

extern "C" {
// The _dl_find_object replacement, exported under its own name for the test that compares it
// with glibc's.
int CarveFindObject(void* pc, struct dl_find_object* result);
}
