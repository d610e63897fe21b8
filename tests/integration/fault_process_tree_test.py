"""Fault injection: a workload's process tree misbehaves.

One `carve server` (no embedded agent) and one `carve agent` (simulated ml.g5.xlarge, logs capped
at 1 MiB per stream). Queue tasks run shell scripts that do what a badly written model server
does: fork children that ignore SIGTERM, start a child that leaves the process group with
setsid(), and write their log without pause. Every process of a tree records its pid in a file
the test owns and carries a tag in its command line, so the test sees what runs without relying
on the agent's own bookkeeping. The suite checks that:
  - the logs stay bounded while the flood goes on (the newest part kept in stdout.log.1), and
    the writer keeps running through the rotations;
  - cancelling the job leaves no process of the tree alive, the ones that ignore SIGTERM and the
    one that left the session included;
  - a task whose leader exits by itself does not leave its setsid() child running either.
"""

import os
import shutil
import tempfile
import time
import unittest
import uuid

from carve_harness import CarveAgent, CarveServer, live_processes, pid_alive, poll

LOG_CAP = 1 << 20
# What the flood writes: 100 KiB every 10 ms, 10 MiB/s. The agent checks sizes every 200 ms, so
# a live log stays within the cap plus about 2 MiB; 10 MiB of slack keeps a slow machine honest.
FLOOD_BOUND = 2 * LOG_CAP + (10 << 20)
FLOOD = ("import sys, time\n"
         "line = b'x' * 102399 + b'\\n'\n"
         "while True:\n"
         "    sys.stdout.buffer.write(line); sys.stdout.flush(); time.sleep(0.01)\n")


def tagged_processes(tag):
    """Pids of live processes whose command line carries `tag`."""
    return live_processes("cmdline", lambda cmdline: tag.encode() in cmdline)


class ProcessTreeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer(extra_args=["--no-local-agent", "--heartbeat-ms", "300"]).start()
        # --sandbox off: the trees record their pids in a file of the test's, which a sandboxed
        # process can neither reach nor fill with host pids. sandbox_test.py stops a sandboxed
        # tree (a setsid() child that ignores SIGTERM included) by its tag.
        cls.agent = CarveAgent(cls.server, "node-a", instance_type="ml.g5.xlarge",
                               extra_args=["--log-max-mib", str(LOG_CAP >> 20),
                                           "--sandbox", "off"]).start()
        poll(lambda: cls.server.nodes().get("node-a", {}).get("Status") == "Ready",
             timeout_s=60, what="the agent registered")
        cls.call("POST", "/v1/queues", {
            "name": "q", "allocation": {"instance_type": "ml.g5.xlarge", "count": 1}}, 201)

    @classmethod
    def tearDownClass(cls):
        cls.agent.cleanup()
        cls.server.cleanup()

    @classmethod
    def call(cls, method, path, body=None, expect=200):
        status, out = cls.server.signed(method, path, body)
        if status != expect:
            raise AssertionError(f"{method} {path}: {status} {out}")
        return out

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="carve-tree-")
        self.tag = f"carve-tree-{uuid.uuid4().hex[:12]}"
        self.pids_file = os.path.join(self.tmp, "pids")

    def tearDown(self):
        for pid in tagged_processes(self.tag):  # only if a test failed
            os.kill(pid, 9)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def pids(self):
        try:
            with open(self.pids_file) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def submit(self, script):
        job = self.call("POST", "/v1/queues/q/jobs", {"command": ["/bin/sh", "-c", script, self.tag]},
                        201)
        return job["id"]

    def task(self, job_id):
        return self.call("GET", f"/v1/queues/q/jobs/{job_id}")["tasks"][0]

    def workload(self, task):
        for w in self.server.nodes()[task["node"]]["Workloads"]:
            if w["id"] == task["workload_id"]:
                return w
        return None

    def child(self, body):
        """A shell line that starts `body` as a tagged child recording its pid."""
        return f"sh -c 'echo $$ >> {self.pids_file}; {body}' {self.tag}"

    def test_cancelling_stops_the_whole_tree_and_its_logs_stay_bounded(self):
        flood = os.path.join(self.tmp, "flood.py")
        with open(flood, "w") as f:
            f.write(FLOOD)
        script = "\n".join([
            f"echo $$ >> {self.pids_file}",
            self.child("trap \"\" TERM; while :; do sleep 1; done") + " &",
            "setsid " + self.child("trap \"\" TERM; while :; do sleep 1; done") + " &",
            f"python3 {flood} {self.tag} &",
            f"echo $! >> {self.pids_file}",
            "wait",
        ])
        job_id = self.submit(script)
        poll(lambda: self.task(job_id)["state"] == "Running" and len(self.pids()) == 4,
             timeout_s=60, what="the task and its four processes running")
        tree = self.pids()
        self.assertTrue(all(pid_alive(p) for p in tree), tree)
        workload = poll(lambda: self.workload(self.task(job_id)), what="the agent's report")
        log = os.path.join(workload["log_dir"], "stdout.log")

        # Three seconds of flood: 30 MiB written, far past the cap.
        biggest = 0
        for _ in range(30):
            sizes = [os.path.getsize(p) for p in (log, log + ".1") if os.path.exists(p)]
            biggest = max(biggest, sum(sizes))
            time.sleep(0.1)  # a sampling period, not a wait for anything
        self.assertLessEqual(biggest, FLOOD_BOUND, "the log grew without bound")
        self.assertTrue(os.path.exists(log + ".1"), "the log was never rotated")
        self.assertEqual(os.path.getsize(log + ".1"), LOG_CAP)
        self.assertTrue(pid_alive(tree[-1]), "the writer survives the rotations")
        written_before = os.path.getsize(log)
        poll(lambda: os.path.getsize(log) != written_before, what="the writer writing on")

        self.call("POST", f"/v1/queues/q/jobs/{job_id}/cancel")
        # The agent's stop grace (10 s) passes before SIGKILL reaches the ones ignoring SIGTERM.
        poll(lambda: not any(pid_alive(p) for p in tree) and not tagged_processes(self.tag),
             timeout_s=40, what=f"every process of {tree} and tag {self.tag} gone")

    def test_a_leader_that_exits_takes_its_setsid_child_with_it(self):
        script = "\n".join([
            f"echo $$ >> {self.pids_file}",
            "setsid " + self.child("trap \"\" TERM; while :; do sleep 1; done") + " &",
            f"while [ $(wc -l < {self.pids_file}) -lt 2 ]; do sleep 0.05; done",
            "exit 0",
        ])
        job_id = self.submit(script)
        poll(lambda: len(self.pids()) == 2, timeout_s=60, what="the leader and its child")
        tree = self.pids()
        poll(lambda: self.task(job_id)["state"] == "Succeeded", timeout_s=60,
             what="the task succeeded")
        poll(lambda: not any(pid_alive(p) for p in tree) and not tagged_processes(self.tag),
             timeout_s=30, what=f"the setsid child of {tree} gone with its leader")


if __name__ == "__main__":
    unittest.main()
