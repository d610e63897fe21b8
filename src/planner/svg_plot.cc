#include "planner/svg_plot.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

namespace carve::planner {
namespace {

constexpr int kPanelWidth = 480;
constexpr int kPanelHeight = 340;
constexpr int kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;
constexpr std::array<std::string_view, 6> kColors = {"#1f77b4", "#d62728", "#2ca02c",
                                                     "#9467bd", "#ff7f0e", "#8c564b"};

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Rounds up to 1, 2 or 5 x 10^k so axis ticks read well.
double NiceCeil(double v) {
  if (v <= 0) return 1;
  double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

std::string Panel(const PlotPanel& panel, int x0, int y0) {
  double xmin = 1e300, xmax = -1e300, ymax = 0;
  for (const PlotSeries& s : panel.series) {
    for (auto [x, y] : s.points) {
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  }
  if (xmin > xmax) xmin = 1, xmax = 2;
  if (xmin == xmax) xmax = xmin * 2;
  ymax = NiceCeil(ymax);
  const int w = kPanelWidth - kLeft - kRight, h = kPanelHeight - kTop - kBottom;
  auto fx = [&](double x) {
    double t = panel.log_x ? std::log2(x / xmin) / std::log2(xmax / xmin)
                           : (x - xmin) / (xmax - xmin);
    return x0 + kLeft + t * w;
  };
  auto fy = [&](double y) { return y0 + kTop + h - y / ymax * h; };
  std::string out;
  out += fmt::format(R"svg(<text x="{}" y="{}" font-size="14" text-anchor="middle">{}</text>)svg",
                     x0 + kPanelWidth / 2, y0 + 20, Escape(panel.title)) + "\n";
  out += fmt::format(R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#444"/>)svg",
                     x0 + kLeft, y0 + kTop, w, h) + "\n";
  for (int i = 0; i <= 4; ++i) {
    double y = ymax * i / 4;
    out += fmt::format(
        R"svg(<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{:g}</text>)svg", x0 + kLeft - 4,
        fy(y) + 3, y) + "\n";
  }
  std::vector<double> xs;
  for (const PlotSeries& s : panel.series) {
    for (auto [x, y] : s.points) xs.push_back(x);
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  for (double x : xs) {
    out += fmt::format(
        R"svg(<text x="{:.1f}" y="{}" font-size="10" text-anchor="middle">{:g}</text>)svg", fx(x),
        y0 + kTop + h + 14, x) + "\n";
  }
  out += fmt::format(R"svg(<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>)svg",
                     x0 + kLeft + w / 2, y0 + kPanelHeight - 12, Escape(panel.x_label)) + "\n";
  out += fmt::format(
      R"svg(<text x="{}" y="{}" font-size="11" text-anchor="middle" transform="rotate(-90 {} {})">{}</text>)svg",
      x0 + 14, y0 + kTop + h / 2, x0 + 14, y0 + kTop + h / 2, Escape(panel.y_label)) + "\n";
  for (size_t i = 0; i < panel.series.size(); ++i) {
    const PlotSeries& s = panel.series[i];
    std::string_view color = kColors[i % kColors.size()];
    std::string pts;
    for (auto [x, y] : s.points) pts += fmt::format("{:.1f},{:.1f} ", fx(x), fy(y));
    out += fmt::format(R"svg(<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>)svg",
                       color, pts) + "\n";
    for (auto [x, y] : s.points) {
      out += fmt::format(R"svg(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}"/>)svg", fx(x), fy(y),
                         color) + "\n";
    }
    out += fmt::format(R"svg(<text x="{}" y="{}" font-size="11" fill="{}">{}</text>)svg",
                       x0 + kLeft + 8, y0 + kTop + 14 + 14 * static_cast<int>(i), color,
                       Escape(s.name)) + "\n";
  }
  return out;
}

}  // namespace

std::string RenderSvg(const std::string& title, const std::vector<PlotPanel>& panels) {
  int width = kPanelWidth * static_cast<int>(std::max<size_t>(1, panels.size()));
  int height = kPanelHeight + 30;
  std::string out = fmt::format(
      R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif">)svg",
      width, height, width, height) + "\n";
  out += fmt::format(R"svg(<rect width="{}" height="{}" fill="white"/>)svg", width, height) + "\n";
  out += fmt::format(R"svg(<text x="10" y="18" font-size="13">{}</text>)svg", Escape(title)) + "\n";
  for (size_t i = 0; i < panels.size(); ++i) {
    out += Panel(panels[i], kPanelWidth * static_cast<int>(i), 30);
  }
  out += "</svg>\n";
  return out;
}

std::string ComparisonSvg(const Comparison& cmp, size_t scenario_index) {
  const ScenarioComparison& s = cmp.scenarios[scenario_index];
  PlotPanel tput{"Output tokens/s (predicted)svg", "concurrency", "output tok/s", {}, true};
  PlotPanel cost{"$ per million output tokens (predicted)svg", "concurrency", "USD / M tokens", {},
                 true};
  for (size_t t = 0; t < cmp.targets.size(); ++t) {
    PlotSeries a{cmp.targets[t].Name(), {}}, b{cmp.targets[t].Name(), {}};
    for (const CompareRow& row : s.rows) {
      a.points.emplace_back(row.concurrency, row.cells[t].cell.output_tok_s);
      if (row.cells[t].usd_per_mtok) b.points.emplace_back(row.concurrency, *row.cells[t].usd_per_mtok);
    }
    tput.series.push_back(std::move(a));
    cost.series.push_back(std::move(b));
  }
  return RenderSvg(fmt::format("{}: model prediction, not a measurement", s.scenario.text),
                   {tput, cost});
}

}  // namespace carve::planner
