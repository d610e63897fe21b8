"""The memory quota under LD_PRELOAD: exact on every allocation path and resolution mode."""
import unittest

from preload_support import MODES, OUT_OF_MEMORY_EXIT, PreloadTest, fields


class MemoryQuotaTest(PreloadTest):
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

    # The driver picks the pitch: the interposer admits a bound (rows padded to 512 bytes), then
    # settles to what the driver chose, smaller (the fake's default 256-byte alignment) or larger.
    def test_a_pitched_allocation_is_charged_the_pitch_the_driver_chose(self):
        ledger = self.ledger(1 << 20)
        for align, want_pitch in [("256", 256), ("1024", 1024)]:
            with self.subTest(align=align):
                r = self.probe(self.env(ledger, CARVE_FAKE_PITCH_ALIGN=align), "direct",
                               "pitch", "100", "10")
                self.assertEqual(r.returncode, 0, r.stderr)
                out = fields(r.stdout)
                self.assertEqual(int(out["pitch"]), want_pitch)
                self.assertEqual(int(out["used"]), want_pitch * 10)

    def test_a_driver_pitch_beyond_the_quota_is_undone(self):
        # The 512-byte bound of 100 x 1000 rows fits 600 kB; the driver's 1024-byte pitch does not.
        ledger = self.ledger(600_000)
        r = self.probe(self.env(ledger, CARVE_FAKE_PITCH_ALIGN="1024"), "direct", "pitch",
                       "100", "1000")
        self.assertEqual(r.returncode, OUT_OF_MEMORY_EXIT, r.stdout + r.stderr)

    def test_vmm_memory_is_charged_while_referenced_or_mapped_and_host_memory_is_not(self):
        ledger = self.ledger(16 << 20)
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.probe(self.env(ledger), mode, "vmm")
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_graph_memory_is_charged_until_no_graph_can_map_it_again(self):
        ledger = self.ledger(16 << 20)
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.probe(self.env(ledger), mode, "graphmem")
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_stream_ordered_memory_is_charged_to_the_pool_of_the_streams_device(self):
        ledger = self.ledger(1 << 20)
        for old_driver in [False, True]:  # without cuStreamGetDevice: the stream's context
            extra = {"CARVE_FAKE_DEVICES": "2"}
            if old_driver:
                extra["CARVE_FAKE_NO_STREAM_GET_DEVICE"] = "1"
            for mode in ["direct", "procaddress"]:
                with self.subTest(mode=mode, old_driver=old_driver):
                    r = self.probe(self.env(ledger, **extra), mode, "stream-device-pool")
                    self.assertEqual(r.returncode, 0, r.stderr)

    def test_processes_of_one_worker_share_one_quota(self):
        ledger = self.ledger(1_000_000)
        self.hold(self.env(ledger), 600_000)
        r = self.probe(self.env(ledger), "dlsym", "alloc", "400001")
        self.assertEqual(r.returncode, OUT_OF_MEMORY_EXIT, r.stdout + r.stderr)
        r = self.probe(self.env(ledger), "dlsym", "alloc", "400000")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_process_that_is_no_worker_passes_straight_through(self):
        r = self.probe(self.env(None), "direct", "alloc", str(8 << 30))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_unreadable_ledger_fails_closed(self):
        r = self.probe(self.env(self.tmp.name + "/missing.ledger"), "direct", "alloc", "1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("carve-mgpu: CARVE_MGPU_LEDGER=", r.stderr)


class MemoryReportTest(PreloadTest):
    def test_mem_get_info_reports_the_share(self):
        ledger = self.ledger(1_000_000)
        r = self.probe(self.env(ledger), "procaddress", "getinfo")
        self.assertEqual(r.stdout.strip(), "free=1000000 total=1000000")
        self.hold(self.env(ledger), 300_000)
        r = self.probe(self.env(ledger), "procaddress", "getinfo")
        self.assertEqual(r.stdout.strip(), "free=700000 total=1000000")

    def test_mem_get_info_never_reports_more_free_than_the_card_has(self):
        # Other processes hold all but 400,000 bytes of the card: the share's free room is what
        # the card has, not its quota's 1,000,000; its total stays the quota.
        ledger = self.ledger(1_000_000)
        env = self.env(ledger)
        env["CARVE_FAKE_TOTAL_BYTES"] = "10000000"
        env["CARVE_FAKE_OTHERS_BYTES"] = "9600000"
        r = self.probe(env, "procaddress", "getinfo")
        self.assertEqual(r.stdout.strip(), "free=400000 total=1000000", r.stderr)
        # Without the others the quota bounds it, so the card's figure is what made the difference.
        del env["CARVE_FAKE_OTHERS_BYTES"]
        r = self.probe(env, "procaddress", "getinfo")
        self.assertEqual(r.stdout.strip(), "free=1000000 total=1000000", r.stderr)

    def test_device_total_mem_reports_the_share(self):
        ledger = self.ledger(1_000_000)
        for mode in MODES:
            with self.subTest(mode=mode):
                r = self.probe(self.env(ledger), mode, "totalmem")
                self.assertEqual(r.stdout.strip(), "total=1000000", r.stderr)
        r = self.probe(self.env(None), "direct", "totalmem")  # no worker: the card as it is
        self.assertEqual(r.stdout.strip(), "total=85899345920")

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


if __name__ == "__main__":
    unittest.main()
