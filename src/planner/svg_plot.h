// Line plots written as SVG text (no plotting library): one panel per quantity, side by side,
// one line per series, log2 x axis for concurrency ladders.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "planner/compare.h"

namespace carve::planner {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); x > 0 when the axis is log.
};

struct PlotPanel {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<PlotSeries> series;
  bool log_x = true;
};

// A standalone SVG document: a title line, then the panels left to right. Empty series and
// panels render as empty axes. Text is XML-escaped.
std::string RenderSvg(const std::string& title, const std::vector<PlotPanel>& panels);

// Seed 001's two figures for one scenario of a comparison: output tok/s vs concurrency and
// $ per million output tokens vs concurrency, one line per target.
std::string ComparisonSvg(const Comparison& cmp, size_t scenario_index);

}  // namespace carve::planner
