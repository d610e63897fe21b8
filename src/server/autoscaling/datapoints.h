// The datapoints of the CloudWatch alarm AWS would create for a policy, computed from carve's
// own samples: n consecutive periods that together cover the last `window` before `now_ms`.
// A pure function, so each rule is tested by itself (datapoints_test.cc).
//
// A rate's datapoint is the sampled count's increase over its period, per minute; a level's is
// the mean of the samples inside its period. Either is divided by the capacity sampled with it
// (a per-copy or per-instance metric). There is no datapoint (nullopt) when the samples do not
// reach back to the window's start (just started, or restarted), or when a period's value is
// undefined (capacity 0, no data). A datapoint is never shorter than a sample interval, so a
// window shorter than n samples gets fewer datapoints.
//
// Worked example: samples every 10 s of an invocation count, 2 copies throughout:
//
//   at (s)  0    10   20   30   40   50   60
//   count   0    20   60   60   120  180  180
//
// Three datapoints over the last 60 s at now = 60 s are the periods (0, 20], (20, 40] and
// (40, 60]: increases of 60, 60 and 60 invocations in 20 s each, 180 per minute, so 90 per
// minute per copy each. The same samples read as a level (requests in flight) give the means
// of the samples inside each period, (20 + 60) / 2 = 40, (60 + 120) / 2 = 90 and
// (180 + 180) / 2 = 180, per copy 20, 45 and 90.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace carve::server::autoscaling {

struct MetricPoint {
  int64_t at_ms = 0;
  std::optional<double> value;  // nullopt: no data at this sample.
  // What the value is divided by: the capacity sampled with it (0 makes it undefined), or -1
  // for a metric used as it is (a customized metric).
  int capacity = -1;
};

struct MetricSeries {
  std::vector<MetricPoint> points;  // Oldest first.
  bool rate = false;                // A cumulative count, read as its rate per minute.
};

std::optional<std::vector<double>> Datapoints(const MetricSeries& series, int64_t now_ms,
                                              std::chrono::milliseconds window, int n,
                                              std::chrono::milliseconds sample_interval);

}  // namespace carve::server::autoscaling
