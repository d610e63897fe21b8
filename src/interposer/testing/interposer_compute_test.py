"""The compute share under LD_PRELOAD: the limiter on every launch path and resolution mode, and
launches that neither touch the legacy stream nor break another thread's graph capture.

What the design holds (docs/interposer.md): over an interval T the worker's busy time is at most
core% x T plus one window's share (the bucket may be full when the interval starts) plus one
launch (a launch starts while the bucket is positive and may take it below zero), and a
launch-bound worker gets at least core% less what the refill granularity loses. With 2 ms fake
kernels (a graph launch here is four of them), a 100 ms window and core 30%: at most
0.30 + (0.030 s + launch) / T + 0.005, at least 0.285.
"""
import unittest

from preload_support import MODES, PreloadTest, fields

CORE = 0.30
WINDOW_S = 0.100
KERNEL_US = "2000"


KERNEL_S = 0.002


def upper_bound(wall_s, kind="kernel"):
    launch_s = KERNEL_S * (4 if kind == "graph" else 1)
    return CORE + (CORE * WINDOW_S + launch_s) / wall_s + 0.005


LOWER_BOUND = CORE - 0.015


class ComputeShareTest(PreloadTest):
    def run_parallel(self, runs, seconds):
        """runs: [(label, ledger, mode, kind)] -> {label: fields of the probe's line}"""
        results = {}
        for start in range(0, len(runs), 10):  # ten at a time on this 2-core machine
            batch = []
            for label, ledger, mode, kind in runs[start:start + 10]:
                env = self.env(ledger, CARVE_FAKE_KERNEL_US=KERNEL_US)
                batch.append((label, self.start_probe(env, mode, "launch", str(seconds), kind)))
            for label, p in batch:
                out, err = p.communicate(timeout=120)
                self.assertEqual(p.returncode, 0, f"{label}: {err}")
                results[label] = fields(out)
        return results

    def assertWithinTheShare(self, label, kind, measured):
        fraction, wall = float(measured["busy_fraction"]), float(measured["wall_s"])
        self.assertGreaterEqual(fraction, LOWER_BOUND, f"{label}: {measured}")
        self.assertLessEqual(fraction, upper_bound(wall, kind), f"{label}: {measured}")

    def test_the_limiter_holds_the_share_on_every_launch_path_and_resolution_mode(self):
        runs = []
        for mode in MODES:
            for kind in ["kernel", "ex", "coop", "graph"]:
                # One ledger each: the runs are independent workers.
                runs.append(((mode, kind), self.ledger(1 << 20, core=30, window_ms=100,
                                                       name=f"{mode}-{kind}"), mode, kind))
        for label, measured in self.run_parallel(runs, 2).items():
            with self.subTest(mode=label[0], kind=label[1]):
                self.assertWithinTheShare(label, label[1], measured)

    # The design promises the worker's budget, not a fair split between its processes.
    def test_processes_of_one_worker_share_one_compute_budget(self):
        ledger = self.ledger(1 << 20, core=30, window_ms=100)
        runs = [(i, ledger, "direct", "kernel") for i in range(2)]
        results = self.run_parallel(runs, 2)
        total = sum(float(m["busy_fraction"]) for m in results.values())
        wall = max(float(m["wall_s"]) for m in results.values())
        self.assertGreaterEqual(total, LOWER_BOUND, results)
        self.assertLessEqual(total, upper_bound(wall), results)

    def test_without_a_core_limit_the_fake_device_is_saturated(self):
        # The control for the tests above: without a limit the device is far busier than any
        # 30% share. Twice the share, not 90%: on a 2-core machine shared with a browser test
        # the probe itself is descheduled now and then (0.84 was seen under ctest -j2).
        ledger = self.ledger(1 << 20, core=100)
        results = self.run_parallel([("whole", ledger, "direct", "kernel")], 0.5)
        self.assertGreater(float(results["whole"]["busy_fraction"]), 0.6)


class StreamSemanticsTest(PreloadTest):
    # cuda.h: through a _ptsz entry a NULL stream is the thread's per-thread default stream. The
    # timing events must go there too: on the legacy stream they would serialize the program.
    def test_per_thread_default_stream_launches_never_touch_the_legacy_stream(self):
        for mode in ["direct-ptsz", "procaddress-ptsz"]:
            for kind in ["kernel", "ex", "coop", "graph"]:
                with self.subTest(mode=mode, kind=kind):
                    ledger = self.ledger(1 << 20, core=30, name=f"{mode}-{kind}")
                    r = self.probe(self.env(ledger, CARVE_FAKE_KERNEL_US=KERNEL_US), mode,
                                   "launch", "0.3", kind)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(fields(r.stdout)["legacy_ops"], "0", r.stdout)

    # torch.cuda.graph captures in global mode; the interposer's event polling from another thread
    # must neither invalidate that capture nor be skipped (a capture elsewhere is no reason to
    # run this thread's launches unlimited).
    def test_a_global_capture_on_another_thread_stays_valid_and_launches_stay_limited(self):
        for mode in MODES:
            for kind in ["kernel", "graph"]:
                with self.subTest(mode=mode, kind=kind):
                    ledger = self.ledger(1 << 20, core=30, name=f"{mode}-{kind}")
                    r = self.probe(self.env(ledger, CARVE_FAKE_KERNEL_US=KERNEL_US), mode,
                                   "capture-elsewhere", "1", kind)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    measured = fields(r.stdout)
                    self.assertEqual(measured["capture"], "0", r.stdout)  # CUDA_SUCCESS
                    self.assertLessEqual(float(measured["busy_fraction"]),
                                         upper_bound(float(measured["wall_s"]), kind), r.stdout)


if __name__ == "__main__":
    unittest.main()
