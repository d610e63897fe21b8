"""Logs belong to their owner (issue 35): the real `carve server` with its embedded agent, two
accounts (A, the operator's default profile, and B), driven as a hostile tenant would.

  - A creates queue `q`, runs a job that prints a secret, deletes the queue; B creates its own
    queue `q` (same name, same job ids) and runs a job: every log route B can read shows only B's
    output. A creating `q` once more (its own name and job ids again) starts with empty logs too.
  - A component whose copy cannot start (its model is unknown, so the copy prints the model name
    and exits) fails with its log's last lines in FailureReason; deleted and created again under
    the same name with another marker, it fails quoting only the new marker, and the old copy's
    log is gone from the node."""

import os
import unittest
import uuid

from carve_harness import (SEED_LAYOUT, CarveServer, component_spec, poll,
                           seed_variant)

QUEUE = {"name": "q", "allocation": {"instance_type": "ml.p5.48xlarge", "count": 1}}


class LogOwnershipTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A is the server's first key, the operator; B an ordinary tenant.
        cls.server = CarveServer(carve_ms=10).start_with_second_account("b", "222222222222")

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def call(self, profile, method, path, body=None, expect=200):
        status, out = self.server.signed(method, path, body, profile=profile)
        self.assertEqual(status, expect, f"{profile}: {method} {path}: {out}")
        return out

    def run_job(self, profile, text):
        """Creates queue q as `profile`, runs one job printing `text`; returns the job id."""
        poll(lambda: self.server.signed("POST", "/v1/queues", QUEUE, profile=profile)[0] == 201,
             timeout_s=30, what=f"{profile} created queue q (its node released)")
        job = self.call(profile, "POST", "/v1/queues/q/jobs",
                        {"command": f"echo {text}; echo {text}-on-stderr >&2"}, expect=201)
        done = poll(lambda: (lambda j: j if j["state"] in ("Succeeded", "Failed") else None)(
            self.call(profile, "GET", f"/v1/queues/q/jobs/{job['id']}")),
            timeout_s=60, interval_s=0.1, what=f"{profile}'s job finished")
        self.assertEqual(done["state"], "Succeeded", done)
        return job["id"]

    def everything_readable(self, profile):
        """Every queue, job and log route `profile` can read, as one string."""
        seen = [str(self.call(profile, "GET", "/v1/queues"))]
        for q in self.call(profile, "GET", "/v1/queues")["queues"]:
            name = q["name"]
            seen.append(str(self.call(profile, "GET", f"/v1/queues/{name}")))
            for job in self.call(profile, "GET", f"/v1/queues/{name}/jobs")["jobs"]:
                seen.append(str(self.call(profile, "GET", f"/v1/queues/{name}/jobs/{job['id']}")))
                seen.append(str(self.call(
                    profile, "GET", f"/v1/queues/{name}/jobs/{job['id']}/logs?lines=1000")))
        return "\n".join(seen)

    def log_files_holding(self, marker):
        """Files under the agents' log directories (<data>/logs, <data>/nodes/*/logs) that hold
        `marker`."""
        roots = [os.path.join(self.server.data_dir, "logs")]
        nodes = os.path.join(self.server.data_dir, "nodes")
        if os.path.isdir(nodes):
            roots += [os.path.join(nodes, n, "logs") for n in os.listdir(nodes)]
        hits = []
        for root in roots:
            for d, _, files in os.walk(root):
                for f in files:
                    try:
                        with open(os.path.join(d, f), errors="replace") as fh:
                            if marker in fh.read():
                                hits.append(os.path.join(d, f))
                    except OSError:
                        pass
        return hits

    def test_a_queue_name_reused_by_another_account_shows_only_its_owners_output(self):
        secret = f"secret-of-a-{uuid.uuid4().hex[:12]}"
        a_job = self.run_job("default", secret)
        logs = self.call("default", "GET", f"/v1/queues/q/jobs/{a_job}/logs")
        self.assertIn(secret, logs["tasks"][0].get("stdout", ""), logs)  # Not vacuous.
        self.assertTrue(self.log_files_holding(secret))
        self.call("default", "DELETE", "/v1/queues/q")
        # The deleted queue's task logs go with it from the node, not only from the routes.
        poll(lambda: not self.log_files_holding(secret), timeout_s=30,
             what="the deleted queue's task logs removed from the node")

        b_text = f"output-of-b-{uuid.uuid4().hex[:12]}"
        b_job = self.run_job("b", b_text)
        self.assertEqual(b_job, a_job)  # Same queue name, same job id: only the owner differs.
        logs = self.call("b", "GET", f"/v1/queues/q/jobs/{b_job}/logs?lines=1000")
        self.assertIn(b_text, logs["tasks"][0].get("stdout", ""), logs)
        self.assertIn(b_text + "-on-stderr", logs["tasks"][0].get("stderr", ""), logs)
        readable = self.everything_readable("b")
        self.assertNotIn(secret, readable)
        self.assertNotIn("secret-of-a", readable)
        self.call("b", "DELETE", "/v1/queues/q")

        # The same account's own name again: its job ids (and workload ids) come back, its old
        # output does not.
        again = f"second-run-of-a-{uuid.uuid4().hex[:12]}"
        a_job2 = self.run_job("default", again)
        logs = self.call("default", "GET", f"/v1/queues/q/jobs/{a_job2}/logs?lines=1000")
        self.assertIn(again, logs["tasks"][0].get("stdout", ""), logs)
        self.assertNotIn(secret, str(logs))
        self.call("default", "DELETE", "/v1/queues/q")

    def test_a_component_name_reused_after_deletion_quotes_only_its_own_log(self):
        sm = self.server.client()
        sm.create_endpoint_config(EndpointConfigName="ep",
                                  ProductionVariants=[seed_variant(SEED_LAYOUT)])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        sm.get_waiter("endpoint_in_service").wait(
            EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})

        def failing_component(marker):
            # An unknown model: the copy prints "model '<marker>' is not in the catalog" and
            # exits, so the component fails with that line as FailureReason.
            sm.create_model(ModelName=f"m-{marker}", PrimaryContainer={
                "Image": "carve/testmodel", "Environment": {"CARVE_MODEL": marker}})
            sm.create_inference_component(
                InferenceComponentName="ic-reused", EndpointName="ep", VariantName="AllTraffic",
                Specification=component_spec(f"m-{marker}", "mig-1g.5gb"),
                RuntimeConfig={"CopyCount": 1})
            d = poll(lambda: (x := sm.describe_inference_component(
                InferenceComponentName="ic-reused"))["InferenceComponentStatus"] == "Failed" and x,
                timeout_s=90, interval_s=0.2, what=f"ic-reused ({marker}) Failed")
            return d["FailureReason"]

        first = f"first-{uuid.uuid4().hex[:10]}"
        reason = failing_component(first)
        self.assertIn(first, reason)  # Not vacuous: the log tail reaches FailureReason.
        sm.delete_inference_component(InferenceComponentName="ic-reused")
        poll(lambda: "ic-reused" not in [c["InferenceComponentName"] for c in
                                          sm.list_inference_components()["InferenceComponents"]],
             timeout_s=60, interval_s=0.2, what="ic-reused deleted")
        # The failed copy's log went with it: no file on the node still holds its lines.
        poll(lambda: not self.log_files_holding(first), timeout_s=30,
             interval_s=0.2, what="the first copy's log removed")

        second = f"second-{uuid.uuid4().hex[:10]}"
        reason = failing_component(second)
        self.assertIn(second, reason)
        self.assertNotIn(first, reason)
        self.assertEqual(self.log_files_holding(first), [])
        sm.delete_inference_component(InferenceComponentName="ic-reused")


if __name__ == "__main__":
    unittest.main()
