#include "agent/launch/workload_logs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>

namespace carve::launch {
namespace {

bool KeptAsIs(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::string> LogDirName(std::string_view workload_id) {
  if (workload_id.empty()) return InvalidArgument("a workload id is needed to name its logs");
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  bool segment_start = true;
  for (char c : workload_id) {
    if (c == '/') {
      out += '+';
    } else if (KeptAsIs(c) || (c == '.' && !segment_start)) {
      out += c;
    } else {
      const auto b = static_cast<unsigned char>(c);
      out += {'%', kHex[b >> 4], kHex[b & 0xF]};
    }
    segment_start = c == '/';
    if (out.size() > kMaxLogDirName) {
      return InvalidArgument("workload id \"" + std::string(workload_id.substr(0, 64)) +
                             "...\" is too long to name a log directory (at most " +
                             std::to_string(kMaxLogDirName) + " bytes once escaped)");
    }
  }
  return out;
}

Result<std::string> WorkloadIdOfLogDir(std::string_view dir_name) {
  auto bad = [&] {
    return InvalidArgument("\"" + std::string(dir_name) + "\" is not a workload's log directory");
  };
  std::string id;
  bool segment_start = true;
  for (size_t i = 0; i < dir_name.size(); ++i) {
    const char c = dir_name[i];
    if (c == '+') {
      id += '/';
    } else if (c == '%') {
      if (i + 2 >= dir_name.size()) return bad();
      const int hi = HexValue(dir_name[i + 1]);
      const int lo = HexValue(dir_name[i + 2]);
      const char decoded = static_cast<char>((hi << 4) | lo);
      // Only bytes LogDirName escapes may appear escaped: the encoding stays one-to-one.
      if (hi < 0 || lo < 0 || decoded == '/' || KeptAsIs(decoded) ||
          (decoded == '.' && !segment_start)) {
        return bad();
      }
      id += decoded;
      i += 2;
    } else if (KeptAsIs(c) || (c == '.' && !segment_start)) {
      id += c;
    } else {
      return bad();
    }
    segment_start = c == '+';
  }
  if (id.empty()) return bad();
  return id;
}

Result<LogPaths> LogPathsFor(const std::string& data_dir, std::string_view workload_id) {
  CARVE_ASSIGN_OR_RETURN(std::string name, LogDirName(workload_id));
  const auto dir = std::filesystem::path(data_dir) / "logs" / name;
  return LogPaths{dir.string(), (dir / "stdout.log").string(), (dir / "stderr.log").string()};
}

Status WriteLogOwner(const std::string& data_dir, const LogOwner& owner) {
  CARVE_ASSIGN_OR_RETURN(LogPaths paths, LogPathsFor(data_dir, owner.id));
  std::error_code ec;
  std::filesystem::create_directories(paths.dir, ec);
  const std::string file = paths.dir + "/owner";
  std::ofstream out(file, std::ios::trunc);
  out << owner.id << "\n" << owner.name << "\n" << owner.index << "\n";
  if (!out.flush()) return Internal("cannot write " + file);
  return OkStatus();
}

std::vector<LogOwner> ListWorkloadLogs(const std::string& data_dir) {
  std::vector<LogOwner> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(data_dir + "/logs", ec)) {
    Result<std::string> id = WorkloadIdOfLogDir(e.path().filename().string());
    if (!id) continue;
    std::ifstream in(e.path() / "owner");
    LogOwner o;
    std::string index;
    if (!std::getline(in, o.id) || !std::getline(in, o.name) || !std::getline(in, index)) {
      continue;
    }
    if (o.id != *id) continue;
    auto [end, err] = std::from_chars(index.data(), index.data() + index.size(), o.index);
    if (err != std::errc() || end != index.data() + index.size()) continue;
    o.dir = e.path().string();
    found.push_back(std::move(o));
  }
  std::sort(found.begin(), found.end(),
            [](const LogOwner& a, const LogOwner& b) { return a.id < b.id; });
  return found;
}

Status RemoveWorkloadLogs(const std::string& data_dir, std::string_view workload_id) {
  CARVE_ASSIGN_OR_RETURN(LogPaths paths, LogPathsFor(data_dir, workload_id));
  std::error_code ec;
  std::filesystem::remove_all(paths.dir, ec);
  if (ec) return Internal("removing the logs " + paths.dir + ": " + ec.message());
  return OkStatus();
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

Result<std::string> TailWorkloadLogs(const std::string& data_dir, std::string_view workload_id,
                                     int max_lines) {
  CARVE_ASSIGN_OR_RETURN(LogPaths paths, LogPathsFor(data_dir, workload_id));
  if (!std::filesystem::is_directory(paths.dir)) {
    return NotFound("no logs for workload " + std::string(workload_id) + " under " + data_dir +
                    " (it has not been started on this node)");
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
