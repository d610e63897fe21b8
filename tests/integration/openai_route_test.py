"""The OpenAI-compatible route, POST /endpoints/{name}/openai/v1/chat/completions, against the
real `carve server` with a stdlib HTTP client: unary and streamed chat completions through the
router, bearer tokens from `carve token` and from a generator built the way AWS's are
(botocore's SigV4QueryAuth), an expired token, a token of another account, a token limited to
another endpoint, SigV4 instead of a token, and errors in OpenAI's shape. The answers are
type-checked against the `openai` npm package's own types (openai_types)."""

import base64
import json
import os
import re
import subprocess
import time
import unittest
import urllib.error
import urllib.request

import botocore.auth
import botocore.awsrequest
import botocore.credentials

import openai_types
from carve_harness import (REGION, SEED_LAYOUT, CarveServer, add_account, carve_bin,
                           component_spec, poll, seed_variant)

MESSAGES = [{"role": "user", "content": "hello carve"}]


class OpenAiRouteTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer()
        cls.server.start()
        try:
            cls.server.stop()  # The first start wrote the credentials; add a second account.
            add_account(cls.server.credentials_file, "other", "222222222222")
            cls.server.start()
            sm = cls.server.client()
            sm.create_model(ModelName="m", PrimaryContainer={
                "Image": "carve/testmodel", "Environment": {"CARVE_TESTMODEL_SPEED": "50"}})
            sm.create_endpoint_config(EndpointConfigName="ep",
                                      ProductionVariants=[seed_variant(SEED_LAYOUT)])
            sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
            sm.get_waiter("endpoint_in_service").wait(
                EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})
            sm.create_inference_component(
                InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
                Specification=component_spec("m", "mig-1g.5gb", memory_mb=1024),
                RuntimeConfig={"CopyCount": 1})
            poll(lambda: sm.describe_inference_component(
                InferenceComponentName="ic")["RuntimeConfig"]["CurrentCopyCount"] == 1,
                timeout_s=60, what="ic serving")
        except Exception:
            cls.server.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    def token(self, *args, profile="default"):
        out = subprocess.run(
            [carve_bin(), "token", "--credentials", self.server.credentials_file,
             "--profile", profile, "--endpoint-url", self.server.url, *args],
            capture_output=True, text=True, timeout=30, check=True)
        return out.stdout.strip()

    def post(self, body, headers, endpoint="ep"):
        """(status, content type, body bytes)."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.server.url}/endpoints/{endpoint}/openai/v1/chat/completions", data=data,
            headers={"Content-Type": "application/json", **headers}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.headers.get("Content-Type"), r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type"), e.read()

    def bearer(self, token):
        return {"Authorization": "Bearer " + token}

    def assertOpenAiError(self, status, body, want_status, want_code):
        self.assertEqual(status, want_status, body)
        err = json.loads(body)["error"]
        self.assertEqual(err["code"], want_code, err)
        self.assertIn(err["type"], ("invalid_request_error", "authentication_error",
                                    "not_found_error", "rate_limit_error", "server_error"))
        self.assertTrue(err["message"])
        return err

    def test_unary_chat_completion_with_a_bearer_token(self):
        status, ctype, body = self.post({"model": "ic", "messages": MESSAGES, "max_tokens": 4},
                                        self.bearer(self.token()))
        self.assertEqual(status, 200, body)
        self.assertTrue(ctype.startswith("application/json"), ctype)
        out = json.loads(body)
        self.assertEqual(out["object"], "chat.completion")
        self.assertEqual(out["usage"]["completion_tokens"], 4)
        self.assertTrue(out["choices"][0]["message"]["content"])

    def test_streaming_passes_the_containers_events_through_unchanged(self):
        req = {"model": "ic", "messages": MESSAGES, "max_tokens": 5, "stream": True}
        status, ctype, body = self.post(req, self.bearer(self.token()))
        self.assertEqual(status, 200, body)
        self.assertTrue(ctype.startswith("text/event-stream"), ctype)
        # The same request straight to the copy: the same events, but for their random ids.
        copy = next(w for n in self.server.nodes().values() for w in n["Workloads"]
                    if "/ic/" in w["id"] and w["state"] == "running")
        direct = urllib.request.Request(f"http://{copy['address']}/v1/chat/completions",
                                        data=json.dumps(req).encode(),
                                        headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(direct, timeout=30) as r:
            expected = r.read()

        def normal(b):
            b = re.sub(rb'"id":"[^"]*"', b'"id":""', b)
            return re.sub(rb'"created":[0-9]+', b'"created":0', b)
        self.assertEqual(normal(body), normal(expected))
        events = [line for line in body.decode().split("\n\n") if line]
        self.assertEqual(events[-1], "data: [DONE]")
        self.assertEqual(len(events), 6)

    def test_a_token_made_like_aws_generators_make_theirs_is_accepted(self):
        ak, sk = self.server.profile_keys()
        host = "runtime.sagemaker.us-east-1.amazonaws.com"
        request = botocore.awsrequest.AWSRequest(
            method="POST", url=f"https://{host}/", headers={"host": host},
            params={"Action": "CallWithBearerToken"})
        botocore.auth.SigV4QueryAuth(botocore.credentials.Credentials(ak, sk), "sagemaker",
                                     REGION, expires=3600).add_auth(request)
        presigned = request.url.replace("https://", "") + "&Version=1"
        token = "bedrock-api-key-" + base64.b64encode(presigned.encode()).decode()
        status, _, body = self.post({"model": "ic", "messages": MESSAGES}, self.bearer(token))
        self.assertEqual(status, 200, body)

    def test_an_expired_token_is_refused(self):
        token = self.token("--expires-in", "1")
        time.sleep(2.1)
        status, _, body = self.post({"model": "ic", "messages": MESSAGES}, self.bearer(token))
        err = self.assertOpenAiError(status, body, 403, "ExpiredTokenException")
        self.assertEqual(err["type"], "authentication_error")
        status, _, body = self.post({"model": "ic", "messages": MESSAGES},
                                    self.bearer("carve-api-key-bm90LWEtdG9rZW4="))
        # Bytes that are not a token at all ("not-a-token") are unknown, as a revoked token is.
        self.assertOpenAiError(status, body, 401, "UnrecognizedClientException")
        status, _, body = self.post({"model": "ic", "messages": MESSAGES}, {})
        self.assertOpenAiError(status, body, 403, "MissingAuthenticationToken")

    def test_a_token_of_another_account_or_endpoint_is_refused(self):
        status, _, body = self.post({"model": "ic", "messages": MESSAGES},
                                    self.bearer(self.token(profile="other")))
        err = self.assertOpenAiError(status, body, 400, "ValidationError")
        self.assertIn("ep", err["message"])
        status, _, body = self.post({"model": "ic", "messages": MESSAGES},
                                    self.bearer(self.token("--endpoint", "elsewhere")))
        err = self.assertOpenAiError(status, body, 403, "AccessDeniedException")
        self.assertIn("may invoke endpoint elsewhere only", err["message"])
        # Limited to this endpoint, it works.
        status, _, body = self.post({"model": "ic", "messages": MESSAGES},
                                    self.bearer(self.token("--endpoint", "ep")))
        self.assertEqual(status, 200, body)

    def test_sigv4_is_accepted_too_and_errors_are_in_openais_shape(self):
        ak, sk = self.server.profile_keys()
        url = f"{self.server.url}/endpoints/ep/openai/v1/chat/completions"
        data = json.dumps({"messages": MESSAGES, "max_tokens": 2}).encode()
        request = botocore.awsrequest.AWSRequest(
            method="POST", url=url, data=data, headers={
                "Content-Type": "application/json",
                "X-Amzn-SageMaker-Inference-Component": "ic"})
        botocore.auth.SigV4Auth(botocore.credentials.Credentials(ak, sk), "sagemaker",
                                REGION).add_auth(request)
        prepared = request.prepare()
        with urllib.request.urlopen(urllib.request.Request(
                url, data=data, headers=dict(prepared.headers), method="POST"), timeout=30) as r:
            self.assertEqual(json.loads(r.read())["usage"]["completion_tokens"], 2)
        token = self.bearer(self.token())
        status, _, body = self.post(b"not json", token)
        self.assertOpenAiError(status, body, 400, "ValidationError")
        status, _, body = self.post({"model": "ic", "messages": MESSAGES}, token, endpoint="nope")
        self.assertOpenAiError(status, body, 400, "ValidationError")

    def test_the_models_own_name_is_served_by_the_only_component(self):
        # OpenAI clients send the model's name, not a component's: the only component serves.
        status, _, body = self.post({"model": "meta-llama/Llama-3.1-8B-Instruct",
                                     "messages": MESSAGES, "max_tokens": 3},
                                    self.bearer(self.token()))
        self.assertEqual(status, 200, body)
        out = json.loads(body)
        self.assertEqual(out["usage"]["completion_tokens"], 3)
        # OpenAI's ChatCompletion: every required member, an OpenAI-shaped id.
        self.assertRegex(out["id"], r"^chatcmpl-[A-Za-z0-9]{29}$")
        self.assertEqual(out["object"], "chat.completion")
        self.assertIsInstance(out["created"], int)
        self.assertEqual(out["model"], "meta-llama/Llama-3.1-8B-Instruct")
        choice = out["choices"][0]
        self.assertEqual(set(choice), {"index", "message", "logprobs", "finish_reason"})
        self.assertEqual(choice["message"]["role"], "assistant")
        self.assertIn("refusal", choice["message"])

    def test_a_stream_reports_usage_only_when_asked(self):
        token = self.bearer(self.token())
        req = {"model": "ic", "messages": MESSAGES, "max_tokens": 3, "stream": True}
        for asked in (False, True):
            if asked:
                req["stream_options"] = {"include_usage": True}
            status, _, body = self.post(req, token)
            self.assertEqual(status, 200, body)
            events = [e[len("data: "):] for e in body.decode().split("\n\n") if e]
            self.assertEqual(events[-1], "[DONE]")
            chunks = [json.loads(e) for e in events[:-1]]
            self.assertEqual(chunks[0]["choices"][0]["delta"]["role"], "assistant")
            for c in chunks:
                self.assertEqual(c["object"], "chat.completion.chunk")
                self.assertIsInstance(c["created"], int)
            if asked:
                self.assertEqual(chunks[-1]["choices"], [])
                self.assertEqual(chunks[-1]["usage"]["completion_tokens"], 3)
                self.assertTrue(all(c["usage"] is None for c in chunks[:-1]))
            else:
                self.assertEqual(len(chunks), 3)
                self.assertTrue(all("usage" not in c for c in chunks))

    def test_answers_are_of_the_openai_clients_own_types(self):
        token = self.bearer(self.token())
        answers = []
        status, _, body = self.post({"model": "ic", "messages": MESSAGES, "max_tokens": 3},
                                    token)
        self.assertEqual(status, 200, body)
        answers.append(("unary", "ChatCompletion", json.loads(body)))
        for usage in (False, True):
            req = {"model": "ic", "messages": MESSAGES, "max_tokens": 3, "stream": True}
            if usage:
                req["stream_options"] = {"include_usage": True}
            status, _, body = self.post(req, token)
            self.assertEqual(status, 200, body)
            events = [e[len("data: "):] for e in body.decode().split("\n\n") if e]
            chunks = [json.loads(e) for e in events[:-1]]
            answers.append((f"chunks_{usage}".lower(), "ChatCompletionChunk[]", chunks))
        passed, output = openai_types.type_check(answers)
        self.assertTrue(passed, output)

        # The check can fail: the ways an answer used to differ from the schema, one each.
        unary = answers[0][2]
        broken = [dict(unary, created=None), dict(unary, object="chat.completions"),
                  dict(unary, choices=[dict(unary["choices"][0],
                                            message={"role": "bot", "content": "x",
                                                     "refusal": None})]),
                  dict(unary, logprobs=None)]
        del broken[0]["created"]
        passed, output = openai_types.type_check(
            [(f"broken{i}", "ChatCompletion", b) for i, b in enumerate(broken)])
        self.assertFalse(passed)
        for want in ("Property 'created' is missing", '"chat.completions"', '"bot"',
                     "'\"logprobs\"' does not exist in type 'ChatCompletion'"):
            self.assertIn(want, output)

    def test_other_paths_under_openai_get_openais_404(self):
        token = self.bearer(self.token())
        for method, path in (("GET", "/openai/v1/models"), ("POST", "/openai/v1/embeddings"),
                             ("GET", "/openai/v1/chat/completions")):
            req = urllib.request.Request(f"{self.server.url}/endpoints/ep{path}", headers=token,
                                         data=b"{}" if method == "POST" else None, method=method)
            with self.subTest(method=method, path=path):
                with self.assertRaises(urllib.error.HTTPError) as caught:
                    urllib.request.urlopen(req, timeout=30)
                err = json.loads(caught.exception.read())["error"]
                self.assertEqual(caught.exception.code, 404)
                self.assertEqual(err["type"], "invalid_request_error")
                self.assertTrue(err["message"].startswith(f"Invalid URL ({method} /v1/"), err)
        # A hostile path: bytes that are not UTF-8 and a long one are quoted safely, cut short.
        for path, most in (("/openai/v1/%FF%FE", 400), ("/openai/v1/" + "a" * 5000, 400)):
            req = urllib.request.Request(f"{self.server.url}/endpoints/ep{path}", headers=token)
            with self.subTest(path=path[:40]):
                with self.assertRaises(urllib.error.HTTPError) as caught:
                    urllib.request.urlopen(req, timeout=30)
                self.assertEqual(caught.exception.code, 404)
                err = json.loads(caught.exception.read())["error"]
                self.assertLess(len(err["message"]), most, err)
        # Without credentials: OpenAI's shape too, refused before anything is said of the path.
        req = urllib.request.Request(f"{self.server.url}/endpoints/ep/openai/v1/models")
        with self.assertRaises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(req, timeout=30)
        self.assertIn(caught.exception.code, (401, 403))
        self.assertEqual(json.loads(caught.exception.read())["error"]["type"],
                         "authentication_error")

    def test_a_valid_token_opens_only_the_openai_route(self):
        """A bearer token is a key to one endpoint's OpenAI route: every signed route refuses
        it, however valid, and says which principals it serves instead."""
        token = self.bearer(self.token())
        status, _, body = self.post({"model": "ic", "messages": MESSAGES, "max_tokens": 1}, token)
        self.assertEqual(status, 200, body)  # The token is good where it belongs.
        # The AWS protocol routes refuse it as AWS does (IncompleteSignature); carve's own routes
        # name themselves and whom they serve.
        aws = (403, "Unsupported Authorization Type; only AWS4-HMAC-SHA256 is accepted")
        native = (401, "does not take this bearer token; it serves")
        json11 = {"Content-Type": "application/x-amz-json-1.1"}
        for method, path, extra, body, (want_status, want) in (
                ("POST", "/", {"X-Amz-Target": "SageMaker.ListEndpoints", **json11}, b"{}", aws),
                ("POST", "/", {"X-Amz-Target": "AnyScaleFrontendService.DescribeScalableTargets",
                               **json11}, b'{"ServiceNamespace":"sagemaker"}', aws),
                ("POST", "/endpoints/ep/invocations", {"Content-Type": "application/json"},
                 json.dumps({"inputs": "hi"}).encode(), native),
                ("GET", "/v1/queues", {}, None, native),
                ("GET", "/v1/fleet", {}, None, native)):
            req = urllib.request.Request(f"{self.server.url}{path}", data=body, method=method,
                                         headers={**token, **extra})
            with self.subTest(method=method, path=path, target=extra.get("X-Amz-Target")):
                with self.assertRaises(urllib.error.HTTPError) as caught:
                    urllib.request.urlopen(req, timeout=30)
                text = caught.exception.read().decode()
                self.assertEqual(caught.exception.code, want_status, text)
                self.assertIn(want, text)

    def test_carve_token_refuses_more_than_12_hours(self):
        out = subprocess.run(
            [carve_bin(), "token", "--credentials", self.server.credentials_file,
             "--expires-in", "43201"], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("43200", out.stderr)


if __name__ == "__main__":
    unittest.main()
