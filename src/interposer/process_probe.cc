#include "interposer/process_probe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace carve::interposer {

uint64_t ProcfsProcessProbe::StartTime(int32_t pid) const {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name (field 2) may contain spaces and ')', so count fields after the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  // After ")" come fields 3.. separated by single spaces; starttime is field 22.
  int field = 2;
  for (; *p != '\0' && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  if (field != 22) return 0;
  // A zombie (state Z) has exited: its memory is gone even though the pid is not yet reaped.
  const char* state = std::strrchr(buf, ')') + 2;
  if (*state == 'Z' || *state == 'X') return 0;
  return std::strtoull(p, nullptr, 10);
}

}  // namespace carve::interposer
