// JSON renderings of the planner's answers, shared by the CLI's --json output and anything else
// that reports them (the server, `carve testmodel`). Field names carry units (_s, _bytes, _usd).
#pragma once

#include <nlohmann/json.hpp>

#include "planner/compare.h"
#include "planner/memory_fit.h"
#include "planner/plan_context.h"
#include "planner/recommend.h"

namespace carve::planner {

nlohmann::json ModelJson(const ModelSpec& m);
nlohmann::json FitJson(const Target& t, const FitResult& r);
nlohmann::json HardwareJson(const Hardware& h);
nlohmann::json PriceJson(const TargetPrice& p);
nlohmann::json CellJson(const PricedCell& c);
// The context every prediction carries: model id, precision, factors and the disclaimer.
nlohmann::json ContextJson(const PlanContext& ctx);
nlohmann::json ComparisonJson(const PlanContext& ctx, const Comparison& cmp);
nlohmann::json OptionJson(const OptionResult& o);
nlohmann::json RecommendationJson(const PlanContext& ctx, const Recommendation& rec);

}  // namespace carve::planner
