// carve: the single binary. Wires each area's subcommands onto one CLI11 app.
#include <CLI/CLI.hpp>
#include <signal.h>

#include "cli/commands.h"

int main(int argc, char** argv) {
  // A peer may close a connection while carve writes to it. OpenSSL writes with write(2), so
  // over https that raised SIGPIPE and killed the whole process: a server whose embedded agents
  // were mid-request when it stopped, an agent or CLI whose server went away. Every write
  // handles EPIPE instead. SIG_IGN survives exec, so each fork that runs another program puts
  // the default back first (process_launcher.cc, mps_control.cc, sandbox.cc).
  ::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"carve: share GPUs safely with MIG partitions and mGPU shares"};
  app.require_subcommand(1);
  app.fallthrough();
  carve::cli::Context ctx;
  app.add_flag("--json", ctx.json, "Print JSON instead of tables");

  carve::cli::RegisterCatalogCommands(app, ctx);
  carve::cli::RegisterLayoutCommands(app, ctx);
  carve::cli::RegisterMgpuCommands(app, ctx);
  carve::cli::RegisterPlanCommands(app, ctx);
  carve::cli::RegisterServerCommands(app, ctx);
  carve::cli::RegisterTestmodelCommands(app, ctx);
  carve::cli::RegisterAgentCommands(app, ctx);
  carve::cli::RegisterFleetSimCommands(app, ctx);
  carve::cli::RegisterLogsCommands(app, ctx);
  carve::cli::RegisterBenchCommands(app, ctx);
  carve::cli::RegisterQueueCommands(app, ctx);
  carve::cli::RegisterTokenCommands(app, ctx);
  carve::cli::RegisterClusterCommands(app, ctx);
  carve::cli::RegisterNodeCommands(app, ctx);
  carve::cli::RegisterStoreCommands(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return ctx.exit_code;
}
