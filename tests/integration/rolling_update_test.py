"""Rolling deployments of an inference component (UpdateInferenceComponent with a
DeploymentConfig) against the real `carve server`, whose embedded agent runs every copy as a real
`carve testmodel` process, driven by boto3:
  - an update under constant load through the router replaces every copy batch by batch, and not
    one invocation fails;
  - an update whose copies cannot start rolls back, with the reason;
  - a server killed with `kill -9` mid-deployment finishes it after its restart, with no mix of
    versions left behind.
Which specification each copy runs comes from GET /v1/inference-components/{name}/copies."""

import json
import threading
import time
import unittest

import botocore.exceptions

from carve_harness import SEED_LAYOUT, CarveServer, free_port, poll, seed_variant

COPIES = 3


def spec(version):
    """A component specification whose container says which version it is (VERSION). A copy
    of version "broken" names a model the testmodel does not know, so it exits at once."""
    env = {"VERSION": version, "CARVE_TESTMODEL_SPEED": "50"}
    if version == "broken":
        env["CARVE_MODEL"] = "no-such-model"
    return {"ModelName": "m",
            "Container": {"Image": "carve/testmodel", "Environment": env},
            "ComputeResourceRequirements": {
                "AcceleratorPartitionType": "mig-1g.5gb", "NumberOfAcceleratorDevicesRequired": 1,
                "NumberOfCpuCoresRequired": 1, "MinMemoryRequiredInMb": 1024}}


def policy(batch, wait_s):
    return {"RollingUpdatePolicy": {"MaximumBatchSize": {"Type": "COPY_COUNT", "Value": batch},
                                    "WaitIntervalInSeconds": wait_s}}


class RollingUpdateTest(unittest.TestCase):
    def setUp(self):
        self.server = CarveServer(port=free_port()).start()
        try:
            self.sm = self.server.client()
            self.rt = self.server.boto_client("sagemaker-runtime")
            self.sm.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
            self.sm.create_endpoint_config(EndpointConfigName="ep",
                                           ProductionVariants=[seed_variant(SEED_LAYOUT)])
            self.sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
            self.sm.get_waiter("endpoint_in_service").wait(
                EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})
            self.sm.create_inference_component(
                InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
                Specification=spec("1"), RuntimeConfig={"CopyCount": COPIES})
            self.wait_in_service()
        except Exception:
            self.server.cleanup()
            raise

    def tearDown(self):
        self.server.cleanup()

    def describe(self):
        return self.sm.describe_inference_component(InferenceComponentName="ic")

    def wait_in_service(self, timeout_s=90):
        return poll(lambda: (d := self.describe())["InferenceComponentStatus"] == "InService" and
                    d["RuntimeConfig"]["CurrentCopyCount"] == COPIES and d,
                    timeout_s=timeout_s, interval_s=0.2, what="ic InService")

    def copies(self):
        status, body = self.server.signed_get("/v1/inference-components/ic/copies")
        self.assertEqual(status, 200, body)
        return body

    def versions(self):
        """{specification version: copies running it} over the placed copies."""
        out = {}
        for c in self.copies()["copies"]:
            out[c["specification_version"]] = out.get(c["specification_version"], 0) + 1
        return out

    def update(self, version, deployment=None):
        kwargs = {"InferenceComponentName": "ic", "Specification": spec(version)}
        if deployment is not None:
            kwargs["DeploymentConfig"] = deployment
        self.sm.update_inference_component(**kwargs)

    def test_an_update_under_constant_load_replaces_every_copy_with_no_failed_invocation(self):
        stop = threading.Event()
        errors, answered = [], [0]

        def load():
            while not stop.is_set():
                try:
                    self.rt.invoke_endpoint(
                        EndpointName="ep", InferenceComponentName="ic",
                        ContentType="application/json",
                        Body=json.dumps({"inputs": "hi", "parameters": {"max_new_tokens": 2}}))
                    answered[0] += 1
                except botocore.exceptions.ClientError as e:
                    errors.append(e.response["Error"])
        threads = [threading.Thread(target=load) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.5)
            self.assertEqual(self.versions(), {1: COPIES})
            self.update("2", policy(1, 1))
            # (copies of version 2, copies of version 1), each time it changed
            seen = [(0, COPIES)]
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                v = self.versions()
                now = (v.get(2, 0), v.get(1, 0))
                if not seen or seen[-1] != now:
                    seen.append(now)
                d = self.describe()
                if d["InferenceComponentStatus"] == "InService" and now == (COPIES, 0):
                    break
                time.sleep(0.05)
            time.sleep(0.5)  # Load on the finished fleet too.
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(errors, [], f"failed invocations during the update; batches: {seen}")
        self.assertGreater(answered[0], 20)
        self.assertEqual(seen[-1], (COPIES, 0), seen)
        # Batch by batch: one new copy beside the old ones, then one old copy fewer.
        for new, old in seen:
            self.assertLessEqual(new + old, COPIES + 1, seen)
            self.assertGreaterEqual(new + old, COPIES, seen)
        news = [n for n, _ in seen]
        self.assertEqual(news, sorted(news), seen)
        self.assertEqual(sorted(set(news)), list(range(COPIES + 1)), seen)
        d = self.describe()
        self.assertEqual(d["Specification"]["Container"]["Environment"]["VERSION"], "2")
        self.assertEqual(d["LastDeploymentConfig"], policy(1, 1))
        self.assertNotIn("FailureReason", d)
        self.assertTrue(all(c["current"] for c in self.copies()["copies"]))

    def test_an_update_whose_copies_cannot_start_rolls_back_with_the_reason(self):
        self.update("broken", policy(1, 0))
        self.assertEqual(self.describe()["InferenceComponentStatus"], "Updating")
        d = poll(lambda: (x := self.describe())["InferenceComponentStatus"] == "InService" and
                 "FailureReason" in x and x, timeout_s=90, interval_s=0.2, what="rolled back")
        reason = d["FailureReason"]
        self.assertRegex(reason, r"^The update was rolled back: copy \d+ on \S+ could not start")
        self.assertIn("model 'no-such-model' is not in the catalog", reason)
        self.assertEqual(d["Specification"]["Container"]["Environment"]["VERSION"], "1")
        poll(lambda: self.versions() == {1: COPIES}, timeout_s=30, what="only version 1 copies")
        self.rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic",
                                ContentType="application/json",
                                Body=json.dumps({"inputs": "hi",
                                                 "parameters": {"max_new_tokens": 1}}))

    def test_a_server_killed_mid_deployment_finishes_it_after_its_restart(self):
        self.update("2", policy(1, 2))
        poll(lambda: self.versions().get(2, 0) >= 1 and
             any(c["state"] == "running" and c["current"] for c in self.copies()["copies"]),
             timeout_s=60, interval_s=0.05, what="the first new copy serving")
        self.server.kill9()
        self.server.start()
        d = self.wait_in_service(timeout_s=120)
        self.assertEqual(d["Specification"]["Container"]["Environment"]["VERSION"], "2")
        poll(lambda: self.versions() == {2: COPIES}, timeout_s=30, what="every copy on version 2")
        # No process of the old version outlives the deployment on the node.
        ids = {c["id"] for c in self.copies()["copies"]}

        def running():
            return {w["id"].split("/")[-1] for n in self.server.nodes().values()
                    for w in n["Workloads"] if "/ic/" in w["id"]}
        poll(lambda: running() == ids, timeout_s=30, what="the node runs exactly the new copies")


if __name__ == "__main__":
    unittest.main()
