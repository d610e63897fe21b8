"""Issue 35: bodies built to crash the parser, as a signed tenant sends them. JSON nested 100,000
deep inside a member, a 50,000-character name and duplicate object keys each get a 4xx that names
the rule, and the server keeps answering every tenant afterwards."""

import json
import unittest
import urllib.error
import urllib.request

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import botocore.exceptions

from carve_harness import REGION, CarveServer, seed_variant

DEPTH = 100_000


def nested(depth, leaf="1"):
    """[[[...leaf...]]] with `depth` arrays, as raw text (json.dumps would recurse)."""
    return "[" * depth + leaf + "]" * depth


def nested_objects(depth):
    return '{"a":' * depth + "1" + "}" * depth


class HostileInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer()
        cls.server.start()
        cls.sm = cls.server.client()
        cls.sm.create_model(ModelName="m", PrimaryContainer={"Image": "img"})

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def raw(self, body, target=None, path="/", service="sagemaker"):
        """POSTs the bytes `body` SigV4-signed with the default tenant's keys, as an X-Amz-Target
        operation when `target` is given, else to a native route; (status, parsed reply)."""
        ak, sk = self.server.profile_keys()
        data = body.encode() if isinstance(body, str) else body
        headers = ({"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.1"}
                   if target else {"Content-Type": "application/json"})
        req = botocore.awsrequest.AWSRequest(method="POST", url=self.server.url + path,
                                             data=data, headers=headers)
        botocore.auth.SigV4Auth(botocore.credentials.Credentials(ak, sk), service,
                                REGION).add_auth(req)
        prepared = req.prepare()
        r = urllib.request.Request(prepared.url, data=data, headers=dict(prepared.headers),
                                   method="POST")
        try:
            with urllib.request.urlopen(r, timeout=60) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def assert_still_serving(self):
        # The same tenant and the server as a whole: a crash would refuse the connection.
        names = [m["ModelName"] for m in self.sm.list_models()["Models"]]
        self.assertIn("m", names)
        self.assertEqual(self.server.proc.poll(), None, "the server exited")

    def assert_refused(self, status, reply, rule):
        self.assertEqual(status, 400, reply)
        self.assertEqual(reply.get("__type"), "ValidationException", reply)
        self.assertIn(rule, reply.get("message", ""), reply)
        self.assertLess(len(reply["message"]), 2000, "the message quotes too much of the input")

    def test_a_model_with_a_member_nested_a_hundred_thousand_deep_is_refused(self):
        body = ('{"ModelName":"deep","PrimaryContainer":{"Image":"img","Environment":'
                + nested_objects(DEPTH) + "}}")
        status, reply = self.raw(body, target="SageMaker.CreateModel")
        self.assert_refused(status, reply, "deeper than 64 levels (the JSON depth limit)")
        self.assert_still_serving()

    def test_an_endpoint_config_with_a_list_nested_a_hundred_thousand_deep_is_refused(self):
        variant = json.dumps(seed_variant())
        body = ('{"EndpointConfigName":"deep","ProductionVariants":[' + variant + '],"Tags":'
                + nested(DEPTH) + "}")
        status, reply = self.raw(body, target="SageMaker.CreateEndpointConfig")
        self.assert_refused(status, reply, "the JSON depth limit")
        self.assert_still_serving()
        with self.assertRaises(botocore.exceptions.ClientError):
            self.sm.describe_endpoint_config(EndpointConfigName="deep")

    def test_a_fifty_thousand_character_name_fails_its_length_rule(self):
        name = "a" * 50_000
        for call, kwargs in (
                (self.sm.create_model, {"ModelName": name, "PrimaryContainer": {"Image": "i"}}),
                (self.sm.create_endpoint_config,
                 {"EndpointConfigName": name, "ProductionVariants": [seed_variant()]})):
            with self.assertRaises(botocore.exceptions.ClientError) as ctx:
                call(**kwargs)
            error = ctx.exception.response["Error"]
            self.assertEqual(error["Code"], "ValidationException")
            self.assertIn("Member must have length less than or equal to 63", error["Message"])
            self.assertNotIn("regular expression", error["Message"])
            self.assertLess(len(error["Message"]), 2000)
        self.assert_still_serving()

    def test_duplicate_keys_are_refused_naming_the_key(self):
        status, reply = self.raw('{"ModelName":"dup1","ModelName":"dup2",'
                                 '"PrimaryContainer":{"Image":"img"}}',
                                 target="SageMaker.CreateModel")
        self.assert_refused(status, reply, 'has the key "ModelName" more than once')
        variant = json.dumps(seed_variant())[:-1] + ',"VariantName":"again"}'
        status, reply = self.raw('{"EndpointConfigName":"dup","ProductionVariants":['
                                 + variant + "]}", target="SageMaker.CreateEndpointConfig")
        self.assert_refused(status, reply, 'has the key "VariantName" more than once')
        names = [m["ModelName"] for m in self.sm.list_models()["Models"]]
        self.assertNotIn("dup1", names)
        self.assertNotIn("dup2", names)
        self.assert_still_serving()

    def test_application_auto_scaling_refuses_deep_bodies(self):
        status, reply = self.raw('{"ServiceNamespace":' + nested(DEPTH) + "}",
                                 target="AnyScaleFrontendService.DescribeScalableTargets",
                                 service="application-autoscaling")
        self.assert_refused(status, reply, "the JSON depth limit")
        self.assert_still_serving()

    def test_the_queue_api_refuses_deep_bodies_and_duplicate_keys(self):
        status, reply = self.raw('{"name":"q","x":' + nested(DEPTH) + "}", path="/v1/queues")
        self.assertEqual(status, 400, reply)
        self.assertIn("the JSON depth limit", json.dumps(reply))
        status, reply = self.raw('{"name":"q","name":"r"}', path="/v1/queues")
        self.assertEqual(status, 400, reply)
        self.assertIn('has the key \\"name\\" more than once', json.dumps(reply))
        self.assert_still_serving()


if __name__ == "__main__":
    unittest.main()
