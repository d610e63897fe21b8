"""Fault injection: the disk under the data directory fills up while clients are writing.

The server's data dir is a 16 MiB tmpfs mounted for the test (root only; elsewhere the suite
skips and says why). Writers create models without pause; a filler file then takes every free
byte. The suite checks what the design promises (docs/design.md, "Durability"):
  - while the disk is full, writes are refused with a retryable 503 ServiceUnavailable whose
    message says the disk is full and that nothing was written;
  - reads keep working;
  - when the space comes back, writes succeed again without a restart;
  - every acknowledged write is there, also after a kill -9 and a restart, and no refused one is.
"""

import errno
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import botocore.exceptions

from carve_harness import CarveServer, poll

TMPFS_BYTES = 16 << 20
WRITERS = 4


def mount_tmpfs(path, size):
    """Mounts a tmpfs of `size` bytes at `path`; returns None, or why it cannot."""
    if os.geteuid() != 0:
        return "mounting a small filesystem needs root (CI runs as root)"
    if shutil.which("mount") is None:
        return "no mount(8) on this machine"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return f"mount -t tmpfs failed: {r.stderr.strip()}"
    return None


def fill(path):
    """Writes `path` until the filesystem has no byte left. Returns the bytes written."""
    written = 0
    chunk = b"\0" * 65536
    with open(path, "ab", buffering=0) as f:
        while True:
            try:
                written += f.write(chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    return written
                chunk = chunk[:len(chunk) // 2]


class DiskFullTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mnt = tempfile.mkdtemp(prefix="carve-diskfull-")
        cls.logs = tempfile.mkdtemp(prefix="carve-diskfull-logs-")
        cls.addClassCleanup(shutil.rmtree, cls.logs, ignore_errors=True)
        cls.addClassCleanup(os.rmdir, cls.mnt)
        why = mount_tmpfs(cls.mnt, TMPFS_BYTES)
        if why:
            raise unittest.SkipTest(why)
        cls.addClassCleanup(subprocess.run, ["umount", cls.mnt], check=False)
        data = os.path.join(cls.mnt, "data")
        os.mkdir(data)
        cls.server = CarveServer(data_dir=data, log_dir=cls.logs, extra_args=["--no-local-agent"])
        cls.addClassCleanup(cls.server.cleanup)
        cls.server.start()

    def setUp(self):
        self.lock = threading.Lock()
        self.acked = []      # names the server answered 200 for
        self.refused = []    # (name, message) answered 503
        self.other = []      # anything else: a failure of the test
        self.stop = threading.Event()

    def writer(self, worker):
        sm = self.server.client()
        i = 0
        while not self.stop.is_set():
            name = f"w{worker}-{i}"
            i += 1
            try:
                sm.create_model(ModelName=name, PrimaryContainer={"Image": "img"})
                with self.lock:
                    self.acked.append(name)
            except botocore.exceptions.ClientError as e:
                err = e.response["Error"]
                status = e.response["ResponseMetadata"]["HTTPStatusCode"]
                with self.lock:
                    if status == 503 and err["Code"] == "ServiceUnavailable":
                        self.refused.append((name, err["Message"]))
                    else:
                        self.other.append((name, status, err))
            except Exception as e:  # noqa: BLE001 - recorded and asserted empty below
                with self.lock:
                    self.other.append((name, None, repr(e)))

    def count(self, what):
        with self.lock:
            return len(getattr(self, what))

    def test_a_full_disk_refuses_writes_retryably_and_loses_nothing_acknowledged(self):
        filler = os.path.join(self.mnt, "filler")
        threads = [threading.Thread(target=self.writer, args=(w,)) for w in range(WRITERS)]
        for t in threads:
            t.start()
        try:
            poll(lambda: self.count("acked") >= 50, timeout_s=60, what="50 writes before filling")
            fill(filler)
            # SQLite may still find room in pages it already owns for a while; keep taking
            # whatever frees up until writes are refused.
            poll(lambda: fill(filler) >= 0 and self.count("refused") >= 20, timeout_s=60,
                 interval_s=0.1, what="20 writes refused while the disk is full")
            acked_when_full = self.count("acked")
            sm = self.server.client()
            self.assertEqual(sm.describe_model(ModelName="w0-0")["ModelName"], "w0-0",
                             "reads keep working while the disk is full")

            os.remove(filler)
            poll(lambda: self.count("acked") >= acked_when_full + 50, timeout_s=60,
                 what="writes succeed again once space is back, with no restart")
        finally:
            self.stop.set()
            for t in threads:
                t.join(timeout=60)

        self.assertEqual(self.other, [], "every refusal is a 503 ServiceUnavailable")
        for _, message in self.refused:
            self.assertIn("disk", message)
            self.assertIn("full", message)
            self.assertIn("nothing was written", message)

        acked = set(self.acked)
        refused = {n for n, _ in self.refused}
        self.assertEqual(self.listed(), acked,
                         "exactly the acknowledged writes are stored, none of the refused")
        self.assertFalse(acked & refused)

        self.server.kill9()
        self.server.start()
        self.assertEqual(self.listed(), acked, "every acknowledged write survives kill -9")

    def listed(self):
        sm = self.server.client()
        names = set()
        for page in sm.get_paginator("list_models").paginate(
                PaginationConfig={"PageSize": 100}):
            names.update(m["ModelName"] for m in page["Models"])
        return names


if __name__ == "__main__":
    unittest.main()
