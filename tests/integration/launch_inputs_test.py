"""The hostile tenant (issue 35): every Image, ModelDataUrl and Environment that would steer a
node's launch is refused at CreateModel (and a job's environment at submission) with a 400 that
names the member and the rule, and nothing is stored. The rules: docs/security.md, Launch inputs.

The server runs with one model root (`--model-root`) in a temp directory, next to a directory
outside it and a symlink inside it that leads out.
"""

import os
import shutil
import tempfile
import unittest

import botocore.exceptions

from carve_harness import ONE_G5_FLEET, CarveServer, poll

DIGEST = "sha256:" + "0123456789abcdef" * 4


def error_of(call, **kwargs):
    try:
        call(**kwargs)
    except botocore.exceptions.ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"],
                e.response["Error"]["Message"])
    raise AssertionError(f"call succeeded; expected a 400: {kwargs}")


class LaunchInputsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="carve-launch-inputs-")
        cls.root = os.path.join(cls.tmp, "models")
        os.makedirs(os.path.join(cls.root, "m1"))
        os.makedirs(os.path.join(cls.tmp, "secret"))
        os.symlink(os.path.join(cls.tmp, "secret"), os.path.join(cls.root, "escape"))
        cls.server = CarveServer(config=ONE_G5_FLEET, extra_args=["--model-root", cls.root])
        cls.server.start()
        cls.sm = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert_refused(self, container, member, *rule_words):
        """CreateModel with `container` is a 400 ValidationException naming `member` and the
        rule; the model is not stored."""
        code, kind, message = error_of(self.sm.create_model, ModelName="hostile",
                                       PrimaryContainer=container)
        self.assertEqual((code, kind), (400, "ValidationException"), message)
        self.assertIn(f"primaryContainer.{member}", message)
        for w in rule_words:
            self.assertIn(w, message)
        self.assertLess(len(message), 4096, "the value is previewed, not echoed whole")
        code, kind, message = error_of(self.sm.describe_model, ModelName="hostile")
        self.assertEqual((code, kind), (400, "ValidationException"))
        self.assertIn("Could not find model", message)

    def test_an_image_that_is_an_option_or_not_a_reference_is_refused(self):
        for image in ["--privileged", "--volume=/:/host", "-v=/:/host", "Library/Nginx",
                      "nginx:" + "t" * 129, "nginx@sha256:abc", "a//b"]:
            with self.subTest(image=image[:40]):
                self.assert_refused({"Image": image}, "image", "OCI image reference",
                                    "the rule:")
        # SageMaker's own bound comes first, and names itself.
        self.assert_refused({"Image": "a" * 300}, "image", "less than or equal to 255")

    def test_a_components_own_container_keeps_the_same_rules(self):
        for container, member, words in [
                ({"Image": "--privileged"}, "image", "OCI image reference"),
                ({"Image": "nginx", "ArtifactUrl": "file:///etc"}, "artifactUrl", "model roots"),
                ({"Image": "nginx", "Environment": {"LD_PRELOAD": "/x.so"}}, "environment",
                 "reserved")]:
            with self.subTest(member=member):
                code, kind, message = error_of(
                    self.sm.create_inference_component, InferenceComponentName="hostile",
                    EndpointName="none", VariantName="AllTraffic",
                    Specification={"Container": container, "ComputeResourceRequirements": {
                        "NumberOfAcceleratorDevicesRequired": 1, "MinMemoryRequiredInMb": 1024}},
                    RuntimeConfig={"CopyCount": 1})
                self.assertEqual((code, kind), (400, "ValidationException"), message)
                self.assertIn(f"specification.container.{member}", message)
                self.assertIn(words, message)

    def test_valid_references_are_accepted(self):
        for i, image in enumerate(["nginx", "docker.io/library/nginx:1.25",
                                   f"localhost:5000/a/b@{DIGEST}",
                                   "registry.example.com/x/y:tag"]):
            with self.subTest(image=image):
                self.sm.create_model(ModelName=f"ok{i}", PrimaryContainer={"Image": image})
                self.sm.delete_model(ModelName=f"ok{i}")

    def test_model_data_outside_the_model_roots_is_refused(self):
        for url in ["file:///", "file:///etc", "/../../..", "file://" + self.server.data_dir,
                    "file://" + os.path.join(self.root, "escape"),
                    "file://" + os.path.join(self.root, "m1", "..", "..", "secret"),
                    os.path.join(self.root, "m1") + ":/etc"]:
            with self.subTest(url=url):
                self.assert_refused({"Image": "nginx", "ModelDataUrl": url}, "modelDataUrl",
                                    "model roots", "the rule:")

    def test_model_data_inside_a_root_is_accepted(self):
        for url in ["file://" + os.path.join(self.root, "m1"), os.path.join(self.root, "m1")]:
            self.sm.create_model(ModelName="inside",
                                 PrimaryContainer={"Image": "nginx", "ModelDataUrl": url})
            self.sm.delete_model(ModelName="inside")

    def test_reserved_or_malformed_environment_is_refused(self):
        cases = [
            ({"LD_PRELOAD": "/tmp/evil.so"}, "Environment.LD_PRELOAD", "reserved"),
            ({"LD_LIBRARY_PATH": "/tmp"}, "Environment.LD_LIBRARY_PATH", "reserved"),
            ({"CARVE_TARGET": "h100-80gb:whole"}, "Environment.CARVE_TARGET", "reserved"),
            ({"CARVE_COPY": "7"}, "Environment.CARVE_COPY", "reserved"),
            ({"CUDA_VISIBLE_DEVICES": "0,1,2"}, "Environment.CUDA_VISIBLE_DEVICES", "reserved"),
            ({"NVIDIA_VISIBLE_DEVICES": "all"}, "Environment.NVIDIA_VISIBLE_DEVICES", "reserved"),
            ({"PATH": "/tmp"}, "Environment.PATH", "reserved"),
            ({"SAGEMAKER_BIND_TO_PORT": "22"}, "Environment.SAGEMAKER_BIND_TO_PORT", "reserved"),
            ({"A=B": "x"}, "Environment.A=B", "[a-zA-Z_][a-zA-Z0-9_]*"),
            ({"BIG": "x" * (10 * 1024 * 1024)}, "Environment.BIG", "at most 1024"),
            ({"A": "x\nLD_PRELOAD=/tmp/evil.so"}, "Environment.A", "line break"),
            ({f"V{i}": "" for i in range(101)}, "Environment has 101 entries", "at most 100"),
        ]
        for env, named, rule in cases:
            with self.subTest(named=named):
                self.assert_refused({"Image": "nginx", "Environment": env}, "environment",
                                    named, rule)

    def test_a_documented_runtime_input_is_allowed(self):
        self.sm.create_model(ModelName="sim", PrimaryContainer={
            "Image": "carve/testmodel", "Environment": {"CARVE_MODEL": "llama-3.2-1b",
                                                        "MODEL_VARIABLE": "x"}})
        self.sm.delete_model(ModelName="sim")

    def test_the_aws_cli_gets_the_same_refusal(self):
        p = self.server.aws("create-model", "--model-name", "hostile", "--primary-container",
                            "Image=--privileged", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("ValidationException", p.stderr)
        self.assertIn("primaryContainer.image", p.stderr)

    def test_a_job_with_a_reserved_variable_is_refused_and_not_stored(self):
        poll(lambda: any(n["Status"] == "Ready" for n in self.server.nodes().values()),
             timeout_s=60, what="the embedded agent's node Ready")
        status, q = self.server.signed("POST", "/v1/queues", {
            "name": "lq", "mgpu": True,
            "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1}})
        self.assertEqual(status, 201, q)
        try:
            for env, words in [({"LD_PRELOAD": "/tmp/evil.so"}, "environment.LD_PRELOAD"),
                               ({"CARVE_QUEUE": "other"}, "environment.CARVE_QUEUE"),
                               ({"A=B": "x"}, "[a-zA-Z_][a-zA-Z0-9_]*")]:
                with self.subTest(env=list(env)):
                    status, body = self.server.signed("POST", "/v1/queues/lq/jobs",
                                                      {"command": "true", "environment": env})
                    self.assertEqual(status, 400, body)
                    self.assertIn(words, body["error"])
            status, jobs = self.server.signed("GET", "/v1/queues/lq/jobs")
            self.assertEqual(status, 200, jobs)
            self.assertEqual(jobs.get("jobs", []), [])
        finally:
            self.server.signed("DELETE", "/v1/queues/lq")


if __name__ == "__main__":
    unittest.main()
