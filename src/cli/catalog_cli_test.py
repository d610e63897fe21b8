"""Runs `carve gpus`, `carve instance-types` and `carve profiles` as a user would ($CARVE_BIN)."""

import json
import os
import re
import subprocess
import tempfile
import unittest

CARVE = os.environ.get("CARVE_BIN", "build/carve")


def carve(*args):
    return subprocess.run([CARVE, *args], capture_output=True, text=True, timeout=60)


def table(stdout):
    """Header-keyed rows of an aligned table (columns split on runs of 2+ spaces)."""
    lines = [l for l in stdout.splitlines() if l.strip()]
    start = next(i for i, l in enumerate(lines) if l.startswith(("ID", "PROFILE")))
    header = re.split(r"\s{2,}", lines[start].strip())
    return [dict(zip(header, re.split(r"\s{2,}", l.strip()))) for l in lines[start + 1:]]


class GpusCommand(unittest.TestCase):
    def test_table_lists_every_canonical_gpu(self):
        r = carve("gpus")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {row["ID"]: row for row in table(r.stdout)}
        self.assertEqual(len(rows), 21)
        self.assertEqual(rows["h100-80gb"]["SMS"], "132")
        self.assertEqual(rows["h100-80gb"]["MIG"], "7c/8m")
        self.assertEqual(rows["l4"]["MIG"], "-")

    def test_json_carries_specs_pci_ids_and_drivers(self):
        r = carve("gpus", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        gpus = {g["id"]: g for g in json.loads(r.stdout)["gpus"]}
        a100 = gpus["a100-40gb"]
        self.assertIn("0x20B010DE", a100["pci_device_ids"])
        self.assertIn("NVIDIA A100-SXM4-40GB", a100["aliases"])
        self.assertEqual(a100["min_driver"], "450.80.02")
        self.assertEqual(a100["compute_slices"], 7)
        self.assertFalse(gpus["t4"]["mig_capable"])
        self.assertNotIn("profiles", gpus["t4"])


class InstanceTypesCommand(unittest.TestCase):
    def test_table_shows_gpu_count_and_reference_price(self):
        r = carve("instance-types")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {row["ID"]: row for row in table(r.stdout)}
        p4d = rows["ml.p4d.24xlarge"]
        self.assertEqual((p4d["GPU"], p4d["GPUS"], p4d["VCPUS"]), ("a100-40gb", "8", "96"))
        self.assertEqual(p4d["USD_PER_HOUR"], "25.2513")
        self.assertEqual(rows["ml.p5e.48xlarge"]["USD_PER_HOUR"], "?")

    def test_price_file_overrides_catalog_price(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("prices:\n  ml.p5.48xlarge: 98.32\n")
        try:
            r = carve("instance-types", "--prices", f.name, "--json")
        finally:
            os.unlink(f.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        types = {t["id"]: t for t in json.loads(r.stdout)["instance_types"]}
        self.assertEqual(types["ml.p5.48xlarge"]["usd_per_hour"], 98.32)
        self.assertIn("override", types["ml.p5.48xlarge"]["price_source"])
        self.assertEqual(types["ml.p4d.24xlarge"]["usd_per_hour"], 25.251286)

    def test_bad_price_file_exits_one_naming_the_key(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("prices:\n  ml.p5.48xlarge: -1\n")
        try:
            r = carve("instance-types", "--prices", f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(r.returncode, 1)
        self.assertIn("prices.ml.p5.48xlarge=-1", r.stderr)
        self.assertEqual(r.stdout, "")


class ProfilesCommand(unittest.TestCase):
    def test_h100_three_slice_profile_has_sixty_sms_and_starts_zero_and_four(self):
        r = carve("profiles", "--gpu", "h100-80gb")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = {row["PROFILE"]: row for row in table(r.stdout)}
        self.assertEqual(rows["mig-3g.40gb"]["SMS"], "60")
        self.assertEqual(rows["mig-3g.40gb"]["STARTS"], "0,4")
        self.assertEqual(rows["mig-1g.10gb+me"]["SUFFIX"], "+me")
        self.assertEqual(len(rows), 7)

    def test_json_gives_placements_and_effective_min_driver(self):
        r = carve("profiles", "--gpu", "NVIDIA A100-SXM4-40GB", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["gpu"], "a100-40gb")
        profiles = {p["name"]: p for p in doc["profiles"]}
        self.assertEqual(profiles["1g.10gb"]["min_driver"], "R525")
        self.assertEqual(profiles["3g.20gb"]["min_driver"], "450.80.02")
        self.assertEqual(profiles["3g.20gb"]["starts"], [0, 4])
        self.assertEqual(profiles["4g.20gb"]["sagemaker_name"], "mig-4g.20gb")

    def test_unknown_gpu_exits_one_with_reason_on_stderr(self):
        r = carve("profiles", "--gpu", "h100-40gb")
        self.assertEqual(r.returncode, 1)
        self.assertIn("unknown GPU 'h100-40gb'", r.stderr)
        self.assertIn("h100-80gb", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_gpu_without_mig_exits_one(self):
        r = carve("profiles", "--gpu", "l4", "--json")
        self.assertEqual(r.returncode, 1)
        self.assertIn("does not support MIG", r.stderr)


if __name__ == "__main__":
    unittest.main()
