// The progress display of `carve bench` on stderr: a redrawn bar on a terminal, one line per
// finished cell otherwise (logs, CI). Thread-safe: workers report, the main thread starts and
// ends cells.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>

namespace carve::loadgen {

class ProgressBar {
 public:
  ProgressBar(std::ostream& out, bool tty, int total_cells) :
      out_(out), tty_(tty), total_cells_(total_cells) {}

  // `requests` / `duration_s`: the cell's stop conditions, for the fraction done.
  void StartCell(const std::string& label, std::optional<int64_t> requests,
                 std::optional<double> duration_s);
  void Update(int64_t finished, double elapsed_s);
  // `summary` ends the cell's line ("1234.5 tok/s, 0 errors").
  void EndCell(const std::string& summary);

  // "[#####.....]" for a fraction in [0, 1], `width` characters between the brackets.
  static std::string Bar(double fraction, int width);

 private:
  void DrawLocked(int64_t finished, double elapsed_s);

  std::ostream& out_;
  const bool tty_;
  const int total_cells_;
  std::mutex mu_;
  int cell_ = 0;                       // guarded by mu_
  std::string label_;                  // guarded by mu_
  std::optional<int64_t> requests_;    // guarded by mu_
  std::optional<double> duration_s_;   // guarded by mu_
  int64_t finished_ = 0;               // guarded by mu_
  double elapsed_s_ = 0;               // guarded by mu_
  std::chrono::steady_clock::time_point last_draw_{};  // guarded by mu_
};

}  // namespace carve::loadgen
