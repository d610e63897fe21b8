"""The control plane on etcd (docs/ha.md): three real etcd members, two `carve server` replicas
with --store etcd://, and two `carve agent`s that know both replicas. The steps share one
cluster and run in order:

1. one replica leads; the other is a standby that answers reads from its watch cache (each
   sees every write acknowledged before it, wherever it was written) and forwards writes to the
   leader, for boto3 and the aws CLI alike; `carve cluster status` says who leads;
2. kill -9 of the leader: the standby leads within the target, every acknowledged write is
   there, the agents move over, the copies and an mGPU queue's task keep running (neither is
   started twice), the endpoint answers, the new leader runs the queue, and a client that only
   knows the standby carries on through the failover;
3. kill -9 of the etcd leader under a stream of writes: nothing acknowledged is lost and writes
   resume;
4. a leader paused (SIGSTOP) past its lease is replaced, and when it resumes it is refused and
   exits (status 75) without writing.

Figures go to stdout (docs/benchmarks.md quotes them)."""

import json
import os
import shutil
import signal
import subprocess
import threading
import time
import unittest

from carve_harness import (CarveAgent, CarveServer, EtcdCluster, carve_bin, free_port,
                           pid_alive, poll, spread_copies, workload_pids)

NODE_TIMEOUT_MS = 6000
LEADER_TTL_S = 2


class HaFailoverTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.etcd = EtcdCluster(3)
        cls.store = cls.etcd.url("/carve-ha")
        cls.replicas = [cls.make_replica() for _ in range(3)]
        a, b, _ = cls.replicas
        a.start()
        for r in cls.replicas[1:]:  # One key for every replica: copy the first one's file.
            shutil.copy2(a.credentials_file, r.credentials_file)
        b.launch().await_standby()
        urls = ",".join(f"http://127.0.0.1:{r.listen_port}" for r in cls.replicas)
        cls.agents = {n: CarveAgent(a, n, server_urls=urls).start() for n in ("node-a", "node-b")}
        # One more node for an mGPU queue, whose task must not run twice across the failover.
        cls.queue_agent = CarveAgent(a, "node-q", instance_type="ml.g5.xlarge",
                                     server_urls=urls).start()
        poll(lambda: all(a.nodes().get(n, {}).get("Status") == "Ready"
                         for n in (*cls.agents, "node-q")),
             timeout_s=60, what="the three agents registered")

    @classmethod
    def make_replica(cls):
        port = free_port()
        return CarveServer(port=port, extra_args=[
            "--no-local-agent", "--store", cls.store, "--leader-ttl-s", str(LEADER_TTL_S),
            "--node-timeout-ms", str(NODE_TIMEOUT_MS), "--heartbeat-ms", "300"])

    @classmethod
    def tearDownClass(cls):
        for agent in (*cls.agents.values(), cls.queue_agent):
            agent.cleanup()
        for r in cls.replicas:
            if r.proc is not None and r.proc.poll() is None:
                os.kill(r.proc.pid, signal.SIGCONT)
            r.cleanup()
        cls.etcd.cleanup()

    def cluster_status(self, replica):
        p = subprocess.run([carve_bin(), "cluster", "status", "--endpoint-url", replica.url,
                            "--credentials", replica.credentials_file, "--json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def call(self, replica, method, path, body=None, expect=200):
        status, out = replica.signed(method, path, body)
        self.assertEqual(status, expect, out)
        return out

    def running_task(self, replica, job_id):
        """The job's task once it runs, as the job and the node's agent report it."""
        task = self.call(replica, "GET", f"/v1/queues/q/jobs/{job_id}")["tasks"][0]
        if task["state"] != "Running":
            return None
        for w in replica.nodes()[task["node"]]["Workloads"]:
            if w["id"] == task["workload_id"] and w["state"] == "running":
                return task, w["pid"]
        return None

    def test_1_one_replica_leads_and_the_other_waits(self):
        a, b, _ = self.replicas
        view = self.cluster_status(a)
        self.assertEqual(view["leader"], f"http://127.0.0.1:{a.listen_port}")
        self.assertEqual(view["store"]["kind"], "etcd")
        self.assertEqual(len(view["store"]["members"]), 3)
        self.assertTrue(all(m["healthy"] for m in view["store"]["members"]), view)
        replicas = {r["url"]: r for r in view["replicas"]}
        self.assertEqual(set(replicas), {f"http://127.0.0.1:{r.listen_port}" for r in (a, b)})
        self.assertTrue(replicas[f"http://127.0.0.1:{a.listen_port}"]["leader"])
        self.assertFalse(replicas[f"http://127.0.0.1:{b.listen_port}"]["leader"])
        self.assertIsNone(b.proc.poll())
        self.assertEqual(self.cluster_status(b)["leader"], view["leader"])  # Asked the standby.

    def test_1b_the_standby_reads_from_its_cache_and_forwards_writes(self):
        a, b, _ = self.replicas
        on_a, on_b = a.client(), b.client()
        hits = b.metric("carve_store_cache_reads_total", served="cache")
        forwarded = b.metric("carve_replica_forwarded_requests_total", outcome="forwarded")
        for i in range(15):
            # Written on the leader, read on the standby at once; then written through the
            # standby (forwarded) and read back on it, and removed through it.
            on_a.create_model(ModelName=f"on-a-{i}", PrimaryContainer={"Image": "carve/testmodel"})
            self.assertEqual(on_b.describe_model(ModelName=f"on-a-{i}")["ModelName"], f"on-a-{i}")
            on_b.create_model(ModelName=f"on-b-{i}", PrimaryContainer={"Image": "carve/testmodel"})
            self.assertEqual(on_b.describe_model(ModelName=f"on-b-{i}")["ModelName"], f"on-b-{i}")
            on_b.delete_model(ModelName=f"on-b-{i}")
            with self.assertRaises(on_b.exceptions.ClientError) as gone:
                on_b.describe_model(ModelName=f"on-b-{i}")
            self.assertEqual(gone.exception.response["Error"]["Code"], "ValidationException")
        # DescribeEndpoint counts live instances, which only the leader knows: forwarded.
        with self.assertRaises(on_b.exceptions.ClientError) as missing:
            on_b.describe_endpoint(EndpointName="no-such-endpoint")
        self.assertIn("no-such-endpoint", str(missing.exception))
        # The aws CLI through the standby: a read it answers, and a write it forwards.
        listed = b.aws("list-models", "--name-contains", "on-a-")
        self.assertEqual(len(listed["Models"]), 15)
        b.aws("create-model", "--model-name", "by-cli",
              "--primary-container", "Image=carve/testmodel")
        self.assertEqual(on_a.describe_model(ModelName="by-cli")["ModelName"], "by-cli")
        # The reads were the standby's own, from its cache, and none had to go to etcd; the
        # writes (and DescribeEndpoint) went to the leader.
        self.assertGreaterEqual(
            b.metric("carve_store_cache_reads_total", served="cache") - hits, 46)
        self.assertEqual(b.metric("carve_store_cache_reads_total", served="etcd"), 0)
        self.assertEqual(
            b.metric("carve_replica_forwarded_requests_total", outcome="forwarded") - forwarded,
            32)

    def test_2_killing_the_leader_loses_nothing_and_stops_nothing(self):
        a, b, _ = self.replicas
        sm = a.client()
        spread_copies(sm, 2)
        poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")
             ["InferenceComponentStatus"] == "InService", timeout_s=60, what="ic InService")
        acked = []
        for i in range(20):
            sm.create_model(ModelName=f"acked-{i}", PrimaryContainer={"Image": "carve/testmodel"})
            acked.append(f"acked-{i}")
        pids = {n: sorted(workload_pids(agent.data_dir)) for n, agent in self.agents.items()}
        self.assertEqual([len(p) for p in pids.values()], [1, 1], pids)
        # An mGPU queue's long task, placed by this leader.
        self.call(a, "POST", "/v1/queues", {
            "name": "q", "mgpu": True,
            "allocation": {"instance_type": "ml.g5.xlarge", "count": 1}}, expect=201)
        job_id = self.call(a, "POST", "/v1/queues/q/jobs", {
            "command": "sleep 600",
            "parameters": "emr.serverless.mgpu.core=60;emr.serverless.mgpu.memory=1000;"},
            expect=201)["id"]
        task, task_pid = poll(lambda: self.running_task(a, job_id), timeout_s=60,
                              what="the task running")
        self.assertEqual(workload_pids(self.queue_agent.data_dir), [task_pid])

        # A client that knows only the standby writes all through the failover: its requests
        # wait while no replica leads, then go to the new leader, which is the standby itself.
        via_standby, unknown, failed, acked_at = [], [], [], []
        stop_writing = threading.Event()

        def write_through_standby():
            sm_b = b.boto_client("sagemaker", attempts=1)  # No retries: every answer counts.
            n = 0
            while not stop_writing.is_set():
                name = f"via-b-{n}"
                n += 1
                try:
                    sm_b.create_model(ModelName=name, PrimaryContainer={"Image": "carve/testmodel"})
                    via_standby.append(name)
                    acked_at.append(time.monotonic())
                except sm_b.exceptions.ClientError as e:
                    status = e.response["ResponseMetadata"]["HTTPStatusCode"]
                    (unknown if status == 502 else failed).append((name, status, str(e)))
        writer = threading.Thread(target=write_through_standby)
        writer.start()
        poll(lambda: len(via_standby) >= 5, timeout_s=30, what="writes through the standby")

        killed = time.monotonic()
        a.kill9()
        b.await_listening(timeout_s=30)
        took = time.monotonic() - killed
        poll(lambda: len(via_standby) >= 5 + 10, timeout_s=30, what="writes after the failover")
        stop_writing.set()
        writer.join(timeout=60)
        waits = [t - max(p, killed) for p, t in zip(acked_at, acked_at[1:]) if t > killed]
        print(f"\nthrough the standby during the failover: {len(via_standby)} acknowledged, "
              f"{len(unknown)} unknown (in flight to the killed leader), {len(failed)} refused; "
              f"longest wait for an acknowledgement {max(waits):.2f} s")
        self.assertEqual(failed, [])
        self.assertLessEqual(len(unknown), 2, unknown)  # Only what the leader held when killed.
        print(f"\nleader kill -9 -> standby serving: {took:.2f} s (lease TTL {LEADER_TTL_S} s)")
        # The target is 5 s; an instrumented build (make sanitize) recovers slower.
        self.assertLess(took, 15.0 if os.environ.get("CARVE_SANITIZE") else 5.0)

        sm = b.client()
        names = set()
        for page in sm.get_paginator("list_models").paginate():
            names.update(m["ModelName"] for m in page["Models"])
        self.assertTrue(set(acked) <= names, sorted(set(acked) - names))
        self.assertTrue(set(via_standby) <= names, sorted(set(via_standby) - names))
        poll(lambda: all(b.nodes().get(n, {}).get("Status") == "Ready" for n in self.agents),
             timeout_s=30, what="agents moved to the new leader")
        ic = poll(lambda: (lambda d: d["InferenceComponentStatus"] == "InService" and
                           d["RuntimeConfig"]["CurrentCopyCount"] == 2 and d)(
            sm.describe_inference_component(InferenceComponentName="ic")),
            timeout_s=30, what="ic InService under the new leader")
        self.assertEqual(ic["RuntimeConfig"]["DesiredCopyCount"], 2)
        # The same processes serve: nothing was started again.
        after = {n: sorted(workload_pids(agent.data_dir)) for n, agent in self.agents.items()}
        self.assertEqual(after, pids)
        # The queue's task runs on under the new leader, as the same process, and the new
        # leader runs the queue: a job submitted now runs to its end.
        poll(lambda: b.nodes().get("node-q", {}).get("Status") == "Ready", timeout_s=30,
             what="node-q's agent moved to the new leader")
        short = self.call(b, "POST", "/v1/queues/q/jobs", {
            "command": "true", "parameters": "emr.serverless.mgpu.core=30;"}, expect=201)["id"]
        poll(lambda: self.call(b, "GET", f"/v1/queues/q/jobs/{short}")["state"] == "Succeeded",
             timeout_s=60, what="a job submitted after the failover finished")
        still = self.running_task(b, job_id)
        self.assertIsNotNone(still, "the long task is no longer running")
        self.assertEqual((still[0]["node"], still[0]["workload_id"], still[1]),
                         (task["node"], task["workload_id"], task_pid))
        live = [p for p in workload_pids(self.queue_agent.data_dir) if pid_alive(p)]
        self.assertEqual(live, [task_pid], "the long task runs once, as the process it was")
        rt = b.boto_client("sagemaker-runtime", attempts=3)
        r = rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic",
                               Body=b'{"inputs": "after failover"}',
                               ContentType="application/json")
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 200)
        view = self.cluster_status(b)
        self.assertEqual(view["leader"], f"http://127.0.0.1:{b.listen_port}")
        self.assertEqual([r["url"] for r in view["replicas"]],
                         [f"http://127.0.0.1:{b.listen_port}"])  # a's lease is gone.

    def test_3_killing_the_etcd_leader_loses_no_acknowledged_write(self):
        _, b, _ = self.replicas
        sm = b.client()
        acked, gaps = [], []
        last = time.monotonic()
        killed_at = None
        deadline = time.monotonic() + 30
        i = 0
        while time.monotonic() < deadline and (killed_at is None or
                                               time.monotonic() - killed_at < 3):
            if i == 20:
                leader = self.etcd.leader()
                self.assertIsNotNone(leader)
                self.etcd.kill9(leader)
                killed_at = time.monotonic()
            try:
                sm.create_model(ModelName=f"stream-{i}",
                                PrimaryContainer={"Image": "carve/testmodel"})
                acked.append(f"stream-{i}")
                now = time.monotonic()
                if killed_at is not None:
                    gaps.append(now - max(last, killed_at))
                last = now
            except sm.exceptions.ClientError as e:
                self.assertIn(e.response["ResponseMetadata"]["HTTPStatusCode"], (500, 503), e)
            i += 1
        self.assertIsNotNone(killed_at)
        self.etcd.launch(leader)  # It rejoins from its data directory.
        self.etcd.await_healthy(leader)
        worst = max(gaps) if gaps else float("inf")
        print(f"\netcd leader kill -9: longest wait for an acknowledged write {worst:.2f} s")
        self.assertLess(worst, 10.0)
        names = set()
        for page in sm.get_paginator("list_models").paginate():
            names.update(m["ModelName"] for m in page["Models"])
        self.assertTrue(set(acked) <= names, sorted(set(acked) - names))

    def test_4_a_paused_leader_is_replaced_and_refused_when_it_wakes(self):
        _, b, c = self.replicas
        c.launch()  # The next standby.
        time.sleep(1.0)
        os.kill(b.proc.pid, signal.SIGSTOP)
        paused = time.monotonic()
        c.await_listening(timeout_s=30)
        print(f"\nleader SIGSTOP -> standby serving: {time.monotonic() - paused:.2f} s")
        sm = c.client()
        before = sm.describe_inference_component(InferenceComponentName="ic")
        os.kill(b.proc.pid, signal.SIGCONT)
        rc = b.proc.wait(timeout=20)
        self.assertEqual(rc, 75)  # It found its lease gone and stepped down.
        with open(b.log_path) as f:
            log = f.read()
        self.assertIn("lost its leadership", log)
        view = self.cluster_status(c)
        self.assertEqual(view["leader"], f"http://127.0.0.1:{c.listen_port}")
        # The agents come over (those that waited on the paused leader through the standby are
        # cut off when it takes over) and report the same copies running.
        poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")
             ["RuntimeConfig"]["CurrentCopyCount"] ==
             before["RuntimeConfig"]["CurrentCopyCount"], timeout_s=30,
             what="the copies counted under the new leader")


if __name__ == "__main__":
    unittest.main()
