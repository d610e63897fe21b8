// `carve cluster status`: GET /v1/cluster (app/cluster_view.h) as tables: the replicas and which
// one leads, and the store under them, for etcd each member with its health. --json prints the
// server's JSON. Exit codes: 0 answered and every etcd member healthy, 1 the server refused or a
// member is unhealthy, 2 bad input.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/server_client.h"

namespace carve::cli {
namespace {

using nlohmann::json;

int Status(const Conn& conn, const Context& ctx) {
  json view;
  if (int rc = Call(conn, "carve cluster status", "GET", "/v1/cluster", nullptr, view); rc != 0) {
    return rc;
  }
  bool healthy = true;
  const json store = view.value("store", json::object());
  for (const json& m : store.value("members", json::array()))
    healthy = healthy && m.value("healthy", false);
  if (ctx.json) {
    std::cout << view.dump(2) << "\n";
    return healthy ? 0 : 1;
  }
  std::cout << "leader: " << Str(view.value("leader", json())) << "\n";
  if (store.value("kind", "") == "etcd") {
    std::cout << "store:  etcd " << store.value("url", "") << " (prefix "
              << store.value("prefix", "") << ")\n";
  } else {
    std::cout << "store:  sqlite " << store.value("file", "") << "\n";
  }
  if (view.contains("error")) std::cout << "error:  " << Str(view["error"]) << "\n";
  std::vector<std::vector<std::string>> rows = {{"REPLICA", "LEADER", "HOST", "PID"}};
  for (const json& r : view.value("replicas", json::array())) {
    rows.push_back({Str(r.value("url", json())), r.value("leader", false) ? "yes" : "no",
                    Str(r.value("host", json())), Str(r.value("pid", json()))});
  }
  std::cout << "\n";
  PrintTable(rows);
  if (store.contains("members")) {
    rows = {{"ETCD MEMBER", "ID", "CLIENT URLS", "HEALTHY", "ERROR"}};
    for (const json& m : store["members"]) {
      std::string urls;
      for (const json& u : m.value("client_urls", json::array())) {
        urls += (urls.empty() ? "" : ",") + Str(u);
      }
      rows.push_back({Str(m.value("name", json())), Str(m.value("id", json())), urls,
                      m.value("healthy", false) ? "yes" : "no", Str(m.value("error", json()))});
    }
    std::cout << "\n";
    PrintTable(rows);
  }
  return healthy ? 0 : 1;
}

}  // namespace

void RegisterClusterCommands(CLI::App& app, Context& ctx) {
  CLI::App* cluster = app.add_subcommand("cluster", "The control plane's replicas and store");
  cluster->require_subcommand(1);
  auto conn = std::make_shared<Conn>();
  CLI::App* status = cluster->add_subcommand(
      "status", "Replicas, the leader, and the store's members with their health");
  AddConnFlags(status, *conn);
  status->callback([conn, &ctx] { ctx.exit_code = Status(*conn, ctx); });
}

}  // namespace carve::cli
