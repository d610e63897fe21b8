"""`carve mgpu check` driven as a user would: real parameter text on stdin or in a file."""
import json
import os
import subprocess
import tempfile
import unittest

CARVE = os.environ.get("CARVE_BIN", "build/carve")

SEED_CUSTOM_JOB = """-- Set mgu-related parameters
emr.serverless.mgpu.core=30;
emr.serverless.mgpu.memory=1000;

-- Set historical GPU parameters. When the mgpu queue is enabled, full GPU cards are used by default.
-- Equivalent to emr.serverless.mgpu.core=100
serverless.custom.job.task.gpus=1;
"""

SEED_RAY_JOB = """-- mgpu-related parameters
serverless.ray.worker.mgpu.core=30;
serverless.ray.worker.mgpu.memory=4096;

-- Equivalent to serverless.ray.worker.mgpu.core;
serverless.ray.worker.gpu.amount=1;
"""


def carve(*args, stdin=""):
    return subprocess.run([CARVE, *args], input=stdin, capture_output=True, text=True, timeout=60)


class MgpuCheckTest(unittest.TestCase):
    def test_seed_custom_job_text_is_valid_and_resolves_to_30_percent_and_1000_mib(self):
        r = carve("mgpu", "check", stdin=SEED_CUSTOM_JOB)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("custom task: core=30% memory=1000 MiB", r.stdout)
        self.assertIn("verdict: valid", r.stdout)
        self.assertEqual(r.stderr, "")

    def test_seed_ray_job_text_resolves_the_worker_share_in_json(self):
        r = carve("mgpu", "check", "--json", stdin=SEED_RAY_JOB)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertTrue(out["valid"])
        self.assertEqual(out["shares"]["ray_worker"],
                         {"core_percent": 30, "memory_mib": 4096, "whole_cards": False,
                          "cards": 1})
        self.assertIsNone(out["shares"]["custom_task"])
        self.assertEqual(len(out["statements"]), 3)

    def test_core_150_is_rejected_with_the_rule_on_stderr_and_exit_1(self):
        r = carve("mgpu", "check", stdin="emr.serverless.mgpu.core=150;\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("emr.serverless.mgpu.core=150: above 100 only whole multiples of 100 are "
                      "allowed (200 = two full cards)", r.stderr)
        self.assertIn("verdict: rejected", r.stdout)

    def test_each_seed_rule_rejects_its_invalid_value(self):
        cases = {
            "emr.serverless.mgpu.core=4;": "core must be at least 5",
            "emr.serverless.mgpu.core=30; emr.serverless.mgpu.memory=255;":
                "memory must be at least 256 MiB",
            "emr.serverless.mgpu.core=200; emr.serverless.mgpu.memory=1000;":
                "memory cannot be set when core is 100 or above",
        }
        for text, rule in cases.items():
            with self.subTest(text=text):
                r = carve("mgpu", "check", "--json", stdin=text)
                self.assertEqual(r.returncode, 1)
                self.assertIn(rule, r.stderr)
                self.assertFalse(json.loads(r.stdout)["valid"])
                self.assertIn(rule, json.loads(r.stdout)["reasons"][0])

    def test_malformed_statement_names_line_and_column(self):
        r = carve("mgpu", "check", stdin="-- header\nemr.serverless.mgpu.core 30;\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("line 2, column 26: expected '='", r.stderr)

    def test_unknown_keys_pass_through_with_a_warning(self):
        r = carve("mgpu", "check", "--json",
                  stdin="spark.executor.cores=4;\nemr.serverless.mgpu.core=200;\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["passthrough"][0]["key"], "spark.executor.cores")
        self.assertIn("unknown parameter spark.executor.cores", out["warnings"][0])
        self.assertEqual(out["shares"]["custom_task"]["cards"], 2)

    def test_reads_a_file_and_reports_a_missing_file_as_an_input_error(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "params.txt")
            with open(path, "w") as f:
                f.write(SEED_CUSTOM_JOB)
            r = carve("mgpu", "check", "--file", path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("core=30% memory=1000 MiB", r.stdout)
            missing = carve("mgpu", "check", "--file", os.path.join(d, "nope.txt"))
            self.assertEqual(missing.returncode, 2)
            self.assertIn("cannot read --file", missing.stderr)


if __name__ == "__main__":
    unittest.main()
