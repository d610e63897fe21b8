"""Fault injection on the default all-in-one `carve server`, whose node agents run inside the
server process: the server is killed with SIGKILL, and its copies and mGPU tasks (separate
processes, in their own sessions) outlive it. The restarted server's agents must adopt each of
them through its pid file, never start one a second time, and a clean stop (SIGTERM) must stop
every one of them, adopted or not.

One server with a simulated ml.p4d.24xlarge for an endpoint and an ml.g5.xlarge for an mGPU
queue. Every copy and task carries this run's token in its environment, so the test counts the
real processes in /proc, whatever the server reports:
  - kill -9 in steady state: after the restart exactly one process per copy, the same pids,
    and the task's process is the same one;
  - kill -9 right after a CopyCount change: after the restart exactly the desired count of
    copies, one process each, none twice;
  - SIGTERM: no copy or task process is left.
The steps share the server and run in order (test_1 .. test_4). SeparateAgentKillTest does the
same for a `carve agent` process killed with SIGKILL and started again on its data dir."""

import os
import re
import signal
import time
import unittest
import uuid

from carve_harness import (CarveAgent, CarveServer, SEED_LAYOUT, free_port, live_processes,
                           pid_alive, poll, proc_stat, seed_variant, workload_records)

FLEET = """
fleet:
  carve_time_ms: 20
  nodes:
    - instance_type: ml.p4d.24xlarge
      count: 1
    - instance_type: ml.g5.xlarge
      count: 1
runtimes:
  default_runtime: carve/testmodel
"""
# One simulated node whose GPUs take 3 s each to carve.
ONE_P4D_SLOW_CARVE = """
fleet:
  carve_time_ms: 3000
  nodes:
    - instance_type: ml.p4d.24xlarge
      count: 1
runtimes:
  default_runtime: carve/testmodel
"""
PARAMS = "emr.serverless.mgpu.core=60;emr.serverless.mgpu.memory=1000;"


def tree_roots(pids):
    """The pids whose parent is not among `pids`, sorted: one per workload. A sandboxed workload is
    bwrap (the pid the agent reports), bwrap's init in the workload's pid namespace and the
    program, all carrying the workload's environment (docs/security.md, "Sandbox")."""
    found = set(pids)
    return sorted(p for p in found if (proc_stat(p) or [None, "0"])[1] not in
                  {str(q) for q in found})


class EmbeddedKillTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.token = "FAULT_TEST_RUN=" + uuid.uuid4().hex
        cls.server = CarveServer(port=free_port(), config=FLEET)
        # Registered first: whatever fails below, every process this suite started is stopped.
        cls.addClassCleanup(cls.server.cleanup)
        cls.server.start()
        poll(lambda: len(cls.server.nodes()) == 2 and
             all(n["Status"] == "Ready" for n in cls.server.nodes().values()),
             timeout_s=60, what="both embedded nodes Ready")
        cls.sm = cls.server.client()
        cls.sm.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
        cls.sm.create_endpoint_config(EndpointConfigName="ep",
                                      ProductionVariants=[seed_variant(SEED_LAYOUT)])
        cls.sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        cls.sm.get_waiter("endpoint_in_service").wait(
            EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})

    # -- what runs ---------------------------------------------------------------------------
    def processes(self, kind):
        """Pids of the live processes of this run: kind "copy" (carve testmodel) or "task"."""
        token = self.token.encode()
        marker = b"CARVE_INFERENCE_COMPONENT=" if kind == "copy" else b"CARVE_TASK_INDEX="
        return tree_roots(live_processes(
            "environ", lambda env: token in env.split(b"\0") and marker in env))

    def reported(self, what):
        """{workload id: pid} of the workloads the agents report running whose id holds
        `what`."""
        return {w["id"]: w["pid"] for n in self.server.nodes().values()
                for w in n["Workloads"] if what in w["id"] and w["state"] == "running"}

    def recorded_pids(self):
        return sorted(pid for pid, _ in workload_records(self.server.data_dir))

    def describe(self):
        return self.sm.describe_inference_component(InferenceComponentName="ic")

    def await_copies(self, count, timeout_s=90):
        """Waits until the component is InService with `count` copies, each reported running
        by its agent; returns the reported pids, sorted."""
        def settled():
            d = self.describe()
            pids = self.reported("/ic/")
            return (d["InferenceComponentStatus"] == "InService" and
                    d["RuntimeConfig"]["CurrentCopyCount"] == count and
                    len(pids) == count and sorted(pids.values()))
        return poll(settled, timeout_s=timeout_s, interval_s=0.2, what=f"{count} copies running")

    def assert_one_process_per_copy(self, count):
        pids = self.await_copies(count)
        self.assertEqual(len(set(pids)), count, pids)
        self.assertEqual(self.processes("copy"), pids, "a copy runs twice or not at all")
        return pids

    def restart_after_kill9(self):
        self.server.kill9()
        self.server.start()

    # -- steps -------------------------------------------------------------------------------
    def test_1_copies_and_a_task_run(self):
        name, _, value = self.token.partition("=")
        self.sm.create_inference_component(
            InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
            Specification={
                "ModelName": "m",
                "Container": {"Image": "carve/testmodel", "Environment": {name: value}},
                "ComputeResourceRequirements": {
                    "AcceleratorPartitionType": "mig-1g.5gb",
                    "NumberOfAcceleratorDevicesRequired": 1, "NumberOfCpuCoresRequired": 1,
                    "MinMemoryRequiredInMb": 1024}},
            RuntimeConfig={"CopyCount": 3})
        status, q = self.server.signed("POST", "/v1/queues", {
            "name": "q", "mgpu": True, "allocation": {"instance_type": "ml.g5.xlarge", "count": 1}})
        self.assertEqual(status, 201, q)
        status, job = self.server.signed("POST", "/v1/queues/q/jobs", {
            "command": ["sleep", "600"], "environment": {name: value}, "parameters": PARAMS})
        self.assertEqual(status, 201, job)
        type(self).copies = self.assert_one_process_per_copy(3)
        type(self).task = poll(lambda: len(self.processes("task")) == 1 and
                               self.processes("task"), timeout_s=60, what="the task running")

    def test_2_a_kill9_in_steady_state_adopts_every_copy_and_the_task(self):
        self.restart_after_kill9()
        self.assertEqual(self.assert_one_process_per_copy(3), self.copies,
                         "the restarted agents did not adopt the running copies")
        poll(lambda: len(self.reported("/q/")) == 1, timeout_s=60, what="the task reported")
        self.assertEqual(sorted(self.reported("/q/").values()), self.task)
        self.assertEqual(self.processes("task"), self.task, "the task runs twice")
        self.assertEqual(self.recorded_pids(), sorted(self.copies + self.task))

    def test_3_a_kill9_during_a_copy_count_change_converges_without_duplicates(self):
        self.sm.update_inference_component_runtime_config(
            InferenceComponentName="ic", DesiredRuntimeConfig={"CopyCount": 5})
        self.restart_after_kill9()
        pids = self.assert_one_process_per_copy(5)
        self.assertTrue(set(self.copies) <= set(pids), (self.copies, pids))
        self.sm.update_inference_component_runtime_config(
            InferenceComponentName="ic", DesiredRuntimeConfig={"CopyCount": 2})
        poll(lambda: len(self.reported("/ic/")) < 5, timeout_s=60, what="the scale-in begun")
        self.restart_after_kill9()
        pids = self.assert_one_process_per_copy(2)
        poll(lambda: self.processes("copy") == pids, timeout_s=30,
             what="the copies scaled in stopped")
        self.assertEqual(self.processes("task"), self.task, "the task runs twice")

    def test_4_sigterm_leaves_no_copy_or_task_running(self):
        self.restart_after_kill9()  # Once more, so that the stop meets adopted processes only.
        self.assert_one_process_per_copy(2)
        self.assertEqual(self.server.stop(signal.SIGTERM), 0)
        self.assertEqual(self.processes("copy"), [])
        self.assertEqual(self.processes("task"), [])


class SeparateAgentKillTest(unittest.TestCase):
    """A `carve agent` killed with SIGKILL and started again adopts its copies on partitions."""

    def setUp(self):
        self.token = "FAULT_TEST_RUN=" + uuid.uuid4().hex
        self.server = CarveServer(port=free_port(), extra_args=["--no-local-agent"])
        self.addCleanup(self.server.cleanup)
        self.server.start()
        self.agent = CarveAgent(self.server, "node-a", extra_args=["--sim-carve-ms", "20"])
        self.addCleanup(self.agent.cleanup)  # Runs first: the agent stops before the server.
        self.agent.start()
        poll(lambda: self.server.nodes().get("node-a", {}).get("Status") == "Ready",
             timeout_s=60, what="the agent registered")

    def test_a_restarted_agent_adopts_its_copies(self):
        sm = self.server.client()
        sm.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
        sm.create_endpoint_config(EndpointConfigName="ep",
                                  ProductionVariants=[seed_variant(SEED_LAYOUT)])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        sm.get_waiter("endpoint_in_service").wait(
            EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        name, _, value = self.token.partition("=")
        sm.create_inference_component(
            InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
            Specification={
                "ModelName": "m",
                "Container": {"Image": "carve/testmodel", "Environment": {name: value}},
                "ComputeResourceRequirements": {
                    "AcceleratorPartitionType": "mig-1g.5gb",
                    "NumberOfAcceleratorDevicesRequired": 1, "NumberOfCpuCoresRequired": 1,
                    "MinMemoryRequiredInMb": 1024}},
            RuntimeConfig={"CopyCount": 2})
        token = self.token.encode()

        def running():
            pids = sorted(w["pid"] for n in self.server.nodes().values()
                          for w in n["Workloads"] if "/ic/" in w["id"] and w["state"] == "running")
            return len(pids) == 2 and pids

        def processes():
            return tree_roots(live_processes("environ", lambda env: token in env.split(b"\0")))
        before = poll(running, timeout_s=90, interval_s=0.2, what="2 copies running")
        self.assertEqual(processes(), before)
        self.agent.kill9()
        log = os.path.join(self.agent.data_dir, "agent.log")
        seen = os.path.getsize(log)
        self.agent.start()

        def resumed():
            """Lines of the restarted agent that adopted or started a copy of ic."""
            with open(log) as f:
                f.seek(seen)
                return [l for l in f if re.search(r"(adopted|started) ic/\d", l)]
        poll(lambda: len(resumed()) >= 2, timeout_s=60, interval_s=0.2,
             what="the restarted agent resuming both copies")
        poll(running, timeout_s=30, interval_s=0.2, what="the copies reported again")
        self.assertEqual(running(), before, "the restarted agent did not adopt its copies")
        self.assertEqual(processes(), before, "a copy runs twice")
        self.agent.stop()


class PromptStopTest(unittest.TestCase):
    """SIGTERM while an embedded agent carves a simulated node: the server does not finish the
    carve first (8 GPUs at 3 s each here), it stops at once and leaves no process."""

    def test_sigterm_during_a_simulated_carve_stops_the_server_at_once(self):
        server = CarveServer(config=ONE_P4D_SLOW_CARVE)
        self.addCleanup(server.cleanup)
        server.start()
        sm = server.client()
        sm.create_model(ModelName="m", PrimaryContainer={"Image": "img"})
        sm.create_endpoint_config(EndpointConfigName="c",
                                  ProductionVariants=[seed_variant(SEED_LAYOUT)])
        sm.create_endpoint(EndpointName="e", EndpointConfigName="c")
        # The node's desired state names the layout: its agent is carving GPU after GPU.
        poll(lambda: any(n["DesiredVersion"] > n["AppliedVersion"]
                         for n in server.nodes().values()), what="a carve under way")
        self.assertEqual(sm.describe_endpoint(EndpointName="e")["EndpointStatus"], "Creating")
        pid = server.proc.pid
        started = time.monotonic()
        self.assertEqual(server.stop(signal.SIGTERM), 0)
        took = time.monotonic() - started
        print(f"SIGTERM during a carve: the server exited after {took:.2f} s")
        # 24 s of carving were left; the bound leaves room for a loaded machine.
        self.assertLess(took, 6.0)
        self.assertFalse(pid_alive(pid))
        self.assertEqual(live_processes("cmdline", lambda b: server.data_dir.encode() in b), [])


if __name__ == "__main__":
    unittest.main()
