// A database written by main before issue 13 (tests/fixtures/store_v1.sql, made by
// tests/fixtures/make_store_v1.py with that commit's binary), opened by this version: every copy
// placement it kept by slot index is migrated to a copy record naming profile and start, on the
// same GPU and the same partition type, with the same copy id (so the agents' processes stay).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "server/nodes/testing/simulated_node_driver.h"
#include "server/sagemaker/copy_record.h"
#include "server/sagemaker/resources.h"
#include "server/sagemaker/service.h"
#include "store/sqlite_store.h"

namespace carve::server::sagemaker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// (node, GPUs, profile or "" for whole GPUs, start) per copy id, as the v1 records meant them.
using Where = std::tuple<std::string, std::vector<int>, std::string, int>;

class StoreV1MigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("carve-v1-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ifstream in(CARVE_STORE_V1_FIXTURE);
    ASSERT_TRUE(in) << CARVE_STORE_V1_FIXTURE;
    std::stringstream sql;
    sql << in.rdbuf();
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "carve.db").c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.str().c_str(), nullptr, nullptr, &err), SQLITE_OK)
        << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
    store_ = store::SqliteStore::Open((dir_ / "carve.db").string()).value();
    ASSERT_TRUE(nodes::ClaimTestFleet(claims_).ok());
    account_ = store_->ListAllAccounts(std::string(kEndpoint)).value().at(0).key.account;
  }
  void TearDown() override {
    service_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }
  void Open() {
    service_ = std::make_unique<SageMakerService>(*store_, claims_, driver_, ServiceOptions{});
    ASSERT_TRUE(service_->Recover().ok());
  }
  std::map<std::string, Where> Copies() {
    std::map<std::string, Where> out;
    const auto records = store_->ListAllAccounts(std::string(kInferenceComponentCopy)).value();
    for (const auto& r : records) {
      CopyRecord c = CopyRecord::FromRecord(r).value();
      out[c.id] = {
          c.placement.node, c.placement.gpu_indexes, c.placement.profile,
          c.placement.kind == core::RequestKind::kPartition ? c.placement.partition_start : -1};
    }
    return out;
  }
  // What the fixture's records say, read straight from its JSON: slot s of a variant with
  // declared types T is a partition of type T[s]; the A100 starts of these layouts are the
  // layout engine's (4g@0 2g@4 1g@6 for the seed's, 3g@0 2g@4 1g@6 for the reordered one).
  std::map<std::string, Where> V1Copies() {
    const std::map<std::string, int> kStart = {
        {"4g.20gb", 0}, {"3g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}};
    std::map<std::string, std::vector<std::string>> declared;
    const auto endpoints = store_->ListAllAccounts(std::string(kEndpoint)).value();
    for (const auto& r : endpoints) {
      json v = json::parse(r.body)["Variants"][0];
      if (v.contains("PartitionTypes")) declared[r.key.name] = v["PartitionTypes"];
    }
    std::map<std::string, Where> out;
    const auto records = store_->ListAllAccounts(std::string(kInferenceComponent)).value();
    for (const auto& r : records) {
      json c = json::parse(r.body);
      for (const auto& p : c.value("Copies", json::array())) {
        std::vector<int> gpus;
        for (const auto& s : p["slots"]) gpus.push_back(s[0]);
        std::string profile;
        int start = -1;
        if (!c["PartitionType"].get<std::string>().empty()) {
          profile = declared.at(c["EndpointName"]).at(p["slots"][0][1].get<int>()).substr(4);
          start = kStart.at(profile);
        }
        out[p["id"]] = {p["node"], gpus, profile, start};
      }
    }
    return out;
  }

  fs::path dir_;
  std::unique_ptr<store::SqliteStore> store_;
  nodes::NodeClaims claims_;
  nodes::SimulatedNodeDriver driver_{std::chrono::milliseconds(0)};
  std::unique_ptr<SageMakerService> service_;
  std::string account_;
};

TEST_F(StoreV1MigrationTest, EveryCopyKeepsItsIdGpuAndPartition) {
  const std::map<std::string, Where> before = V1Copies();
  ASSERT_EQ(before.size(), 20u);  // 2 + 3 + 8 + 3 + 2 + 2 copies in the fixture.
  Open();
  EXPECT_EQ(Copies(), before);
  const auto records = store_->ListAllAccounts(std::string(kInferenceComponent)).value();
  for (const auto& r : records) {
    EXPECT_FALSE(json::parse(r.body).contains("Copies")) << r.key.name;
  }
}

TEST_F(StoreV1MigrationTest, TheReorderedLayoutBindsCopiesToTheirDeclaredType) {
  Open();
  for (const auto& [id, where] : Copies()) {
    const auto& [node, gpus, profile, start] = where;
    if (node != "p4d.24xlarge-1") continue;  // The "reordered" endpoint's instance.
    EXPECT_TRUE(profile == "1g.5gb" ? start == 6 : profile == "3g.20gb" && start == 0) << id;
  }
}

TEST_F(StoreV1MigrationTest, TheViewAndTheNextPassesFindTheSameCopiesAndMoveNothing) {
  Open();
  const auto migrated = Copies();
  for (int i = 0; i < 3; ++i) service_->ReconcileOnce();
  EXPECT_EQ(Copies(), migrated);
  json carve = service_->EndpointCarveJson(account_, "seed").value();
  int guardrails = 0;
  for (const auto& gpu : carve["nodes"][0]["gpus"]) {
    for (const auto& p : gpu["partitions"]) {
      if (p["occupant"] == account_ + "/guardrail") {
        ++guardrails;
        EXPECT_EQ(p["profile"], "1g.5gb");
        EXPECT_EQ(p["start"], 6);
      }
    }
  }
  EXPECT_EQ(guardrails, 8);
}

TEST_F(StoreV1MigrationTest, EndpointRecordsGainTheirLayoutOnce) {
  Open();
  const auto records = store_->ListAllAccounts(std::string(kEndpoint)).value();
  for (const auto& r : records) {
    json v = json::parse(r.body)["Variants"][0];
    EXPECT_EQ(v.contains("Layout"), v.contains("PartitionTypes")) << r.key.name;
  }
  const auto versions = [&] {
    std::vector<int64_t> out;
    const auto records = store_->ListAllAccounts(std::string(kEndpoint)).value();
    for (const auto& r : records) {
      out.push_back(r.version);
    }
    return out;
  };
  const auto first = versions();
  service_.reset();
  Open();  // A second start has nothing left to migrate.
  EXPECT_EQ(versions(), first);
}

// Components of that version kept no model container (publishing read the Model record each
// time). Recover keeps the container of each model that exists, once, so that publishing reads
// no Model record and a model deleted since changes nothing that runs.
TEST_F(StoreV1MigrationTest, ComponentsKeepTheirModelsContainerOnce) {
  Open();
  const auto components = [&] { return store_->ListAllAccounts(std::string(kInferenceComponent)); };
  const auto records = components().value();
  ASSERT_FALSE(records.empty());
  std::vector<int64_t> first;
  for (const auto& r : records) {
    first.push_back(r.version);
    ComponentRecord c = ComponentRecord::FromRecord(r).value();
    const std::string model = c.ModelName();
    if (model.empty()) continue;
    const bool exists = store_->Get({r.key.account, std::string(kModel), model}).has_value();
    EXPECT_EQ(c.ModelContainerOf(c.spec_version) != nullptr, exists) << r.key.name;
  }
  service_.reset();
  Open();  // A second start has nothing left to migrate.
  std::vector<int64_t> again;
  const auto reopened = components().value();
  for (const auto& r : reopened) again.push_back(r.version);
  EXPECT_EQ(again, first);
}

}  // namespace
}  // namespace carve::server::sagemaker
