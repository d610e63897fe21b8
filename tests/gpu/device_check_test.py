"""tests/gpu/device-check.sh without a GPU: every part skips with its reason; against a fake
NVML that differs from the catalog it reports the difference, never a crash; and the library it
builds with plain g++ meets the glibc floor and enforces a quota against the fake driver."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "device-check.sh")
PROBE = os.environ["CARVE_NVML_PROBE"]
FAKE_NVML = os.environ["CARVE_FAKE_LIBNVML"]
FAKE_CUDA_DIR = os.environ["CARVE_FAKE_CUDA_DIR"]
MGPU_PROBE = os.environ["CARVE_MGPU_PROBE"]


class DeviceCheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="carve-device-check-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_script(self, *args, config=None, timeout=120):
        env = dict(os.environ)
        env.pop("OUT", None)
        if config is not None:
            env["CARVE_FAKE_NVML_CONFIG"] = config
        out = os.path.join(self.tmp, "out")
        r = subprocess.run(["bash", SCRIPT, "--out", out, *args], env=env, capture_output=True,
                           text=True, timeout=timeout)
        with open(os.path.join(out, "device-check.json")) as f:
            report = json.load(f)
        self.assertTrue(os.path.exists(os.path.join(out, "device-check.txt")))
        self.assertNotIn("Traceback", r.stdout + r.stderr)
        return r, report

    def parts(self, report):
        return {p["name"]: p for p in report["parts"]}

    @unittest.skipIf(shutil.which("nvidia-smi"), "this host has an NVIDIA driver")
    def test_without_a_gpu_every_part_is_skipped_with_its_reason_and_the_exit_is_0(self):
        r, report = self.run_script()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(r.stdout.startswith("== carve device check"), r.stdout[:200])
        self.assertIn("driver: none", r.stdout.splitlines()[1])  # the driver, first
        self.assertGreaterEqual(len(report["parts"]), 18)
        for part in report["parts"]:
            with self.subTest(part=part["name"]):
                self.assertEqual(part["status"], "SKIPPED")
                self.assertTrue(part["detail"].strip(), "a skip says why")
        self.assertEqual(report["summary"], {"pass": 0, "fail": 0, "skipped": len(report["parts"])})

    # Issue 21's reproduction: an H200 on driver 535.
    def test_a_fake_nvml_that_differs_from_the_catalog_is_reported_not_a_crash(self):
        r, report = self.run_script("--nvml-library", FAKE_NVML, "--probe", PROBE,
                                    config="gpus: h200-141gb, driver: 535.54.03")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # a difference fails the check
        parts = self.parts(report)
        self.assertEqual(parts["nvml-probe"]["status"], "PASS")
        self.assertIn("1 difference(s)", parts["nvml-probe"]["detail"])
        self.assertEqual(parts["catalog-match"]["status"], "FAIL")
        self.assertIn("driver-too-old", parts["catalog-match"]["detail"])
        self.assertEqual(report["nvml_probe"]["differences"][0]["kind"], "driver-too-old")
        self.assertIn("difference [driver-too-old] GPU 0", r.stdout)
        self.assertEqual(parts["nvml-read-only"]["status"], "PASS", parts["nvml-read-only"])

    def test_when_nothing_could_be_compared_the_catalog_part_is_skipped_not_passed(self):
        r, report = self.run_script(
            "--nvml-library", FAKE_NVML, "--probe", PROBE,
            config="gpus: h200-141gb, driver: 570.124.06, mig: disabled, user: unprivileged")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        catalog = self.parts(report)["catalog-match"]
        self.assertEqual(catalog["status"], "SKIPPED")
        self.assertIn("nothing compared", catalog["detail"])
        self.assertIn("NVML_ERROR_NO_PERMISSION", catalog["detail"])

    def test_a_probe_that_prints_no_json_is_a_failure_not_a_crash(self):
        broken = os.path.join(self.tmp, "broken-probe")
        with open(broken, "w") as f:
            f.write("#!/bin/sh\necho '[warning] not json'\nexit 0\n")
        os.chmod(broken, 0o755)
        r, report = self.run_script("--probe", broken)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        probe = self.parts(report)["nvml-probe"]
        self.assertEqual(probe["status"], "FAIL")
        self.assertIn("without one JSON document", probe["detail"])

    # The script builds libcarve-mgpu.so with plain g++ on the GPU host: the same library, by
    # another recipe. It must meet the floor and enforce a quota like the CMake-built one.
    def test_its_own_build_of_the_library_meets_the_floor_and_enforces_the_quota(self):
        work = os.path.join(self.tmp, "work")
        r, report = self.run_script("--build-only", "--work", work, timeout=900)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        parts = self.parts(report)
        self.assertEqual(parts["build-interposer"]["status"], "PASS", parts["build-interposer"])
        self.assertEqual(parts["library-floor"]["status"], "PASS", parts["library-floor"])
        ledger = os.path.join(work, "w.ledger")
        subprocess.run([os.path.join(work, "mgpu_ledger"), "create", ledger, "w", str(16 << 20),
                        "100", "100"], check=True)
        env = {"PATH": os.environ["PATH"], "LD_LIBRARY_PATH": FAKE_CUDA_DIR,
               "LD_PRELOAD": os.path.join(work, "libcarve-mgpu.so"), "CARVE_MGPU_LEDGER": ledger}
        for action in (["exact", str(16 << 20)], ["paths"], ["vmm"], ["graphmem"]):
            with self.subTest(action=action[0]):
                p = subprocess.run([MGPU_PROBE, "procaddress", *action], env=env,
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
