#include "interposer/ledger_gap.h"

#include <gtest/gtest.h>

namespace carve::interposer {
namespace {

LedgerSnapshot Snapshot(uint64_t used) {
  LedgerSnapshot s;
  s.settings.worker_id = "w1";
  s.used_bytes = used;
  return s;
}

TEST(LedgerGap, WithoutNvmlTheGapIsUnmeasuredNotZero) {
  LedgerGap gap = ComputeLedgerGap(Snapshot(100), std::nullopt);
  EXPECT_EQ(gap.ledger_bytes, 100u);
  EXPECT_FALSE(gap.gap_bytes.has_value());
  EXPECT_NE(gap.note.find("NVML not present"), std::string::npos);
}

TEST(LedgerGap, IsNvmlTotalMinusLedgerTotal) {
  std::vector<NvmlProcessMemory> nvml{{11, 300}, {12, 500}};
  LedgerGap gap = ComputeLedgerGap(Snapshot(700), std::span<const NvmlProcessMemory>(nvml));
  EXPECT_EQ(gap.nvml_bytes, 800u);
  EXPECT_EQ(gap.gap_bytes, 100);
  gap = ComputeLedgerGap(Snapshot(900), std::span<const NvmlProcessMemory>(nvml));
  EXPECT_EQ(gap.gap_bytes, -100);
}

}  // namespace
}  // namespace carve::interposer
