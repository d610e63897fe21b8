#include "store/store_migrate.h"

namespace carve::store {

Result<MigrationReport> MigrateRecords(SqliteStore& from, EtcdStore& to) {
  MigrationReport report;
  CARVE_ASSIGN_OR_RETURN(auto kinds, from.Kinds());
  for (const std::string& kind : kinds) {
    CARVE_ASSIGN_OR_RETURN(auto records, from.ListAllAccounts(kind));
    for (size_t at = 0; at < records.size(); at += to.max_commit_keys()) {
      const size_t end = std::min(records.size(), at + to.max_commit_keys());
      CARVE_RETURN_IF_ERROR(to.Import(std::vector<Record>(
          records.begin() + static_cast<long>(at), records.begin() + static_cast<long>(end))));
    }
    CARVE_ASSIGN_OR_RETURN(auto copied, to.ListAllAccounts(kind));
    if (copied.size() != records.size()) {
      return Internal("migrated " + std::to_string(records.size()) + " " + kind +
                      " records, but etcd holds " + std::to_string(copied.size()));
    }
    report.records_by_kind[kind] = records.size();
    report.records += records.size();
  }
  return report;
}

}  // namespace carve::store
