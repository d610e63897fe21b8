#include "http/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

namespace carve::http {
namespace {

TEST(Metrics, CounterExposesHelpTypeAndLabelledSamples) {
  MetricsRegistry r;
  Counter& c = r.AddCounter("carve_api_requests_total", "API requests.", {"operation", "code"});
  c.Increment({"CreateEndpoint", "200"});
  c.Increment({"CreateEndpoint", "200"}, 2);
  EXPECT_EQ(c.Value({"CreateEndpoint", "200"}), 3);
  EXPECT_EQ(r.Expose(),
            "# HELP carve_api_requests_total API requests.\n"
            "# TYPE carve_api_requests_total counter\n"
            "carve_api_requests_total{operation=\"CreateEndpoint\",code=\"200\"} 3\n");
}

TEST(Metrics, GaugeWithoutLabelsHasNoBraces) {
  MetricsRegistry r;
  r.AddGauge("carve_up", "1 when serving.").Set({}, 1);
  EXPECT_EQ(r.Expose(), "# HELP carve_up 1 when serving.\n# TYPE carve_up gauge\ncarve_up 1\n");
}

TEST(Metrics, EscapesLabelValuesAndHelp) {
  MetricsRegistry r;
  r.AddGauge("g", "line1\nback\\slash", {"l"}).Set({"a\"b\\c\nd"}, 0.5);
  EXPECT_EQ(r.Expose(),
            "# HELP g line1\\nback\\\\slash\n# TYPE g gauge\n"
            "g{l=\"a\\\"b\\\\c\\nd\"} 0.5\n");
}

TEST(Metrics, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricsRegistry r;
  Histogram& h = r.AddHistogram("lat_seconds", "Latency.", {"op"}, {0.25, 1});
  h.Observe({"x"}, 0.125);
  h.Observe({"x"}, 0.25);  // le is inclusive.
  h.Observe({"x"}, 0.5);
  h.Observe({"x"}, 7);
  EXPECT_EQ(h.Count({"x"}), 4u);
  EXPECT_DOUBLE_EQ(h.Sum({"x"}), 7.875);
  EXPECT_EQ(r.Expose(),
            "# HELP lat_seconds Latency.\n# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{op=\"x\",le=\"0.25\"} 2\n"
            "lat_seconds_bucket{op=\"x\",le=\"1\"} 3\n"
            "lat_seconds_bucket{op=\"x\",le=\"+Inf\"} 4\n"
            "lat_seconds_sum{op=\"x\"} 7.875\n"
            "lat_seconds_count{op=\"x\"} 4\n");
}

TEST(Metrics, FormatsSpecialValues) {
  EXPECT_EQ(FormatMetricValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatMetricValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatMetricValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatMetricValue(42), "42");
  EXPECT_EQ(FormatMetricValue(-3), "-3");
}

TEST(Metrics, FamiliesAreSortedAndDeclaringTwiceReturnsTheSameFamily) {
  MetricsRegistry r;
  Counter& a = r.AddCounter("zz_total", "z");
  Counter& b = r.AddCounter("zz_total", "z");
  EXPECT_EQ(&a, &b);
  r.AddGauge("aa", "a").Set({}, 1);
  std::string text = r.Expose();
  EXPECT_LT(text.find("# HELP aa"), text.find("# HELP zz_total"));
}

TEST(Metrics, CollectorsRefreshGaugesBeforeExposition) {
  MetricsRegistry r;
  Gauge& g = r.AddGauge("carve_endpoints", "Endpoints by status.", {"status"});
  int calls = 0;
  r.AddCollector([&] {
    ++calls;
    g.Clear();
    g.Set({calls == 1 ? "Creating" : "InService"}, 1);
  });
  EXPECT_NE(r.Expose().find("carve_endpoints{status=\"Creating\"} 1"), std::string::npos);
  std::string second = r.Expose();
  EXPECT_NE(second.find("carve_endpoints{status=\"InService\"} 1"), std::string::npos);
  EXPECT_EQ(second.find("Creating"), std::string::npos);
}

TEST(Metrics, ConcurrentIncrementsAreNotLost) {
  MetricsRegistry r;
  Counter& c = r.AddCounter("c_total", "c", {"t"});
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) {
    ts.emplace_back([&] {
      for (int j = 0; j < 10000; ++j) c.Increment({"x"});
    });
  }
  std::thread reader([&] {
    for (int j = 0; j < 100; ++j) (void)r.Expose();
  });
  for (auto& t : ts) t.join();
  reader.join();
  EXPECT_EQ(c.Value({"x"}), 80000);
}

}  // namespace
}  // namespace carve::http
