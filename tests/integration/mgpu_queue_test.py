"""mGPU queues end to end: the real `carve server` with its embedded agent on a fleet holding one
simulated 8-GPU ml.g5.48xlarge node. Jobs run as real processes through the agent; the suite
checks, through the signed /v1/queues API, that they report success and failure, that every seed
share rule is rejected with its message, that the queue's GPU view matches the placements, that a
queue with running jobs cannot be deleted, and that a server restart keeps queues, jobs and the
running task processes.

The steps share one server and run in order (test_1 .. test_8)."""

import unittest

from carve_harness import ONE_G5_FLEET, CarveServer, pid_alive, poll

FLEET = ONE_G5_FLEET

SEED = ("-- the seed's CustomJob parameters\n"
        "emr.serverless.mgpu.core=30;\n"
        "emr.serverless.mgpu.memory=1000;\n"
        "serverless.custom.job.task.gpus=1;\n")

# Each seed rule, the parameters that break it, and words its message must carry.
RULES = [
    ("core above 100 must be a multiple of 100", "emr.serverless.mgpu.core=150;",
     ["emr.serverless.mgpu.core=150", "multiples of 100"]),
    ("core is at least 5", "emr.serverless.mgpu.core=4;",
     ["emr.serverless.mgpu.core=4: core must be at least 5"]),
    ("memory is at least 256 MiB", "emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=255;",
     ["emr.serverless.mgpu.memory=255: memory must be at least 256 MiB"]),
    ("memory cannot be set at core 100 or above",
     "emr.serverless.mgpu.core=200;emr.serverless.mgpu.memory=1000;",
     ["emr.serverless.mgpu.memory=1000: memory cannot be set when core is 100 or above"]),
    ("ray worker core at least 5", "serverless.ray.worker.mgpu.core=2;",
     ["serverless.ray.worker.mgpu.core=2: core must be at least 5"]),
]


class MgpuQueueTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # --keep-workloads: the embedded agent leaves task processes running over the restart
        # in test_6 (by default an all-in-one server stops what it started when it stops).
        cls.server = CarveServer(extra_args=["--keep-workloads"])
        with open(cls.server.config, "w") as f:
            f.write(FLEET)
        cls.server.start()
        poll(lambda: any(n["Status"] == "Ready" for n in cls.server.nodes().values()),
             timeout_s=60, what="the embedded agent's node Ready")
        cls.node = next(iter(cls.server.nodes()))

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    # -- signed JSON calls -------------------------------------------------------------------
    def call(self, method, path, body=None):
        return self.server.signed(method, path, body)

    def submit(self, body, queue="q"):
        status, job = self.call("POST", f"/v1/queues/{queue}/jobs", body)
        self.assertEqual(status, 201, job)
        return job

    def job(self, job_id, queue="q"):
        status, job = self.call("GET", f"/v1/queues/{queue}/jobs/{job_id}")
        self.assertEqual(status, 200, job)
        return job

    def wait_state(self, job_id, states, timeout_s=60):
        return poll(lambda: (lambda j: j if j["state"] in states else None)(self.job(job_id)),
                    timeout_s=timeout_s, interval_s=0.1, what=f"{job_id} in {states}")

    def node_workloads(self):
        return {w["id"]: w for w in self.server.nodes()[self.node]["Workloads"]}

    # -- the steps ---------------------------------------------------------------------------
    def test_1_creates_an_mgpu_queue_on_the_8_gpu_node(self):
        status, q = self.call("POST", "/v1/queues", {
            "name": "q", "mgpu": True, "strategy": "BINPACK",
            "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1}})
        self.assertEqual(status, 201, q)
        self.assertEqual(q["nodes"], [self.node])
        status, body = self.call("PUT", "/v1/queues/q", {"mgpu": False})
        self.assertEqual(status, 400, body)
        self.assertIn("new queue", body["error"])
        status, body = self.call("POST", "/v1/queues", {
            "name": "q2", "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1}})
        self.assertEqual(status, 409, body)  # The only node belongs to q.

    def test_2_rejects_every_seed_rule_with_its_message(self):
        for rule, params, words in RULES:
            with self.subTest(rule=rule):
                job = self.submit({"command": "true", "parameters": params})
                self.assertEqual(job["state"], "Failed", job)
                described = self.job(job["id"])
                for w in words:
                    self.assertIn(w, described["reason"])
        status, body = self.call("POST", "/v1/queues/q/jobs", {"command": "true",
                                                               "task_count": 0})
        self.assertEqual(status, 400)
        self.assertIn("task_count=0", body["error"])

    def test_3_runs_tasks_as_processes_and_collects_exit_codes(self):
        ok = self.submit({"command": "echo task=$CARVE_TASK_INDEX core=$CARVE_MGPU_CORE_PERCENT",
                          "task_count": 3, "parameters": SEED})
        bad = self.submit({"command": "echo failing >&2; exit 3", "parameters": SEED})
        done = self.wait_state(ok["id"], ["Succeeded", "Failed"])
        self.assertEqual(done["state"], "Succeeded", done)
        self.assertEqual([t["exit_codes"] for t in done["tasks"]], [[0], [0], [0]])
        failed = self.wait_state(bad["id"], ["Succeeded", "Failed"])
        self.assertEqual(failed["state"], "Failed", failed)
        self.assertIn("exit codes [3]", failed["reason"])
        status, logs = self.call("GET", f"/v1/queues/q/jobs/{ok['id']}/logs")
        self.assertEqual(status, 200, logs)
        self.assertIn("task=1 core=30", logs["tasks"][1].get("stdout", ""), logs)

    def test_3b_jobs_list_in_pages_in_submission_order(self):
        status, whole = self.call("GET", "/v1/queues/q/jobs")
        self.assertEqual(status, 200, whole)
        self.assertNotIn("next_token", whole)
        ids, token, pages = [], None, 0
        while True:
            path = "/v1/queues/q/jobs?max_results=2" + (f"&next_token={token}" if token else "")
            status, page = self.call("GET", path)
            self.assertEqual(status, 200, page)
            self.assertLessEqual(len(page["jobs"]), 2)
            ids += [j["id"] for j in page["jobs"]]
            pages += 1
            token = page.get("next_token")
            if not token:
                break
        self.assertEqual(ids, [j["id"] for j in whole["jobs"]])
        self.assertGreater(pages, 1)
        for bad, words in (("max_results=0", "max_results=0: must be a whole number from 1 to "
                                             "1000"),
                           ("next_token=abc", "next_token=abc: not a token this server gave")):
            status, body = self.call("GET", f"/v1/queues/q/jobs?{bad}")
            self.assertEqual(status, 400, body)
            self.assertIn(words, body["error"])

    def test_4_gpu_view_matches_the_placements(self):
        job = self.submit({"name": "twenty", "command": "sleep 600", "task_count": 20,
                           "parameters": SEED})
        running = poll(lambda: (lambda j: j if all(t["state"] == "Running" for t in j["tasks"])
                                else None)(self.job(job["id"])),
                       timeout_s=90, interval_s=0.2, what="20 tasks running")
        per_card = {}
        for t in running["tasks"]:
            per_card.setdefault(t["gpus"][0], []).append(t["index"])
        self.assertEqual(sorted(len(v) for v in per_card.values()), [2, 3, 3, 3, 3, 3, 3])
        status, view = self.call("GET", "/v1/queues/q/gpu")
        self.assertEqual(status, 200, view)
        self.assertEqual(view["totals"]["core_allocated_percent"], 600)
        self.assertEqual(view["totals"]["memory_allocated_mib"], 20000)
        self.assertEqual(view["totals"]["workers"], 20)
        for card in view["cards"]:
            tasks = sorted(w["task"] for w in card["workers"] if w["job"] == job["id"])
            self.assertEqual(tasks, sorted(per_card.get(card["gpu"], [])))
            self.assertEqual(card["allocated"]["core_percent"], 30 * len(tasks))
            for w in card["workers"]:
                self.assertEqual(w["allocated"]["core_percent"], 30)
                self.assertIn("achieved_core_percent", w["compute_share"])
        type(self).long_job = job["id"]

    def test_5_refuses_to_delete_a_queue_with_running_jobs(self):
        status, body = self.call("DELETE", "/v1/queues/q")
        self.assertEqual(status, 409, body)
        self.assertIn(self.long_job, body["error"])

    def test_6_a_restart_keeps_queues_jobs_and_running_tasks(self):
        before = self.job(self.long_job)
        ids = [t["workload_id"] for t in before["tasks"]]
        pids = {i: self.node_workloads()[i]["pid"] for i in ids}
        self.server.stop()
        self.server.start()
        poll(lambda: any(n["Status"] == "Ready" for n in self.server.nodes().values()),
             timeout_s=60, what="node Ready after restart")
        status, q = self.call("GET", "/v1/queues/q")
        self.assertEqual(status, 200, q)
        after = self.wait_state(self.long_job, ["Running"])
        self.assertEqual([t["workload_id"] for t in after["tasks"]], ids)
        live = poll(lambda: (lambda w: w if all(i in w and w[i]["state"] == "running"
                                                for i in ids) else None)(self.node_workloads()),
                    timeout_s=60, what="the same workloads running after the restart")
        for i in ids:
            self.assertEqual(live[i]["pid"], pids[i], i)
            self.assertTrue(pid_alive(pids[i]))

    def test_7_cancel_stops_the_processes_and_then_the_queue_can_go(self):
        pids = [w["pid"] for w in self.node_workloads().values()]
        status, job = self.call("POST", f"/v1/queues/q/jobs/{self.long_job}/cancel")
        self.assertEqual(status, 200, job)
        self.assertEqual(job["state"], "Cancelled")
        poll(lambda: not any(pid_alive(p) for p in pids), timeout_s=60,
             what="cancelled task processes gone")
        status, body = self.call("DELETE", "/v1/queues/q")
        self.assertEqual(status, 200, body)
        status, body = self.call("GET", "/v1/queues/q")
        self.assertEqual(status, 404, body)

    def test_8_the_node_is_free_again_for_a_new_queue(self):
        status, q = self.call("POST", "/v1/queues", {
            "name": "q3", "mgpu": False, "allocation": {"nodes": [self.node]}})
        self.assertEqual(status, 201, q)
        job = self.submit({"command": "true", "parameters": "emr.serverless.mgpu.core=30;"},
                          queue="q3")
        self.assertEqual(job["state"], "Failed")
        self.assertIn("whole cards only", job["reason"])


if __name__ == "__main__":
    unittest.main()
