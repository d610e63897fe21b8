"""Ray on mGPU queues end to end: the real `carve server` and its embedded agent on one simulated
8-GPU ml.g5.48xlarge node, with the server's `ray:` runtime pointing at the Ray stand-in
(fake_ray.py, which says what it models). Every Ray process is a real process the agent starts:

  1. a RayJob of 4 workers at the seed's 30 % / 4096 MiB, whose driver sees 4 workers of 1 GPU
     each with their shares, and whose exit code ends the job (0, and 3 in a second job);
  2. a RayCluster of two worker groups with different shares, seen by the head;
  3. a RayServe job whose application answers HTTP at its reported ingress, and which carve
     redeploys after the head is killed (the agent restarts it; carve restarts the cluster);
  4. cancel leaves no process of the job behind; `carve job describe` shows the head's address,
     the dashboard and the Serve status.

Bad `ray:` templates are refused at start (test_0). The steps share one server and run in order."""

import json
import os
import subprocess
import tempfile
import unittest
import urllib.request

from carve_harness import (ONE_G5_FLEET, CarveServer, carve_bin, free_port, live_processes, poll,
                           tenant_python)

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_ray.py")
PY = tenant_python()  # the tasks run it as a sandboxed uid

CONFIG = ONE_G5_FLEET + f"""
ray:
  head_command: [{PY}, {FAKE}, start, --head, "--port={{port}}",
                 "--dashboard-port={{port_dashboard}}", "--num-gpus={{num_gpus}}", --block]
  worker_command: [{PY}, {FAKE}, start, "--address={{head_address}}", "--num-gpus={{num_gpus}}",
                   --block]
  serve_command: [{PY}, {FAKE}, serve, deploy, "{{serve_config}}", "--address={{dashboard_url}}"]
  environment:
    CARVE_TEST_RAY_RUNTIME: stand-in
"""

# The queue's name is also what finds the job's processes (CARVE_QUEUE): one of its own, so that
# another suite's queue "q" running beside this one is never taken for it.
QUEUE = f"ray-{os.getpid()}"

SEED_RAY = ("serverless.ray.worker.mgpu.core=30;\n"
            "serverless.ray.worker.mgpu.memory=4096;\n")

SERVE_CONFIG = """
proxy_location: HeadOnly
applications:
  - name: echo
    route_prefix: /echo
    import_path: echo:app
"""


def job_processes(queue, job_id):
    """Pids of live processes whose environment names this job: every Ray process carve starts
    gets CARVE_QUEUE and CARVE_JOB_ID."""
    want = {f"CARVE_QUEUE={queue}".encode(), f"CARVE_JOB_ID={job_id}".encode()}
    return live_processes("environ", lambda environ: want <= set(environ.split(b"\0")))


def get_json(url, timeout_s=2):
    with urllib.request.urlopen(url, timeout=timeout_s) as r:
        return json.loads(r.read())


class RayQueueTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer()
        with open(cls.server.config, "w") as f:
            f.write(CONFIG)
        cls.server.start()
        poll(lambda: any(n["Status"] == "Ready" for n in cls.server.nodes().values()),
             timeout_s=60, what="the embedded agent's node Ready")
        cls.node = next(iter(cls.server.nodes()))
        status, q = cls.server.signed("POST", "/v1/queues", {
            "name": QUEUE, "mgpu": True, "strategy": "BINPACK",
            "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1}})
        assert status == 201, q

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def submit(self, body):
        status, job = self.server.signed("POST", f"/v1/queues/{QUEUE}/jobs", body)
        self.assertEqual(status, 201, job)
        return job

    def job(self, job_id):
        status, job = self.server.signed("GET", f"/v1/queues/{QUEUE}/jobs/{job_id}")
        self.assertEqual(status, 200, job)
        return job

    def wait(self, job_id, check, what, timeout_s=60):
        return poll(lambda: (lambda j: j if check(j) else None)(self.job(job_id)),
                    timeout_s=timeout_s, interval_s=0.1, what=f"{job_id}: {what}")

    def logs(self, job_id, role):
        status, logs = self.server.signed("GET", f"/v1/queues/{QUEUE}/jobs/{job_id}/logs")
        self.assertEqual(status, 200, logs)
        return "".join(t.get("stdout", "") for t in logs["tasks"] if t["role"] == role)

    def cancel_and_check_nothing_is_left(self, job_id):
        self.assertTrue(job_processes(QUEUE, job_id), "the job runs processes before the cancel")
        status, body = self.server.signed("POST", f"/v1/queues/{QUEUE}/jobs/{job_id}/cancel")
        self.assertEqual(status, 200, body)
        poll(lambda: not job_processes(QUEUE, job_id), timeout_s=30,
             what=f"every process of {job_id} gone after the cancel")

    def test_0_bad_ray_templates_are_refused_at_start(self):
        with tempfile.TemporaryDirectory() as d:
            config = os.path.join(d, "carve.yaml")
            with open(config, "w") as f:
                f.write("ray:\n  worker_command: [ray, start, --block]\n")
            r = subprocess.run([carve_bin(), "server", "--config", config, "--data-dir", d,
                                "--listen", f"127.0.0.1:{free_port()}"],
                               capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ray.worker_command: must use {head_address}", r.stderr + r.stdout)

    def test_1_a_ray_job_runs_its_driver_against_four_workers_at_the_seeds_share(self):
        entrypoint = f"{PY} {FAKE} driver --expect-workers=4 --expect-gpus-per-worker=1"
        job = self.submit({"type": "RayJob", "entrypoint": entrypoint, "workers": 4,
                           "parameters": SEED_RAY})
        done = self.wait(job["id"], lambda j: j["state"] in ("Succeeded", "Failed"),
                         "finished", timeout_s=90)
        self.assertEqual(done["state"], "Succeeded", done)
        driver = next(t for t in done["tasks"] if t["role"] == "driver")
        self.assertEqual(driver["exit_codes"], [0])
        self.assertTrue(done["head_address"].startswith("127.0.0.1:"), done)
        self.assertTrue(done["dashboard_url"].startswith("http://127.0.0.1:"), done)
        out = self.logs(job["id"], "driver")
        workers = [json.loads(line.split(" ", 1)[1]) for line in out.splitlines()
                   if line.startswith("worker: ")]
        self.assertEqual(len(workers), 4, out)
        for w in workers:
            self.assertEqual(w["num_gpus"], 1, w)
            self.assertEqual(w["env"]["CARVE_MGPU_CORE_PERCENT"], "30", w)
            self.assertEqual(w["env"]["CARVE_MGPU_MEMORY_MIB"], "4096", w)
            self.assertEqual(w["env"]["CARVE_TEST_RAY_RUNTIME"], "stand-in", w)
            self.assertTrue(w["env"]["CUDA_VISIBLE_DEVICES"], w)
            # The queue's enforcement (the interposer) holds the worker to its share.
            self.assertIn("libcarve-mgpu.so", w["env"].get("LD_PRELOAD", ""), w)
        self.assertIn('"GPU": 4.0', out)
        poll(lambda: not job_processes(QUEUE, job["id"]), timeout_s=30,
             what="the head and workers stopped once the driver ended the job")

        failing = self.submit({"type": "RayJob", "entrypoint": "exit 3", "workers": 1})
        failed = self.wait(failing["id"], lambda j: j["state"] in ("Succeeded", "Failed"),
                           "finished", timeout_s=60)
        self.assertEqual(failed["state"], "Failed", failed)
        self.assertIn("(driver) failed: exit codes [3]", failed["reason"])

    def test_2_a_ray_cluster_has_two_worker_groups_with_their_own_shares(self):
        job = self.submit({"type": "RayCluster", "worker_groups": [
            {"name": "small", "replicas": 2, "core": 20, "memory_mib": 1024},
            {"name": "large", "replicas": 1, "core": 50, "memory_mib": 2048}]})
        running = self.wait(job["id"], lambda j: j.get("dashboard_url"), "its dashboard")

        def three_workers():
            try:  # The head's process runs a moment before its dashboard listens.
                status = get_json(running["dashboard_url"] + "/api/cluster_status")
            except OSError:
                return None
            return status if len(status["workers"]) == 3 else None

        status = poll(three_workers, timeout_s=60, what="3 workers joined the head")
        shares = sorted((w["env"]["CARVE_MGPU_CORE_PERCENT"], w["env"]["CARVE_MGPU_MEMORY_MIB"])
                        for w in status["workers"])
        self.assertEqual(shares, [("20", "1024"), ("20", "1024"), ("50", "2048")], status)
        self.assertEqual(self.job(job["id"])["state"], "Running")
        self.cancel_and_check_nothing_is_left(job["id"])

    def test_3_a_ray_serve_application_answers_at_its_ingress_and_survives_a_head_kill(self):
        job = self.submit({"type": "RayServe", "serve_config": SERVE_CONFIG,
                           "worker_groups": [{"name": "gpu", "replicas": 1, "core": 30,
                                              "memory_mib": 4096}]})
        running = self.wait(job["id"], lambda j: j["serve"]["status"] == "RUNNING",
                            "Serve RUNNING", timeout_s=90)
        self.assertEqual(running["serve"]["applications"][0]["name"], "echo", running)
        ingress = running["serve"]["ingress"]
        self.assertTrue(ingress.startswith("http://127.0.0.1:"), running)
        echo = get_json(ingress + "/echo/hello")
        self.assertEqual(echo["application"], "echo")
        self.assertEqual(echo["path"], "/echo/hello")

        described = subprocess.run(
            [carve_bin(), "job", "describe", "-q", QUEUE, job["id"], "--endpoint-url",
             self.server.url, "--credentials", self.server.credentials_file],
            capture_output=True, text=True, timeout=30)
        self.assertEqual(described.returncode, 0, described.stderr)
        for words in ("Head address:", running["head_address"], "Dashboard:",
                      running["dashboard_url"], "Serve:", "RUNNING", ingress,
                      "echo at /echo: RUNNING"):
            self.assertIn(words, described.stdout)

        # Kill the head: the agent restarts it, carve restarts the cluster and deploys again.
        head = running["tasks"][0]
        workloads = {w["id"]: w for w in self.server.nodes()[self.node]["Workloads"]}
        head_pid = workloads[head["workload_id"]]["pid"]
        old = {t["index"]: t["workload_id"] for t in running["tasks"]}
        os.kill(head_pid, 9)
        again = self.wait(job["id"], lambda j: (j["serve"]["status"] == "RUNNING" and
                                                j["tasks"][0]["restarts"] >= 1 and
                                                j["tasks"][2]["state"] == "Succeeded" and
                                                j["tasks"][2]["workload_id"] != old[2]),
                          "Serve RUNNING again after the head restarted", timeout_s=120)
        self.assertEqual(again["state"], "Running", again)
        self.assertNotEqual(again["tasks"][1]["workload_id"], old[1], "a new worker")
        self.assertIn("its Ray head restarted", again["tasks"][1]["rescheduled"])
        self.assertEqual(get_json(again["serve"]["ingress"] + "/echo")["application"], "echo")

        self.cancel_and_check_nothing_is_left(job["id"])
        stopped = self.job(job["id"])
        self.assertEqual(stopped["state"], "Cancelled")
        self.assertEqual(stopped["serve"]["status"], "STOPPED")
        with self.assertRaises(OSError):
            get_json(again["serve"]["ingress"] + "/echo", timeout_s=1)


if __name__ == "__main__":
    unittest.main()
