#include "agent/launch/workload_logs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>

namespace carve::launch {
namespace {

bool PlainName(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

Result<LogPaths> LogPathsFor(const std::string& data_dir, const std::string& component, int copy) {
  if (!PlainName(component)) {
    return InvalidArgument("component name \"" + component +
                           "\" may hold only letters, digits, '.', '_' and '-'");
  }
  if (copy < 0) return InvalidArgument("copy is " + std::to_string(copy) + "; it must be >= 0");
  const auto dir =
      std::filesystem::path(data_dir) / "logs" / component / ("copy-" + std::to_string(copy));
  return LogPaths{dir.string(), (dir / "stdout.log").string(), (dir / "stderr.log").string()};
}

Result<std::string> TailFile(const std::string& path, int max_lines) {
  std::ifstream in(path);
  if (!in) return NotFound("no log file " + path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(std::move(line));
    if (static_cast<int>(lines.size()) > std::max(max_lines, 0)) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

Result<bool> CapLog(const std::string& path, uint64_t max_bytes) {
  auto fail = [&](const std::string& what) -> Error {
    return Internal("capping log " + path + ": " + what + ": " + std::strerror(errno));
  };
  const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    if (errno == ENOENT) return false;
    return fail("open");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } close_in{in};
  const off_t size = ::lseek(in, 0, SEEK_END);
  if (size < 0) return fail("lseek");
  if (static_cast<uint64_t>(size) <= max_bytes) return false;
  const std::string previous = path + ".1";
  const std::string tmp = previous + ".tmp";
  const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return fail("create " + tmp);
  Closer close_out{out};
  off_t from = size - static_cast<off_t>(max_bytes);
  char buf[65536];
  while (from < size) {
    const ssize_t n = ::pread(in, buf, std::min<off_t>(sizeof buf, size - from), from);
    if (n < 0) return fail("read");
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf + done, static_cast<size_t>(n - done));
      if (w < 0) return fail("write " + tmp);
      done += w;
    }
    from += n;
  }
  if (::rename(tmp.c_str(), previous.c_str()) != 0) return fail("rename to " + previous);
  // Output written since the copy was taken is lost with the truncation: the price of keeping
  // the writers' descriptors (logrotate's copytruncate makes the same trade).
  if (::truncate(path.c_str(), 0) != 0) return fail("truncate");
  return true;
}

Result<std::string> TailCopyLogs(const std::string& data_dir, const std::string& component,
                                 int copy, int max_lines) {
  CARVE_ASSIGN_OR_RETURN(LogPaths paths, LogPathsFor(data_dir, component, copy));
  if (!std::filesystem::is_directory(paths.dir)) {
    return NotFound("no logs for " + component + " copy " + std::to_string(copy) + " under " +
                    data_dir + " (it has not been started on this node)");
  }
  std::string out;
  for (const auto& [name, path] :
       {std::pair{"stdout", paths.stdout_path}, std::pair{"stderr", paths.stderr_path}}) {
    Result<std::string> tail = TailFile(path, max_lines);
    std::string text = tail ? *tail : std::string();
    const int have = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    if (have < max_lines) {  // just rotated: the older lines are in <path>.1
      if (Result<std::string> older = TailFile(path + ".1", max_lines - have)) text = *older + text;
    }
    out += std::string("==> ") + name + " <==\n" + text;
  }
  return out;
}

}  // namespace carve::launch
