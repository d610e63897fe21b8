"""carve queue / carve job against a stand-in API server: the requests the CLI sends, the tables it
prints, and its exit codes. The real server is exercised by tests/integration/mgpu_queue_test.py."""
import json
import os
import subprocess
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CARVE = os.environ.get("CARVE_BIN", "carve")


class StandIn(BaseHTTPRequestHandler):
    """Answers from `routes` ((method, path) -> (status, body)) and records every request."""
    routes = {}
    seen = []

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        StandIn.seen.append((self.command, self.path, json.loads(body) if body else None))
        status, reply = StandIn.routes.get((self.command, self.path), (404, {"error": "no route"}))
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, *args):
        pass


QUEUE = {"name": "q1", "mgpu": True, "strategy": "BINPACK", "enforcement": "interposer",
         "gang": False, "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1},
         "nodes": ["big"], "jobs": {"Running": 1}}


class QueueCliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.url = "http://127.0.0.1:%d" % cls.server.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        StandIn.routes = {}
        StandIn.seen = []

    def carve(self, *args, env_url=True):
        env = dict(os.environ)
        env.pop("AWS_SHARED_CREDENTIALS_FILE", None)
        if env_url:
            env["CARVE_ENDPOINT_URL"] = self.url
        else:
            env.pop("CARVE_ENDPOINT_URL", None)
        return subprocess.run([CARVE, *args], capture_output=True, text=True, env=env, timeout=60)

    def test_queue_create_sends_the_allocation_and_the_mgpu_switch(self):
        StandIn.routes[("POST", "/v1/queues")] = (201, QUEUE)
        r = self.carve("queue", "create", "q1", "--mgpu", "--instance-type", "ml.g5.48xlarge",
                       "--strategy", "SPREAD")
        self.assertEqual(r.returncode, 0, r.stderr)
        method, path, body = StandIn.seen[0]
        self.assertEqual((method, path), ("POST", "/v1/queues"))
        self.assertEqual(body["allocation"], {"instance_type": "ml.g5.48xlarge", "count": 1})
        self.assertTrue(body["mgpu"])
        self.assertEqual(body["strategy"], "SPREAD")
        self.assertIn("enabled (fixed at creation)", r.stdout)

    def test_a_server_rejection_is_printed_and_exits_one(self):
        StandIn.routes[("PUT", "/v1/queues/q1")] = (400, {"error": "unused"})
        StandIn.routes[("DELETE", "/v1/queues/q1")] = (
            409, {"error": "queue 'q1' still has 1 unfinished job: job-0001 (Running)"})
        r = self.carve("queue", "delete", "q1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("job-0001 (Running)", r.stderr)

    def test_a_missing_endpoint_is_an_input_error(self):
        r = self.carve("queue", "list", env_url=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("CARVE_ENDPOINT_URL", r.stderr)

    def test_job_submit_sends_the_seed_parameters_and_reports_a_failed_job(self):
        StandIn.routes[("POST", "/v1/queues/q1/jobs")] = (201, {
            "id": "job-0002", "state": "Failed",
            "reason": "emr.serverless.mgpu.core=150: above 100 only whole multiples of 100 are "
                      "allowed (200 = two full cards)", "tasks": []})
        r = self.carve("job", "submit", "-q", "q1", "--command", "python t.py", "--tasks", "20",
                       "--parameters", "emr.serverless.mgpu.core=150;")
        self.assertEqual(r.returncode, 1)
        self.assertIn("above 100 only whole multiples of 100", r.stderr)
        _, _, body = StandIn.seen[0]
        self.assertEqual(body["command"], "python t.py")
        self.assertEqual(body["task_count"], 20)
        self.assertEqual(body["parameters"], "emr.serverless.mgpu.core=150;")

    def test_job_submit_reads_ray_worker_groups(self):
        StandIn.routes[("POST", "/v1/queues/q1/jobs")] = (201, {"id": "job-0003",
                                                               "state": "Pending", "tasks": []})
        r = self.carve("job", "submit", "-q", "q1", "--type", "RayCluster",
                       "--worker-group", "small:2:20:2048", "--worker-group", "big:1:60")
        self.assertEqual(r.returncode, 0, r.stderr)
        _, _, body = StandIn.seen[0]
        self.assertEqual(body["worker_groups"], [
            {"name": "small", "replicas": 2, "core": 20, "memory_mib": 2048},
            {"name": "big", "replicas": 1, "core": 60}])
        seen = len(StandIn.seen)
        r = self.carve("job", "submit", "-q", "q1", "--type", "RayCluster", "--worker-group", "x")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--worker-group x: expected NAME:REPLICAS[:CORE[:MEMORY_MIB]]", r.stderr)
        self.assertEqual(len(StandIn.seen), seen, "nothing is sent for bad input")

    def test_queue_gpu_prints_allocated_next_to_measured(self):
        StandIn.routes[("GET", "/v1/queues/q1/gpu")] = (200, {
            "queue": "q1", "mgpu": True, "enforcement": "interposer",
            "totals": {"core_allocated_percent": 60, "core_capacity_percent": 100,
                       "memory_allocated_mib": 2000, "memory_capacity_mib": 24064, "workers": 2},
            "cards": [{"node": "big", "gpu": 0, "model": "a10g", "memory_capacity_mib": 24064,
                       "allocated": {"core_percent": 60, "memory_mib": 2000, "workers": 2},
                       "used": {"utilization_percent": "not measured", "memory_mib": 1500},
                       "workers": [
                           {"job": "job-0001", "task": 0, "role": "task", "state": "Running",
                            "allocated": {"core_percent": 30, "memory_mib": 1000},
                            "used": {"core_percent": 27.5, "memory_mib": 800}},
                           {"job": "job-0001", "task": 1, "role": "task", "state": "Running",
                            "allocated": {"core_percent": 30, "memory_mib": 1000},
                            "used": {"core_percent": "not measured",
                                     "memory_mib": "not measured"}}]}]})
        r = self.carve("queue", "gpu", "q1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("core 60% of 100%", r.stdout)
        self.assertIn("27.5", r.stdout)
        self.assertIn("not measured", r.stdout)
        r = self.carve("queue", "gpu", "q1", "--json")
        self.assertEqual(json.loads(r.stdout)["totals"]["workers"], 2)

    def test_job_describe_lists_tasks_with_exit_codes(self):
        StandIn.routes[("GET", "/v1/queues/q1/jobs/job-0001")] = (200, {
            "id": "job-0001", "queue": "q1", "type": "CustomJob", "state": "Failed",
            "reason": "task 1 (task) failed: exit codes [3]", "priority": 0, "gang": False,
            "max_retries": 0, "tasks": [
                {"index": 0, "role": "task", "state": "Cancelled", "node": "big", "gpus": [0],
                 "core_percent": 30, "memory_mib": 1000, "exit_codes": [], "restarts": 0},
                {"index": 1, "role": "task", "state": "Failed", "node": "big", "gpus": [0],
                 "core_percent": 30, "memory_mib": 1000, "exit_codes": [3], "restarts": 0}]})
        r = self.carve("job", "describe", "-q", "q1", "job-0001")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("task 1 (task) failed: exit codes [3]", r.stdout)
        self.assertRegex(r.stdout, r"1\s+task\s+Failed\s+big\s+0\s+30%\s+1000\s+3")


if __name__ == "__main__":
    unittest.main()
