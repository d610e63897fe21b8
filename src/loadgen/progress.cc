#include "loadgen/progress.h"

#include <algorithm>

#include <fmt/format.h>

namespace carve::loadgen {

std::string ProgressBar::Bar(double fraction, int width) {
  const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width + 0.5);
  return "[" + std::string(static_cast<size_t>(filled), '#') +
         std::string(static_cast<size_t>(width - filled), '.') + "]";
}

void ProgressBar::StartCell(const std::string& label, std::optional<int64_t> requests,
                            std::optional<double> duration_s) {
  std::lock_guard lock(mu_);
  ++cell_;
  label_ = label;
  requests_ = requests;
  duration_s_ = duration_s;
  finished_ = 0;
  elapsed_s_ = 0;
  if (tty_) DrawLocked(0, 0);
}

void ProgressBar::Update(int64_t finished, double elapsed_s) {
  std::lock_guard lock(mu_);
  finished_ = finished;
  elapsed_s_ = elapsed_s;
  const auto now = std::chrono::steady_clock::now();
  if (!tty_ || now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  DrawLocked(finished, elapsed_s);
}

void ProgressBar::EndCell(const std::string& summary) {
  std::lock_guard lock(mu_);
  if (tty_) {
    out_ << "\r\033[K";
  }
  out_ << fmt::format("cell {}/{} {}: {} requests in {:.1f} s, {}\n", cell_, total_cells_, label_,
                      finished_, elapsed_s_, summary);
  out_.flush();
}

void ProgressBar::DrawLocked(int64_t finished, double elapsed_s) {
  double fraction = 0;
  if (requests_ && *requests_ > 0) {
    fraction = static_cast<double>(finished) / static_cast<double>(*requests_);
  }
  if (duration_s_ && *duration_s_ > 0) fraction = std::max(fraction, elapsed_s / *duration_s_);
  out_ << fmt::format("\r\033[K{} cell {}/{} {} {} req {:.1f}s", Bar(fraction, 30), cell_,
                      total_cells_, label_, finished, elapsed_s);
  out_.flush();
}

}  // namespace carve::loadgen
