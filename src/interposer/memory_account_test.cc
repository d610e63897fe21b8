#include "interposer/memory_account.h"

#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace carve::interposer {
namespace {

class MemoryAccountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/carve-account-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto l = Ledger::Create(dir_ + "/w.ledger", LedgerSettings{"w", 1000, 100, false, 100},
                            std::make_shared<ProcfsProcessProbe>());
    ASSERT_TRUE(l.has_value());
    ledger_ = std::move(l).value();
    account_ = std::make_unique<MemoryAccount>(*ledger_);
  }
  void TearDown() override {
    account_.reset();
    ledger_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<MemoryAccount> account_;
};

TEST_F(MemoryAccountTest, ForgettingARecordedAllocationReleasesItsBytes) {
  ASSERT_TRUE(account_->Admit(400).ok());
  account_->Record(AllocationKind::kDevicePointer, 0xA0, 400);
  EXPECT_EQ(ledger_->UsedBytes(), 400u);
  EXPECT_EQ(account_->Forget(AllocationKind::kDevicePointer, 0xA0), 400u);
  EXPECT_EQ(ledger_->UsedBytes(), 0u);
}

TEST_F(MemoryAccountTest, ForgettingAnUnknownHandleReleasesNothing) {
  ASSERT_TRUE(account_->Admit(400).ok());
  account_->Record(AllocationKind::kArray, 0xA0, 400);
  EXPECT_EQ(account_->Forget(AllocationKind::kDevicePointer, 0xA0), 0u);  // other kind
  EXPECT_EQ(account_->Forget(AllocationKind::kArray, 0xB0), 0u);
  EXPECT_EQ(ledger_->UsedBytes(), 400u);
}

TEST_F(MemoryAccountTest, AbortUndoesAnAdmitWhoseAllocationFailed) {
  ASSERT_TRUE(account_->Admit(1000).ok());
  account_->Abort(1000);
  EXPECT_EQ(ledger_->UsedBytes(), 0u);
}

TEST_F(MemoryAccountTest, ResizeBeyondTheQuotaIsRefusedAndChangesNothing) {
  ASSERT_TRUE(account_->Admit(600).ok());
  account_->Record(AllocationKind::kDevicePointer, 1, 600);
  Status s = account_->Resize(AllocationKind::kDevicePointer, 1, 1001);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(ledger_->UsedBytes(), 600u);
  ASSERT_TRUE(account_->Resize(AllocationKind::kDevicePointer, 1, 512).ok());
  EXPECT_EQ(ledger_->UsedBytes(), 512u);
  EXPECT_EQ(account_->Forget(AllocationKind::kDevicePointer, 1), 512u);
}

TEST_F(MemoryAccountTest, APoolKeepsFreedBytesChargedAndReusesThem) {
  ASSERT_TRUE(account_->AdmitFromPool(7, 600).ok());
  account_->RecordFromPool(7, 0x100, 600);
  EXPECT_TRUE(account_->ForgetToPool(0x100));
  EXPECT_EQ(ledger_->UsedBytes(), 600u);  // the pool may still hold them on the device
  EXPECT_EQ(account_->PoolsWithCache(), std::vector<uint64_t>{7});
  ASSERT_TRUE(account_->AdmitFromPool(7, 1000).ok());  // 600 reused + 400 new
  EXPECT_EQ(ledger_->UsedBytes(), 1000u);
  EXPECT_FALSE(account_->AdmitFromPool(8, 1).ok());  // another pool cannot use pool 7's cache
}

TEST_F(MemoryAccountTest, SyncingATrimmedPoolReleasesWhatItNoLongerHolds) {
  ASSERT_TRUE(account_->AdmitFromPool(7, 600).ok());
  account_->RecordFromPool(7, 0x100, 600);
  ASSERT_TRUE(account_->AdmitFromPool(7, 300).ok());
  account_->RecordFromPool(7, 0x200, 300);
  account_->ForgetToPool(0x100);
  EXPECT_EQ(ledger_->UsedBytes(), 900u);
  account_->SyncPool(7, /*reserved_bytes=*/300);  // the driver trimmed the freed 600
  EXPECT_EQ(ledger_->UsedBytes(), 300u);
  EXPECT_TRUE(account_->PoolsWithCache().empty());
}

TEST_F(MemoryAccountTest, ARefusedPoolRequestLeavesTheCacheAsItWas) {
  ASSERT_TRUE(account_->AdmitFromPool(7, 500).ok());
  account_->RecordFromPool(7, 0x100, 500);
  account_->ForgetToPool(0x100);
  ASSERT_TRUE(account_->Admit(400).ok());
  EXPECT_FALSE(account_->AdmitFromPool(7, 700).ok());  // 500 cached + 200 new > 100 left
  EXPECT_EQ(ledger_->UsedBytes(), 900u);
  ASSERT_TRUE(account_->AdmitFromPool(7, 600).ok());  // the cache is intact: 500 + 100
  EXPECT_EQ(ledger_->UsedBytes(), 1000u);
}

TEST_F(MemoryAccountTest, FreeAsyncOfANonPoolPointerIsNotAPoolFree) {
  EXPECT_FALSE(account_->ForgetToPool(0x999));
}

}  // namespace
}  // namespace carve::interposer
