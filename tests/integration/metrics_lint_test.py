"""GET /metrics of a busy `carve server`, linted by Prometheus's own `promtool check metrics`
(Debian's prometheus package, installed by scripts/setup.sh): endpoints, components, invocations
answered, streamed and refused for want of a copy, and an autoscaling target, so that every
family the server exports has series. Also checks the series the autoscaling issue added."""

import json
import re
import shutil
import subprocess
import unittest

import botocore.exceptions

from carve_harness import SEED_LAYOUT, CarveServer, component_spec, poll, seed_variant


@unittest.skipUnless(shutil.which("promtool"), "promtool is not installed (scripts/setup.sh)")
class MetricsLintTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer(extra_args=["--autoscaling-sample-ms", "200"]).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def test_promtool_finds_nothing_to_report_on_a_busy_server(self):
        sm = self.server.client()
        rt = self.server.boto_client("sagemaker-runtime")
        aas = self.server.boto_client("application-autoscaling")
        sm.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
        sm.create_endpoint_config(EndpointConfigName="ep",
                                  ProductionVariants=[seed_variant(SEED_LAYOUT)])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        sm.get_waiter("endpoint_in_service").wait(EndpointName="ep",
                                                  WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        for ic, copies in (("ic", 1), ("idle", 0)):
            sm.create_inference_component(
                InferenceComponentName=ic, EndpointName="ep", VariantName="AllTraffic",
                Specification=component_spec("m", "mig-1g.5gb", memory_mb=1024),
                RuntimeConfig={"CopyCount": copies})
        poll(lambda: sm.describe_inference_component(
            InferenceComponentName="ic")["RuntimeConfig"]["CurrentCopyCount"] == 1,
            timeout_s=60, what="ic serving")
        aas.register_scalable_target(
            ServiceNamespace="sagemaker", ResourceId="inference-component/ic",
            ScalableDimension="sagemaker:inference-component:DesiredCopyCount",
            MinCapacity=1, MaxCapacity=2)
        body = json.dumps({"inputs": "hi", "parameters": {"max_new_tokens": 2}})
        for _ in range(3):
            rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic",
                               ContentType="application/json", Body=body)
        stream = rt.invoke_endpoint_with_response_stream(
            EndpointName="ep", InferenceComponentName="ic", ContentType="application/json",
            Body=json.dumps({"inputs": "hi", "parameters": {"max_new_tokens": 2},
                             "stream": True}))
        list(stream["Body"])
        with self.assertRaises(botocore.exceptions.ClientError):
            rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="idle",
                               ContentType="application/json", Body=body)

        def metrics():
            return self.server.metrics_text(timeout=10)
        text = poll(lambda: (m := metrics()) and
                    "carve_autoscaling_invocations_per_copy{" in m and m,
                    timeout_s=30, what="an autoscaling sample")
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual((lint.returncode, lint.stdout + lint.stderr), (0, ""))

        def value(series):
            m = re.search("^" + re.escape(series) + r" (\S+)$", text, re.M)
            return float(m.group(1)) if m else None
        account = self.server.account_id()
        self.assertEqual(value('carve_runtime_no_capacity_invocation_failures_total'
                               f'{{account="{account}",endpoint="ep",component="idle"}}'), 1)
        self.assertEqual(value('carve_runtime_model_latency_seconds_count'
                               f'{{account="{account}",endpoint="ep",component="ic"}}'), 4)
        self.assertEqual(value('carve_runtime_overhead_latency_seconds_count'
                               f'{{account="{account}",endpoint="ep",component="ic"}}'), 4)
        self.assertEqual(value('carve_partitions_used{gpu_model="a100-40gb",profile="1g.5gb"}'), 1)
        # A deliberately bad exposition fails the same lint, so the check above can fail.
        bad = subprocess.run(["promtool", "check", "metrics"],
                             input="# HELP x_total a gauge\n# TYPE x_total gauge\nx_total 1\n",
                             capture_output=True, text=True, timeout=60)
        self.assertNotEqual(bad.returncode, 0)


if __name__ == "__main__":
    unittest.main()
