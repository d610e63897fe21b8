// Test helpers for store tests: a temp directory removed at scope exit, and a factory per
// Store implementation so the contract suite runs unchanged against each.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "common/fake_clock.h"
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

inline Key K(std::string kind, std::string name, std::string account = "111111111111") {
  return Key{std::move(account), std::move(kind), std::move(name)};
}

}  // namespace carve::store
