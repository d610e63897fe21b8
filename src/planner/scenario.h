// Traffic scenarios in genai-bench's notation (perf-anchors.md 3d):
//   D(in,out)                       every request has `in` prompt and `out` output tokens;
//   N(mean_in,sd_in)/(mean_out,sd_out)  normally distributed lengths. The planner uses the MEANS
//                                   (it simulates fixed-length requests) and says so in `note`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace carve::planner {

struct Scenario {
  std::string text;       // As given, normalised without spaces: "D(2000,200)".
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::string note;       // Set when the planner approximates the scenario (N: means used).
};

// InvalidArgument names the text and the accepted forms.
Result<Scenario> ParseScenario(std::string_view text);
// Scenarios separated by ';' or by ',' between closing and opening parentheses:
// "D(100,100),D(2000,200)" or "D(100,100);N(480,240)/(300,150)".
Result<std::vector<Scenario>> ParseScenarios(std::string_view text);

// "1,2,4,8", "2..512" (powers of two from 2 to 512) or "1,2,4,...,512" (the same ladder).
// InvalidArgument for non-positive or unparseable values.
Result<std::vector<int>> ParseConcurrency(std::string_view text);

}  // namespace carve::planner
