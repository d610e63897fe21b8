#!/usr/bin/env python3
"""tools/leftover_processes.py finds a process left from a build directory, and only those."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "leftover_processes.py")


class LeftoverProcessesTest(unittest.TestCase):
    def setUp(self):
        self.build = tempfile.mkdtemp(prefix="carve-leftover-")
        self.addCleanup(shutil.rmtree, self.build, True)
        self.sleep = os.path.join(self.build, "bin", "sleep")
        os.makedirs(os.path.dirname(self.sleep))
        shutil.copy("/bin/sleep", self.sleep)

    def spawn(self, argv):
        """A process group of its own, silent, killed whole at the end of the test."""
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)

        def stop():
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        self.addCleanup(stop)
        return p

    def check(self, *extra):
        return subprocess.run([sys.executable, TOOL, self.build, *extra], capture_output=True,
                              text=True, timeout=30)

    def test_an_empty_build_directory_passes(self):
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_process_of_the_build_fails_the_check_and_is_killed(self):
        p = self.spawn([self.sleep, "60"])
        r = self.check()
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"pid {p.pid}", r.stderr)
        self.assertIsNotNone(p.wait(timeout=10))  # killed by the check

    def test_a_shell_naming_the_build_directory_counts_too(self):
        p2 = self.spawn(["/bin/sh", "-c", f": {self.build}; sleep 60"])
        r = self.check("--no-kill")
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"pid {p2.pid}", r.stderr)

    def test_processes_of_another_directory_are_not_counted(self):
        p = self.spawn(["/bin/sleep", "60"])
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIsNone(p.poll())


if __name__ == "__main__":
    unittest.main()
