// Test helpers for store tests: a temp directory removed at scope exit, and a factory per
// Store implementation so the contract suite runs unchanged against each.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "common/fake_clock.h"
#include "store/etcd_store.h"
#include "store/etcd_test_env.h"
#include "store/fake_store.h"
#include "store/sqlite_store.h"

namespace carve::store {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "carve-store-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct FakeStoreFactory {
  static std::unique_ptr<Store> Make(TempDir&, const Clock& clock) {
    return std::make_unique<FakeStore>(clock);
  }
};

struct SqliteStoreFactory {
  static std::unique_ptr<Store> Make(TempDir& dir, const Clock& clock) {
    auto store = SqliteStore::Open((dir.path() / "carve.db").string(), {.clock = &clock});
    EXPECT_TRUE(store.has_value()) << (store ? "" : store.error().message);
    return store ? std::move(store).value() : nullptr;
  }
};

// One etcd member per test binary, started on first use; every store made from it gets a key
// prefix of its own, so tests do not see each other's records.
inline EtcdCluster& SharedEtcd() {
  static TempDir dir;
  static EtcdCluster cluster(dir.path(), 1);
  return cluster;
}

// With `cache_reads`, a standby's store: reads come from its watch cache.
inline std::unique_ptr<EtcdStore> OpenEtcdStore(const std::vector<std::string>& endpoints,
                                                const Clock* clock, const std::string& prefix,
                                                bool cache_reads = false,
                                                std::chrono::milliseconds cache_wait = {}) {
  EtcdClientOptions client;
  client.endpoints = endpoints;
  EtcdStoreOptions options{.prefix = prefix, .clock = clock, .cache_reads = cache_reads};
  if (cache_wait.count() > 0) options.cache_wait = cache_wait;
  auto store = EtcdStore::Open(std::make_unique<EtcdClient>(client), options);
  EXPECT_TRUE(store.has_value()) << (store ? "" : store.error().message);
  return store ? std::move(store).value() : nullptr;
}

inline std::string UniqueEtcdPrefix() {
  static std::atomic<int> next{0};
  return "/test" + std::to_string(next++);
}

struct EtcdStoreFactory {
  static std::unique_ptr<Store> Make(TempDir&, const Clock& clock) {
    return OpenEtcdStore(SharedEtcd().endpoints(), &clock, UniqueEtcdPrefix());
  }
};

// The same store answering reads from its watch cache, as a standby replica does: the contract
// holds there too (a read waits until the cache has every acknowledged write).
struct EtcdCachedStoreFactory {
  static std::unique_ptr<Store> Make(TempDir&, const Clock& clock) {
    // A long wait: nothing else writes to the member meanwhile, so every read must be served
    // from the cache (the suite checks that none fell back to etcd), however slow the build.
    return OpenEtcdStore(SharedEtcd().endpoints(), &clock, UniqueEtcdPrefix(),
                         /*cache_reads=*/true, std::chrono::seconds(10));
  }
};

inline Key K(std::string kind, std::string name, std::string account = "111111111111") {
  return Key{std::move(account), std::move(kind), std::move(name)};
}

}  // namespace carve::store
