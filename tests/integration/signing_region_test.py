"""The server's region in every credential scope (docs/security.md, "Signatures and regions"):
a client configured for another region is refused as AWS refuses it (403
InvalidSignatureException, "Credential should be scoped to a valid region, not '...'", naming the
server's region) and nothing is created; the same for an endpoint bearer token minted for another
region. A server started with --region eu-west-1 serves clients of that region, its embedded
agents included (an endpoint goes InService), and carve's own commands follow $AWS_REGION."""

import json
import os
import subprocess
import unittest
import urllib.error
import urllib.request

import botocore.exceptions

from carve_harness import (REGION, SEED_LAYOUT, CarveServer, carve_bin, component_spec, poll,
                           seed_variant)

OTHER = "eu-west-1"


def chat(server, endpoint, token):
    """POST the OpenAI route with a bearer token, for component ic: (status, parsed body)."""
    req = urllib.request.Request(
        f"{server.url}/endpoints/{endpoint}/openai/v1/chat/completions",
        data=json.dumps({"model": "ic", "messages": [{"role": "user", "content": "hi"}],
                         "max_tokens": 2}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + token},
        method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def carve(server, *args, region=None):
    env = dict(os.environ)
    if region is not None:
        env["AWS_REGION"] = env["AWS_DEFAULT_REGION"] = region
    return subprocess.run([carve_bin(), *args, "--endpoint-url", server.url, "--credentials",
                           server.credentials_file], env=env, capture_output=True, text=True,
                          timeout=60)


class WrongRegionTest(unittest.TestCase):
    """A server of the default region, us-east-1."""

    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer().start()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def assertWrongRegion(self, message, scoped=OTHER, expected=REGION):
        self.assertIn(f"Credential should be scoped to a valid region, not '{scoped}'", message)
        self.assertIn(f"'{expected}'", message)

    def test_boto3_configured_for_another_region_is_refused_and_creates_nothing(self):
        other = self.server.client(region=OTHER)
        with self.assertRaises(botocore.exceptions.ClientError) as ctx:
            other.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
        err = ctx.exception.response
        self.assertEqual(err["ResponseMetadata"]["HTTPStatusCode"], 403)
        self.assertEqual(err["Error"]["Code"], "InvalidSignatureException")
        self.assertWrongRegion(err["Error"]["Message"])
        self.assertEqual(self.server.client().list_models()["Models"], [])
        # The same key, signing for the server's region, is served.
        self.server.client().create_model(ModelName="m",
                                          PrimaryContainer={"Image": "carve/testmodel"})
        self.server.client().delete_model(ModelName="m")

    def test_the_aws_cli_configured_for_another_region_is_refused(self):
        env = self.server.aws_env()
        env["AWS_DEFAULT_REGION"] = env["AWS_REGION"] = OTHER
        p = subprocess.run(["aws", "sagemaker", "list-endpoints", "--endpoint-url",
                            self.server.url], env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("InvalidSignatureException", p.stderr)
        self.assertWrongRegion(p.stderr)

    def test_a_bearer_token_minted_for_another_region_is_refused(self):
        token = carve(self.server, "token", "--region", OTHER).stdout.strip()
        status, body = chat(self.server, "nope", token)
        self.assertEqual(status, 403, body)
        self.assertEqual(body["error"]["code"], "InvalidSignatureException")
        self.assertWrongRegion(body["error"]["message"])
        # A token of the server's region gets past authentication (to find no such endpoint).
        token = carve(self.server, "token").stdout.strip()
        status, body = chat(self.server, "nope", token)
        self.assertNotIn(status, (401, 403), body)

    def test_carve_commands_sign_for_the_region_they_are_given(self):
        ok = carve(self.server, "queue", "list")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        refused = carve(self.server, "queue", "list", region=OTHER)
        self.assertNotEqual(refused.returncode, 0)
        self.assertWrongRegion(refused.stderr)
        flag = carve(self.server, "queue", "list", "--region", REGION, region=OTHER)
        self.assertEqual(flag.returncode, 0, flag.stderr)


class OtherRegionServerTest(unittest.TestCase):
    """A server started with --region eu-west-1: its own clients, its agents and its tokens."""

    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer(extra_args=["--region", OTHER]).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def test_clients_of_its_region_are_served_and_its_agents_place_copies(self):
        with self.assertRaises(botocore.exceptions.ClientError) as ctx:
            self.server.client().list_models()  # The harness's default, us-east-1.
        self.assertIn(f"'{OTHER}'", ctx.exception.response["Error"]["Message"])
        sm = self.server.client(region=OTHER)
        sm.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
        self.assertIn(f":{OTHER}:", sm.describe_model(ModelName="m")["ModelArn"])
        sm.create_endpoint_config(EndpointConfigName="ep",
                                  ProductionVariants=[seed_variant(SEED_LAYOUT)])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        # InService needs the embedded agents, which sign for the server's region.
        sm.get_waiter("endpoint_in_service").wait(
            EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 90})
        sm.create_inference_component(
            InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
            Specification=component_spec("m", "mig-1g.5gb", memory_mb=1024),
            RuntimeConfig={"CopyCount": 1})
        poll(lambda: sm.describe_inference_component(
            InferenceComponentName="ic")["RuntimeConfig"]["CurrentCopyCount"] == 1,
            timeout_s=90, what="ic serving")
        token = carve(self.server, "token", region=OTHER).stdout.strip()
        status, body = chat(self.server, "ep", token)
        self.assertEqual(status, 200, body)
        listed = carve(self.server, "queue", "list", region=OTHER)
        self.assertEqual(listed.returncode, 0, listed.stderr)


if __name__ == "__main__":
    unittest.main()
