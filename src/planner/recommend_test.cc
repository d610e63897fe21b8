#include "planner/recommend.h"

#include <gtest/gtest.h>

#include "catalog/catalog.h"
#include "planner/model_catalog.h"

namespace carve::planner {
namespace {

PlanContext Llama8b() {
  PlanContext ctx;
  ctx.model = FindModel("llama-3.1-8b").value();
  ctx.sim.requests_per_client = 2;
  return ctx;
}

RecommendRequest Request(std::string_view slo) {
  RecommendRequest req;
  req.scenario = ParseScenario("D(2000,200)").value();
  req.concurrency = 16;
  req.slo = ParseSlo(slo).value();
  return req;
}

TEST(ParseSlo, ReadsUnitsAndRejectsUnknownMetrics) {
  auto slo = ParseSlo("ttft_p50<=800ms,itl_p50<=0.04s,tok_s>=100").value();
  ASSERT_EQ(slo.size(), 3u);
  EXPECT_DOUBLE_EQ(slo[0].value, 0.8);
  EXPECT_DOUBLE_EQ(slo[1].value, 0.04);
  EXPECT_FALSE(slo[2].at_most);
  auto bad = ParseSlo("latency<=1s");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("latency"), std::string::npos);
  EXPECT_FALSE(ParseSlo("ttft_p50<=800").has_value());  // No unit.
}

TEST(Recommend, RanksEveryOptionMeetingTheSloByCost) {
  Recommendation rec = Recommend(Llama8b(), Request("ttft_p50<=800ms,itl_p50<=40ms")).value();
  ASSERT_FALSE(rec.ranked.empty());
  for (size_t i = 1; i < rec.ranked.size(); ++i) {
    EXPECT_LE(*rec.ranked[i - 1].usd_per_mtok, *rec.ranked[i].usd_per_mtok);
  }
  for (const OptionResult& o : rec.ranked) {
    EXPECT_LE(o.cell->ttft_p50_s, 0.8) << o.target.Name();
    EXPECT_LE(o.cell->itl_p50_s, 0.04) << o.target.Name();
  }
}

TEST(Recommend, RulesOutSmallPartitionsForMemoryAndSaysSo) {
  Recommendation rec = Recommend(Llama8b(), Request("")).value();
  bool found = false;
  for (const OptionResult& o : rec.ruled_out) {
    if (o.target.Name() == "a100-40gb:1g.5gb") {
      EXPECT_EQ(o.ruled_out, RuledOut::kMemory);
      EXPECT_NE(o.reason.find("weights 16.06 GB"), std::string::npos) << o.reason;
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Recommend, RulesOutFp8OnGpusWithoutIt) {
  PlanContext ctx = Llama8b();
  ctx.precision = {Dtype::kFp8, Dtype::kFp8};
  Recommendation rec = Recommend(ctx, Request("")).value();
  for (const OptionResult& o : rec.ranked) EXPECT_TRUE(o.target.gpu->has_fp8()) << o.target.Name();
  bool a100 = false;
  for (const OptionResult& o : rec.ruled_out) {
    if (o.target.Name() == "a100-40gb") a100 = o.ruled_out == RuledOut::kPrecision;
  }
  EXPECT_TRUE(a100);
}

// Seed 001: mig-1g.10gb on a p4d needs R525; the default p4d image ships 470.256.02.
TEST(Recommend, RulesOutProfilesTheFleetDriverLacks) {
  RecommendRequest req = Request("");
  req.scenario = ParseScenario("D(100,100)").value();
  req.driver = catalog::DriverVersion::Parse("470.256.02").value();
  PlanContext ctx = Llama8b();
  ctx.model = FindModel("llama-3.2-1b").value();
  Recommendation rec = Recommend(ctx, req).value();
  bool found = false;
  for (const OptionResult& o : rec.ruled_out) {
    if (o.target.Name() == "a100-40gb:1g.10gb") {
      EXPECT_EQ(o.ruled_out, RuledOut::kDriver);
      EXPECT_NE(o.reason.find("470.256.02"), std::string::npos);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Recommend, SloFailuresNameTheMetricAndBothValues) {
  Recommendation rec = Recommend(Llama8b(), Request("itl_p50<=1ms")).value();
  EXPECT_TRUE(rec.ranked.empty());
  bool slo = false;
  for (const OptionResult& o : rec.ruled_out) {
    if (o.ruled_out == RuledOut::kSlo) {
      EXPECT_NE(o.reason.find("itl_p50"), std::string::npos);
      EXPECT_NE(o.reason.find("> 1.0 ms"), std::string::npos) << o.reason;
      slo = true;
    }
  }
  EXPECT_TRUE(slo);
}

// On two H100s the cheapest option meeting the SLO is a whole H100 (a 7g.80gb partition costs
// the same and ranks after it), so the fleet layout is one copy per GPU, MIG off: two of the three
// copies fit, and the note says so. Partition packing is PackCopies' (below).
TEST(Recommend, PacksTheWinnersCopiesOntoTheFleet) {
  RecommendRequest req = Request("ttft_p50<=2s");
  req.fleet = ParseFleet("h100-80gb:2").value();
  req.copies = 3;
  Recommendation rec = Recommend(Llama8b(), req).value();
  ASSERT_GE(rec.ranked.size(), 2u);
  EXPECT_EQ(rec.ranked[0].target.Name(), "h100-80gb");
  EXPECT_EQ(rec.ranked[0].target.profile, nullptr);
  EXPECT_EQ(rec.ranked[1].target.Name(), "h100-80gb:7g.80gb");
  EXPECT_DOUBLE_EQ(*rec.ranked[0].usd_per_mtok, *rec.ranked[1].usd_per_mtok);
  ASSERT_TRUE(rec.layout.has_value());
  EXPECT_EQ(rec.layout->gpu->id, "h100-80gb");
  EXPECT_EQ(rec.layout->profile, nullptr);
  EXPECT_EQ(rec.layout->copies_wanted, 3);
  EXPECT_EQ(rec.layout->per_gpu, 1);
  EXPECT_EQ(rec.layout->gpus_used, 2);
  EXPECT_EQ(rec.layout->copies_placed, 2);
  EXPECT_TRUE(rec.layout->layout.instances.empty());
  EXPECT_NE(rec.layout->note.find("one copy per GPU"), std::string::npos) << rec.layout->note;
}

TEST(PackCopies, TwoH100HalvesPerGpu) {
  const catalog::GpuModel& h100 = *catalog::FindGpu("h100-80gb").value();
  const catalog::MigProfile& p = *catalog::FindProfile(h100, "3g.40gb").value();
  auto s = PackCopies(h100, p, 5, 2, std::nullopt);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->per_gpu, 2);
  EXPECT_EQ(s->gpus_used, 2);
  EXPECT_EQ(s->copies_placed, 4);
  EXPECT_NE(s->note.find("only 4 of the 5"), std::string::npos);
}

TEST(ParseFleet, RejectsMissingCounts) {
  EXPECT_FALSE(ParseFleet("a100-40gb").has_value());
  EXPECT_FALSE(ParseFleet("a100-40gb:0").has_value());
  EXPECT_EQ(ParseFleet("a100-40gb:8,h100-80gb:8").value().size(), 2u);
}

}  // namespace
}  // namespace carve::planner
