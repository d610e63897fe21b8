#!/usr/bin/env bash
# Fails when a shared library needs more than the glibc floor allows, so that it still loads in
# the containers GPU workloads run in (RHEL 8 / Debian 10: glibc 2.28; Ubuntu 20.04: 2.31):
#   - no symbol version newer than GLIBC_<floor> (objdump -T lists what each import binds to);
#   - no GLIBCXX_, CXXABI_ or GCC_ version at all (libstdc++ and libgcc are linked statically,
#     so the library works next to any libstdc++, or none);
#   - needed libraries only from glibc itself (libc, libdl, libpthread, the dynamic loader), and
#     libdl / libpthread listed when it imports what glibc before 2.34 keeps there (there they
#     are found only in a library something loaded).
# Prints the highest versions it found either way.
#   check_symbol_floor.sh LIBRARY [FLOOR]      FLOOR defaults to 2.28
set -euo pipefail
lib="$1"
floor="${2:-2.28}"
[[ -f "$lib" ]] || { echo "FAIL: $lib does not exist"; exit 1; }

versions="$(objdump -T "$lib" | grep -oE '\((GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+\)|\b(GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+\b' \
  | tr -d '()' | sort -u)"
needed="$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
highest_glibc="$(grep '^GLIBC_' <<<"$versions" | sed 's/^GLIBC_//' | sort -V | tail -1)"
echo "$lib"
echo "  highest GLIBC_ version: ${highest_glibc:-none} (floor $floor)"
echo "  needed: $(tr '\n' ' ' <<<"$needed")"

fail=0
while read -r v; do
  [[ -z "$v" ]] && continue
  case "$v" in
    GLIBC_*)
      if [[ "$(printf '%s\n%s\n' "${v#GLIBC_}" "$floor" | sort -V | tail -1)" != "$floor" ]]; then
        echo "FAIL: needs $v, newer than GLIBC_$floor:"
        objdump -T "$lib" | grep -F "$v" | sed 's/^/    /'
        fail=1
      fi ;;
    *)
      echo "FAIL: needs $v (libstdc++/libgcc must be linked statically):"
      objdump -T "$lib" | grep -F "$v" | sed 's/^/    /'
      fail=1 ;;
  esac
done <<<"$versions"
while read -r n; do
  [[ -z "$n" ]] && continue
  case "$n" in
    libc.so.6|libdl.so.2|libpthread.so.0|ld-linux-*.so.*) ;;
    *) echo "FAIL: needs $n, which not every glibc container has"; fail=1 ;;
  esac
done <<<"$needed"
imports="$(objdump -T "$lib" | awk '$2 ~ /UND/ || $3 ~ /UND/ || /\*UND\*/ {print $NF}')"
need_in() {  # need_in LIBRARY REGEX: imports matching REGEX lived in LIBRARY before glibc 2.34
  if grep -qE "$2" <<<"$imports" && ! grep -qx "$1" <<<"$needed"; then
    echo "FAIL: imports $(grep -E "$2" <<<"$imports" | tr '\n' ' ')but does not list $1"
    fail=1
  fi
}
need_in libdl.so.2 '^(dlopen|dlvsym|dladdr1?|dlerror|dlinfo|dlmopen)$'
need_in libpthread.so.0 '^(pthread_mutexattr_setrobust|pthread_mutex_consistent|pthread_mutexattr_setpshared|pthread_once|__pthread_key_create|pthread_key_create)$'
if [[ $fail -eq 0 ]]; then echo "PASS: loads on glibc $floor and later, with any libstdc++ or none"; fi
exit $fail
