"""Two tenants whose endpoints and components have the same names keep their traffic apart: each
account creates endpoint `ep` with a component `ep`, invokes it a different number of times, and
the operator's GET /metrics shows two series (labelled by account) with their own counts, while
each tenant's dashboard history (GET /v1/ui/metrics) shows only its own (docs/security.md,
"Tenants' series")."""

import json
import re
import unittest

from carve_harness import SEED_LAYOUT, CarveServer, component_spec, poll, seed_variant

B = "222222222222"
INVOCATIONS = {"default": 3, "b": 5}


class TenantSeriesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer().start_with_second_account("b", B)
        try:
            cls.accounts = {p: cls.server.account_id(p) for p in INVOCATIONS}
            for profile in INVOCATIONS:
                cls.deploy(profile)
            for profile, n in INVOCATIONS.items():
                rt = cls.server.boto_client("sagemaker-runtime", profile=profile)
                for _ in range(n):
                    rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ep",
                                       ContentType="application/json",
                                       Body=json.dumps({"inputs": "hi",
                                                        "parameters": {"max_new_tokens": 1}}))
        except Exception:
            cls.server.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    @classmethod
    def deploy(cls, profile):
        sm = cls.server.client(profile)
        sm.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
        sm.create_endpoint_config(EndpointConfigName="ep",
                                  ProductionVariants=[seed_variant(SEED_LAYOUT)])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        sm.get_waiter("endpoint_in_service").wait(
            EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 90})
        sm.create_inference_component(
            InferenceComponentName="ep", EndpointName="ep", VariantName="AllTraffic",
            Specification=component_spec("m", "mig-1g.5gb", memory_mb=1024),
            RuntimeConfig={"CopyCount": 1})
        poll(lambda: sm.describe_inference_component(
            InferenceComponentName="ep")["RuntimeConfig"]["CurrentCopyCount"] == 1,
            timeout_s=90, what=f"{profile}'s ep serving")

    def series(self, text, family):
        """{account: value} of `family`{account, endpoint="ep", component="ep"[, code="200"]}."""
        pat = re.compile(r'^%s\{account="(\d{12})",endpoint="ep",component="ep"(?:,code="200")?\}'
                         r' (\S+)$' % re.escape(family), re.M)
        return {account: float(v) for account, v in pat.findall(text)}

    def test_the_operator_sees_one_series_per_account(self):
        text = self.server.metrics_text()
        want = {self.accounts[p]: n for p, n in INVOCATIONS.items()}
        self.assertEqual(self.series(text, "carve_runtime_requests_total"), want)
        self.assertEqual(self.series(text, "carve_runtime_model_latency_seconds_count"), want)
        self.assertEqual(self.series(text, "carve_runtime_request_duration_seconds_count"), want)
        # Each try on a copy, by the copy's account: the same counts, since nothing was retried.
        attempts = {}
        for account, v in re.findall(r'^carve_runtime_copy_attempts_total\{account="(\d{12})",'
                                     r'component="ep",copy="[^"]+",outcome="answered"\} (\S+)$',
                                     text, re.M):
            attempts[account] = attempts.get(account, 0) + float(v)
        self.assertEqual(attempts, want)
        # No runtime series is left without its account.
        unlabelled = [line for line in text.splitlines()
                      if line.startswith("carve_runtime_") and '{account="' not in line]
        self.assertEqual(unlabelled, [])

    def test_each_tenants_dashboard_shows_only_its_own_counts(self):
        for profile, n in INVOCATIONS.items():
            other = next(p for p in INVOCATIONS if p != profile)

            def seen():
                status, body = self.server.signed_get("/v1/ui/metrics", profile=profile)
                self.assertEqual(status, 200, body)
                comps = body["components"]
                total = sum(p["requests"] for c in comps for p in c["points"])
                return (total == n) and body

            body = poll(seen, timeout_s=30, interval_s=0.5,
                        what=f"{profile}'s dashboard to count its {n} requests")
            self.assertEqual([(c["endpoint"], c["component"]) for c in body["components"]],
                             [("ep", "ep")])
            self.assertNotIn(self.accounts[other], json.dumps(body))


if __name__ == "__main__":
    unittest.main()
