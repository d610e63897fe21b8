// `carve store migrate --data-dir DIR --to etcd://HOST:PORT,...[/PREFIX]`: moves a stopped
// server's records from DIR/carve.db into etcd (store/store_migrate.h), versions and timestamps
// kept, so that `carve server --store etcd://... --data-dir DIR` carries on where it stopped.
// It holds DIR's server lock while it runs, so it refuses a directory a server is using.
// Exit codes: 0 migrated, 1 refused (a server holds DIR, the prefix is not empty, etcd down),
// 2 bad input.
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "app/data_dir.h"
#include "cli/commands.h"
#include "store/store_migrate.h"

namespace carve::cli {
namespace {

struct MigrateFlags {
  std::string data_dir = "./carve-data";
  std::string to;
  store::EtcdTls tls;  // For etcds://.
};

int Migrate(const MigrateFlags& f, const Context& ctx) {
  const std::string db = (std::filesystem::path(f.data_dir) / "carve.db").string();
  if (!std::filesystem::exists(db)) {
    std::cerr << "carve store migrate: " << db << " does not exist (--data-dir names the "
              << "directory a server ran on)\n";
    return 2;
  }
  auto lock = app::DataDirLock::Acquire(f.data_dir);
  if (!lock.has_value()) {
    std::cerr << "carve store migrate: " << lock.error().message
              << " (stop the server before migrating)\n";
    return 1;
  }
  auto from = store::SqliteStore::Open(db);
  if (!from.has_value()) {
    std::cerr << "carve store migrate: " << app::BadDatabase(db, from.error()).message << "\n";
    return 1;
  }
  auto to = store::EtcdStore::OpenUrl(f.to, {.watch = false}, f.tls);
  if (!to.has_value()) {
    std::cerr << "carve store migrate: --to " << f.to << ": " << to.error().message << "\n";
    return to.error().code == ErrorCode::kInvalidArgument ? 2 : 1;
  }
  auto report = store::MigrateRecords(**from, **to);
  if (!report.has_value()) {
    std::cerr << "carve store migrate: " << report.error().message << "\n";
    return 1;
  }
  if (ctx.json) {
    std::cout << nlohmann::json{{"records", report->records},
                                {"records_by_kind", report->records_by_kind}}
                     .dump(2)
              << "\n";
    return 0;
  }
  for (const auto& [kind, n] : report->records_by_kind) {
    std::cout << kind << ": " << n << "\n";
  }
  std::cout << "carve store migrate: " << report->records << " records from " << db << " to "
            << f.to << "; start the server with --store " << f.to << "\n";
  return 0;
}

}  // namespace

void RegisterStoreCommands(CLI::App& app, Context& ctx) {
  CLI::App* store = app.add_subcommand("store", "The control plane's durable state");
  store->require_subcommand(1);
  auto flags = std::make_shared<MigrateFlags>();
  CLI::App* migrate = store->add_subcommand(
      "migrate", "Copy a stopped server's SQLite records into etcd, versions and times kept");
  migrate->add_option("--data-dir", flags->data_dir, "The server's data directory");
  migrate->add_option("--to", flags->to, "etcd://HOST:PORT,...[/PREFIX], an empty prefix")
      ->required();
  migrate->add_option("--etcd-cacert", flags->tls.ca_file, "With etcds://: the members' CA");
  migrate->add_option("--etcd-cert", flags->tls.cert_file, "With etcds://: a client certificate");
  migrate->add_option("--etcd-key", flags->tls.key_file, "With etcds://: its key");
  migrate->callback([flags, &ctx] { ctx.exit_code = Migrate(*flags, ctx); });
}

}  // namespace carve::cli
