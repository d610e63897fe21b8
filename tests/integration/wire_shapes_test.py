"""The check every suite's traffic goes through (wire_shapes) can fail: each rule it holds
bodies to is broken once here, on botocore's real models, and once through the stock clients
against a stand-in server that answers whatever the test tells it to."""

import http.server
import json
import threading
import unittest

import botocore.exceptions
import botocore.session

import wire_shapes
from carve_harness import CarveServer

SAGEMAKER = botocore.session.get_session().get_service_model("sagemaker")
AUTOSCALING = botocore.session.get_session().get_service_model("application-autoscaling")
RUNTIME = botocore.session.get_session().get_service_model("sagemaker-runtime")


def endpoint(**changes):
    body = {"EndpointName": "e", "EndpointArn": "arn:aws:sagemaker:us-east-1:123456789012:"
            "endpoint/e", "EndpointStatus": "InService", "CreationTime": 1764892800.5,
            "LastModifiedTime": 1764892800}
    body.update(changes)
    return json.dumps({k: v for k, v in body.items() if v is not None}).encode()


def check(model, operation, status, body, headers=None):
    return wire_shapes.check_response(model.operation_model(operation), status, body,
                                      headers or {})


class ShapesTest(unittest.TestCase):
    def violation(self, *args):
        with self.assertRaises(wire_shapes.WireViolation) as e:
            check(*args)
        return str(e.exception)

    def test_a_body_of_the_output_shape_passes(self):
        self.assertIsNone(check(SAGEMAKER, "DescribeEndpoint", 200, endpoint()))
        self.assertIsNone(check(SAGEMAKER, "DeleteModel", 200, b""))

    def test_each_broken_rule_is_named_with_its_path(self):
        self.assertIn("EndpointName: expected a string",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 200, endpoint(EndpointName=5)))
        self.assertIn("required member 'EndpointStatus'",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 200,
                                     endpoint(EndpointStatus=None)))
        self.assertIn("'Running' is not in the enum of EndpointStatus",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 200,
                                     endpoint(EndpointStatus="Running")))
        self.assertIn("member 'Colour' is not in the model's DescribeEndpointOutput",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 200, endpoint(Colour="red")))
        self.assertIn("CreationTime: expected epoch seconds",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 200,
                                     endpoint(CreationTime="2026-12-05T00:00:00Z")))
        self.assertIn("length 64 is above the model's max 63",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 200,
                                     endpoint(EndpointName="e" * 64)))
        self.assertIn("does not match EndpointName's pattern",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 200,
                                     endpoint(EndpointName="a_b")))
        self.assertIn("the body is not JSON",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 200, b"<html>"))
        self.assertIn("has no output", self.violation(SAGEMAKER, "DeleteModel", 200, b"[1]"))

    def test_nested_values_are_checked(self):
        bad = json.loads(endpoint(ProductionVariants=[{"VariantName": "v",
                                                       "CurrentInstanceCount": "2"}]))
        self.assertIn("ProductionVariants[0].CurrentInstanceCount: expected an integer",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 200, json.dumps(bad).encode()))
        bad = {"ScalableTargets": [{"ServiceNamespace": "sagemaker", "ResourceId": "r",
                                    "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
                                    "MinCapacity": 1, "MaxCapacity": 2, "RoleARN": "arn",
                                    "CreationTime": 1, "SuspendedState": {"Nope": True}}]}
        self.assertIn("SuspendedState: member 'Nope'",
                      self.violation(AUTOSCALING, "DescribeScalableTargets", 200,
                                     json.dumps(bad).encode()))

    def test_an_error_must_be_listed_for_its_operation_or_common(self):
        body = json.dumps({"__type": "ValidationException", "message": "no"}).encode()
        self.assertEqual(check(SAGEMAKER, "DescribeEndpoint", 400, body), "ValidationException")
        limit = json.dumps({"__type": "ResourceLimitExceeded", "Message": "full"}).encode()
        self.assertEqual(check(SAGEMAKER, "CreateEndpoint", 400, limit), "ResourceLimitExceeded")
        in_use = json.dumps({"__type": "ResourceInUse", "message": "busy"}).encode()
        self.assertIn("ResourceInUse is neither listed for DeleteEndpoint",
                      self.violation(SAGEMAKER, "DeleteEndpoint", 400, in_use))
        self.assertIn("carries no message",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 400,
                                     b'{"__type": "ValidationException"}'))
        self.assertIn("an error without a code",
                      self.violation(SAGEMAKER, "DescribeEndpoint", 400, b'{"message": "x"}'))

    def test_a_refusal_of_the_http_layer_must_carry_its_own_status(self):
        big = json.dumps({"__type": "RequestEntityTooLarge", "message": "over"}).encode()
        self.assertEqual(check(SAGEMAKER, "CreateModel", 413, big), "RequestEntityTooLarge")
        self.assertIn("is the HTTP layer's 413, not 400",
                      self.violation(SAGEMAKER, "CreateModel", 400, big))

    def test_an_errors_own_members_are_checked(self):
        # ModelError's members, located by x-amzn-ErrorType as botocore reads rest-json.
        headers = {"x-amzn-ErrorType": "ModelError:http://internal.amazon.com/coral/"}
        good = json.dumps({"message": "m", "OriginalStatusCode": 500}).encode()
        self.assertEqual(check(RUNTIME, "InvokeEndpoint", 424, good, headers), "ModelError")
        bad = json.dumps({"message": "m", "OriginalStatusCode": "500"}).encode()
        self.assertIn("OriginalStatusCode: expected an integer",
                      self.violation(RUNTIME, "InvokeEndpoint", 424, bad, headers))


class StandIn(http.server.BaseHTTPRequestHandler):
    """Answers every POST with the body the test set."""
    answer = (200, b"{}")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, body = StandIn.answer
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


class ClientsTest(unittest.TestCase):
    """The hooks as the suites use them: boto3 clients from the harness and its aws CLI."""

    @classmethod
    def setUpClass(cls):
        cls.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()
        cls.server = CarveServer()  # Never started: its clients talk to the stand-in.
        cls.server.port = cls.httpd.server_address[1]
        with open(cls.server.credentials_file, "w", encoding="utf-8") as f:
            f.write("[default]\naws_access_key_id = AKIAAAAAAAAAAAAAAAAA\n"
                    "aws_secret_access_key = secret\n")

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        cls.httpd.server_close()
        cls.server.cleanup()

    def test_boto3_calls_fail_on_a_body_botocore_would_take(self):
        StandIn.answer = (200, endpoint())
        self.assertEqual(self.server.client().describe_endpoint(EndpointName="e")
                         ["EndpointStatus"], "InService")
        StandIn.answer = (200, endpoint(EndpointStatus="Running"))
        with self.assertRaisesRegex(wire_shapes.WireViolation, "not in the enum"):
            self.server.client().describe_endpoint(EndpointName="e")
        StandIn.answer = (400, b'{"__type": "ResourceInUse", "message": "busy"}')
        with self.assertRaisesRegex(wire_shapes.WireViolation, "ResourceInUse is neither"):
            self.server.boto_client("sagemaker").delete_endpoint(EndpointName="e")

    def test_the_aws_cli_reports_a_body_it_printed_without_complaint(self):
        StandIn.answer = (200, endpoint())
        self.assertEqual(self.server.aws("describe-endpoint", "--endpoint-name", "e")
                         ["EndpointStatus"], "InService")
        StandIn.answer = (200, endpoint(EndpointArn=7))
        with self.assertRaisesRegex(wire_shapes.WireViolation,
                                    "describe-endpoint .*EndpointArn: expected a string"):
            self.server.aws("describe-endpoint", "--endpoint-name", "e")

    def test_an_error_the_client_expects_still_passes(self):
        StandIn.answer = (400, b'{"__type": "ValidationException", "message": "Could not find"}')
        with self.assertRaises(botocore.exceptions.ClientError):
            self.server.client().describe_endpoint(EndpointName="e")


if __name__ == "__main__":
    unittest.main()
