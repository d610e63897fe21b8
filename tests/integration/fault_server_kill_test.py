"""Fault injection: `carve server` is killed with SIGKILL in every phase of an endpoint's life and
in the middle of a queue pass.

One server (no embedded agent) and two `carve agent` processes with simulated GPUs (each GPU's
carve takes 150 ms, so carving is a phase one can be inside of). The agents, and the processes
they run, live through every kill, as on a real fleet. To kill in a given phase, the test stops
the server (SIGSTOP) right after the request that enters it, reads the record the server has
committed from its database, and sends SIGKILL only when the record is in that phase (or tries
again). After each restart it waits until the control plane settles and checks that what the
records say is what the agents run:
  - every endpoint the records hold is InService, and each of its nodes reports every GPU
    carved with the endpoint's layout; a deleted endpoint's nodes report no partitions;
  - each inference component's current and desired copy counts agree with the copies that run,
    one process per copy id, every pid alive, no copy id on two nodes, and nothing running
    that no record asks for;
  - each queue task that the records say runs is one live process on its node, and no task runs
    twice.
The steps share one fleet and run in order (test_1 .. test_4)."""

import json
import os
import signal
import sqlite3
import unittest

from carve_harness import (CarveAgent, CarveServer, component_spec, free_port, pid_alive,
                           poll, seed_variant)

NODE_TIMEOUT_MS = 4000
CARVE_MS = 150
LAYOUT = ["mig-3g.20gb", "mig-2g.10gb", "mig-1g.5gb"]
PROFILES = sorted(p[len("mig-"):] for p in LAYOUT)
ATTEMPTS = 10


class ServerKillTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer(port=free_port(), extra_args=[
            "--no-local-agent", "--node-timeout-ms", str(NODE_TIMEOUT_MS),
            "--heartbeat-ms", "300"]).start()
        cls.agents = {}
        for node, itype in (("node-a", "ml.p4d.24xlarge"), ("node-b", "ml.p4d.24xlarge"),
                            ("node-q", "ml.g5.xlarge")):
            cls.agents[node] = CarveAgent(cls.server, node, instance_type=itype, extra_args=[
                "--sim-carve-ms", str(CARVE_MS)]).start()
        poll(lambda: all(cls.server.nodes().get(n, {}).get("Status") == "Ready"
                         for n in cls.agents), timeout_s=60, what="three agents registered")
        cls.sm = cls.server.client()
        cls.sm.create_model(ModelName="m", PrimaryContainer={
            "Image": "carve/testmodel", "Environment": {"CARVE_TESTMODEL_SPEED": "50"}})
        cls.sm.create_endpoint_config(EndpointConfigName="ep",
                                      ProductionVariants=[seed_variant(LAYOUT, count=2)])

    @classmethod
    def tearDownClass(cls):
        for a in cls.agents.values():
            a.cleanup()
        cls.server.cleanup()

    # -- killing in a phase --------------------------------------------------------------------
    def record(self, kind, name):
        """The committed body of a record, read from the server's database (None if absent)."""
        db = sqlite3.connect(os.path.join(self.server.data_dir, "carve.db"), timeout=10)
        try:
            row = db.execute("SELECT body FROM records WHERE kind = ? AND name = ?",
                             (kind, name)).fetchone()
            return json.loads(row[0]) if row else None
        finally:
            db.close()

    def kill_when(self, action, in_phase, what, undo=None, attempts=ATTEMPTS):
        """Runs action(), freezes the server, and kills it if in_phase() holds; else lets it go
        on, runs undo() and tries again. Restarts the server afterwards."""
        for _ in range(attempts):
            action()
            self.server.proc.send_signal(signal.SIGSTOP)
            if in_phase():
                self.server.proc.send_signal(signal.SIGKILL)
                self.server.proc.wait(timeout=30)
                self.server.stop()
                self.server.start()
                self.sm = self.server.client()
                return
            self.server.proc.send_signal(signal.SIGCONT)
            if undo:
                undo()
        self.fail(f"never caught the server {what} in {attempts} attempts")

    # -- what runs, and what the records say ---------------------------------------------------
    def account(self):
        return self.sm.list_models()["Models"][0]["ModelArn"].split(":")[4]

    def reports(self):
        """{node: node view} once every node is Ready and reporting (after a restart)."""
        return poll(lambda: (lambda n: all(v["Status"] == "Ready" and v["Connected"]
                                           for v in n.values()) and n)(self.server.nodes()),
                    timeout_s=60, what="every node Ready and reporting")

    def check_copies(self, components):
        """True once each component in {name: copies} runs exactly that many copies, as the
        records and the agents both say, and no other copy runs."""
        account = self.account()
        running = {}
        for node, view in self.server.nodes().items():
            for w in view["Workloads"]:
                # Copies are <account>/<component>/<copy id>; queue tasks have four parts.
                if (w["state"] == "running" and w["id"].startswith(account + "/") and
                        w["id"].count("/") == 2):
                    if w["id"] in running or not pid_alive(w["pid"]):
                        return False
                    running[w["id"]] = node
        per_component = {}
        for wid in running:
            per_component.setdefault(wid.split("/")[1], 0)
            per_component[wid.split("/")[1]] += 1
        if per_component != {c: n for c, n in components.items() if n}:
            return False
        for name, n in components.items():
            d = self.sm.describe_inference_component(InferenceComponentName=name)
            rc = d["RuntimeConfig"]
            if (d["InferenceComponentStatus"] != "InService" or rc["CurrentCopyCount"] != n or
                    rc["DesiredCopyCount"] != n):
                return False
        return True

    def check_endpoint(self, name):
        """True once the endpoint is InService and each of its nodes reports every GPU carved
        with its layout."""
        d = self.sm.describe_endpoint(EndpointName=name)
        if d["EndpointStatus"] != "InService":
            return False
        body = self.record("Endpoint", name)
        nodes = [n for v in body["Variants"] for n in v.get("Nodes", [])]
        views = self.server.nodes()
        if len(nodes) != 2:
            return False
        for n in nodes:
            for g in views[n]["Gpus"]:
                # No "Partitions" yet: the node registered again but has sent no status since.
                if sorted(p["Profile"] for p in g.get("Partitions", [])) != PROFILES:
                    return False
        return True

    def uncarved(self, nodes):
        views = self.server.nodes()
        return all("Partitions" in g and not g["Partitions"]
                   for n in nodes for g in views[n]["Gpus"])

    def machine_processes(self):
        """Pids that the agents' pid files name and that are alive: what really runs."""
        from carve_harness import workload_pids
        pids = set()
        for a in self.agents.values():
            pids.update(p for p in workload_pids(a.data_dir) if pid_alive(p))
        return pids

    def reported_pids(self):
        return {w["pid"] for v in self.server.nodes().values() for w in v["Workloads"]
                if w["state"] == "running"}

    # -- the phases ----------------------------------------------------------------------------
    def test_1_killed_while_creating_the_endpoint_is_carved_after_restart(self):
        self.kill_when(
            lambda: self.sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep"),
            lambda: (self.record("Endpoint", "ep") or {}).get("EndpointStatus") == "Creating",
            "while the endpoint is Creating")
        self.reports()
        poll(lambda: self.check_endpoint("ep"), timeout_s=90, what="ep InService and carved")
        self.sm.create_inference_component(
            InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
            Specification=component_spec("m", "mig-1g.5gb", strategy="SPREAD"),
            RuntimeConfig={"CopyCount": 2})
        poll(lambda: self.check_copies({"ic": 2}), timeout_s=90, what="2 copies of ic")

    def test_2_killed_while_updating_copies_end_as_the_records_say(self):
        self.kill_when(
            lambda: self.sm.update_inference_component_runtime_config(
                InferenceComponentName="ic", DesiredRuntimeConfig={"CopyCount": 4}),
            lambda: (self.record("InferenceComponent", "ic") or {}).get(
                "InferenceComponentStatus") == "Updating",
            "while the component is Updating")
        self.reports()
        poll(lambda: self.check_copies({"ic": 4}), timeout_s=90, what="4 copies of ic")

        self.kill_when(
            lambda: self.sm.update_endpoint(EndpointName="ep", EndpointConfigName="ep"),
            lambda: (self.record("Endpoint", "ep") or {}).get("EndpointStatus") == "Updating",
            # An update to the same config is Updating for one pass only: more tries (one run
            # in seven missed it in 10 under ctest -j2).
            "while the endpoint is Updating", attempts=40)
        self.reports()
        poll(lambda: self.check_endpoint("ep") and self.check_copies({"ic": 4}), timeout_s=90,
             what="ep InService with 4 copies of ic")
        self.assertEqual(self.machine_processes(), self.reported_pids(),
                         "every process on the machine is one the records account for")

    def test_3_killed_while_deleting_nothing_of_the_endpoint_is_left(self):
        self.sm.delete_inference_component(InferenceComponentName="ic")
        poll(lambda: self.check_copies({}), timeout_s=60, what="no copy of ic")
        nodes = [n for v in self.record("Endpoint", "ep")["Variants"] for n in v["Nodes"]]
        self.kill_when(
            lambda: self.sm.delete_endpoint(EndpointName="ep"),
            lambda: (self.record("Endpoint", "ep") or {}).get("EndpointStatus") == "Deleting",
            "while the endpoint is Deleting")
        self.reports()
        poll(lambda: self.record("Endpoint", "ep") is None and self.uncarved(nodes),
             timeout_s=90, what="ep gone and its GPUs uncarved")
        self.assertEqual(self.sm.list_endpoints()["Endpoints"], [])
        self.assertEqual(self.machine_processes(), set(), "no copy left running")

    def test_4_killed_in_a_queue_pass_every_task_runs_once(self):
        status, _ = self.server.signed("POST", "/v1/queues", {
            "name": "q", "mgpu": True,
            "allocation": {"instance_type": "ml.g5.xlarge", "count": 1}})
        self.assertEqual(status, 201)
        jobs = []

        def submit_batch():
            for _ in range(4):
                status, job = self.server.signed("POST", "/v1/queues/q/jobs", {
                    "command": "sleep 600",
                    "parameters": "emr.serverless.mgpu.core=20;emr.serverless.mgpu.memory=500;"})
                self.assertEqual(status, 201, job)
                jobs.append(job["id"])

        def mid_pass():
            """Some task placed (or running) and some still waiting for its pass."""
            states = [t["state"] for j in jobs
                      for t in (self.record("Job", f"q/{j}") or {}).get("tasks", [])]
            return "Pending" in states and any(s in ("Placed", "Running") for s in states)
        def cancel_batch():
            for j in jobs:
                status, out = self.server.signed("POST", f"/v1/queues/q/jobs/{j}/cancel")
                self.assertEqual(status, 200, out)
            jobs.clear()
        self.kill_when(submit_batch, mid_pass, "in the middle of a queue pass", undo=cancel_batch)
        self.reports()

        seen = {}

        def every_task_runs_once():
            running = {}
            for node, view in self.server.nodes().items():
                for w in view["Workloads"]:
                    if w["state"] == "running" and w["id"].startswith(f"{self.account()}/q/"):
                        running.setdefault(w["id"], []).append((node, w["pid"]))
            tasks = []
            for j in jobs:
                status, job = self.server.signed("GET", f"/v1/queues/q/jobs/{j}")
                if status != 200:
                    return False
                tasks.extend(job["tasks"])
            seen.update(running=running, tasks=[(t["state"], t["node"], t["workload_id"])
                                                for t in tasks])
            if len(tasks) != len(jobs) or any(t["state"] != "Running" for t in tasks):
                return False
            for t in tasks:
                where = running.get(t["workload_id"], [])
                if len(where) != 1 or where[0][0] != t["node"] or not pid_alive(where[0][1]):
                    return False
            return len(running) == len(tasks)
        try:
            poll(every_task_runs_once, timeout_s=90, what="every task running exactly once")
        except AssertionError as e:
            raise AssertionError(f"{e}: {seen}") from None
        self.assertEqual(self.machine_processes(), self.reported_pids(),
                         "every process on the machine is one the records account for")


if __name__ == "__main__":
    unittest.main()
