#include "server/ui/metrics_history.h"

#include <gtest/gtest.h>

#include <cmath>

#include "http/metrics.h"

namespace carve::server::ui {
namespace {

using nlohmann::json;

constexpr int64_t kT0 = 1'700'000'000'000;

// The router's families, declared as src/runtime/router.cc declares them.
struct RouterMetrics {
  http::MetricsRegistry registry;
  http::Counter& requests = registry.AddCounter("carve_runtime_requests_total", "h",
                                                {"account", "endpoint", "component", "code"});
  http::Counter& errors = registry.AddCounter("carve_runtime_errors_total", "h",
                                              {"account", "endpoint", "component", "type"});
  http::Histogram& latency =
      registry.AddHistogram("carve_runtime_request_duration_seconds", "h",
                            {"account", "endpoint", "component"}, {0.01, 0.1});
  http::Gauge& card_core = registry.AddGauge("carve_queue_card_core_allocated_percent", "h",
                                             {"account", "queue", "node", "gpu"});
  http::Gauge& card_memory = registry.AddGauge("carve_queue_card_memory_allocated_bytes", "h",
                                               {"account", "queue", "node", "gpu"});
  http::Gauge& card_capacity = registry.AddGauge("carve_queue_card_memory_capacity_bytes", "h",
                                                 {"account", "queue", "node", "gpu"});
  http::Gauge& worker_core = registry.AddGauge("carve_queue_worker_core_used_percent", "h",
                                               {"account", "queue", "job", "task", "node", "gpu"});
};

constexpr char kA[] = "111111111111";
constexpr char kB[] = "222222222222";
const std::set<ComponentKey> kE1C1 = {{"e1", "c1"}};

TEST(HistogramQuantile, InterpolatesInsideTheBucketThatHoldsTheRank) {
  // The worked example of the header: 40 under 10 ms, 10 more under 100 ms.
  const std::vector<std::pair<double, double>> b = {{0.01, 40}, {0.1, 50}, {HUGE_VAL, 50}};
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.5, b), 0.00625);
  EXPECT_NEAR(*HistogramQuantile(0.99, b), 0.0955, 1e-12);
}

TEST(HistogramQuantile, IsTheLargestFiniteBoundWhenTheRankFallsInInf) {
  const std::vector<std::pair<double, double>> b = {{0.01, 1}, {0.1, 2}, {HUGE_VAL, 10}};
  EXPECT_DOUBLE_EQ(*HistogramQuantile(0.99, b), 0.1);
}

TEST(HistogramQuantile, HasNoValueForAnEmptyHistogram) {
  EXPECT_FALSE(HistogramQuantile(0.5, {{0.01, 0}, {HUGE_VAL, 0}}).has_value());
  EXPECT_FALSE(HistogramQuantile(0.5, {}).has_value());
}

TEST(MetricsHistory, TurnsTwoRecordsIntoRatesAndPercentiles) {
  RouterMetrics m;
  MetricsHistory h;
  m.requests.Increment({kA, "e1", "c1", "200"}, 100);
  ASSERT_TRUE(h.Record(kT0, m.registry.Expose()).ok());
  m.requests.Increment({kA, "e1", "c1", "200"}, 45);
  m.requests.Increment({kA, "e1", "c1", "ModelError"}, 5);
  m.errors.Increment({kA, "e1", "c1", "ModelError"}, 5);
  for (int i = 0; i < 40; ++i) m.latency.Observe({kA, "e1", "c1"}, 0.005);
  for (int i = 0; i < 10; ++i) m.latency.Observe({kA, "e1", "c1"}, 0.05);
  ASSERT_TRUE(h.Record(kT0 + 5000, m.registry.Expose()).ok());

  json q = h.Query(kA, kE1C1, kT0 + 5000);
  ASSERT_EQ(q["components"].size(), 1u);
  const json& points = q["components"][0]["points"];
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0]["t_ms"], kT0 + 5000);
  EXPECT_DOUBLE_EQ(points[0]["requests_per_s"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(points[0]["errors_per_s"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(points[0]["p50_ms"].get<double>(), 6.25);
  EXPECT_DOUBLE_EQ(points[0]["p99_ms"].get<double>(), 95.5);
  EXPECT_TRUE(points[0]["output_tokens_per_s"].is_null());  // Nothing counts tokens.
  const json& summary = q["components"][0]["last_minute"];
  EXPECT_DOUBLE_EQ(summary["requests"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(summary["window_s"].get<double>(), 5);
}

TEST(MetricsHistory, ACounterThatWentDownCountsItsNewValue) {
  RouterMetrics before;
  before.requests.Increment({kA, "e1", "c1", "200"}, 1000);
  RouterMetrics after;  // A restarted server: counters start again.
  after.requests.Increment({kA, "e1", "c1", "200"}, 20);
  MetricsHistory h;
  ASSERT_TRUE(h.Record(kT0, before.registry.Expose()).ok());
  ASSERT_TRUE(h.Record(kT0 + 10'000, after.registry.Expose()).ok());
  json p = h.Query(kA, kE1C1, kT0 + 10'000)["components"][0]["points"][0];
  EXPECT_DOUBLE_EQ(p["requests_per_s"].get<double>(), 2.0);
}

// The router creates a component's series at its first request: no series means no request,
// which is 0 requests/s, not "unknown"; latency has no value without a request.
TEST(MetricsHistory, AComponentWithoutTrafficHasZeroRatesAndNoLatency) {
  RouterMetrics m;
  MetricsHistory h;
  ASSERT_TRUE(h.Record(kT0, m.registry.Expose()).ok());
  ASSERT_TRUE(h.Record(kT0 + 5000, m.registry.Expose()).ok());
  json p = h.Query(kA, kE1C1, kT0 + 5000)["components"][0]["points"][0];
  EXPECT_DOUBLE_EQ(p["requests_per_s"].get<double>(), 0);
  EXPECT_TRUE(p["p99_ms"].is_null());
}

TEST(MetricsHistory, ReturnsOnlyTheComponentsAndQueuesOfTheCaller) {
  RouterMetrics m;
  m.requests.Increment({kA, "e1", "c1", "200"});
  m.requests.Increment({kB, "e2", "theirs", "200"});
  m.card_core.Set({kA, "mine", "n0", "0"}, 30);
  m.card_core.Set({kB, "theirs", "n1", "0"}, 60);
  MetricsHistory h;
  ASSERT_TRUE(h.Record(kT0, m.registry.Expose()).ok());
  ASSERT_TRUE(h.Record(kT0 + 5000, m.registry.Expose()).ok());
  json q = h.Query(kA, kE1C1, kT0 + 5000);
  ASSERT_EQ(q["components"].size(), 1u);
  EXPECT_EQ(q["components"][0]["component"], "c1");
  ASSERT_EQ(q["queues"].size(), 1u);
  EXPECT_EQ(q["queues"][0]["queue"], "mine");
  EXPECT_EQ(q.dump().find("theirs"), std::string::npos) << q.dump();
}

// Two accounts that both have endpoint e1 with component c1: each sees its own requests only.
TEST(MetricsHistory, KeepsSameNamedComponentsOfTwoAccountsApart) {
  RouterMetrics m;
  MetricsHistory h;
  ASSERT_TRUE(h.Record(kT0, m.registry.Expose()).ok());
  m.requests.Increment({kA, "e1", "c1", "200"}, 10);
  m.requests.Increment({kB, "e1", "c1", "200"}, 35);
  for (int i = 0; i < 10; ++i) m.latency.Observe({kA, "e1", "c1"}, 0.005);
  for (int i = 0; i < 35; ++i) m.latency.Observe({kB, "e1", "c1"}, 0.05);
  ASSERT_TRUE(h.Record(kT0 + 5000, m.registry.Expose()).ok());
  const json a = h.Query(kA, kE1C1, kT0 + 5000)["components"][0]["points"][0];
  const json b = h.Query(kB, kE1C1, kT0 + 5000)["components"][0]["points"][0];
  EXPECT_DOUBLE_EQ(a["requests"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(b["requests"].get<double>(), 35);
  EXPECT_LT(a["p99_ms"].get<double>(), 10);  // A's all under 10 ms, B's all over.
  EXPECT_GT(b["p99_ms"].get<double>(), 10);
}

// A runtime series that says nothing of its account belongs to nobody a query can name.
TEST(MetricsHistory, IgnoresRuntimeSeriesWithoutAnAccount) {
  MetricsHistory h;
  ASSERT_TRUE(h.Record(kT0, "").ok());
  ASSERT_TRUE(h.Record(kT0 + 5000,
                       "carve_runtime_requests_total{endpoint=\"e1\","
                       "component=\"c1\",code=\"200\"} 50\n")
                  .ok());
  const json p = h.Query(kA, kE1C1, kT0 + 5000)["components"][0]["points"][0];
  EXPECT_DOUBLE_EQ(p["requests"].get<double>(), 0);
}

TEST(MetricsHistory, SumsAQueuesCardsAndSaysWhatWasNotMeasured) {
  RouterMetrics m;
  constexpr double kMib = 1024.0 * 1024.0;
  m.card_core.Set({"a", "q", "n0", "0"}, 90);
  m.card_core.Set({"a", "q", "n0", "1"}, 30);
  m.card_memory.Set({"a", "q", "n0", "0"}, 3000 * kMib);
  m.card_memory.Set({"a", "q", "n0", "1"}, 1000 * kMib);
  m.card_capacity.Set({"a", "q", "n0", "0"}, 23552 * kMib);
  m.card_capacity.Set({"a", "q", "n0", "1"}, 23552 * kMib);
  m.worker_core.Set({"a", "q", "j-1", "0", "n0", "0"}, 27.5);
  MetricsHistory h;
  ASSERT_TRUE(h.Record(kT0, m.registry.Expose()).ok());
  json p = h.Query("a", {}, kT0)["queues"][0]["points"][0];
  EXPECT_DOUBLE_EQ(p["core_allocated_percent"].get<double>(), 120);
  EXPECT_DOUBLE_EQ(p["core_capacity_percent"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(p["memory_allocated_mib"].get<double>(), 4000);
  EXPECT_DOUBLE_EQ(p["memory_capacity_mib"].get<double>(), 47104);
  EXPECT_DOUBLE_EQ(p["core_used_percent"].get<double>(), 27.5);
  EXPECT_EQ(p["workers_core_measured"], 1);
  EXPECT_TRUE(p["memory_used_mib"].is_null());  // No worker's memory was measured: not 0.
}

TEST(MetricsHistory, ForgetsRecordsOlderThanTheWindow) {
  RouterMetrics m;
  HistoryOptions options;
  options.window_ms = 10'000;
  MetricsHistory h(options);
  for (int i = 0; i <= 4; ++i) ASSERT_TRUE(h.Record(kT0 + i * 5000, m.registry.Expose()).ok());
  EXPECT_EQ(h.records(), 3u);  // t = 10, 15, 20 s.
  EXPECT_EQ(h.Query(kA, kE1C1, kT0 + 20'000)["components"][0]["points"].size(), 2u);
}

TEST(MetricsHistory, SummarisesTheLastMinuteFromTheRecordAMinuteBack) {
  RouterMetrics m;
  MetricsHistory h;
  for (int i = 0; i <= 24; ++i) {  // Two minutes at 5 s, 1 request/s.
    ASSERT_TRUE(h.Record(kT0 + i * 5000, m.registry.Expose()).ok());
    m.requests.Increment({kA, "e1", "c1", "200"}, 5);
  }
  json s = h.Query(kA, kE1C1, kT0 + 120'000)["components"][0]["last_minute"];
  EXPECT_DOUBLE_EQ(s["window_s"].get<double>(), 60);
  EXPECT_DOUBLE_EQ(s["requests_per_s"].get<double>(), 1.0);
}

TEST(MetricsHistory, KeepsNothingFromAnExpositionThatDoesNotParse) {
  MetricsHistory h;
  Status st = h.Record(kT0, "carve_runtime_requests_total{endpoint=\"e\" 1\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(h.records(), 0u);
}

TEST(MetricsHistory, IgnoresARecordThatIsNotNewerThanTheLast) {
  RouterMetrics m;
  MetricsHistory h;
  ASSERT_TRUE(h.Record(kT0, m.registry.Expose()).ok());
  ASSERT_TRUE(h.Record(kT0, m.registry.Expose()).ok());
  EXPECT_EQ(h.records(), 1u);
}

}  // namespace
}  // namespace carve::server::ui
