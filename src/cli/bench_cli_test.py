"""`carve bench` driven as a user would, against a real `carve testmodel` on port 0.

The acceptance check: at concurrency 1 the bench's TTFT, ITL and output tok/s agree within 10%
with the pacing the testmodel is configured with, which is the planner's prediction for the same
model, target and scenario (`carve plan perf`, divided by the testmodel's --speed).
"""
import csv
import json
import os
import shutil
import subprocess
import tempfile
import unittest

CARVE = os.environ.get("CARVE_BIN", "carve")
# In a sanitizer build (CTest sets CARVE_SANITIZE) the client and the testmodel both run several
# times slower; what they measure then says nothing about the pacing, so the 10% checks skip.
TIMING = unittest.skipIf(os.environ.get("CARVE_SANITIZE"),
                         "timing accuracy is not measurable in a sanitizer build")
MODEL = "llama-3.1-8b"
TARGET = "h100-80gb:3g.40gb"
SPEED = 1


class Testmodel:
    def __init__(self, *extra, target=TARGET):
        self.proc = subprocess.Popen(
            [CARVE, "--json", "testmodel", "--port", "0", "--model", MODEL, "--target", target,
             *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # blocks until the listener is bound (or exit)
        if not line:
            err = self.proc.stderr.read()
            self.stop()
            raise AssertionError("testmodel did not start: " + err)
        self.url = "http://127.0.0.1:%d" % json.loads(line)["port"]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def bench(*args, timeout=120):
    return subprocess.run([CARVE, *args], capture_output=True, text=True, timeout=timeout)


class BenchMeasuresTheTestmodelsPacing(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tm = Testmodel("--speed", str(SPEED))
        cls.out = tempfile.mkdtemp(prefix="carve-bench-")
        cls.result = bench("--json", "bench", "--openai-url", cls.tm.url, "--model", MODEL,
                        "--scenario", "D(200,50)", "--concurrency", "1", "--requests", "8",
                        "--instance-type", "ml.p5.48xlarge", "--partition", "mig-3g.40gb",
                        "--out", cls.out)
        plan = bench("--json", "plan", "perf", "--model", MODEL, "--target", TARGET,
                     "--scenario", "D(200,50)", "--concurrency", "1")
        assert plan.returncode == 0, plan.stderr
        cls.predicted = json.loads(plan.stdout)["targets"][0]["scenarios"][0]["cells"][0]

    @classmethod
    def tearDownClass(cls):
        cls.tm.stop()
        shutil.rmtree(cls.out, ignore_errors=True)

    def cell(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        doc = json.loads(self.result.stdout)
        self.assertEqual(len(doc["cells"]), 1)
        return doc["cells"][0]

    def assertWithin10Percent(self, measured, want, what):
        self.assertLess(abs(measured - want) / want, 0.10,
                        f"{what}: measured {measured:.4g}, testmodel pacing {want:.4g}")

    def test_every_request_succeeds(self):
        c = self.cell()
        self.assertEqual(c["requests"], 8)
        self.assertEqual(c["errors"], 0)
        self.assertEqual(c["deadline_failures"], 0)
        self.assertEqual(c["output_tokens"], 8 * 50)

    @TIMING
    def test_ttft_matches_the_modelled_prefill(self):
        want_ms = self.predicted["ttft_p50_s"] * 1e3 / SPEED
        self.assertWithin10Percent(self.cell()["ttft_p50_ms"], want_ms, "TTFT p50 ms")

    @TIMING
    def test_itl_matches_the_modelled_decode_step(self):
        want_ms = self.predicted["itl_p50_s"] * 1e3 / SPEED
        self.assertWithin10Percent(self.cell()["itl_p50_ms"], want_ms, "ITL p50 ms")

    @TIMING
    def test_output_tokens_per_second_match_the_model(self):
        want = self.predicted["output_tok_s"] * SPEED
        self.assertWithin10Percent(self.cell()["output_tok_s"], want, "output tok/s")

    def test_cost_is_a_sixteenth_of_the_p5_per_million_tokens(self):
        c = self.cell()
        doc = json.loads(self.result.stdout)
        self.assertAlmostEqual(doc["price"]["instance_share"], 1 / 16)
        usd_per_hour = doc["price"]["usd_per_hour"]
        self.assertAlmostEqual(c["usd_per_million_output_tokens"],
                               usd_per_hour / (c["output_tok_s"] * 3600) * 1e6, places=6)

    def test_writes_json_csv_and_an_svg_per_scenario(self):
        self.cell()
        with open(os.path.join(self.out, "bench.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["schema"], "carve.bench.v1")
        self.assertEqual(doc["target"], TARGET)
        with open(os.path.join(self.out, "bench.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["scenario"], "D(200,50)")
        self.assertGreater(float(rows[0]["output_tok_s"]), 0)
        with open(os.path.join(self.out, "D_200_50.svg")) as f:
            svg = f.read()
        self.assertIn("<svg", svg)
        self.assertIn(TARGET, svg)

    def test_plan_calibrate_recovers_the_factors_the_testmodel_is_paced_with(self):
        self.cell()
        factors = os.path.join(self.out, "factors.json")
        out = bench("--json", "plan", "calibrate", os.path.join(self.out, "bench.json"),
                    "-o", factors)
        self.assertEqual(out.returncode, 0, out.stderr)
        fit = json.loads(out.stdout)
        self.assertEqual((fit["model"], fit["target"]), (MODEL, TARGET))
        self.assertEqual(fit["metrics_used"], 3)  # TTFT, ITL and tok/s of the one cell.
        # The simulator paces every step with the planner's default factors (bandwidth 0.65,
        # compute 0.50) at speed 1, so the fit finds them again: decode (bandwidth) closely,
        # prefill (compute) more loosely, since TTFT also holds HTTP and scheduling time.
        self.assertAlmostEqual(fit["bandwidth"], 0.65, delta=0.1, msg=fit)
        self.assertGreater(fit["compute"], 0.25, fit)
        self.assertLessEqual(fit["compute"], 1.0, fit)
        self.assertLess(fit["rms_log_error"], 0.3, fit)
        with open(factors) as f:
            written = json.load(f)
        self.assertEqual(written, {"compute": fit["compute"], "bandwidth": fit["bandwidth"],
                                   "source": fit["source"]})


class BenchCountsFailures(unittest.TestCase):
    def test_requests_past_the_timeout_are_deadline_failures(self):
        tm = Testmodel("--speed", "1")
        try:
            out = bench("--json", "bench", "--openai-url", tm.url, "--scenario", "D(200,50)",
                        "--concurrency", "2", "--requests", "2", "--timeout", "0.2")
            self.assertEqual(out.returncode, 1, out.stderr)  # every request failed
            c = json.loads(out.stdout)["cells"][0]
            self.assertEqual(c["deadline_failures"], 2)
            self.assertEqual(c["errors"], 0)
            self.assertEqual(c["error_rate"], 1.0)
        finally:
            tm.stop()

    def test_cut_streams_are_errors(self):
        tm = Testmodel("--speed", "20", "--fail-after-tokens", "3")
        try:
            out = bench("--json", "bench", "--openai-url", tm.url, "--scenario", "D(10,10)",
                        "--concurrency", "1", "--requests", "3")
            c = json.loads(out.stdout)["cells"][0]
            self.assertEqual(c["errors"], 3)
            self.assertEqual(c["deadline_failures"], 0)
            self.assertIn("stream failure injected", c["first_error"])
        finally:
            tm.stop()


class BenchInputErrors(unittest.TestCase):
    def test_bad_scenario_text_is_named(self):
        out = bench("bench", "--openai-url", "http://127.0.0.1:1", "--scenario", "D(100)")
        self.assertEqual(out.returncode, 2)
        self.assertIn("D(100)", out.stderr)

    def test_a_target_is_required(self):
        out = bench("bench", "--scenario", "D(1,1)")
        self.assertEqual(out.returncode, 2)
        self.assertIn("--openai-url", out.stderr)

    def test_partition_the_instance_lacks_is_named(self):
        out = bench("bench", "--openai-url", "http://127.0.0.1:1", "--instance-type",
                    "ml.p5.48xlarge", "--partition", "mig-9g.99gb")
        self.assertEqual(out.returncode, 2)
        self.assertIn("9g.99gb", out.stderr)


def bench_file(path, name, costs, ladder=(2, 4, 8)):
    cells = [{"scenario": "D(100,100)", "concurrency": c, "output_tok_s": 100.0 * c,
              "ttft_p50_ms": 20.0, "itl_p50_ms": 10.0, "usd_per_million_output_tokens": cost}
             for c, cost in zip(ladder, costs)]
    with open(path, "w") as f:
        json.dump({"schema": "carve.bench.v1", "name": name, "model": MODEL, "target": name,
                   "price": {"priced": True}, "cells": cells}, f)


class BenchCompare(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="carve-bench-cmp-")
        self.a = os.path.join(self.dir, "a.json")
        self.b = os.path.join(self.dir, "b.json")
        bench_file(self.a, "a100-40gb", [1.0, 0.8, 0.5])
        bench_file(self.b, "h100-80gb:3g.40gb", [1.2, 0.7, 0.4])

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_prints_differences_and_the_crossover(self):
        out = bench("bench", "compare", self.a, self.b, "--out", os.path.join(self.dir, "plots"))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("B is cheaper from concurrency 4", out.stdout)
        self.assertRegex(out.stdout, r"D\(100,100\)\s+8\s.*-20\.0%")
        with open(os.path.join(self.dir, "plots", "D_100_100.svg")) as f:
            svg = f.read()
        self.assertIn("a100-40gb", svg)
        self.assertIn("h100-80gb:3g.40gb", svg)
        self.assertIn("per million", svg)

    def test_says_none_when_b_is_never_cheaper_at_the_top(self):
        out = bench("--json", "bench", "compare", self.b, self.a)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIsNone(json.loads(out.stdout)["crossovers"][0]["b_cheaper_from"])

    def test_unreadable_file_is_an_input_error(self):
        out = bench("bench", "compare", self.a, os.path.join(self.dir, "missing.json"))
        self.assertEqual(out.returncode, 2)
        self.assertIn("missing.json", out.stderr)


class BenchComparesTwoRealTargets(unittest.TestCase):
    """Two testmodels (a partition and a whole A100), benched separately, then compared."""

    def test_two_runs_compare_with_a_cost_line(self):
        d = tempfile.mkdtemp(prefix="carve-bench-two-")
        runs = [("h100-80gb:3g.40gb", ["--instance-type", "ml.p5.48xlarge", "--partition",
                                       "mig-3g.40gb"]),
                ("a100-40gb", ["--instance-type", "ml.p4d.24xlarge", "--gpus", "1"])]
        try:
            for i, (target, price) in enumerate(runs):
                tm = Testmodel("--speed", "10", target=target)
                try:
                    out = bench("bench", "--openai-url", tm.url, "--scenario", "D(100,20)",
                                "--concurrency", "1,2", "--requests", "4", "--target-name",
                                target, *price, "--out", os.path.join(d, str(i)))
                    self.assertEqual(out.returncode, 0, out.stderr)
                finally:
                    tm.stop()
            out = bench("bench", "compare", os.path.join(d, "1", "bench.json"),
                        os.path.join(d, "0", "bench.json"))
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertRegex(out.stdout, r"D\(100,20\): cost crossover: (none|B is cheaper)")
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
