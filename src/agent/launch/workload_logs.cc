#include "agent/launch/workload_logs.h"

#include <algorithm>
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

Result<LogPaths> LogPathsFor(const std::string& data_dir, const std::string& component,
                             int copy) {
  if (!PlainName(component)) {
    return InvalidArgument("component name \"" + component +
                           "\" may hold only letters, digits, '.', '_' and '-'");
  }
  if (copy < 0) return InvalidArgument("copy is " + std::to_string(copy) + "; it must be >= 0");
  const auto dir = std::filesystem::path(data_dir) / "logs" / component /
                   ("copy-" + std::to_string(copy));
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

Result<std::string> TailCopyLogs(const std::string& data_dir, const std::string& component,
                                 int copy, int max_lines) {
  CARVE_ASSIGN_OR_RETURN(LogPaths paths, LogPathsFor(data_dir, component, copy));
  if (!std::filesystem::is_directory(paths.dir)) {
    return NotFound("no logs for " + component + " copy " + std::to_string(copy) + " under " +
                    data_dir + " (it has not been started on this node)");
  }
  std::string out;
  for (const auto& [name, path] : {std::pair{"stdout", paths.stdout_path},
                                   std::pair{"stderr", paths.stderr_path}}) {
    Result<std::string> tail = TailFile(path, max_lines);
    out += std::string("==> ") + name + " <==\n" + (tail ? *tail : std::string());
  }
  return out;
}

}  // namespace carve::launch
