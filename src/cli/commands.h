// Registration of `carve` subcommands. Each area registers its commands on the root app; main.cc
// only wires them together.
//
// Conventions every command follows:
//   - `--json` (global, accepted after the subcommand) switches output to JSON on stdout;
//   - exit 0 on success, 1 when the answer is a rejection (invalid layout, does not fit),
//     2 on input errors; reasons go to stderr;
//   - a command sets `ctx.exit_code` from its callback rather than calling exit().
#pragma once

#include <CLI/CLI.hpp>

namespace carve::cli {

struct Context {
  bool json = false;
  int exit_code = 0;
};

void RegisterCatalogCommands(CLI::App& app, Context& ctx);  // gpus, instance-types, profiles
void RegisterLayoutCommands(CLI::App& app, Context& ctx);   // layout check|list
void RegisterMgpuCommands(CLI::App& app, Context& ctx);     // mgpu check
void RegisterPlanCommands(CLI::App& app, Context& ctx);     // plan fit|perf|compare|...
void RegisterServerCommands(CLI::App& app, Context& ctx);   // server
void RegisterTestmodelCommands(CLI::App& app, Context& ctx);  // testmodel (simulated model server)
void RegisterBenchCommands(CLI::App& app, Context& ctx);      // bench, bench compare
void RegisterAgentCommands(CLI::App& app, Context& ctx);  // agent (the node agent)
void RegisterFleetSimCommands(CLI::App& app, Context& ctx);  // fleet-sim (N simulated agents)
void RegisterLogsCommands(CLI::App& app, Context& ctx);   // logs NAME [--copy N]
void RegisterQueueCommands(CLI::App& app, Context& ctx);  // queue ..., job ... (mGPU queues)
void RegisterTokenCommands(CLI::App& app, Context& ctx);  // token (OpenAI route bearer tokens)
void RegisterClusterCommands(CLI::App& app, Context& ctx);  // cluster status (HA replicas)
void RegisterNodeCommands(CLI::App& app, Context& ctx);  // node token ..., node revoke
void RegisterStoreCommands(CLI::App& app, Context& ctx);    // store migrate (SQLite -> etcd)

}  // namespace carve::cli
