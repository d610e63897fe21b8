"""mGPU queue tasks when a node fails: one `carve server` (no embedded agent) and two `carve agent`
processes, each a simulated one-GPU ml.g5.xlarge. A queue claims both nodes; a long task runs as
a real process on one of them. The agent of that node is killed with SIGKILL (its task process
lives on, as it would on a machine whose agent crashed). The suite checks that the task is placed
again on the other node and runs there as a new process, and that when the agent comes back it
kills the stale process, so the task never runs twice.

The steps share one fleet and run in order (test_1 .. test_3)."""

import unittest

from carve_harness import CarveAgent, CarveServer, free_port, pid_alive, poll

NODE_TIMEOUT_MS = 3000
# core=60: one task per card, so a task cannot share the surviving card with another.
PARAMS = "emr.serverless.mgpu.core=60;emr.serverless.mgpu.memory=1000;"


class QueueFailoverTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer(port=free_port(), extra_args=[
            "--no-local-agent", "--node-timeout-ms", str(NODE_TIMEOUT_MS),
            "--heartbeat-ms", "300"]).start()
        cls.agents = {n: CarveAgent(cls.server, n, instance_type="ml.g5.xlarge").start()
                      for n in ("node-a", "node-b")}
        poll(lambda: all(n in cls.server.nodes() and cls.server.nodes()[n]["Status"] == "Ready"
                         for n in cls.agents), timeout_s=60, what="both agents registered")

    @classmethod
    def tearDownClass(cls):
        for a in cls.agents.values():
            a.cleanup()
        cls.server.cleanup()

    def call(self, method, path, body=None, expect=200):
        status, out = self.server.signed(method, path, body)
        self.assertEqual(status, expect, out)
        return out

    def running_task(self):
        """(job, task, node workload) once the job's task runs, as both the job and the node's
        agent report it."""
        job = self.call("GET", f"/v1/queues/q/jobs/{self.job_id}")
        task = job["tasks"][0]
        if task["state"] != "Running":
            return None
        node = self.server.nodes()[task["node"]]
        for w in node["Workloads"]:
            if w["id"] == task["workload_id"] and w["state"] == "running":
                return job, task, w
        return None

    def test_1_a_long_task_runs_as_a_process_on_one_node(self):
        q = self.call("POST", "/v1/queues", {
            "name": "q", "mgpu": True,
            "allocation": {"instance_type": "ml.g5.xlarge", "count": 2}}, expect=201)
        self.assertEqual(sorted(q["nodes"]), ["node-a", "node-b"])
        job = self.call("POST", "/v1/queues/q/jobs",
                        {"command": "sleep 600", "parameters": PARAMS}, expect=201)
        type(self).job_id = job["id"]
        _, task, w = poll(self.running_task, timeout_s=60, interval_s=0.2, what="the task running")
        self.assertTrue(pid_alive(w["pid"]), w)
        type(self).first = (task["node"], task["workload_id"], w["pid"])

    def test_2_a_killed_agent_loses_its_node_and_the_task_moves(self):
        node, workload_id, pid = self.first
        other = "node-b" if node == "node-a" else "node-a"
        self.agents[node].kill9()
        self.assertTrue(pid_alive(pid))

        def moved():
            got = self.running_task()
            return got if got and got[1]["node"] == other else None
        job, task, w = poll(moved, timeout_s=NODE_TIMEOUT_MS / 1000 + 30, interval_s=0.2,
                            what=f"the task running again on {other}")
        self.assertEqual(self.server.nodes()[node]["Status"], "NotReady")
        self.assertNotEqual(task["workload_id"], workload_id)
        self.assertNotEqual(w["pid"], pid)
        self.assertTrue(pid_alive(w["pid"]), w)
        self.assertEqual(job["state"], "Running")
        self.assertEqual(task["rescheduled"], f"node {node} stopped reporting; rescheduled")
        type(self).second = (other, w["pid"])

    def test_3_the_returning_agent_kills_the_stale_process(self):
        node, _, stale_pid = self.first
        self.agents[node].start()
        poll(lambda: self.server.nodes()[node]["Status"] == "Ready", timeout_s=60,
             what=f"{node} back")
        poll(lambda: not pid_alive(stale_pid), timeout_s=30, what="the stale task process killed")
        other, live_pid = self.second
        self.assertTrue(pid_alive(live_pid), "the rescheduled task keeps running")
        job = self.call("GET", f"/v1/queues/q/jobs/{self.job_id}")
        self.assertEqual(job["tasks"][0]["node"], other)
        self.call("POST", f"/v1/queues/q/jobs/{self.job_id}/cancel")
        poll(lambda: not pid_alive(live_pid), timeout_s=30, what="the cancelled task stopped")


if __name__ == "__main__":
    unittest.main()
