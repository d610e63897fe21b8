#include "loadgen/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace carve::loadgen {
namespace {

TEST(ProgressBar, BarFillsInProportion) {
  EXPECT_EQ(ProgressBar::Bar(0, 4), "[....]");
  EXPECT_EQ(ProgressBar::Bar(0.5, 4), "[##..]");
  EXPECT_EQ(ProgressBar::Bar(2, 4), "[####]");
}

TEST(ProgressBar, PlainOutputWritesOneLinePerCellWithoutEscapes) {
  std::ostringstream out;
  ProgressBar bar(out, /*tty=*/false, 2);
  bar.StartCell("D(1,1) c=1", 3, std::nullopt);
  bar.Update(1, 0.1);
  bar.Update(3, 0.3);
  bar.EndCell("10.0 tok/s");
  EXPECT_EQ(out.str(), "cell 1/2 D(1,1) c=1: 3 requests in 0.3 s, 10.0 tok/s\n");
}

TEST(ProgressBar, TerminalOutputRedrawsTheBar) {
  std::ostringstream out;
  ProgressBar bar(out, /*tty=*/true, 1);
  bar.StartCell("D(1,1) c=1", 4, std::nullopt);
  bar.Update(2, 0.2);
  bar.EndCell("done");
  EXPECT_NE(out.str().find("\r\033[K[#"), std::string::npos);
  EXPECT_NE(out.str().find("cell 1/1 D(1,1) c=1: 2 requests"), std::string::npos);
}

}  // namespace
}  // namespace carve::loadgen
