// `carve logs NAME [--copy N] [--account A]`: prints what a copy (or task) wrote to stdout/stderr,
// from the files the agent captures under <data-dir>/logs/<workload id, escaped>/
// (workload_logs.h). Logs are keyed by the workload's id, account included, so one name can match
// several owners (two accounts, or a task of a queue deleted and created again): each is printed
// under its id. With a server's data dir it also looks under nodes/*/ (the server's embedded
// agents).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "agent/launch/workload_logs.h"
#include "cli/commands.h"

namespace carve::cli {
namespace {
namespace fs = std::filesystem;

struct LogsFlags {
  std::string name;
  int copy = 0;
  std::string account;
  std::string data_dir = "./carve-data";
  bool only_stderr = false;
  int tail = 100;
};

bool PlainName(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

struct Match {
  std::string data_dir;  // the agent's
  launch::LogOwner owner;
};

// The workloads under `root` (itself, or nodes/<id>) whose logs the flags name: NAME with a '/'
// is a workload id; otherwise the owner's name, copy index and (when given) account.
std::vector<Match> FindLogs(const LogsFlags& f) {
  std::vector<std::string> roots = {f.data_dir};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(f.data_dir) / "nodes", ec)) {
    roots.push_back(e.path().string());
  }
  const bool by_id = f.name.find('/') != std::string::npos;
  std::vector<Match> found;
  for (const std::string& root : roots) {
    for (launch::LogOwner& o : launch::ListWorkloadLogs(root)) {
      const bool hit = by_id ? o.id == f.name
                             : o.name == f.name && o.index == f.copy &&
                                   (f.account.empty() || o.id.starts_with(f.account + "/"));
      if (hit) found.push_back({root, std::move(o)});
    }
  }
  return found;
}

int RunLogs(const LogsFlags& f, const Context& ctx) {
  if (f.name.find('/') == std::string::npos && !PlainName(f.name)) {
    std::cerr << "carve logs: name \"" << f.name
              << "\" may hold only letters, digits, '.', '_' and '-' (or give a workload id "
                 "ACCOUNT/NAME/...)\n";
    return 2;
  }
  if (f.tail <= 0) {
    std::cerr << "carve logs: --tail must be positive, got " << f.tail << "\n";
    return 2;
  }
  const std::vector<Match> matches = FindLogs(f);
  if (matches.empty()) {
    std::cerr << "carve logs: no logs for " << f.name << " copy " << f.copy
              << (f.account.empty() ? "" : " of account " + f.account) << " under "
              << (fs::path(f.data_dir) / "logs").string() << " (nor under any " << f.data_dir
              << "/nodes/*/logs); check the name, the copy number and --data-dir (the agent's "
                 "data dir)\n";
    return 1;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const Match& m : matches) {
    auto p = launch::LogPathsFor(m.data_dir, m.owner.id).value();
    Result<std::string> text = f.only_stderr
                                   ? launch::TailFile(p.stderr_path, f.tail)
                                   : launch::TailWorkloadLogs(m.data_dir, m.owner.id, f.tail);
    if (!text) {
      std::cerr << "carve logs: " << text.error().message << "\n";
      return 1;
    }
    if (ctx.json) {
      out.push_back({{"id", m.owner.id},
                     {"name", m.owner.name},
                     {"copy", m.owner.index},
                     {"dir", p.dir},
                     {"text", *text}});
      continue;
    }
    if (matches.size() > 1) std::cout << "### " << m.owner.id << " (" << p.dir << ")\n";
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
  cmd->add_option("name", flags->name,
                  "Inference component (or queue-job) name, or a workload id ACCOUNT/NAME/...")
      ->required();
  cmd->add_option("--copy", flags->copy, "Copy (or task) index")->capture_default_str();
  cmd->add_option("--account", flags->account, "Only this account's workloads");
  cmd->add_option("--data-dir", flags->data_dir, "The agent's (or server's) data dir")
      ->capture_default_str();
  cmd->add_flag("--stderr", flags->only_stderr, "Print only stderr");
  cmd->add_option("--tail", flags->tail, "Lines from the end of each stream")
      ->capture_default_str();
  cmd->callback([flags, &ctx] { ctx.exit_code = RunLogs(*flags, ctx); });
}

}  // namespace carve::cli
