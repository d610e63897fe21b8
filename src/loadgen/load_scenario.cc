#include "loadgen/load_scenario.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace carve::loadgen {
namespace {

// The four numbers of an N() text the planner has already validated: "N(a,b)/(c,d)".
std::vector<double> Numbers(std::string_view text) {
  std::vector<double> out;
  std::string s(text);
  const char* p = s.c_str();
  while (*p != '\0') {
    if ((*p >= '0' && *p <= '9') || *p == '.' || *p == '-') {
      char* end = nullptr;
      out.push_back(std::strtod(p, &end));
      p = end == p ? p + 1 : end;
    } else {
      ++p;
    }
  }
  return out;
}

}  // namespace

Result<LoadScenario> ParseLoadScenario(std::string_view text) {
  CARVE_ASSIGN_OR_RETURN(planner::Scenario shape, planner::ParseScenario(text));
  LoadScenario s;
  s.normal = shape.text[0] == 'N' || shape.text[0] == 'n';
  if (s.normal) {
    std::vector<double> n = Numbers(shape.text);
    if (n.size() != 4) {
      return InvalidArgument(fmt::format(
          "scenario '{}' must hold four numbers N(mean_in,sd_in)/(mean_out,sd_out)", text));
    }
    s.input_sd = n[1];
    s.output_sd = n[3];
  }
  s.shape = std::move(shape);
  return s;
}

Result<std::vector<LoadScenario>> ParseLoadScenarios(std::string_view text) {
  CARVE_ASSIGN_OR_RETURN(std::vector<planner::Scenario> shapes, planner::ParseScenarios(text));
  std::vector<LoadScenario> out;
  for (const planner::Scenario& shape : shapes) {
    CARVE_ASSIGN_OR_RETURN(LoadScenario s, ParseLoadScenario(shape.text));
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<LoadScenario> DefaultScenarios() {
  std::vector<LoadScenario> out;
  for (const char* text :
       {"D(100,100)", "D(100,1000)", "D(2000,200)", "D(7800,200)", "N(480,240)/(300,150)"}) {
    out.push_back(ParseLoadScenario(text).value());  // constant texts: cannot fail
  }
  return out;
}

std::vector<int> DefaultConcurrency() { return {1, 2, 4, 8, 16, 32, 64, 128, 256}; }

RequestShape SampleShape(const LoadScenario& s, std::mt19937_64& rng) {
  if (!s.normal) return {s.shape.input_tokens, s.shape.output_tokens};
  auto draw = [&rng](double mean, double sd) {
    if (sd <= 0) return std::max<int64_t>(1, std::llround(mean));
    std::normal_distribution<double> d(mean, sd);
    return std::max<int64_t>(1, std::llround(d(rng)));
  };
  RequestShape r;
  r.input_tokens = draw(static_cast<double>(s.shape.input_tokens), s.input_sd);
  r.output_tokens = draw(static_cast<double>(s.shape.output_tokens), s.output_sd);
  return r;
}

std::mt19937_64 RequestRng(uint64_t seed, uint64_t cell, uint64_t index) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(cell), static_cast<uint32_t>(index),
                    static_cast<uint32_t>(index >> 32)};
  return std::mt19937_64(seq);
}

std::string PromptOfTokens(int64_t tokens, std::mt19937_64& rng) {
  constexpr int64_t kRandomWords = 8;
  std::string s;
  s.reserve(static_cast<size_t>(std::max<int64_t>(tokens, 0)) * 4);
  std::uniform_int_distribution<int> letter('a', 'z');
  for (int64_t i = 0; i < tokens; ++i) {
    if (i < kRandomWords) {
      for (int k = 0; k < 3; ++k) s += static_cast<char>(letter(rng));
      s += ' ';
    } else {
      s += "tok ";
    }
  }
  return s;
}

}  // namespace carve::loadgen
