// A reader for the Prometheus text exposition format 0.0.4 (what MetricsRegistry::Expose()
// writes and GET /metrics serves), so the dashboard's history reads the server's metrics
// through the same contract any scraper uses rather than through the registry's internals.
//
//   # HELP name text          (comments and HELP/TYPE lines are skipped)
//   name{label="value",...} 12.5 [timestamp]
//
// Label values unescape \\, \" and \n; values may be +Inf, -Inf or NaN. Errors are
// InvalidArgument naming the line, the text and what was expected there.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace carve::server::ui {

struct PromSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // In exposition order.
  double value = 0;

  // The label's value, or nullptr when the sample has no such label.
  const std::string* Label(std::string_view label_name) const;
};

// Parses `text`. When `keep` is given, only samples whose metric name it accepts are returned
// (the others are still checked for syntax).
Result<std::vector<PromSample>> ParsePromText(
    std::string_view text, const std::function<bool(std::string_view)>& keep = nullptr);

}  // namespace carve::server::ui
