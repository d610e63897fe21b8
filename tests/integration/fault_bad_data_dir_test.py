"""Fault injection: a bad data directory at start.

Each case starts the real `carve server` on a data dir that is wrong in one way and checks that
it exits at once with status 2 and a message that names the file and what to do, and that the
file is left as it was (no crash, no silent reset):
  - carve.db is not a database (garbage bytes);
  - another server is running on the directory (it keeps serving, and its data is untouched);
  - the credentials file may be read by others (mode 0644).
"""

import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.request

from carve_harness import CarveServer, carve_bin


def start_fails(data_dir, timeout_s=30):
    """Runs `carve server` on `data_dir`; returns (exit status, output)."""
    r = subprocess.run(
        [carve_bin(), "server", "--listen", "127.0.0.1:0", "--data-dir", data_dir],
        capture_output=True, text=True, timeout=timeout_s)
    return r.returncode, r.stdout + r.stderr


def read(path):
    with open(path, "rb") as f:
        return f.read()


class BadDataDirTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="carve-baddir-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_corrupt_database_is_refused_naming_the_file_and_kept(self):
        db = os.path.join(self.dir, "carve.db")
        garbage = os.urandom(16384)
        with open(db, "wb") as f:
            f.write(garbage)
        rc, out = start_fails(self.dir)
        self.assertEqual(rc, 2, out)
        self.assertIn(f"cannot open the database {db}", out)
        self.assertIn("move it away", out)
        self.assertEqual(read(db), garbage, "the damaged file is kept as it was")
        self.assertNotIn("listening on", out)

    def test_a_second_server_on_the_same_data_dir_is_refused_and_the_first_keeps_serving(self):
        first = CarveServer(data_dir=self.dir).start()
        try:
            sm = first.client()
            sm.create_model(ModelName="kept", PrimaryContainer={"Image": "carve/testmodel"})
            rc, out = start_fails(self.dir)
            self.assertEqual(rc, 2, out)
            self.assertIn(os.path.join(self.dir, "server.lock"), out)
            self.assertIn(f"pid {first.proc.pid}", out)
            self.assertIn("another --data-dir", out)
            with urllib.request.urlopen(first.url + "/ping", timeout=10) as r:
                self.assertEqual(r.status, 200)
            names = [m["ModelName"] for m in sm.list_models()["Models"]]
            self.assertEqual(names, ["kept"])
        finally:
            first.cleanup()
        # Once the first is gone the dir is usable again; a kill -9 frees it too (flock goes with
        # the process), so the next start after that needs nothing cleaned up.
        again = CarveServer(data_dir=self.dir).start()
        again.kill9()
        again = CarveServer(data_dir=self.dir).start()
        try:
            names = [m["ModelName"] for m in again.client().list_models()["Models"]]
            self.assertEqual(names, ["kept"])
        finally:
            again.cleanup()

    def test_a_credentials_file_others_can_read_is_refused_and_left_alone(self):
        first = CarveServer(data_dir=self.dir).start()
        first.stop()
        creds = os.path.join(self.dir, "credentials")
        before = read(creds)
        os.chmod(creds, 0o644)
        rc, out = start_fails(self.dir)
        self.assertEqual(rc, 2, out)
        self.assertIn(f"chmod 600 {creds}", out)
        self.assertIn("mode 0644", out)
        self.assertEqual(read(creds), before)
        self.assertEqual(os.stat(creds).st_mode & 0o777, 0o644, "carve does not change the mode")


if __name__ == "__main__":
    unittest.main()
