"""Shared rig of the libcarve-mgpu.so preload suites (CPU only, against the fake libcuda.so.1).

The probe program (mgpu_probe) reaches the fake driver directly, through dlsym and through
cuGetProcAddress_v2 (also per-thread variants); each test runs it as a worker of a ledger made
with mgpu_ledger and checks what the interposer enforces. Paths come from CTest's environment.
"""
import os
import subprocess
import tempfile
import unittest

LIB = os.environ["CARVE_MGPU_LIB"]
FAKE_DIR = os.environ["CARVE_FAKE_CUDA_DIR"]
PROBE = os.environ["CARVE_MGPU_PROBE"]
LEDGER_TOOL = os.environ["CARVE_MGPU_LEDGER_TOOL"]
MODES = ["direct", "direct-ptsz", "dlsym", "procaddress", "procaddress-ptsz"]
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

    def start_probe(self, env, *args):
        p = subprocess.Popen([PROBE, *args], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.children.append(p)
        return p

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


def fields(line):
    """'a=1 b=x' -> {'a': '1', 'b': 'x'}"""
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
