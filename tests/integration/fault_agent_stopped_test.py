"""Fault injection: an agent stops answering (SIGSTOP) while its node runs a copy.

One `carve server` (no embedded agent, node timeout 3 s, heartbeat 300 ms) and two `carve agent`
processes with simulated GPUs; an endpoint on both nodes runs one copy per node (SPREAD). The
agent of node-b is frozen with SIGSTOP; its copy's process is not (it is in its own session).
While the agent stays frozen, the suite samples every 20 ms whether the old copy's process and
its replacement's are alive, and derives the window in which both ran. It checks that:
  - node-b goes NotReady and its copy is placed again, on node-a, as a new process;
  - the window in which the old and the new copy both run is bounded by the node timeout, with
    the agent still frozen (the fence watchdog stops the old copy, docs/design.md); the figure is
    printed for docs/testing.md;
  - when the agent resumes (SIGCONT), node-b is Ready again, its stale copy is not started again
    and does not run, the fence's stop is reported as an event, and exactly two copies serve.
Then, with node-b's agent frozen again, the endpoint is deleted:
  - the delete does not wait for the frozen node: the endpoint is gone, node-a is whole and
    free, and node-b is held by a reset claim (GET /v1/fleet) so no new owner takes it carved;
  - the pending reset survives a server kill -9;
  - when the agent resumes, every GPU of node-b is whole and the node is free.
"""

import json
import os
import signal
import time
import unittest

from carve_harness import pid_alive, poll, spread_copies, two_node_fleet

NODE_TIMEOUT_MS = 3000


class AgentStoppedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.agents = two_node_fleet(NODE_TIMEOUT_MS)
        cls.sm = cls.server.client()
        spread_copies(cls.sm, 2)
        poll(lambda: cls.serving() == 2, timeout_s=60, what="two copies serving")

    @classmethod
    def tearDownClass(cls):
        b = cls.agents["node-b"]
        if b.proc is not None and b.proc.poll() is None:
            b.proc.send_signal(signal.SIGCONT)
        for a in cls.agents.values():
            a.cleanup()
        cls.server.cleanup()

    @classmethod
    def serving(cls):
        d = cls.sm.describe_inference_component(InferenceComponentName="ic")
        return d["RuntimeConfig"]["CurrentCopyCount"]

    def copies(self, node):
        """{workload id: pid} of the live copy processes the agent's pid files name on `node`:
        read from the machine, so it holds while that node's agent is frozen."""
        root = os.path.join(self.agents[node].data_dir, "workloads")
        out = {}
        for d in os.listdir(root) if os.path.isdir(root) else []:
            try:
                with open(os.path.join(root, d, "id")) as f:
                    wid = f.read().strip()
                with open(os.path.join(root, d, "pid")) as f:
                    pid = json.load(f)["pid"]
            except (OSError, ValueError, KeyError):
                continue
            if pid_alive(pid):
                out[wid] = pid
        return out

    def test_a_frozen_agents_copy_is_replaced_and_never_runs_beside_its_replacement(self):
        old = self.copies("node-b")
        self.assertEqual(len(old), 1, old)
        (old_id, old_pid), = old.items()
        before_a = set(self.copies("node-a"))
        agent_b = self.agents["node-b"]

        agent_b.proc.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        old_dead_at = new_alive_at = None
        new_id = None
        # Sampling, not waiting: the agent stays frozen until the old copy is gone or the bound
        # (node timeout after the replacement started) has clearly passed.
        deadline = frozen_at + 60
        while time.monotonic() < deadline:
            now = time.monotonic()
            if old_dead_at is None and not pid_alive(old_pid):
                old_dead_at = now
            if new_alive_at is None:
                fresh = set(self.copies("node-a")) - before_a
                if fresh:
                    new_id = fresh.pop()
                    new_alive_at = now
            if (old_dead_at is not None and new_alive_at is not None) or (
                    new_alive_at is not None and now > new_alive_at + NODE_TIMEOUT_MS / 1000 + 2):
                break
            time.sleep(0.02)
        self.assertIsNotNone(new_alive_at, "the copy was never placed again")
        self.assertIsNotNone(old_dead_at, "the frozen agent's copy still runs")
        overlap_ms = max(0.0, old_dead_at - new_alive_at) * 1000
        print(f"\nfrozen agent: old copy stopped {1000 * (old_dead_at - frozen_at):.0f} ms after "
              f"SIGSTOP, replacement alive {1000 * (new_alive_at - frozen_at):.0f} ms after; "
              f"both ran for {overlap_ms:.0f} ms (node timeout {NODE_TIMEOUT_MS} ms)")
        self.assertLessEqual(overlap_ms, NODE_TIMEOUT_MS)
        self.assertEqual(self.server.nodes()["node-b"]["Status"], "NotReady")
        self.assertNotEqual(new_id, old_id)

        agent_b.proc.send_signal(signal.SIGCONT)
        poll(lambda: self.server.nodes()["node-b"]["Status"] == "Ready", timeout_s=30,
             what="node-b Ready again")
        # Back, the agent learns its copy is no longer desired; it must not start it again.
        poll(lambda: not os.path.exists(os.path.join(agent_b.data_dir, "workloads")) or
             old_id not in self.copies_recorded("node-b"), timeout_s=30,
             what="the stale copy's pid file removed")
        self.assertNotIn(old_id, self.copies("node-b"))
        poll(lambda: self.serving() == 2, timeout_s=60, what="two copies serving")
        running = [w for v in self.server.nodes().values() for w in v["Workloads"]
                   if w["state"] == "running"]
        self.assertEqual(len(running), 2, running)
        with open(os.path.join(agent_b.data_dir, "agent.log")) as f:
            self.assertIn("the fence stopped 1 workload(s) of node node-b", f.read())

    def claim(self, node):
        status, fleet = self.server.signed("GET", "/v1/fleet")
        self.assertEqual(status, 200, fleet)
        (view,) = [n for n in fleet["nodes"] if n["name"] == node]
        return view["claim"]

    def whole(self, node):
        return all("Partitions" in g and not g["Partitions"]
                   for g in self.server.nodes()[node]["Gpus"])

    def test_b_a_frozen_node_does_not_hold_up_a_delete_and_is_reset_when_back(self):
        self.sm.delete_inference_component(InferenceComponentName="ic")
        poll(lambda: not [w for v in self.server.nodes().values() for w in v["Workloads"]
                          if w["state"] == "running"], timeout_s=60, what="no copy running")
        self.assertFalse(self.whole("node-b"), "node-b is carved before the delete")
        agent_b = self.agents["node-b"]
        agent_b.proc.send_signal(signal.SIGSTOP)
        poll(lambda: self.server.nodes()["node-b"]["Status"] == "NotReady", timeout_s=30,
             what="node-b NotReady")

        self.sm.delete_endpoint(EndpointName="ep")
        poll(lambda: self.sm.list_endpoints()["Endpoints"] == [], timeout_s=30,
             what="ep deleted while node-b is frozen")
        poll(lambda: self.whole("node-a"), timeout_s=30, what="node-a whole")
        self.assertIsNone(self.claim("node-a"))
        self.assertEqual(self.claim("node-b")["kind"], "reset")

        # The pending reset is durable: a server killed now still holds node-b after restart.
        self.server.kill9()
        self.server.start()
        self.sm = self.server.client()
        self.assertEqual(self.claim("node-b")["kind"], "reset")
        self.assertEqual(self.sm.list_endpoints()["Endpoints"], [])

        agent_b.proc.send_signal(signal.SIGCONT)
        poll(lambda: self.server.nodes()["node-b"]["Status"] == "Ready" and
             self.whole("node-b") and self.claim("node-b") is None, timeout_s=60,
             what="node-b back, every GPU whole and the node free")

    def copies_recorded(self, node):
        root = os.path.join(self.agents[node].data_dir, "workloads")
        ids = set()
        for d in os.listdir(root) if os.path.isdir(root) else []:
            try:
                with open(os.path.join(root, d, "id")) as f:
                    ids.add(f.read().strip())
            except OSError:
                pass
        return ids


if __name__ == "__main__":
    unittest.main()
