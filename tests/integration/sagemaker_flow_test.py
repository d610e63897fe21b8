"""The seed's flow and the partitioning rules, driven through the real server with the stock
aws CLI and boto3 (partition members taught to them by contrib/aws's sdk-extras overlay)."""

import json
import unittest

import botocore.exceptions

from carve_harness import (CarveServer, SEED_LAYOUT, component_spec, poll, seed_variant)

SEED_PROFILES = [t[len("mig-"):] for t in SEED_LAYOUT]


def error_of(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["Error"]["Message"]
    raise AssertionError("call succeeded; expected an error")


class SageMakerFlowTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer(carve_ms=20, p4d=8, p5=2).start()
        cls.sm = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def make_endpoint(self, name, layout=SEED_LAYOUT, instance_type="ml.p4d.24xlarge", count=1,
                      ami=None):
        self.sm.create_model(ModelName=f"{name}-model",
                             PrimaryContainer={"Image": "example.com/llm:1"})
        self.sm.create_endpoint_config(
            EndpointConfigName=f"{name}-config",
            ProductionVariants=[seed_variant(layout, instance_type, count, ami)])
        self.sm.create_endpoint(EndpointName=name, EndpointConfigName=f"{name}-config")
        self.sm.get_waiter("endpoint_in_service").wait(
            EndpointName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})

    def wait_copies(self, ic, current):
        seen = []

        def done():
            seen.append(self.sm.describe_inference_component(InferenceComponentName=ic))
            return seen[-1]["RuntimeConfig"]["CurrentCopyCount"] == current and seen[-1]
        try:
            return poll(done, what=f"{ic} to have {current} copies")
        except AssertionError as e:  # Say where it stood (once it timed out under load).
            last = seen[-1] if seen else {}
            raise AssertionError(f"{e}; status {last.get('InferenceComponentStatus')!r}, "
                                 f"{last.get('RuntimeConfig')!r}, message "
                                 f"{last.get('StatusMessage')!r}") from None

    def test_seed_flow_with_the_aws_cli(self):
        s = self.server
        s.aws("create-model", "--model-name", "summarizer-model", "--primary-container",
              "Image=example.com/llm:1")
        s.aws("create-endpoint-config", "--endpoint-config-name", "multi-model-partitioned",
              "--production-variants", json.dumps([seed_variant(SEED_LAYOUT)]))
        echoed = s.aws("describe-endpoint-config", "--endpoint-config-name",
                       "multi-model-partitioned")
        self.assertEqual(echoed["ProductionVariants"][0]["AcceleratorPartitionLayouts"],
                         [{"AcceleratorPartitionTypes": SEED_LAYOUT}])
        s.aws("create-endpoint", "--endpoint-name", "multi-model-partitioned",
              "--endpoint-config-name", "multi-model-partitioned")
        poll(lambda: s.aws("describe-endpoint", "--endpoint-name", "multi-model-partitioned")
             ["EndpointStatus"] == "InService", what="InService")
        s.aws("wait", "endpoint-in-service", "--endpoint-name", "multi-model-partitioned")
        for name, ptype in [("summarizer", "mig-4g.20gb"), ("classifier", "mig-2g.10gb"),
                            ("guardrail", "mig-1g.5gb")]:
            s.aws("create-inference-component", "--inference-component-name", name,
                  "--endpoint-name", "multi-model-partitioned", "--variant-name", "AllTraffic",
                  "--specification", json.dumps(component_spec("summarizer-model", ptype)),
                  "--runtime-config", "CopyCount=1")
        # A component that never served stays Creating while it grows; this one must have
        # served (InService once) for the scale-up below to read Updating.
        poll(lambda: s.aws("describe-inference-component", "--inference-component-name",
                           "guardrail")["InferenceComponentStatus"] == "InService",
             what="guardrail InService")
        s.aws("update-inference-component-runtime-config", "--inference-component-name",
              "guardrail", "--desired-runtime-config", "CopyCount=10")
        d = poll(lambda: (x := s.aws("describe-inference-component",
                                     "--inference-component-name", "guardrail"))
                 ["RuntimeConfig"]["CurrentCopyCount"] == 8 and x, what="8 guardrail copies")
        self.assertEqual(d["RuntimeConfig"]["DesiredCopyCount"], 10)
        self.assertEqual(d["InferenceComponentStatus"], "Updating")
        self.assertIn("2 of 10 copies are not placed", d["StatusMessage"])
        self.assertIn("mig-1g.5gb", d["StatusMessage"])
        status, carve = s.signed_get("/v1/endpoints/multi-model-partitioned/carve")
        self.assertEqual(status, 200)
        self.assertEqual(len(carve["nodes"]), 1)
        gpus = carve["nodes"][0]["gpus"]
        self.assertEqual(len(gpus), 8)
        self.assertEqual([p["partition_type"] for p in gpus[0]["partitions"]], SEED_LAYOUT)
        occupied = [p["occupant"] for g in gpus for p in g["partitions"] if p["occupant"]]
        self.assertEqual(sum(o.endswith("/guardrail") for o in occupied), 8)
        # Scaling down releases partitions and the component settles InService.
        s.aws("update-inference-component-runtime-config", "--inference-component-name",
              "guardrail", "--desired-runtime-config", "CopyCount=3")
        d = poll(lambda: (x := s.aws("describe-inference-component",
                                     "--inference-component-name", "guardrail"))
                 ["InferenceComponentStatus"] == "InService" and x, what="guardrail InService")
        self.assertEqual(d["RuntimeConfig"]["CurrentCopyCount"], 3)

    def test_capacity_changes_claim_carve_and_release_instances(self):
        self.make_endpoint("cap-ep")
        self.sm.create_inference_component(
            InferenceComponentName="cap", EndpointName="cap-ep", VariantName="AllTraffic",
            Specification=component_spec("cap-ep-model", "mig-1g.5gb"),
            RuntimeConfig={"CopyCount": 10})
        # One p4d has 8 mig-1g.5gb partitions: 2 copies wait.
        poll(lambda: self.sm.describe_inference_component(InferenceComponentName="cap")[
            "RuntimeConfig"]["CurrentCopyCount"] == 8, what="8 of 10 copies")

        def variant():
            d = self.sm.describe_endpoint(EndpointName="cap-ep")
            return d["EndpointStatus"], d["ProductionVariants"][0]

        self.sm.update_endpoint_weights_and_capacities(
            EndpointName="cap-ep", DesiredWeightsAndCapacities=[
                {"VariantName": "AllTraffic", "DesiredInstanceCount": 2, "DesiredWeight": 2.0}])
        status, v = variant()
        self.assertEqual(status, "Updating")
        self.assertEqual(v["DesiredInstanceCount"], 2)
        poll(lambda: variant()[0] == "InService", what="cap-ep InService with 2 instances")
        status, v = variant()
        self.assertEqual((v["CurrentInstanceCount"], v["DesiredInstanceCount"]), (2, 2))
        self.assertEqual((v["CurrentWeight"], v["DesiredWeight"]), (2.0, 2.0))
        # The waiting copies take partitions of the new instance, carved with the layout.
        self.wait_copies("cap", 10)
        status, carve = self.server.signed_get("/v1/endpoints/cap-ep/carve")
        self.assertEqual(status, 200)
        held = sorted(n["name"] for n in carve["nodes"])
        self.assertEqual(len(held), 2)
        for n in carve["nodes"]:
            self.assertEqual(sorted(p["partition_type"] for p in n["gpus"][7]["partitions"]),
                             sorted(SEED_LAYOUT))

        # Down to one instance: the one with fewer copies leaves once its copies have moved.
        self.sm.update_inference_component_runtime_config(
            InferenceComponentName="cap", DesiredRuntimeConfig={"CopyCount": 6})
        self.wait_copies("cap", 6)
        self.sm.update_endpoint_weights_and_capacities(
            EndpointName="cap-ep", DesiredWeightsAndCapacities=[
                {"VariantName": "AllTraffic", "DesiredInstanceCount": 1}])
        poll(lambda: variant()[0] == "InService", what="cap-ep InService with 1 instance")
        status, v = variant()
        self.assertEqual((v["CurrentInstanceCount"], v["DesiredInstanceCount"]), (1, 1))
        self.wait_copies("cap", 6)
        status, carve = self.server.signed_get("/v1/endpoints/cap-ep/carve")
        (kept,) = [n["name"] for n in carve["nodes"]]
        (left,) = [n for n in held if n != kept]
        status, fleet = self.server.signed_get("/v1/fleet")
        (node,) = [n for n in fleet["nodes"] if n["name"] == left]
        self.assertIsNone(node["claim"])
        # What its agent reports: every GPU whole again.
        self.assertTrue(all("Partitions" in g and not g["Partitions"]
                            for g in self.server.nodes()[left]["Gpus"]))

        code = None
        try:
            self.sm.update_endpoint_weights_and_capacities(
                EndpointName="cap-ep", DesiredWeightsAndCapacities=[
                    {"VariantName": "Nope", "DesiredInstanceCount": 1}])
        except self.sm.exceptions.ClientError as e:
            code, msg = e.response["Error"]["Code"], e.response["Error"]["Message"]
        self.assertEqual(code, "ValidationException")
        self.assertIn('The variant(s) "[Nope]" is/are not present in endpoint', msg)
        self.sm.delete_inference_component(InferenceComponentName="cap")

    def test_managed_instance_scaling_adds_an_instance_for_waiting_copies_and_releases_it(self):
        self.sm.create_model(ModelName="mis-model", PrimaryContainer={"Image": "example.com/llm:1"})
        v = dict(seed_variant(SEED_LAYOUT), ManagedInstanceScaling={
            "Status": "ENABLED", "MinInstanceCount": 1, "MaxInstanceCount": 2,
            "ScaleInPolicy": {"Strategy": "IDLE_RELEASE"}})
        self.sm.create_endpoint_config(EndpointConfigName="mis-config", ProductionVariants=[v])
        self.sm.create_endpoint(EndpointName="mis-ep", EndpointConfigName="mis-config")
        self.sm.get_waiter("endpoint_in_service").wait(
            EndpointName="mis-ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})

        def instances():
            d = self.sm.describe_endpoint(EndpointName="mis-ep")
            pv = d["ProductionVariants"][0]
            return d["EndpointStatus"], pv["CurrentInstanceCount"], pv

        _, _, pv = instances()
        self.assertEqual(pv["ManagedInstanceScaling"], {
            "Status": "ENABLED", "MinInstanceCount": 1, "MaxInstanceCount": 2,
            "ScaleInPolicy": {"Strategy": "IDLE_RELEASE"}})
        # 12 copies of mig-1g.5gb: one p4d holds 8, so 4 wait and an instance is added.
        self.sm.create_inference_component(
            InferenceComponentName="mis", EndpointName="mis-ep", VariantName="AllTraffic",
            Specification=component_spec("mis-model", "mig-1g.5gb"),
            RuntimeConfig={"CopyCount": 12})
        self.wait_copies("mis", 12)
        poll(lambda: instances()[:2] == ("InService", 2), what="mis-ep on 2 instances")
        # 20 copies need 3 instances; the maximum is 2, so 4 wait and no third is claimed.
        self.sm.update_inference_component_runtime_config(
            InferenceComponentName="mis", DesiredRuntimeConfig={"CopyCount": 20})
        self.wait_copies("mis", 16)
        self.assertEqual(instances()[:2], ("InService", 2))
        # No copy left: the idle instance goes, down to the minimum of 1.
        self.sm.update_inference_component_runtime_config(
            InferenceComponentName="mis", DesiredRuntimeConfig={"CopyCount": 0})
        poll(lambda: instances()[:2] == ("InService", 1), what="mis-ep back to 1 instance")
        self.sm.delete_inference_component(InferenceComponentName="mis")

    def test_waiting_copies_take_a_partition_as_soon_as_it_frees(self):
        # 4g beside 3g needs driver R510: not the default p4d image (470), the 535 one.
        self.make_endpoint("free-ep", layout=["mig-4g.20gb", "mig-3g.20gb"],
                           ami="al2-ami-sagemaker-inference-gpu-2")
        self.sm.create_inference_component(
            InferenceComponentName="big", EndpointName="free-ep", VariantName="AllTraffic",
            Specification=component_spec("free-ep-model", "mig-3g.20gb"),
            RuntimeConfig={"CopyCount": 8})
        self.wait_copies("big", 8)
        self.sm.create_inference_component(
            InferenceComponentName="late", EndpointName="free-ep", VariantName="AllTraffic",
            Specification=component_spec("free-ep-model", "mig-3g.20gb"),
            RuntimeConfig={"CopyCount": 1})
        d = poll(lambda: (x := self.sm.describe_inference_component(
            InferenceComponentName="late")).get("StatusMessage") and x, what="a wait message")
        self.assertEqual(d["InferenceComponentStatus"], "Creating")
        self.assertIn("waiting for a mig-3g.20gb partition", d["StatusMessage"])
        self.sm.update_inference_component_runtime_config(
            InferenceComponentName="big", DesiredRuntimeConfig={"CopyCount": 7})
        d = self.wait_copies("late", 1)
        self.assertEqual(d["InferenceComponentStatus"], "InService")

    def test_endpoint_without_a_layout_gives_copies_whole_gpus(self):
        self.make_endpoint("whole-ep", layout=None, instance_type="ml.p5.48xlarge")
        self.sm.create_inference_component(
            InferenceComponentName="whole", EndpointName="whole-ep", VariantName="AllTraffic",
            Specification=component_spec("whole-ep-model", None, devices=3),
            RuntimeConfig={"CopyCount": 3})
        d = poll(lambda: (x := self.sm.describe_inference_component(
            InferenceComponentName="whole"))["RuntimeConfig"]["CurrentCopyCount"] == 2 and
            x.get("StatusMessage") and x, what="2 copies and a wait")
        self.assertIn("3 whole GPUs", d["StatusMessage"])

    def test_list_pages_filters_and_sorts(self):
        for i in range(5):
            self.sm.create_model(ModelName=f"paged-{i}", PrimaryContainer={"Image": "img"})
        first = self.sm.list_models(NameContains="paged-", SortBy="Name",
                                    SortOrder="Ascending", MaxResults=2)
        self.assertEqual([m["ModelName"] for m in first["Models"]], ["paged-0", "paged-1"])
        second = self.sm.list_models(NameContains="paged-", SortBy="Name",
                                     SortOrder="Ascending", MaxResults=2,
                                     NextToken=first["NextToken"])
        self.assertEqual([m["ModelName"] for m in second["Models"]], ["paged-2", "paged-3"])
        everything = self.server.aws("list-models", "--name-contains", "paged-")
        self.assertEqual(len(everything["Models"]), 5)  # The CLI follows NextToken itself.
        arn = first["Models"][0]["ModelArn"]
        self.assertRegex(arn, r"^arn:aws:sagemaker:us-east-1:\d{12}:model/paged-0$")

    def test_tags_round_trip(self):
        arn = self.sm.create_model(ModelName="tagged", PrimaryContainer={"Image": "i"})["ModelArn"]
        self.sm.add_tags(ResourceArn=arn, Tags=[{"Key": "team", "Value": "ml"},
                                                {"Key": "tier", "Value": "gold"}])
        self.sm.delete_tags(ResourceArn=arn, TagKeys=["tier"])
        self.assertEqual(self.sm.list_tags(ResourceArn=arn)["Tags"],
                         [{"Key": "team", "Value": "ml"}])

    def test_deleted_endpoint_satisfies_the_cli_waiter(self):
        self.make_endpoint("gone-ep")
        self.server.aws("delete-endpoint", "--endpoint-name", "gone-ep")
        self.server.aws("wait", "endpoint-deleted", "--endpoint-name", "gone-ep")
        code, msg = error_of(self.sm.describe_endpoint, EndpointName="gone-ep")
        self.assertEqual(code, "ValidationException")

    def metric(self, series):
        """The value of one exact series (name{labels}) at GET /metrics; 0 when absent."""
        for line in self.server.metrics_text(timeout=10).splitlines():
            if line.startswith(series + " "):
                return float(line.split(" ")[1])
        return 0.0

    def test_metrics_report_partitions_copies_and_endpoints(self):
        def p(profile, gauge="carve_partitions"):
            return self.metric(f'{gauge}{{gpu_model="a100-40gb",profile="{profile}"}}')
        in_service = 'carve_endpoints{status="InService"}'
        before = {x: p(x) for x in SEED_PROFILES}
        used_before = p("1g.5gb", "carve_partitions_used")
        endpoints_before = self.metric(in_service)
        self.make_endpoint("metrics-ep")
        # One p4d.24xlarge: 8 A100-40GB GPUs, each carved 4g.20gb + 2g.10gb + 1g.5gb.
        for profile in SEED_PROFILES:
            self.assertEqual(p(profile) - before[profile], 8, profile)
        self.assertEqual(self.metric(in_service) - endpoints_before, 1)
        self.sm.create_inference_component(
            InferenceComponentName="metered", EndpointName="metrics-ep", VariantName="AllTraffic",
            Specification=component_spec("metrics-ep-model", "mig-1g.5gb"),
            RuntimeConfig={"CopyCount": 3})
        self.wait_copies("metered", 3)
        self.assertEqual(p("1g.5gb", "carve_partitions_used") - used_before, 3)
        arn = self.sm.describe_inference_component(
            InferenceComponentName="metered")["InferenceComponentArn"]
        acct = arn.split(":")[4]
        for state in ("desired", "current"):
            self.assertEqual(self.metric(
                f'carve_inference_component_copies{{account="{acct}",'
                f'inference_component="metered",state="{state}"}}'), 3, state)

    def test_fleet_view_shows_every_node_and_the_endpoints_claim(self):
        self.make_endpoint("fleet-ep", instance_type="ml.p5.48xlarge",
                           layout=["mig-3g.40gb", "mig-3g.40gb"])
        status, fleet = self.server.signed_get("/v1/fleet")
        self.assertEqual(status, 200)
        self.assertEqual(len(fleet["nodes"]), 10)
        mine = [n for n in fleet["nodes"] if n["claim"] and n["claim"]["endpoint"] == "fleet-ep"]
        self.assertEqual(len(mine), 1)
        self.assertEqual(mine[0]["instance_type"], "ml.p5.48xlarge")
        self.assertEqual([p["partition_type"] for p in mine[0]["gpus"][0]["partitions"]],
                         ["mig-3g.40gb", "mig-3g.40gb"])
        status, _ = self.server.signed_get("/v1/endpoints/no-such-ep/carve")
        self.assertEqual(status, 404)


if __name__ == "__main__":
    unittest.main()
