"""One `carve server` (no embedded agent) and two `carve agent` processes with simulated GPUs on
this machine. An endpoint's copies run as real `carve testmodel` processes, one per node. The
suite then breaks things the way a fleet breaks: a copy killed by hand, the server restarted,
an agent killed with SIGKILL and brought back, and a scale-down; after each, it checks what the
user sees through the aws CLI / boto3 and what actually runs on the machine.

The steps share one fleet and run in order (test_1 .. test_5)."""

import os
import signal
import unittest
import urllib.request

from carve_harness import pid_alive, poll, spread_copies, two_node_fleet

NODE_TIMEOUT_MS = 3000


def ping(address):
    try:
        with urllib.request.urlopen(f"http://{address}/ping", timeout=5) as r:
            return r.status
    except OSError:
        return None


class AgentFailoverTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.agents = two_node_fleet(NODE_TIMEOUT_MS)
        cls.sm = cls.server.client()
        spread_copies(cls.sm, 2)
        cls.wait_copies(2)

    @classmethod
    def tearDownClass(cls):
        for a in cls.agents.values():
            a.cleanup()
        cls.server.cleanup()

    @classmethod
    def wait_copies(cls, n, timeout_s=60):
        def ready():
            d = cls.sm.describe_inference_component(InferenceComponentName="ic")
            return (d["InferenceComponentStatus"] == "InService" and
                    d["RuntimeConfig"]["CurrentCopyCount"] == n) and d
        return poll(ready, timeout_s=timeout_s, interval_s=0.2, what=f"{n} copies serving")

    def running(self):
        """{node: [workload]} for workloads whose agent reports them running."""
        out = {}
        for node, view in self.server.nodes().items():
            out[node] = [w for w in view["Workloads"] if w["state"] == "running"]
        return out

    def test_1_each_copy_is_a_process_answering_ping_on_its_own_partition(self):
        running = self.running()
        self.assertEqual(len(running["node-a"]), 1, running)  # SPREAD: one per node.
        self.assertEqual(len(running["node-b"]), 1, running)
        ports = set()
        for node, ws in running.items():
            for w in ws:
                self.assertTrue(pid_alive(w["pid"]), w)
                self.assertEqual(ping(w["address"]), 200, w)
                ports.add(w["port"])
                # Bound to its MIG partition: the process environment names the MIG device.
                with open(f"/proc/{w['pid']}/environ", "rb") as f:
                    env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
                self.assertTrue(env[b"CUDA_VISIBLE_DEVICES"].startswith(b"MIG-"), env)
        self.assertEqual(len(ports), 2)

    def test_2_a_copy_killed_by_hand_is_restarted(self):
        victim = self.running()["node-a"][0]
        os.kill(victim["pid"], signal.SIGKILL)

        def restarted():
            ws = self.running()["node-a"]
            return ws and ws[0]["pid"] != victim["pid"] and ws[0]["restarts"] >= 1 and ws[0]
        w = poll(restarted, timeout_s=30, interval_s=0.2, what="the copy restarted")
        self.assertEqual(w["id"], victim["id"])  # The same copy, a new process.
        self.assertEqual(ping(w["address"]), 200)
        self.wait_copies(2)

    def test_3_a_restarted_server_keeps_every_healthy_process(self):
        before = {w["id"]: w["pid"] for ws in self.running().values() for w in ws}
        self.assertEqual(len(before), 2)
        self.server.stop()
        self.server.start()
        try:
            poll(lambda: all(v["Status"] == "Ready" and v["Connected"] and v["Workloads"]
                             for v in self.server.nodes().values()),
                 what="agents reconnected and reporting")
        except AssertionError as e:
            summary = {n: (v["Status"], v["Connected"], v["Workloads"])
                       for n, v in self.server.nodes().items()}
            with open(os.path.join(self.server.data_dir, "server.log")) as f:
                log = f.read()[-3000:]
            raise AssertionError(f"{e}; nodes: {summary}; server log:\n{log}") from None
        self.wait_copies(2)
        after = {w["id"]: w["pid"] for ws in self.running().values() for w in ws}
        self.assertEqual(after, before)  # Same copies, same processes: nothing restarted.

    def test_4_a_killed_agent_loses_its_node_and_its_copy_is_rescheduled(self):
        stale = self.running()["node-b"][0]
        self.agents["node-b"].kill9()  # The agent dies; its copy's process lives on.
        self.assertTrue(pid_alive(stale["pid"]))

        def moved():
            nodes = self.server.nodes()
            return (nodes["node-b"]["Status"] == "NotReady" and
                    len([w for w in nodes["node-a"]["Workloads"] if w["state"] == "running"]) == 2)
        poll(moved, timeout_s=NODE_TIMEOUT_MS / 1000 + 30, interval_s=0.2,
             what="node-b NotReady and its copy running on node-a")
        self.wait_copies(2)
        ep = self.sm.describe_endpoint(EndpointName="ep")["ProductionVariants"][0]
        self.assertEqual(ep["CurrentInstanceCount"], 1)
        self.assertEqual(ep["DesiredInstanceCount"], 2)
        self.assertIn("1 of 2 instances NotReady: node-b", ep["VariantStatus"][0]["StatusMessage"])

        # The node returns: its agent finds the stale copy no longer desired and kills it.
        self.agents["node-b"].start()
        poll(lambda: self.server.nodes()["node-b"]["Status"] == "Ready", what="node-b back")
        poll(lambda: not pid_alive(stale["pid"]), timeout_s=30, what="the stale copy killed")
        ep = self.sm.describe_endpoint(EndpointName="ep")["ProductionVariants"][0]
        self.assertEqual(ep["CurrentInstanceCount"], 2)
        self.assertNotIn("VariantStatus", ep)
        copies = [w for ws in self.running().values() for w in ws]
        self.assertEqual(len(copies), 2)  # Never run twice.

    def test_5_scaling_down_stops_processes_and_leaves_none_behind(self):
        pids = [w["pid"] for ws in self.running().values() for w in ws]
        self.assertEqual(len(pids), 2)
        self.sm.update_inference_component_runtime_config(
            InferenceComponentName="ic", DesiredRuntimeConfig={"CopyCount": 1})
        self.wait_copies(1)
        poll(lambda: sum(pid_alive(p) for p in pids) == 1, timeout_s=30,
             what="one of the two processes stopped")
        self.sm.delete_inference_component(InferenceComponentName="ic")
        poll(lambda: not any(pid_alive(p) for p in pids), timeout_s=30,
             what="every copy process stopped")
        poll(lambda: all(not v["Workloads"] or all(w["state"] == "stopped" for w in v["Workloads"])
                         for v in self.server.nodes().values()),
             what="no workload reported")


if __name__ == "__main__":
    unittest.main()
