"""Runs `carve layout check` and `carve layout list` as a user would ($CARVE_BIN)."""

import json
import os
import subprocess
import unittest

CARVE = os.environ.get("CARVE_BIN", "build/carve")

A100_CLASSIC = "1g.5gb,2g.10gb,3g.20gb,4g.20gb,7g.40gb"


def carve(*args):
    return subprocess.run([CARVE, *args], capture_output=True, text=True, timeout=60)


def overlaps(instances):
    taken = set()
    for i in instances:
        units = set(range(i["start"], i["start"] + i["size"]))
        if taken & units:
            return True
        taken |= units
    return False


class LayoutCheck(unittest.TestCase):
    def test_valid_layout_prints_each_placement(self):
        r = carve("layout", "check", "--gpu", "h100-80gb", "mig-4g.40gb", "mig-2g.20gb",
                  "mig-1g.10gb")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("h100-80gb: layout [mig-4g.40gb, mig-2g.20gb, mig-1g.10gb] is valid",
                      r.stdout)
        rows = [line.split() for line in r.stdout.splitlines()[2:5]]
        self.assertEqual([row[:3] for row in rows],
                         [["4g.40gb", "0", "4"], ["2g.20gb", "4", "2"], ["1g.10gb", "6", "1"]])
        self.assertIn("uses 7 of 7 compute slices and 7 of 8 memory slices", r.stdout)

    def test_json_lists_non_overlapping_instances(self):
        r = carve("layout", "check", "--json", "--gpu", "a100-40gb", "3g.20gb", "2g.10gb",
                  "2g.10gb")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["gpu"], "a100-40gb")
        self.assertTrue(out["valid"])
        self.assertEqual(sorted((i["profile"], i["start"]) for i in out["instances"]),
                         [("2g.10gb", 0), ("2g.10gb", 2), ("3g.20gb", 4)])
        self.assertFalse(overlaps(out["instances"]))

    def test_over_capacity_is_rejected_with_provided_against_requested(self):
        r = carve("layout", "check", "--gpu", "h100-80gb", "mig-4g.40gb", "mig-4g.40gb")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertIn("h100-80gb provides 7 compute slices and 8 memory slices; layout "
                      "[mig-4g.40gb, mig-4g.40gb] requests 8 compute slices and 8 memory slices",
                      r.stderr)

    def test_json_rejection_lists_every_reason(self):
        r = carve("layout", "check", "--json", "--gpu", "h100-80gb", "mig-4g.40gb",
                  "mig-4g.40gb")
        self.assertEqual(r.returncode, 1)
        out = json.loads(r.stdout)
        self.assertFalse(out["valid"])
        self.assertEqual(len(out["reasons"]), 2)
        self.assertIn("(rule: per-profile cap)", out["reasons"][0])
        self.assertIn("(rule: slice sums)", out["reasons"][1])

    def test_old_driver_names_the_profile_and_the_driver_it_needs(self):
        r = carve("layout", "check", "--gpu", "a100-40gb", "--driver", "470.256.02",
                  "mig-1g.10gb")
        self.assertEqual(r.returncode, 1)
        self.assertIn("mig-1g.10gb needs driver R525 or newer", r.stderr)
        ok = carve("layout", "check", "--gpu", "a100-40gb", "--driver", "525.60.13",
                   "mig-1g.10gb")
        self.assertEqual(ok.returncode, 0, ok.stderr)

    def test_instance_type_counts_partitions_of_every_gpu(self):
        r = carve("layout", "check", "--json", "--instance-type", "ml.p4d.24xlarge",
                  "mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb")
        self.assertEqual(r.returncode, 0, r.stderr)
        it = json.loads(r.stdout)["instance_type"]
        self.assertEqual(it["partitions"], 24)
        self.assertEqual(it["per_profile"],
                         {"mig-4g.20gb": 8, "mig-2g.10gb": 8, "mig-1g.5gb": 8})
        text = carve("layout", "check", "--instance-type", "ml.p4d.24xlarge", "mig-4g.20gb",
                     "mig-2g.10gb", "mig-1g.5gb")
        self.assertIn("ml.p4d.24xlarge: 8 GPUs x 3 partitions = 24 partitions", text.stdout)

    def test_instance_type_applies_sagemaker_rules(self):
        r = carve("layout", "check", "--instance-type", "ml.p5.48xlarge", "mig-1g.10gb+me")
        self.assertEqual(r.returncode, 1)
        self.assertIn("SageMaker takes no suffixed profiles", r.stderr)
        empty = carve("layout", "check", "--instance-type", "ml.p5.48xlarge")
        self.assertEqual(empty.returncode, 1)
        self.assertIn("is empty", empty.stderr)

    def test_instance_type_of_another_gpu_is_rejected(self):
        r = carve("layout", "check", "--gpu", "a100-40gb", "--instance-type", "ml.p5.48xlarge",
                  "mig-3g.40gb")
        self.assertEqual(r.returncode, 1)
        self.assertIn("ml.p5.48xlarge carries h100-80gb GPUs", r.stderr)

    def test_unknown_gpu_and_profile_exit_1_with_the_reason(self):
        gpu = carve("layout", "check", "--gpu", "z900", "mig-1g.5gb")
        self.assertEqual(gpu.returncode, 1)
        self.assertIn("z900", gpu.stderr)
        profile = carve("layout", "check", "--gpu", "h100-80gb", "mig-5g.50gb")
        self.assertEqual(profile.returncode, 1)
        self.assertIn("5g.50gb", profile.stderr)

    def test_malformed_driver_is_a_usage_error(self):
        r = carve("layout", "check", "--gpu", "h100-80gb", "--driver", "five", "mig-1g.10gb")
        self.assertEqual(r.returncode, 2)
        self.assertIn("five", r.stderr)


class LayoutList(unittest.TestCase):
    def test_json_has_exactly_the_documented_shape(self):
        r = carve("--json", "layout", "list", "--gpu", "a100-40gb", "--profiles", A100_CLASSIC)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(list(out.keys()), ["gpu", "layouts"])
        self.assertEqual(out["gpu"], "a100-40gb")
        for layout in out["layouts"]:
            for inst in layout:
                self.assertEqual(sorted(inst.keys()), ["profile", "size", "start"])
            self.assertFalse(overlaps(layout), layout)
        self.assertIn([{"profile": "7g.40gb", "start": 0, "size": 8}], out["layouts"])

    def test_a100_classic_profiles_give_nineteen_layouts_and_eighteen_before_r510(self):
        r = carve("layout", "list", "--json", "--gpu", "a100-40gb", "--profiles", A100_CLASSIC)
        layouts = json.loads(r.stdout)["layouts"]
        self.assertEqual(len(layouts), 19)
        keys = {tuple((i["profile"], i["start"]) for i in l) for l in layouts}
        self.assertEqual(len(keys), 19)
        self.assertIn((("4g.20gb", 0), ("3g.20gb", 4)), keys)
        old = carve("layout", "list", "--json", "--gpu", "a100-40gb", "--profiles", A100_CLASSIC,
                    "--driver", "470.256.02")
        self.assertEqual(len(json.loads(old.stdout)["layouts"]), 18)

    def test_text_lists_numbered_layouts(self):
        r = carve("layout", "list", "--gpu", "h100-80gb", "--profiles", "3g.40gb")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("h100-80gb: 1 maximal layouts", r.stdout)
        self.assertIn("1. 3g.40gb@0  3g.40gb@4", r.stdout)

    def test_every_layout_of_the_twelve_unit_rtx_pro_6000_validates(self):
        r = carve("layout", "list", "--json", "--gpu", "rtx-pro-6000")
        self.assertEqual(r.returncode, 0, r.stderr)
        layouts = json.loads(r.stdout)["layouts"]
        self.assertGreater(len(layouts), 1)
        for layout in layouts[:20]:
            names = [i["profile"] for i in layout]
            c = carve("layout", "check", "--json", "--gpu", "rtx-pro-6000", *names)
            self.assertEqual(c.returncode, 0, c.stderr)
            checked = json.loads(c.stdout)
            self.assertTrue(checked["valid"], checked)
            placed = checked["instances"]
            self.assertEqual(sorted(i["profile"] for i in placed), sorted(names))
            # Each instance inside the 12 placement units, none overlapping another.
            units = [u for i in placed for u in range(i["start"], i["start"] + i["size"])]
            self.assertEqual(len(units), len(set(units)), placed)
            self.assertTrue(all(0 <= u < 12 for u in units), placed)

    def test_unknown_profile_or_gpu_exit_1(self):
        r = carve("layout", "list", "--gpu", "a100-40gb", "--profiles", "1g.5gb,9g.99gb")
        self.assertEqual(r.returncode, 1)
        self.assertIn("9g.99gb", r.stderr)
        g = carve("layout", "list", "--gpu", "z900")
        self.assertEqual(g.returncode, 1)
        self.assertIn("z900", g.stderr)

    def test_gpu_without_mig_is_refused(self):
        r = carve("layout", "list", "--gpu", "l4")
        self.assertEqual(r.returncode, 1)
        self.assertIn("l4", r.stderr)


if __name__ == "__main__":
    unittest.main()
