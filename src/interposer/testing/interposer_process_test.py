"""Processes of a worker under LD_PRELOAD: children keep the limit however they are started, and
a process that dies holding memory gives it back."""
import signal
import unittest

from preload_support import OUT_OF_MEMORY_EXIT, PreloadTest

EXEC_CALLS = ["execve", "execv", "execvp", "execvpe", "posix_spawn", "posix_spawnp"]


class ChildrenTest(PreloadTest):
    def test_a_child_started_with_a_cleared_environment_is_limited_through_every_exec_call(self):
        ledger = self.ledger(1_000_000)
        for via in EXEC_CALLS:
            with self.subTest(via=via):
                # The probe starts itself through `via` with an empty environment.
                r = self.probe(self.env(ledger), "direct", "spawn", via, "1000001")
                self.assertEqual(r.returncode, OUT_OF_MEMORY_EXIT, r.stdout + r.stderr)
                r = self.probe(self.env(ledger), "direct", "spawn", via, "1000000")
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_the_librarys_own_ledger_descriptor_limits_a_child_without_the_variable(self):
        # As when /etc/ld.so.preload loads the library into a child started by `env -i`: the
        # child has LD_PRELOAD and nothing else, and this test hands it no descriptor of its own
        # (subprocess closes every descriptor but 0-2); only the library's can reach it.
        ledger = self.ledger(1_000_000)
        r = self.probe(self.env(ledger), "direct", "exec-preload-only", "1000001")
        self.assertEqual(r.returncode, OUT_OF_MEMORY_EXIT, r.stdout + r.stderr)
        r = self.probe(self.env(ledger), "direct", "exec-preload-only", "1000000")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_exec_keeps_one_ledger_and_one_preload_variable(self):
        # The hook adds CARVE_MGPU_LEDGER and LD_PRELOAD to a child's environment only where they
        # are missing: a child that keeps its parent's gets each once.
        ledger = self.ledger(1_000_000)
        for var in ("CARVE_MGPU_LEDGER", "LD_PRELOAD"):
            with self.subTest(var=var):
                r = self.probe(self.env(ledger), "direct", "exec-count-env", var)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)

    def test_a_killed_process_memory_is_reclaimed(self):
        ledger = self.ledger(1_000_000)
        holder = self.hold(self.env(ledger), 900_000)
        self.assertEqual(self.used(ledger), 900_000)
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        self.assertEqual(self.used(ledger), 0)
        r = self.probe(self.env(ledger), "direct", "alloc", "1000000")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
