"""The SageMaker runtime API (InvokeEndpoint, InvokeEndpointWithResponseStream) against the real
`carve server`, whose embedded agent runs every copy as a real `carve testmodel` process, driven
by boto3's stock sagemaker-runtime client. Five components share one endpoint:
  ic        two healthy copies (balancing, streaming, a killed copy)
  ic-fail   one copy whose every invocation answers HTTP 500 (ModelError)
  ic-cut    one copy whose streams break off after 3 tokens (ModelStreamError)
  ic-die    two copies with the testmodel's POST /control: one is told to die (SIGKILL) when the
  ic-die-s  next request reaches it, so a copy dies with a request in flight (unary, streamed)"""

import json
import math
import os
import re
import signal
import threading
import unittest
import urllib.request

import boto3
import botocore.config
import botocore.exceptions

import wire_shapes
from carve_harness import (AWS_DATA_PATH, REGION, SEED_LAYOUT, CarveServer, component_spec,
                           pid_alive, poll, seed_variant)


PROMPT = "hello carve router"
# The simulator's filler text, one word per token (src/testmodel/protocol.cc).
WORDS = [" simulated", " token", " from", " carve", " testmodel", " paced", " by", " model"]


def body(tokens, stream=False):
    return json.dumps({"inputs": PROMPT, "parameters": {"max_new_tokens": tokens},
                       "stream": stream})


def answer(tokens):
    """What a copy answers InvokeEndpoint for body(tokens): the text and the exact usage."""
    prompt = math.ceil(len(PROMPT) / 4)
    return {"generated_text": "".join(WORDS[i % len(WORDS)] for i in range(tokens)),
            "usage": {"prompt_tokens": prompt, "completion_tokens": tokens,
                      "total_tokens": prompt + tokens}}


class RuntimeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer().start()
        try:
            cls._deploy()
        except Exception:
            cls.server.cleanup()
            raise

    @classmethod
    def _deploy(cls):
        cls.sm = cls.server.client()
        ak, sk = cls.server.profile_keys()
        os.environ["AWS_DATA_PATH"] = AWS_DATA_PATH
        cls.rt = wire_shapes.watch(boto3.session.Session().client(
            "sagemaker-runtime", endpoint_url=cls.server.url, region_name=REGION,
            aws_access_key_id=ak, aws_secret_access_key=sk,
            config=botocore.config.Config(retries={"max_attempts": 1}, max_pool_connections=16)))
        models = {"m": {"CARVE_TESTMODEL_SPEED": "4"},
                  "m-fail": {"CARVE_TESTMODEL_FAIL_INVOCATIONS": "1"},
                  "m-cut": {"CARVE_TESTMODEL_SPEED": "20", "CARVE_TESTMODEL_FAIL_AFTER_TOKENS": "3"},
                  "m-die": {"CARVE_TESTMODEL_SPEED": "4", "CARVE_TESTMODEL_CONTROL": "1"}}
        for name, env in models.items():
            cls.sm.create_model(ModelName=name, PrimaryContainer={
                "Image": "carve/testmodel", "Environment": env})
        cls.sm.create_endpoint_config(EndpointConfigName="ep",
                                      ProductionVariants=[seed_variant(SEED_LAYOUT)])
        cls.sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        cls.sm.get_waiter("endpoint_in_service").wait(
            EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        components = (("ic", "m", 2, "mig-1g.5gb"), ("ic-fail", "m-fail", 1, "mig-1g.5gb"),
                      ("ic-cut", "m-cut", 1, "mig-1g.5gb"), ("ic-die", "m-die", 2, "mig-2g.10gb"),
                      ("ic-die-s", "m-die", 2, "mig-2g.10gb"))
        for ic, model, copies, partition in components:
            cls.sm.create_inference_component(
                InferenceComponentName=ic, EndpointName="ep", VariantName="AllTraffic",
                Specification=component_spec(model, partition),
                RuntimeConfig={"CopyCount": copies})
        for ic, _, copies, _ in components:
            cls.wait_copies(ic, copies)

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    @classmethod
    def wait_copies(cls, ic, n, timeout_s=60):
        def ready():
            d = cls.sm.describe_inference_component(InferenceComponentName=ic)
            return (d["InferenceComponentStatus"] == "InService" and
                    d["RuntimeConfig"]["CurrentCopyCount"] == n) and d
        return poll(ready, timeout_s=timeout_s, interval_s=0.2, what=f"{ic}: {n} copies serving")

    def copies(self, ic):
        """Running workloads (copy processes) of component `ic`, from the agents' reports."""
        out = []
        for node in self.server.nodes().values():
            out += [w for w in node["Workloads"]
                    if w["state"] == "running" and w["id"].split("/")[1:2] == [ic]]
        return out

    def metrics(self):
        return self.server.metrics_text(timeout=10)

    def copy_in_flight(self, ic):
        """carve_runtime_copy_in_flight{account,component=ic} by copy, from GET /metrics."""
        pat = re.compile(r'^carve_runtime_copy_in_flight\{account="\d{12}",component="%s",'
                         r'copy="([^"]+)"\} (\S+)$' % re.escape(ic), re.M)
        return {copy: float(v) for copy, v in pat.findall(self.metrics())}

    def attempts(self, ic):
        """carve_runtime_copy_attempts_total{account,component=ic}: {(copy, outcome): count}."""
        pat = re.compile(r'^carve_runtime_copy_attempts_total\{account="\d{12}",component="%s",'
                         r'copy="([^"]+)",outcome="([^"]+)"\} (\S+)$' % re.escape(ic), re.M)
        return {(copy, outcome): float(v) for copy, outcome, v in pat.findall(self.metrics())}

    def retries(self, ic):
        pat = re.compile(r'^carve_runtime_retries_total\{account="\d{12}",endpoint="ep",'
                         r'component="%s"\} (\S+)$' % re.escape(ic), re.M)
        found = pat.findall(self.metrics())
        return float(found[0]) if found else 0.0

    def kill_a_copy_inside_a_request(self, ic, invoke):
        """Holds a long stream on one copy of `ic`, tells the other (idle) copy to die when the
        next request reaches it, and runs `invoke()`: least-outstanding-requests sends it to the
        idle copy, which dies under it. Returns (invoke's result, the dead copy, the other copy),
        after checking that the dead copy was tried once and the request moved on once."""
        held = self.rt.invoke_endpoint_with_response_stream(
            EndpointName="ep", InferenceComponentName=ic, ContentType="application/json",
            Body=body(4000, stream=True))
        try:
            next(iter(held["Body"]))  # It is being served.
            busy = [c for c, n in self.copy_in_flight(ic).items() if n > 0]
            self.assertEqual(len(busy), 1, self.copy_in_flight(ic))
            copies = {w["id"]: w for w in self.copies(ic)}
            self.assertEqual(len(copies), 2, copies)
            self.assertIn(busy[0], copies)
            victim = next(w for i, w in copies.items() if i != busy[0])
            req = urllib.request.Request(
                f"http://{victim['address']}/control", method="POST",
                data=json.dumps({"exit_on_invocation": 1}).encode(),
                headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                self.assertEqual(json.loads(r.read()), {"exit_on_invocation": 1})
            before, retries_before = self.attempts(ic), self.retries(ic)
            result = invoke()
            poll(lambda: not pid_alive(victim["pid"]), what="the armed copy died")
            after = self.attempts(ic)

            def delta(copy, outcome):
                return after.get((copy, outcome), 0) - before.get((copy, outcome), 0)
            self.assertEqual(delta(victim["id"], "unanswered"), 1,
                             f"the dying copy was not tried: {before} -> {after}")
            self.assertEqual(delta(busy[0], "answered"), 1, f"{before} -> {after}")
            self.assertEqual(self.retries(ic) - retries_before, 1)
        finally:
            held["Body"].close()
        self.wait_copies(ic, 2)  # The agent restarts the dead copy.
        return result, victim, busy[0]

    def assertRuntimeError(self, ctx, code, status):
        err = ctx.exception.response
        self.assertEqual(err["Error"]["Code"], code, err)
        self.assertEqual(err["ResponseMetadata"]["HTTPStatusCode"], status, err)

    def test_invoke_by_component(self):
        r = self.rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic",
                                    ContentType="application/json", Body=body(4))
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 200)
        self.assertEqual(r["InvokedProductionVariant"], "AllTraffic")
        self.assertEqual(r["ContentType"], "application/json")
        self.assertEqual(json.loads(r["Body"].read()), answer(4))

    def test_a_copy_dying_inside_a_request_is_retried_on_another_copy(self):
        def invoke():
            r = self.rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic-die",
                                        ContentType="application/json", Body=body(3))
            return r["ResponseMetadata"]["HTTPStatusCode"], json.loads(r["Body"].read())
        (status, got), _, _ = self.kill_a_copy_inside_a_request("ic-die", invoke)
        self.assertEqual(status, 200)
        self.assertEqual(got, answer(3))

    def test_a_copy_dying_before_a_streams_first_byte_is_retried_on_another_copy(self):
        def invoke():
            r = self.rt.invoke_endpoint_with_response_stream(
                EndpointName="ep", InferenceComponentName="ic-die-s",
                ContentType="application/json", Body=body(4, stream=True))
            return [e["PayloadPart"]["Bytes"] for e in r["Body"]]
        parts, _, _ = self.kill_a_copy_inside_a_request("ic-die-s", invoke)
        self.assertEqual(len(parts), 4, parts)
        self.assertIn(b'"generated_text":"%s"' % answer(4)["generated_text"].encode(), parts[-1])

    def test_a_component_whose_copies_cannot_start_fails_with_their_log(self):
        # The copy's process exits at once with an error on stderr (its model is unknown); the
        # agent restarts it with backoff, and after the third exit the new component fails.
        self.sm.create_model(ModelName="m-crash", PrimaryContainer={
            "Image": "carve/testmodel", "Environment": {"CARVE_MODEL": "no-such-model"}})
        self.sm.create_inference_component(
            InferenceComponentName="ic-crash", EndpointName="ep", VariantName="AllTraffic",
            Specification=component_spec("m-crash", "mig-1g.5gb"), RuntimeConfig={"CopyCount": 1})
        d = poll(lambda: (x := self.sm.describe_inference_component(
            InferenceComponentName="ic-crash"))["InferenceComponentStatus"] == "Failed" and x,
            timeout_s=60, interval_s=0.2, what="ic-crash Failed")
        reason = d["FailureReason"]
        self.assertRegex(reason, r"^copy 0 on \S+ could not start \(backoff: ")
        self.assertIn("Last lines of its log: ", reason)
        self.assertIn("model 'no-such-model' is not in the catalog", reason)
        self.assertLessEqual(len(reason), 1024)
        # It runs nothing once failed, and the other components keep serving.
        poll(lambda: not self.copies("ic-crash") and not [
            w for v in self.server.nodes().values() for w in v["Workloads"]
            if "/ic-crash/" in w["id"]], timeout_s=30, what="ic-crash's copy stopped")
        self.assertEqual(self.sm.describe_inference_component(
            InferenceComponentName="ic")["InferenceComponentStatus"], "InService")
        self.sm.delete_inference_component(InferenceComponentName="ic-crash")

    def test_missing_component_header_is_400(self):
        with self.assertRaises(botocore.exceptions.ClientError) as ctx:
            self.rt.invoke_endpoint(EndpointName="ep", ContentType="application/json",
                                    Body=body(1))
        self.assertRuntimeError(ctx, "ValidationError", 400)

    def test_unknown_component_is_validation_error(self):
        with self.assertRaises(self.rt.exceptions.ValidationError) as ctx:
            self.rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic-none",
                                    ContentType="application/json", Body=body(1))
        self.assertRuntimeError(ctx, "ValidationError", 400)
        self.assertIn("ic-none", ctx.exception.response["Error"]["Message"])

    def test_unknown_endpoint_is_validation_error(self):
        with self.assertRaises(self.rt.exceptions.ValidationError) as ctx:
            self.rt.invoke_endpoint(EndpointName="nope", InferenceComponentName="ic",
                                    ContentType="application/json", Body=body(1))
        self.assertIn("nope", ctx.exception.response["Error"]["Message"])

    def test_copy_returning_500_is_model_error_424(self):
        with self.assertRaises(self.rt.exceptions.ModelError) as ctx:
            self.rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic-fail",
                                    ContentType="application/json", Body=body(1))
        self.assertRuntimeError(ctx, "ModelError", 424)
        self.assertEqual(ctx.exception.response["OriginalStatusCode"], 500)
        self.assertIn("--fail-invocations", ctx.exception.response["OriginalMessage"])

    def test_streaming_parses_in_boto3(self):
        r = self.rt.invoke_endpoint_with_response_stream(
            EndpointName="ep", InferenceComponentName="ic", ContentType="application/json",
            Body=body(5, stream=True))
        self.assertEqual(r["InvokedProductionVariant"], "AllTraffic")
        parts = [e["PayloadPart"]["Bytes"] for e in r["Body"]]
        self.assertEqual(len(parts), 5, parts)  # One PayloadPart per SSE event.
        for p in parts:
            self.assertTrue(p.startswith(b"data: "), p)

    def test_streaming_mid_stream_error_is_model_stream_error(self):
        r = self.rt.invoke_endpoint_with_response_stream(
            EndpointName="ep", InferenceComponentName="ic-cut", ContentType="application/json",
            Body=body(10, stream=True))
        parts = []
        with self.assertRaises(botocore.exceptions.EventStreamError) as ctx:
            for e in r["Body"]:
                parts.append(e["PayloadPart"]["Bytes"])
        self.assertEqual(len(parts), 3, parts)
        self.assertEqual(ctx.exception.response["Error"]["Code"], "ModelStreamError")

    def test_least_outstanding_requests_spreads_concurrent_requests(self):
        # Four long streams held open at once: two land on each copy.
        streams = []
        try:
            for _ in range(4):
                r = self.rt.invoke_endpoint_with_response_stream(
                    EndpointName="ep", InferenceComponentName="ic",
                    ContentType="application/json", Body=body(4000, stream=True))
                next(iter(r["Body"]))  # It is being served.
                streams.append(r)
            in_flight = self.copy_in_flight("ic")
            busy = {c: n for c, n in in_flight.items() if n > 0}
            self.assertEqual(sorted(busy.values()), [2.0, 2.0], in_flight)
        finally:
            for r in streams:
                r["Body"].close()
        poll(lambda: all(n == 0 for n in self.copy_in_flight("ic").values()), timeout_s=30,
             what="streams released")

    def test_z_killed_copy_leaves_rotation_without_client_failures(self):
        copies = self.copies("ic")
        self.assertEqual(len(copies), 2, copies)
        victim = copies[0]
        os.kill(victim["pid"], signal.SIGKILL)
        poll(lambda: not pid_alive(victim["pid"]), what="the copy died")
        errors = []

        def invoke():
            try:
                self.rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic",
                                        ContentType="application/json", Body=body(2))
            except botocore.exceptions.ClientError as e:
                errors.append(e.response["Error"])
        for _ in range(8):
            invoke()
        threads = [threading.Thread(target=invoke) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.wait_copies("ic", 2)  # The agent restarts it; the endpoint heals.


if __name__ == "__main__":
    unittest.main()
