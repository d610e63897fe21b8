#include "planner/report_json.h"

namespace carve::planner {

using nlohmann::json;

namespace {

json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json OptInt(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

json ModelJson(const ModelSpec& m) {
  return {{"id", m.id},
          {"display_name", m.display_name},
          {"kind", m.kind == ModelKind::kEncoder ? "encoder" : "decoder"},
          {"params", m.params},
          {"layers", m.layers},
          {"hidden", m.hidden},
          {"heads", m.heads},
          {"kv_heads", m.kv_heads},
          {"head_dim", m.head_dim},
          {"ffn", m.ffn},
          {"vocab", m.vocab},
          {"default_context", m.default_context},
          {"tied_embeddings", m.tied_embeddings},
          {"weight_bytes_bf16", WeightBytes(m, Dtype::kBf16)},
          {"kv_bytes_per_token_bf16", KvBytesPerToken(m, Dtype::kBf16)},
          {"source", m.source},
          {"note", m.note}};
}

json FitJson(const Target& t, const FitResult& r) {
  return {{"target", t.Name()},
          {"memory_bytes", r.memory_bytes},
          {"weight_bytes", r.weight_bytes},
          {"kv_bytes", r.kv_bytes},
          {"overhead_bytes", r.overhead_bytes},
          {"headroom_bytes", r.headroom_bytes},
          {"fits", r.fits},
          {"weights_fit", r.weights_fit},
          {"max_context", r.max_context},
          {"max_concurrency", r.max_concurrency},
          {"warning", r.warning}};
}

json HardwareJson(const Hardware& h) {
  return {{"sms", h.sms},
          {"sms_from_catalog", h.sms_from_catalog},
          {"peak_tflops", h.peak_flops / 1e12},
          {"bandwidth_gbps", h.bandwidth_bytes_s / 1e9},
          {"memory_bytes", h.memory_bytes},
          {"gpu_share", h.gpu_share}};
}

json PriceJson(const TargetPrice& p) {
  return {{"known", p.known},
          {"usd_per_hour", p.known ? json(p.usd_per_hour) : json(nullptr)},
          {"gpu_share", p.gpu_share},
          {"instance_type", p.instance_type},
          {"instance_usd_per_hour", p.instance_usd_per_hour},
          {"gpus_per_instance", p.gpus_per_instance},
          {"source", p.source}};
}

json CellJson(const PricedCell& pc) {
  const CellResult& c = pc.cell;
  return {{"concurrency", c.concurrency},
          {"output_tok_s", c.output_tok_s},
          {"ttft_p50_s", c.ttft_p50_s},
          {"ttft_p90_s", c.ttft_p90_s},
          {"itl_p50_s", c.itl_p50_s},
          {"e2e_p50_s", c.e2e_p50_s},
          {"deadline_miss_fraction", c.deadline_miss_fraction},
          {"binding", ResourceName(c.binding)},
          {"batch_limit", c.batch_limit},
          {"kv_limited", c.kv_limited},
          {"mean_batch", c.mean_batch},
          {"requests", c.requests},
          {"usd_per_mtok", Opt(pc.usd_per_mtok)}};
}

json ContextJson(const PlanContext& ctx) {
  return {{"model", ctx.model.id},
          {"precision", PrecisionName(ctx.precision)},
          {"efficiency_factors",
           {{"compute", ctx.factors.compute},
            {"bandwidth", ctx.factors.bandwidth},
            {"source", ctx.factors.source}}},
          {"overhead_bytes", ctx.serving.overhead_bytes},
          {"max_num_seqs", ctx.serving.max_num_seqs},
          {"max_batched_tokens", ctx.serving.max_batched_tokens},
          {"deadline_s", ctx.sim.deadline_seconds},
          {"disclaimer", ModelDisclaimer(ctx)}};
}

json ComparisonJson(const PlanContext& ctx, const Comparison& cmp) {
  json targets = json::array();
  for (size_t i = 0; i < cmp.targets.size(); ++i) {
    targets.push_back({{"target", cmp.targets[i].Name()},
                       {"hardware", HardwareJson(cmp.hardware[i])},
                       {"price", PriceJson(cmp.prices[i])}});
  }
  json scenarios = json::array();
  for (const ScenarioComparison& s : cmp.scenarios) {
    json rows = json::array();
    for (const CompareRow& r : s.rows) {
      json cells = json::array();
      for (size_t i = 0; i < r.cells.size(); ++i) {
        json c = CellJson(r.cells[i]);
        c["target"] = cmp.targets[i].Name();
        c["tok_s_ratio"] = r.tok_s_ratio[i];
        c["itl_diff_pct"] = r.itl_diff_pct[i];
        c["ttft_diff_pct"] = r.ttft_diff_pct[i];
        c["driver"] = r.drivers[i];
        c["ttft_driver"] = r.ttft_drivers[i];
        cells.push_back(std::move(c));
      }
      rows.push_back({{"concurrency", r.concurrency},
                      {"cheapest", r.cheapest ? json(cmp.targets[*r.cheapest].Name())
                                              : json(nullptr)},
                      {"cells", cells}});
    }
    json crossovers = json::array();
    for (const Crossover& x : s.crossovers) {
      crossovers.push_back({{"target", cmp.targets[x.target].Name()},
                            {"cheaper_from_concurrency", OptInt(x.cheaper_from)},
                            {"cheapest_at", x.cheapest_at}});
    }
    scenarios.push_back({{"scenario", s.scenario.text},
                         {"note", s.scenario.note},
                         {"rows", rows},
                         {"crossovers", crossovers}});
  }
  return {{"context", ContextJson(ctx)}, {"targets", targets}, {"scenarios", scenarios}};
}

json OptionJson(const OptionResult& o) {
  json j{{"target", o.target.Name()},
         {"ruled_out", RuledOutName(o.ruled_out)},
         {"reason", o.reason},
         {"usd_per_mtok", Opt(o.usd_per_mtok)}};
  if (o.cell) j["cell"] = CellJson(PricedCell{*o.cell, o.usd_per_mtok});
  if (o.price.known) j["price"] = PriceJson(o.price);
  return j;
}

json RecommendationJson(const PlanContext& ctx, const Recommendation& rec) {
  json ranked = json::array(), out = json::array();
  for (const OptionResult& o : rec.ranked) ranked.push_back(OptionJson(o));
  for (const OptionResult& o : rec.ruled_out) out.push_back(OptionJson(o));
  json j{{"context", ContextJson(ctx)}, {"ranked", ranked}, {"ruled_out", out}};
  if (rec.layout) {
    const LayoutSuggestion& s = *rec.layout;
    json instances = json::array();
    for (const core::PlacedInstance& p : s.layout.instances) {
      instances.push_back({{"profile", p.profile->name}, {"start", p.start}});
    }
    j["layout"] = {{"gpu", s.gpu->id},
                   {"profile", s.profile != nullptr ? json(s.profile->name) : json(nullptr)},
                   {"copies_wanted", s.copies_wanted},
                   {"per_gpu", s.per_gpu},
                   {"gpus_used", s.gpus_used},
                   {"copies_placed", s.copies_placed},
                   {"instances_per_gpu", instances},
                   {"note", s.note}};
  }
  return j;
}

}  // namespace carve::planner
