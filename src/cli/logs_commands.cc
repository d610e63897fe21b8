// `carve logs NAME [--copy N]`: prints what a copy (or task) wrote to stdout/stderr, from the
// files the agent captures under <data-dir>/logs/NAME/copy-N/. With a server's data dir it also
// looks under nodes/*/ (the server's embedded agents).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

#include "agent/launch/workload_logs.h"
#include "cli/commands.h"

namespace carve::cli {
namespace {
namespace fs = std::filesystem;

struct LogsFlags {
  std::string name;
  int copy = 0;
  std::string data_dir = "./carve-data";
  bool only_stderr = false;
  int tail = 100;
};

// The agent data dirs under `root` that hold this copy's logs: root itself, or nodes/<id>.
std::vector<std::string> AgentDirsWithLogs(const std::string& root, const std::string& name,
                                           int copy) {
  std::vector<std::string> found;
  auto has = [&](const fs::path& dir) {
    auto paths = launch::LogPathsFor(dir.string(), name, copy);
    std::error_code ec;
    return paths.has_value() && fs::is_directory(paths->dir, ec);
  };
  if (has(root)) found.push_back(root);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "nodes", ec)) {
    if (has(e.path())) found.push_back(e.path().string());
  }
  return found;
}

int RunLogs(const LogsFlags& f, const Context& ctx) {
  auto paths = launch::LogPathsFor(f.data_dir, f.name, f.copy);
  if (!paths) {
    std::cerr << "carve logs: " << paths.error().message << "\n";
    return 2;
  }
  if (f.tail <= 0) {
    std::cerr << "carve logs: --tail must be positive, got " << f.tail << "\n";
    return 2;
  }
  const std::vector<std::string> dirs = AgentDirsWithLogs(f.data_dir, f.name, f.copy);
  if (dirs.empty()) {
    std::cerr << "carve logs: no logs for " << f.name << " copy " << f.copy << ": "
              << paths->dir << " does not exist (nor does any " << f.data_dir << "/nodes/*/logs/"
              << f.name << "/copy-" << f.copy
              << "); check the name, the copy number and --data-dir (the agent's data dir)\n";
    return 1;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& dir : dirs) {
    auto p = launch::LogPathsFor(dir, f.name, f.copy).value();
    Result<std::string> text = f.only_stderr ? launch::TailFile(p.stderr_path, f.tail)
                                             : launch::TailCopyLogs(dir, f.name, f.copy, f.tail);
    if (!text) {
      std::cerr << "carve logs: " << text.error().message << "\n";
      return 1;
    }
    if (ctx.json) {
      out.push_back({{"name", f.name}, {"copy", f.copy}, {"dir", p.dir}, {"text", *text}});
      continue;
    }
    if (dirs.size() > 1) std::cout << "### " << p.dir << "\n";
    std::cout << *text;
    if (!text->empty() && text->back() != '\n') std::cout << "\n";
  }
  if (ctx.json) std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

void RegisterLogsCommands(CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<LogsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "logs", "Print a copy's captured stdout and stderr (run on the node that ran it)");
  cmd->add_option("name", flags->name, "Inference component (or job) name")->required();
  cmd->add_option("--copy", flags->copy, "Copy (or task) index")->capture_default_str();
  cmd->add_option("--data-dir", flags->data_dir,
                  "The agent's (or server's) data dir")->capture_default_str();
  cmd->add_flag("--stderr", flags->only_stderr, "Print only stderr");
  cmd->add_option("--tail", flags->tail, "Lines from the end of each stream")
      ->capture_default_str();
  cmd->callback([flags, &ctx] { ctx.exit_code = RunLogs(*flags, ctx); });
}

}  // namespace carve::cli
