"""`carve plan` driven as a user would: the seed's memory facts, a prediction, a comparison with
SVG output, a calibration round trip through files, and a recommendation with a fleet layout."""
import json
import os
import subprocess
import tempfile
import unittest

CARVE = os.environ.get("CARVE_BIN", "build/carve")


def carve(*args):
    return subprocess.run([CARVE, *args], capture_output=True, text=True, timeout=240)


def carve_json(*args, ok_codes=(0,)):
    r = carve(*args, "--json")
    if r.returncode not in ok_codes:
        raise AssertionError(f"exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


class PlanFitTest(unittest.TestCase):
    def test_models_lists_llama_8b_with_128_kib_per_token(self):
        models = {m["id"]: m for m in carve_json("plan", "models")}
        self.assertEqual(models["llama-3.1-8b"]["kv_bytes_per_token_bf16"], 131072)
        self.assertIn("bge-large-en-v1.5", models)

    def test_seed_8b_serves_8000_tokens_on_a_40gb_partition(self):
        out = carve_json("plan", "fit", "--model", "llama-3.1-8b", "--context", "8000",
                         "--concurrency", "16", "--gpu", "h100-80gb:3g.40gb")
        t = out["targets"][0]
        self.assertTrue(t["fits"])
        self.assertAlmostEqual(t["weight_bytes"] / 1e9, 16.06, places=2)
        self.assertEqual(t["kv_bytes"], 131072 * 8000 * 16)

    def test_warns_when_weights_fit_and_kv_does_not_and_exits_1(self):
        r = carve("plan", "fit", "--model", "llama-3.1-8b", "--context", "8000",
                  "--concurrency", "16", "--gpu", "a100-40gb:4g.20gb")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("fail under load", r.stdout)

    def test_every_catalog_target_is_listed_without_gpu(self):
        out = carve_json("plan", "fit", "--model", "llama-3.2-1b", "--context", "4096")
        names = {t["target"] for t in out["targets"]}
        self.assertIn("a100-40gb:1g.5gb", names)
        self.assertIn("h100-80gb", names)

    def test_custom_model_from_yaml(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("id: mini\nlayers: 4\nhidden: 256\nheads: 4\nffn: 1024\nvocab: 32000\n"
                    "default_context: 4096\n")
        try:
            out = carve_json("plan", "fit", "--model-file", f.name, "--gpu", "a100-40gb")
            self.assertEqual(out["model"], "mini")
            self.assertEqual(out["kv_bytes_per_token"], 2 * 4 * 4 * 64 * 2)
        finally:
            os.unlink(f.name)

    def test_fp8_on_ampere_is_rejected_naming_fp8(self):
        r = carve("plan", "perf", "--model", "llama-3.1-8b", "--target", "a100-40gb",
                  "--scenario", "D(100,100)", "--concurrency", "1", "--dtype", "fp8")
        self.assertEqual(r.returncode, 2)
        self.assertIn("FP8", r.stderr)

    def test_unknown_model_exits_2_listing_the_catalog(self):
        r = carve("plan", "fit", "--model", "nope-7b")
        self.assertEqual(r.returncode, 2)
        self.assertIn("llama-3.1-8b", r.stderr)


class PlanPerfTest(unittest.TestCase):
    def test_perf_reports_every_cell_and_its_factors(self):
        out = carve_json("plan", "perf", "--model", "llama-3.1-8b", "--target",
                         "h100-80gb:3g.40gb", "--scenario", "D(2000,200)", "--concurrency",
                         "1,2,4,...,64")
        self.assertIn("not measurements", out["context"]["disclaimer"])
        self.assertEqual(out["context"]["efficiency_factors"]["bandwidth"], 0.65)
        cells = out["targets"][0]["scenarios"][0]["cells"]
        self.assertEqual([c["concurrency"] for c in cells], [1, 2, 4, 8, 16, 32, 64])
        ttfts = [c["ttft_p50_s"] for c in cells]
        self.assertEqual(ttfts, sorted(ttfts))
        self.assertEqual(out["targets"][0]["hardware"]["sms"], 60)
        self.assertEqual(out["targets"][0]["price"]["gpu_share"], 0.5)
        for c in cells:
            self.assertIn(c["binding"], ("compute", "bandwidth", "kv_capacity"))
            self.assertGreater(c["usd_per_mtok"], 0)

    def test_table_output_says_it_is_a_model(self):
        r = carve("plan", "perf", "--model", "llama-3.1-8b", "--target", "a100-40gb",
                  "--scenario", "D(100,100)", "--concurrency", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("not measurements", r.stdout)
        self.assertIn("compute=0.50 bandwidth=0.65", r.stdout)


class PlanCompareTest(unittest.TestCase):
    def test_compare_writes_json_and_one_svg_per_scenario(self):
        with tempfile.TemporaryDirectory() as d:
            out = carve_json("plan", "compare", "--model", "llama-3.1-8b", "--targets",
                             "a100-40gb,h100-80gb:3g.40gb", "--scenarios",
                             "D(100,100),D(7800,200)", "--concurrency", "2..64",
                             "--svg-dir", d)
            self.assertEqual(len(out["svg_files"]), 2)
            for p in out["svg_files"]:
                with open(p) as f:
                    svg = f.read()
                self.assertTrue(svg.startswith("<svg"))
                self.assertIn("h100-80gb:3g.40gb", svg)
        s = out["scenarios"][1]
        self.assertEqual(s["scenario"], "D(7800,200)")
        self.assertEqual(len(s["rows"]), 6)
        h = s["rows"][0]["cells"][1]
        self.assertIn("ttft_driver", h)
        self.assertLess(h["ttft_diff_pct"], 0)
        self.assertEqual(len(s["crossovers"]), 2)


class PlanCalibrateTest(unittest.TestCase):
    def test_calibrating_on_the_models_own_prediction_recovers_the_factors(self):
        out = carve_json("plan", "perf", "--model", "llama-3.1-8b", "--target",
                         "h100-80gb:3g.40gb", "--scenario", "D(1000,100)", "--concurrency",
                         "1,8,32", "--compute-eff", "0.4", "--bandwidth-eff", "0.8")
        cells = [{"scenario": "D(1000,100)", "concurrency": c["concurrency"],
                  "output_tok_s": c["output_tok_s"], "ttft_p50_ms": c["ttft_p50_s"] * 1e3,
                  "itl_p50_ms": c["itl_p50_s"] * 1e3}
                 for c in out["targets"][0]["scenarios"][0]["cells"]]
        with tempfile.TemporaryDirectory() as d:
            bench = os.path.join(d, "bench.json")
            factors = os.path.join(d, "factors.json")
            with open(bench, "w") as f:
                json.dump({"schema": "carve.bench.v1", "model": "llama-3.1-8b",
                           "target": "h100-80gb:3g.40gb", "precision": "bf16",
                           "cells": cells}, f)
            fit = carve_json("plan", "calibrate", bench, "-o", factors)
            self.assertAlmostEqual(fit["compute"], 0.4, delta=0.02)
            self.assertAlmostEqual(fit["bandwidth"], 0.8, delta=0.02)
            again = carve_json("plan", "perf", "--model", "llama-3.1-8b", "--target",
                               "h100-80gb:3g.40gb", "--scenario", "D(1000,100)",
                               "--concurrency", "1", "--factors", factors)
            self.assertIn("calibrated", again["context"]["efficiency_factors"]["source"])


class PlanRecommendTest(unittest.TestCase):
    def test_recommend_ranks_by_cost_and_lists_reasons(self):
        out = carve_json("plan", "recommend", "--model", "llama-3.1-8b", "--scenario",
                         "D(2000,200)", "--concurrency", "16", "--slo",
                         "ttft_p50<=800ms,itl_p50<=40ms", "--fleet",
                         "a100-40gb:8,h100-80gb:8", "--copies", "4")
        costs = [o["usd_per_mtok"] for o in out["ranked"]]
        self.assertTrue(costs)
        self.assertEqual(costs, sorted(costs))
        reasons = {o["target"]: o["ruled_out"] for o in out["ruled_out"]}
        self.assertEqual(reasons["a100-40gb:1g.5gb"], "memory")
        self.assertIn("layout", out)
        self.assertGreaterEqual(out["layout"]["copies_placed"], 1)

    def test_impossible_slo_exits_1(self):
        r = carve("plan", "recommend", "--model", "llama-3.1-8b", "--slo", "itl_p50<=1ms",
                  "--fleet", "a100-40gb:1")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no option meets the SLO", r.stdout)


if __name__ == "__main__":
    unittest.main()
