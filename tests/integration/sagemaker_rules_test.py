"""Every rejection path of the SageMaker service with its message, authentication failures and
account isolation, against the real server."""

import json
import subprocess
import unittest
import urllib.error
import urllib.request

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import botocore.exceptions
import botocore.session

import wire_shapes
from carve_harness import (REGION, CarveServer, SEED_LAYOUT, add_account, component_spec, poll,
                           seed_variant)


def partitions(carve):
    """Every partition of an endpoint's carve view: (node, GPU, type, start, the copy on it)."""
    return sorted((n["name"], g["index"], p["partition_type"], p["start"],
                   p["copy"]["id"] if p["copy"] else "")
                  for n in carve["nodes"] for g in n["gpus"] for p in g["partitions"])


SAGEMAKER_MODEL = botocore.session.get_session().get_service_model("sagemaker")


def error_of(call, *args, **kwargs):
    """The code and message of a boto3 call expected to fail, which must be a code botocore's
    model lets that operation answer."""
    try:
        call(*args, **kwargs)
    except botocore.exceptions.ClientError as e:
        code = e.response["Error"]["Code"]
        operation = e.operation_name
        listed = {shape.name for shape in
                  SAGEMAKER_MODEL.operation_model(operation).error_shapes}
        if code not in wire_shapes.COMMON_ERRORS | listed:
            raise AssertionError(f"{operation} answered {code}, which botocore's model does not "
                                 f"list for it ({sorted(listed)}) and is not a common error")
        return code, e.response["Error"]["Message"]
    raise AssertionError("call succeeded; expected an error")


class SageMakerRulesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer(carve_ms=10)
        cls.server.start()
        cls.server.stop()  # First start wrote the credentials file; add a second account.
        add_account(cls.server.credentials_file, "other", "222222222222")
        cls.server.start()
        cls.sm = cls.server.client()
        cls.sm.create_model(ModelName="m", PrimaryContainer={"Image": "img"})
        cls.sm.create_endpoint_config(EndpointConfigName="seed",
                                      ProductionVariants=[seed_variant(SEED_LAYOUT)])
        cls.sm.create_endpoint(EndpointName="seed", EndpointConfigName="seed")
        cls.sm.get_waiter("endpoint_in_service").wait(
            EndpointName="seed", WaiterConfig={"Delay": 1, "MaxAttempts": 60})

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def test_a_bad_name_gets_the_services_pattern_message(self):
        code, msg = error_of(self.sm.create_model, ModelName="bad_name!",
                             PrimaryContainer={"Image": "i"})
        self.assertEqual(code, "ValidationException")
        self.assertEqual(msg, "1 validation error detected: Value 'bad_name!' at 'modelName' "
                         "failed to satisfy constraint: Member must satisfy regular expression "
                         "pattern: [a-zA-Z0-9]([\\-a-zA-Z0-9]*[a-zA-Z0-9])?")

    def test_several_violations_are_joined(self):
        code, msg = error_of(self.sm.list_endpoints, SortOrder="Up", NameContains="a_b")
        self.assertEqual(code, "ValidationException")
        self.assertTrue(msg.startswith("2 validation errors detected: "), msg)
        self.assertIn("; ", msg)

    def test_a_missing_endpoint_reads_like_the_service(self):
        code, msg = error_of(self.sm.describe_endpoint, EndpointName="nope")
        self.assertEqual(code, "ValidationException")
        self.assertRegex(msg, r'^Could not find endpoint "arn:aws:sagemaker:us-east-1:\d{12}:'
                              r'endpoint/nope"\.$')

    def test_an_existing_endpoint_config_cannot_be_created_again(self):
        code, msg = error_of(self.sm.create_endpoint_config, EndpointConfigName="seed",
                             ProductionVariants=[seed_variant(SEED_LAYOUT)])
        self.assertEqual(code, "ValidationException")
        self.assertRegex(msg, r'^Cannot create already existing endpoint configuration "arn:')

    def test_a_variant_must_name_a_model_that_exists(self):
        v = dict(seed_variant(SEED_LAYOUT), ModelName="no-such-model")
        code, msg = error_of(self.sm.create_endpoint_config, EndpointConfigName="no-model",
                             ProductionVariants=[v])
        self.assertEqual(code, "ValidationException")
        self.assertRegex(msg, r'^Could not find model "arn:aws:sagemaker:us-east-1:\d{12}:'
                              r'model/no-such-model"\.$')
        self.assertEqual(error_of(self.sm.describe_endpoint_config,
                                  EndpointConfigName="no-model")[0], "ValidationException")
        v["ModelName"] = "m"
        self.sm.create_endpoint_config(EndpointConfigName="with-model", ProductionVariants=[v])

    def test_a_profile_the_default_image_driver_lacks_names_the_image_that_has_it(self):
        # The seed's driver note: P4d mig-1g.10gb needs R525; the default image ships 470.
        layout = ["mig-1g.10gb", "mig-1g.10gb"]
        code, msg = error_of(self.sm.create_endpoint_config, EndpointConfigName="old-driver",
                             ProductionVariants=[seed_variant(layout)])
        self.assertEqual(code, "ValidationException")
        self.assertIn("mig-1g.10gb needs driver R525 or newer", msg)
        self.assertIn("requested on driver 470.256.02", msg)
        self.assertIn("the default image of ml.p4d.24xlarge (no InferenceAmiVersion)", msg)
        self.assertIn("al2023-ami-sagemaker-inference-gpu-4-1 (driver R580)", msg)
        self.sm.create_endpoint_config(
            EndpointConfigName="new-driver",
            ProductionVariants=[seed_variant(layout, ami="al2023-ami-sagemaker-inference-gpu-4-1")])
        d = self.sm.describe_endpoint_config(EndpointConfigName="new-driver")
        self.assertEqual(d["ProductionVariants"][0]["InferenceAmiVersion"],
                         "al2023-ami-sagemaker-inference-gpu-4-1")

    def test_members_carve_does_not_implement_are_refused_not_ignored(self):
        code, msg = error_of(
            self.sm.create_endpoint_config, EndpointConfigName="capture",
            ProductionVariants=[seed_variant(SEED_LAYOUT)],
            DataCaptureConfig={"InitialSamplingPercentage": 10, "DestinationS3Uri": "s3://b/p",
                               "CaptureOptions": [{"CaptureMode": "Input"}]})
        self.assertEqual(code, "ValidationException")
        self.assertIn("Value '{...}' at 'dataCaptureConfig' failed to satisfy constraint: carve "
                      "does not support DataCaptureConfig", msg)
        v = dict(seed_variant(SEED_LAYOUT), VolumeSizeInGB=100, EnableSSMAccess=True)
        code, msg = error_of(self.sm.create_endpoint_config, EndpointConfigName="health",
                             ProductionVariants=[v])
        self.assertTrue(msg.startswith("2 validation errors detected: "), msg)
        self.assertIn("Value '100' at 'productionVariants.1.member.volumeSizeInGB' failed to "
                      "satisfy constraint: carve does not support VolumeSizeInGB", msg)
        self.assertIn("carve does not support EnableSSMAccess", msg)
        # The value that asks for nothing is accepted.
        self.sm.create_endpoint_config(
            EndpointConfigName="ssm-off", EnableNetworkIsolation=False,
            ProductionVariants=[dict(seed_variant(SEED_LAYOUT), EnableSSMAccess=False)])
        code, msg = error_of(self.sm.create_endpoint, EndpointName="bg", EndpointConfigName="seed",
                             DeploymentConfig={"BlueGreenUpdatePolicy": {
                                 "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE",
                                                                 "WaitIntervalInSeconds": 0}}})
        self.assertIn("carve does not support DeploymentConfig", msg)
        code, msg = error_of(self.sm.update_endpoint, EndpointName="seed",
                             EndpointConfigName="seed", RetainAllVariantProperties=True)
        self.assertIn("carve does not support RetainAllVariantProperties", msg)

    def test_model_and_component_members_carve_does_not_implement_are_refused(self):
        code, msg = error_of(self.sm.create_model, ModelName="mme", PrimaryContainer={
            "Image": "img", "Mode": "MultiModel"})
        self.assertEqual(code, "ValidationException")
        self.assertIn("Value 'MultiModel' at 'primaryContainer.mode' failed to satisfy "
                      "constraint: carve does not support Mode MultiModel", msg)
        code, msg = error_of(self.sm.create_model, ModelName="pipe", Containers=[
            {"Image": "a"}, {"Image": "b"}])
        self.assertIn("carve does not support more than one container", msg)
        code, msg = error_of(
            self.sm.create_inference_component, InferenceComponentName="slow-start",
            EndpointName="seed", VariantName="AllTraffic",
            Specification=dict(component_spec("m", "mig-1g.5gb"), StartupParameters={
                "ContainerStartupHealthCheckTimeoutInSeconds": 600,
                "ModelDataDownloadTimeoutInSeconds": 600}),
            RuntimeConfig={"CopyCount": 1})
        self.assertTrue(msg.startswith("1 validation error detected: "), msg)
        self.assertIn("at 'specification.startupParameters.modelDataDownloadTimeoutInSeconds' "
                      "failed to satisfy constraint: carve does not support "
                      "ModelDataDownloadTimeoutInSeconds", msg)

    def test_managed_instance_scaling_is_checked_like_the_service_plus_carves_limits(self):
        def refused(scaling, count=1):
            v = dict(seed_variant(SEED_LAYOUT, count=count), ManagedInstanceScaling=scaling)
            return error_of(self.sm.create_endpoint_config, EndpointConfigName="mis-bad",
                            ProductionVariants=[v])[1]
        self.assertIn("carve does not support Strategy CONSOLIDATION", refused({
            "Status": "ENABLED", "MinInstanceCount": 1, "MaxInstanceCount": 2,
            "ScaleInPolicy": {"Strategy": "CONSOLIDATION"}}))
        self.assertIn("Value '0' at 'productionVariants.1.member.managedInstanceScaling."
                      "minInstanceCount' failed to satisfy constraint: carve keeps at least one "
                      "instance per variant", refused({
                          "Status": "ENABLED", "MinInstanceCount": 0, "MaxInstanceCount": 2}))
        self.assertIn("must not exceed MaxInstanceCount (2)", refused({
            "Status": "ENABLED", "MinInstanceCount": 3, "MaxInstanceCount": 2}))
        self.assertIn("must lie within ManagedInstanceScaling's MinInstanceCount (2) and "
                      "MaxInstanceCount (3)", refused({
                          "Status": "ENABLED", "MinInstanceCount": 2, "MaxInstanceCount": 3}))

    def test_an_inference_ami_must_be_a_known_gpu_image(self):
        code, msg = error_of(self.sm.create_endpoint_config, EndpointConfigName="bad-ami",
                             ProductionVariants=[seed_variant(SEED_LAYOUT, ami="al2-gpu-9")])
        self.assertEqual(code, "ValidationException")
        self.assertIn("Value 'al2-gpu-9' at 'productionVariants.1.member.inferenceAmiVersion'",
                      msg)
        self.assertIn("Member must satisfy enum value set: [al2-ami-sagemaker-inference-gpu-2,",
                      msg)
        code, msg = error_of(
            self.sm.create_endpoint_config, EndpointConfigName="neuron",
            ProductionVariants=[seed_variant(SEED_LAYOUT,
                                             ami="al2-ami-sagemaker-inference-neuron-2")])
        self.assertEqual(code, "ValidationException")
        self.assertIn("is an image for Inferentia2 and Trainium accelerators; ml.p4d.24xlarge has "
                      "NVIDIA GPUs", msg)

    def test_a_layout_that_does_not_fit_names_provided_and_requested(self):
        code, msg = error_of(self.sm.create_endpoint_config, EndpointConfigName="toobig",
                             ProductionVariants=[seed_variant(["mig-4g.20gb", "mig-4g.20gb"])])
        self.assertEqual(code, "ValidationException")
        self.assertIn("provides", msg)
        self.assertIn("requests", msg)

    def test_two_layout_entries_are_rejected(self):
        v = seed_variant(SEED_LAYOUT)
        v["AcceleratorPartitionLayouts"].append({"AcceleratorPartitionTypes": ["mig-7g.40gb"]})
        code, msg = error_of(self.sm.create_endpoint_config, EndpointConfigName="two",
                             ProductionVariants=[v])
        self.assertEqual(code, "ValidationException")
        self.assertIn("exactly one", msg)

    def test_a_component_must_name_a_declared_partition_type(self):
        code, msg = error_of(self.sm.create_inference_component, InferenceComponentName="x",
                             EndpointName="seed", VariantName="AllTraffic",
                             Specification=component_spec("m", "mig-3g.20gb"),
                             RuntimeConfig={"CopyCount": 1})
        self.assertEqual(code, "ValidationException")
        self.assertIn("declared types: [mig-4g.20gb, mig-2g.10gb, mig-1g.5gb]", msg)

    def test_a_component_on_a_partitioned_variant_needs_a_partition_type(self):
        code, msg = error_of(self.sm.create_inference_component, InferenceComponentName="x",
                             EndpointName="seed", Specification=component_spec("m", None),
                             RuntimeConfig={"CopyCount": 1})
        self.assertEqual(code, "ValidationException")
        self.assertIn("AcceleratorPartitionType is required", msg)

    def assert_refused_on_create_and_update(self, spec, code, *words):
        """CreateInferenceComponent, and UpdateInferenceComponent of a component that exists,
        each refuse `spec` with `code` and a message holding every one of `words`: a rule of the
        partition holds for both operations."""
        name = "rules-" + self._testMethodName[len("test_"):][:40].strip("_").replace("_", "-")
        self.sm.create_inference_component(
            InferenceComponentName=name, EndpointName="seed",
            Specification=component_spec("m", "mig-1g.5gb"), RuntimeConfig={"CopyCount": 1})
        self.addCleanup(self.sm.delete_inference_component, InferenceComponentName=name)
        errors = {
            "create": error_of(self.sm.create_inference_component, InferenceComponentName="x",
                               EndpointName="seed", Specification=spec,
                               RuntimeConfig={"CopyCount": 1}),
            "update": error_of(self.sm.update_inference_component,
                               InferenceComponentName=name, Specification=spec),
        }
        for op, (got_code, msg) in errors.items():
            with self.subTest(op=op):
                self.assertEqual(got_code, code, msg)
                for w in words:
                    self.assertIn(w, msg)

    def test_a_partition_copy_needs_exactly_one_device(self):
        self.assert_refused_on_create_and_update(
            component_spec("m", "mig-1g.5gb", devices=2), "ValidationException",
            "NumberOfAcceleratorDevicesRequired must be 1", "got 2")

    def test_a_copy_larger_than_the_host_is_a_limit(self):
        # 500 vCPUs and 300 GiB: the vCPU rule alone must refuse it (a p4d has 1152 GiB).
        self.assert_refused_on_create_and_update(
            component_spec("m", "mig-1g.5gb", cpus=500, memory_mb=300 * 1024),
            "ResourceLimitExceeded", "needs 500 vCPUs", "96 vCPUs")

    def test_a_copy_needing_more_host_memory_than_an_instance_is_a_limit(self):
        self.assert_refused_on_create_and_update(
            component_spec("m", "mig-1g.5gb", cpus=2, memory_mb=2000 * 1024),
            "ResourceLimitExceeded", "2048000 MiB of host memory")

    def test_a_components_partition_type_is_fixed(self):
        self.sm.create_inference_component(
            InferenceComponentName="fixed", EndpointName="seed",
            Specification=component_spec("m", "mig-1g.5gb"), RuntimeConfig={"CopyCount": 1})
        code, msg = error_of(self.sm.update_inference_component, InferenceComponentName="fixed",
                             Specification=component_spec("m", "mig-2g.10gb"))
        self.assertEqual(code, "ValidationException")
        self.assertIn("cannot change to mig-2g.10gb", msg)

    def test_update_endpoint_to_a_reordered_layout_is_rejected(self):
        self.sm.create_endpoint_config(
            EndpointConfigName="reordered",
            ProductionVariants=[seed_variant(list(reversed(SEED_LAYOUT)))])
        code, msg = error_of(self.sm.update_endpoint, EndpointName="seed",
                             EndpointConfigName="reordered")
        self.assertEqual(code, "ValidationException")
        self.assertIn("fixed for an endpoint's lifetime", msg)

    def test_update_endpoint_to_the_same_layout_goes_back_in_service(self):
        before = self.sm.describe_endpoint(EndpointName="seed")
        status, carve_before = self.server.signed_get("/v1/endpoints/seed/carve")
        self.assertEqual(status, 200, carve_before)
        self.sm.create_endpoint_config(EndpointConfigName="same",
                                       ProductionVariants=[seed_variant(SEED_LAYOUT)])
        self.sm.update_endpoint(EndpointName="seed", EndpointConfigName="same")
        after = poll(lambda: (d := self.sm.describe_endpoint(EndpointName="seed"))
                     ["EndpointStatus"] == "InService" and d, what="InService after update")
        # The update happened: the endpoint runs the new config, and says when it changed.
        self.assertEqual(before["EndpointConfigName"], "seed")
        self.assertEqual(after["EndpointConfigName"], "same")
        self.assertGreater(after["LastModifiedTime"], before["LastModifiedTime"])
        self.assertEqual(after["EndpointArn"], before["EndpointArn"])
        # The same layout is not carved again: the same nodes and partitions, each copy where
        # it was.
        status, carve_after = self.server.signed_get("/v1/endpoints/seed/carve")
        self.assertEqual(status, 200, carve_after)
        self.assertEqual(partitions(carve_after), partitions(carve_before))
        self.assertTrue(partitions(carve_after))

    def test_an_endpoint_with_components_is_not_deleted(self):
        self.sm.create_inference_component(
            InferenceComponentName="pin", EndpointName="seed",
            Specification=component_spec("m", "mig-2g.10gb"), RuntimeConfig={"CopyCount": 1})
        # ValidationException: botocore's model lists no ResourceInUse for DeleteEndpoint.
        code, msg = error_of(self.sm.delete_endpoint, EndpointName="seed")
        self.assertEqual(code, "ValidationException")
        # Other tests of this class may leave components of their own on "seed".
        self.assertRegex(msg, r"still hosts inference components \[([^]]*, )?pin(, [^]]*)?\]")

    def test_a_variant_named_twice_in_one_capacity_update_is_refused(self):
        code, msg = error_of(
            self.sm.update_endpoint_weights_and_capacities, EndpointName="seed",
            DesiredWeightsAndCapacities=[{"VariantName": "AllTraffic", "DesiredWeight": 1.0},
                                         {"VariantName": "AllTraffic", "DesiredWeight": 2.0}])
        self.assertEqual(code, "ValidationException")
        self.assertIn("Value 'AllTraffic' at 'desiredWeightsAndCapacities.2.member.variantName' "
                      "failed to satisfy constraint: Member must name each variant at most once",
                      msg)
        self.assertEqual(
            self.sm.describe_endpoint(EndpointName="seed")["EndpointStatus"], "InService")

    def test_too_few_nodes_fail_the_endpoint_naming_what_is_missing(self):
        self.sm.create_endpoint_config(
            EndpointConfigName="three-p5",
            ProductionVariants=[seed_variant(None, "ml.p5.48xlarge", 3)])
        self.sm.create_endpoint(EndpointName="three-p5", EndpointConfigName="three-p5")
        d = poll(lambda: (x := self.sm.describe_endpoint(EndpointName="three-p5"))
                 ["EndpointStatus"] == "Failed" and x, what="Failed")
        self.assertIn("Missing: 2 x ml.p5.48xlarge", d["FailureReason"])

    def test_an_unknown_operation_is_a_400(self):
        # Signed as botocore signs, so authentication passes and the operation is what is judged.
        ak, sk = self.server.profile_keys()
        req = botocore.awsrequest.AWSRequest(
            method="POST", url=self.server.url + "/", data=b"{}",
            headers={"X-Amz-Target": "SageMaker.MakeCoffee",
                     "Content-Type": "application/x-amz-json-1.1"})
        botocore.auth.SigV4Auth(botocore.credentials.Credentials(ak, sk), "sagemaker",
                                REGION).add_auth(req)
        prepared = req.prepare()
        with self.assertRaises(urllib.error.HTTPError) as ctx:
            urllib.request.urlopen(urllib.request.Request(
                prepared.url, data=b"{}", headers=dict(prepared.headers), method="POST"),
                timeout=10)
        self.assertEqual(ctx.exception.code, 400)
        error = json.loads(ctx.exception.read())
        self.assertEqual(error["__type"], "UnknownOperationException", error)
        self.assertIn("MakeCoffee", json.dumps(error))

    def test_a_missing_signature_is_rejected(self):
        req = urllib.request.Request(self.server.url + "/", data=b"{}", method="POST", headers={
            "X-Amz-Target": "SageMaker.ListModels",
            "Content-Type": "application/x-amz-json-1.1"})
        with self.assertRaises(urllib.error.HTTPError) as ctx:
            urllib.request.urlopen(req, timeout=10)
        self.assertEqual(ctx.exception.code, 403)
        self.assertEqual(json.loads(ctx.exception.read())["__type"], "MissingAuthenticationToken")

    def test_a_wrong_secret_is_rejected(self):
        ak, _ = self.server.profile_keys()
        bad = self.server.client(access_key=ak, secret_key="x" * 40)
        code, _ = error_of(bad.list_models)
        self.assertEqual(code, "InvalidSignatureException")

    def test_accounts_cannot_see_each_others_resources(self):
        other = self.server.client(profile="other")
        self.assertEqual(other.list_endpoints()["Endpoints"], [])
        code, _ = error_of(other.describe_endpoint, EndpointName="seed")
        self.assertEqual(code, "ValidationException")
        other.create_model(ModelName="m", PrimaryContainer={"Image": "img"})  # Same name: fine.
        arn = other.describe_model(ModelName="m")["ModelArn"]
        self.assertIn(":222222222222:model/m", arn)
        code, _ = error_of(self.sm.list_tags, ResourceArn=arn)
        self.assertEqual(code, "ValidationException")

    def test_the_cli_reports_the_message(self):
        p = self.server.aws("describe-endpoint", "--endpoint-name", "nope", check=False)
        self.assertIsInstance(p, subprocess.CompletedProcess)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("Could not find endpoint", p.stderr)


if __name__ == "__main__":
    unittest.main()
