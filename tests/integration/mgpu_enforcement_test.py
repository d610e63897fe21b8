"""mGPU shares are enforced on the embedded agents of the real `carve server`, or their tasks fail.

Each task of a queue runs under the real libcarve-mgpu.so (found by the server in the build
tree) against the fake CUDA driver (src/interposer/testing/): the task runs mgpu_probe, which
reads, from inside the process, the memory quota (`cuMemGetInfo`'s total) and the core limit
(the busy fraction a launch loop achieves). Two jobs with different shares must each see their
own. A queue created with `enforcement: none` runs its shares with the limits as variables only;
a server that has no library fails interposer shares with the reason instead of running them
unenforced."""

import os
import re
import shlex
import unittest

from carve_harness import CarveServer, poll

FLEET = """
fleet:
  carve_time_ms: 20
  nodes:
    - instance_type: ml.g5.48xlarge
      count: 2
runtimes:
  default_runtime: carve/testmodel
"""

PROBE = os.environ.get("CARVE_MGPU_PROBE", "")
FAKE_CUDA_DIR = os.environ.get("CARVE_FAKE_CUDA_DIR", "")
CARD_BYTES = 24 << 30  # What the fake driver reports as the card's memory here.
MIB = 1 << 20

# What each task runs: its enforcement environment, then the probe's two readings. The fake
# driver's directory and settings are exported by the task itself: a job's environment may not
# name LD_* or CARVE_* variables (docs/security.md, Launch inputs).
TASK = ('env | grep -E "^(LD_PRELOAD|CARVE_MGPU_LEDGER|CARVE_MGPU_ENFORCEMENT)=" | sort; '
        f'export LD_LIBRARY_PATH={shlex.quote(FAKE_CUDA_DIR)} '
        f'CARVE_FAKE_TOTAL_BYTES={CARD_BYTES} CARVE_FAKE_KERNEL_US=1000; '
        '"$PROBE" direct getinfo && "$PROBE" direct launch 1.5 kernel')


def task_environment():
    return {"PROBE": PROBE}


def shares(core, memory_mib):
    return f"emr.serverless.mgpu.core={core};\nemr.serverless.mgpu.memory={memory_mib};\n"


def expect(status, want, body):
    if status != want:
        raise AssertionError(f"answered {status}, expected {want}: {body}")


class EnforcementServer:
    """A server on a two-node g5 fleet, and the queue calls the tests make."""

    def __init__(self, extra_args=()):
        self.server = CarveServer(extra_args=list(extra_args))
        with open(self.server.config, "w") as f:
            f.write(FLEET)
        self.server.start()
        poll(lambda: sum(n["Status"] == "Ready" for n in self.server.nodes().values()) == 2,
             timeout_s=60, what="both embedded agents' nodes Ready")

    def call(self, method, path, body=None):
        return self.server.signed(method, path, body)

    def create_queue(self, name, **fields):
        status, q = self.call("POST", "/v1/queues", {
            "name": name, "mgpu": True,
            "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1}, **fields})
        expect(status, 201, q)
        return q

    def submit(self, queue, core, memory_mib):
        status, job = self.call("POST", f"/v1/queues/{queue}/jobs", {
            "command": TASK, "parameters": shares(core, memory_mib),
            "environment": task_environment()})
        expect(status, 201, job)
        return job

    def finished(self, queue, job_id, timeout_s=90):
        def done():
            status, job = self.call("GET", f"/v1/queues/{queue}/jobs/{job_id}")
            expect(status, 200, job)
            return job if job["state"] in ("Succeeded", "Failed", "Cancelled") else None
        return poll(done, timeout_s=timeout_s, interval_s=0.2, what=f"{job_id} finished")

    def stdout(self, queue, job_id):
        status, logs = self.call("GET", f"/v1/queues/{queue}/jobs/{job_id}/logs?lines=50")
        expect(status, 200, logs)
        if len(logs["tasks"]) != 1:
            raise AssertionError(f"one task expected: {logs}")
        return logs["tasks"][0].get("stdout", "")


def reading(text, key):
    m = re.search(r"\b%s=(\S+)" % re.escape(key), text)
    return m.group(1) if m else None


class MgpuEnforcementTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (PROBE and FAKE_CUDA_DIR and os.environ.get("CARVE_MGPU_LIB")):
            raise AssertionError("CARVE_MGPU_LIB, CARVE_MGPU_PROBE and CARVE_FAKE_CUDA_DIR must "
                                 "be set (ctest sets them: tests/integration/CMakeLists.txt)")
        cls.lib = os.path.realpath(os.environ["CARVE_MGPU_LIB"])
        cls.enforcing = EnforcementServer()

    @classmethod
    def tearDownClass(cls):
        cls.enforcing.server.cleanup()

    def test_each_task_sees_its_own_quota_and_core_limit_from_inside_the_process(self):
        s = self.enforcing
        s.create_queue("enforced", strategy="BINPACK")  # Both tasks share one card.
        wanted = {"small": (20, 1000), "large": (50, 3000)}
        jobs = {name: s.submit("enforced", *share) for name, share in wanted.items()}
        for name, (core, memory_mib) in wanted.items():
            with self.subTest(share=name):
                job = s.finished("enforced", jobs[name]["id"])
                out = s.stdout("enforced", job["id"])
                self.assertEqual(job["state"], "Succeeded", f"{job}\n{out}")
                # An ASan build puts its runtime ahead of the interposer (InterposerPreload).
                preload = reading(out, "LD_PRELOAD") or ""
                if "address" in os.environ.get("CARVE_SANITIZE", ""):
                    preload = preload.split(":")[-1]
                self.assertEqual(preload, self.lib, out)
                ledger = reading(out, "CARVE_MGPU_LEDGER")
                self.assertTrue(ledger and ledger.endswith("/ledger"), out)
                self.assertIsNone(reading(out, "CARVE_MGPU_ENFORCEMENT"), out)
                # The quota, as the process's own cuMemGetInfo reports it: exact.
                self.assertEqual(int(reading(out, "total")), memory_mib * MIB, out)
                # The core limit, as the process's kernels achieve it: never above the share
                # (plus the one window the bucket banks), and well above nothing.
                busy = float(reading(out, "busy_fraction"))
                self.assertLessEqual(busy, core / 100 + 0.05, out)
                self.assertGreaterEqual(busy, core / 200, out)
        cards = {tuple(t["gpus"]) for j in jobs.values()
                 for t in s.call("GET", f"/v1/queues/enforced/jobs/{j['id']}")[1]["tasks"]}
        self.assertEqual(len(cards), 1, "BINPACK put both shares on one card")

    def test_a_queue_with_enforcement_none_runs_its_shares_unenforced(self):
        s = self.enforcing
        q = s.create_queue("loose", enforcement="none")
        self.assertEqual(q["enforcement"], "none")
        job = s.submit("loose", 20, 1000)
        job = s.finished("loose", job["id"])
        out = s.stdout("loose", job["id"])
        self.assertEqual(job["state"], "Succeeded", f"{job}\n{out}")
        self.assertEqual(reading(out, "CARVE_MGPU_ENFORCEMENT"), "none", out)
        self.assertIsNone(reading(out, "LD_PRELOAD"), out)
        self.assertIsNone(reading(out, "CARVE_MGPU_LEDGER"), out)
        self.assertEqual(int(reading(out, "total")), CARD_BYTES, out)  # The whole card.
        self.assertGreater(float(reading(out, "busy_fraction")), 0.9, out)

    def test_an_unknown_enforcement_is_refused_naming_the_accepted_ones(self):
        status, body = self.enforcing.call("POST", "/v1/queues", {
            "name": "odd", "mgpu": True, "enforcement": "hami",
            "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1}})
        self.assertEqual(status, 400, body)
        self.assertIn("hami", body["error"])
        self.assertIn("none", body["error"])

    def test_a_server_without_the_library_fails_interposer_shares_saying_why(self):
        missing = "/nonexistent/libcarve-mgpu.so"
        s = EnforcementServer(extra_args=["--interposer", missing])
        try:
            s.create_queue("enforced")
            job = s.submit("enforced", 20, 1000)
            job = s.finished("enforced", job["id"])
            self.assertEqual(job["state"], "Failed", job)
            self.assertIn("is not started unenforced", job["reason"])
            self.assertIn(f"{missing} cannot be read", job["reason"])
            self.assertIn('enforcement "none"', job["reason"])
            self.assertNotIn("total=", s.stdout("enforced", job["id"]))  # It never ran.
        finally:
            s.server.cleanup()


if __name__ == "__main__":
    unittest.main()
