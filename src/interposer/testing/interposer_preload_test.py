"""libcarve-mgpu.so under LD_PRELOAD against the fake libcuda.so.1 (CPU only).

The probe program reaches the fake driver directly, through dlsym and through
cuGetProcAddress_v2; each test runs it as a worker (a ledger created with mgpu_ledger) and
checks what the interposer enforces. Paths come from CTest's environment.
"""
import os
import signal
import subprocess
import tempfile
import time
import unittest

LIB = os.environ["CARVE_MGPU_LIB"]
FAKE_DIR = os.environ["CARVE_FAKE_CUDA_DIR"]
PROBE = os.environ["CARVE_MGPU_PROBE"]
LEDGER_TOOL = os.environ["CARVE_MGPU_LEDGER_TOOL"]
MODES = ["direct", "dlsym", "procaddress", "procaddress-ptsz"]
OUT_OF_MEMORY_EXIT = 3  # the probe's exit status when an allocation is refused


class PreloadTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="carve-mgpu-")
        self.children = []

    def tearDown(self):
        for p in self.children:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.tmp.cleanup()

    def ledger(self, limit, core=100, window_ms=100, name="w"):
        path = os.path.join(self.tmp.name, name + ".ledger")
        subprocess.run([LEDGER_TOOL, "create", path, name, str(limit), str(core),
                        str(window_ms)], check=True)
        return path

    def env(self, ledger, preload=True, **extra):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LD_LIBRARY_PATH": FAKE_DIR}
        if preload:
            env["LD_PRELOAD"] = LIB
        if ledger:
            env["CARVE_MGPU_LEDGER"] = ledger
        env.update(extra)
        return env

    def probe(self, env, *args, timeout=60, **kwargs):
        return subprocess.run([PROBE, *args], env=env, capture_output=True, text=True,
                              timeout=timeout, **kwargs)

    def hold(self, env, nbytes):
        """Starts a probe that allocates nbytes and keeps them; returns once it holds them."""
        p = subprocess.Popen([PROBE, "direct", "hold", str(nbytes)], env=env,
                             stdout=subprocess.PIPE, text=True)
        self.children.append(p)
        self.assertEqual(p.stdout.readline().strip(), "alloc=0")
        return p

    def used(self, ledger):
        out = subprocess.run([LEDGER_TOOL, "show", ledger], check=True, capture_output=True,
                             text=True).stdout
        return int(dict(kv.split("=") for kv in out.split())["used"])

    def test_the_last_byte_fits_and_one_more_fails_on_every_resolution_path(self):
        ledger = self.ledger(1_000_000)
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.probe(self.env(ledger), mode, "exact", "1000000")
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_without_the_interposer_the_quota_check_fails(self):
        ledger = self.ledger(1_000_000)
        r = self.probe(self.env(ledger, preload=False), "direct", "exact", "1000000")
        self.assertNotEqual(r.returncode, 0)

    def test_every_allocation_and_free_path_is_counted(self):
        ledger = self.ledger(16 << 20)
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.probe(self.env(ledger), mode, "paths")
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_processes_of_one_worker_share_one_quota(self):
        ledger = self.ledger(1_000_000)
        self.hold(self.env(ledger), 600_000)
        r = self.probe(self.env(ledger), "dlsym", "alloc", "400001")
        self.assertEqual(r.returncode, OUT_OF_MEMORY_EXIT, r.stdout + r.stderr)
        r = self.probe(self.env(ledger), "dlsym", "alloc", "400000")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_killed_process_memory_is_reclaimed(self):
        ledger = self.ledger(1_000_000)
        holder = self.hold(self.env(ledger), 900_000)
        self.assertEqual(self.used(ledger), 900_000)
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        self.assertEqual(self.used(ledger), 0)
        r = self.probe(self.env(ledger), "direct", "alloc", "1000000")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_child_exec_with_a_cleared_environment_is_still_limited(self):
        ledger = self.ledger(1_000_000)
        # The probe forks and execve()s itself with envp = {NULL}.
        r = self.probe(self.env(ledger), "direct", "spawn-cleared", "1000001")
        self.assertEqual(r.returncode, OUT_OF_MEMORY_EXIT, r.stdout + r.stderr)
        r = self.probe(self.env(ledger), "direct", "spawn-cleared", "1000000")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_inherited_ledger_descriptor_limits_a_process_without_the_variable(self):
        # As when /etc/ld.so.preload loads the library into a process started by `env -i`.
        ledger = self.ledger(1_000_000)
        fd = os.open(ledger, os.O_RDWR)
        try:
            r = self.probe(self.env(None), "direct", "alloc", "1000001", pass_fds=(fd,))
            self.assertEqual(r.returncode, OUT_OF_MEMORY_EXIT, r.stdout + r.stderr)
        finally:
            os.close(fd)

    def test_a_process_that_is_no_worker_passes_straight_through(self):
        r = self.probe(self.env(None), "direct", "alloc", str(8 << 30))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_unreadable_ledger_fails_closed(self):
        r = self.probe(self.env(os.path.join(self.tmp.name, "missing.ledger")), "direct",
                       "alloc", "1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("carve-mgpu: CARVE_MGPU_LEDGER=", r.stderr)

    def test_mem_get_info_reports_the_share(self):
        ledger = self.ledger(1_000_000)
        r = self.probe(self.env(ledger), "procaddress", "getinfo")
        self.assertEqual(r.stdout.strip(), "free=1000000 total=1000000")
        self.hold(self.env(ledger), 300_000)
        r = self.probe(self.env(ledger), "procaddress", "getinfo")
        self.assertEqual(r.stdout.strip(), "free=700000 total=1000000")

    def test_nvml_memory_queries_report_the_share(self):
        ledger = self.ledger(1_000_000)
        self.hold(self.env(ledger), 250_000)
        r = self.probe(self.env(ledger), "direct", "nvmlinfo")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), [
            "v1", "total=1000000", "free=750000", "used=250000",
            "v2", "total=1000000", "free=750000", "used=250000"])
        r = self.probe(self.env(None), "direct", "nvmlinfo")  # no worker: the card as it is
        self.assertIn("v1 total=85899345920", r.stdout)

    def busy_fraction(self, env, kind, seconds):
        r = self.probe(env, "procaddress", "launch", str(seconds), kind)
        self.assertEqual(r.returncode, 0, r.stderr)
        return float(r.stdout.split()[0].split("=")[1])

    def test_the_limiter_holds_30_percent_of_busy_time_for_launches_and_graphs(self):
        ledger = self.ledger(1 << 20, core=30, window_ms=100)
        env = self.env(ledger, CARVE_FAKE_KERNEL_US="2000")
        for kind in ["kernel", "graph"]:
            with self.subTest(kind=kind):
                fraction = self.busy_fraction(env, kind, 2)
                self.assertAlmostEqual(fraction, 0.30, delta=0.05)

    def test_processes_of_one_worker_share_one_compute_budget(self):
        ledger = self.ledger(1 << 20, core=30, window_ms=100)
        env = self.env(ledger, CARVE_FAKE_KERNEL_US="2000")
        procs = [subprocess.Popen([PROBE, "direct", "launch", "2", "kernel"], env=env,
                                  stdout=subprocess.PIPE, text=True) for _ in range(2)]
        self.children.extend(procs)
        fractions = []
        for p in procs:
            out, _ = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0)
            fractions.append(float(out.split()[0].split("=")[1]))
        # Each process has its own fake device; together they get the worker's 30%.
        self.assertAlmostEqual(sum(fractions), 0.30, delta=0.05)
        self.assertGreater(min(fractions), 0.05)

    def test_without_a_core_limit_the_fake_device_is_saturated(self):
        ledger = self.ledger(1 << 20, core=100)
        env = self.env(ledger, CARVE_FAKE_KERNEL_US="2000")
        self.assertGreater(self.busy_fraction(env, "kernel", 0.5), 0.9)


if __name__ == "__main__":
    unittest.main()
