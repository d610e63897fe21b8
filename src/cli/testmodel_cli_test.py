"""`carve testmodel` driven as a user would: start it on port 0, call it over HTTP."""
import http.client
import json
import os
import re
import statistics
import subprocess
import threading
import time
import unittest

CARVE = os.environ.get("CARVE_BIN", "carve")
# In a sanitizer build (CTest sets CARVE_SANITIZE) the testmodel runs several times slower; the
# pacing checks then measure the instrumentation, so they skip.
TIMING = unittest.skipIf(os.environ.get("CARVE_SANITIZE"),
                         "timing accuracy is not measurable in a sanitizer build")
MODEL = "llama-3.1-8b"
TARGET = "h100-80gb:3g.40gb"


class Testmodel:
    def __init__(self, *extra):
        self.proc = subprocess.Popen(
            [CARVE, "testmodel", "--port", "0", "--model", MODEL, "--target", TARGET, *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        self.port = None
        while time.monotonic() < deadline and self.port is None:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"listening on [\d.]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
        if self.port is None:
            self.stop()
            raise AssertionError("testmodel did not report a port: " + self.proc.stderr.read())

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def request(self, method, path, body=None):
        c = self.conn()
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def stream(self, path, body):
        """Yields (arrival time, event payload) for each SSE data line."""
        c = self.conn()
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200, r.status
        assert r.getheader("Content-Type").startswith("text/event-stream")
        try:
            while True:
                line = r.readline()
                if not line:
                    return
                line = line.decode().strip()
                if line.startswith("data: "):
                    yield time.monotonic(), line[len("data: "):]
        finally:
            c.close()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


class TestmodelServesBothApis(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tm = Testmodel("--speed", "20")

    @classmethod
    def tearDownClass(cls):
        cls.tm.stop()
        if cls.tm.proc.returncode != 0:  # SIGTERM is a clean stop
            raise AssertionError(f"testmodel exited with {cls.tm.proc.returncode}")

    def test_help_says_it_is_a_simulator(self):
        out = subprocess.run([CARVE, "testmodel", "--help"], capture_output=True, text=True)
        self.assertIn("SIMULATED", out.stdout)

    def test_ping_answers_200(self):
        status, _ = self.tm.request("GET", "/ping")
        self.assertEqual(status, 200)

    def test_info_reports_the_pacing_model(self):
        status, data = self.tm.request("GET", "/info")
        self.assertEqual(status, 200)
        info = json.loads(data)
        self.assertTrue(info["simulator"])
        self.assertEqual(info["model"], MODEL)
        self.assertGreater(info["decode_step_ms_batch1"], 0)

    def test_invocations_generate_max_new_tokens(self):
        status, data = self.tm.request(
            "POST", "/invocations", {"inputs": "x" * 40, "parameters": {"max_new_tokens": 5}})
        self.assertEqual(status, 200, data)
        out = json.loads(data)
        self.assertEqual(out["usage"]["completion_tokens"], 5)
        self.assertEqual(out["usage"]["prompt_tokens"], 10)
        self.assertTrue(out["generated_text"])

    def test_invocations_reject_a_bad_body_naming_the_field(self):
        status, data = self.tm.request("POST", "/invocations", {"parameters": {}})
        self.assertEqual(status, 400)
        self.assertIn("inputs", json.loads(data)["error"]["message"])

    def test_completions_stream_server_sent_events(self):
        events = [e for _, e in self.tm.stream(
            "/v1/completions", {"prompt": "hello", "max_tokens": 6, "stream": True,
                                "stream_options": {"include_usage": True}})]
        self.assertEqual(events[-1], "[DONE]")
        chunks = [json.loads(e) for e in events[:-1]]
        # Six tokens, then (asked for with include_usage) one chunk with the usage, as OpenAI's.
        self.assertEqual(len(chunks), 7)
        self.assertEqual(chunks[-1]["choices"], [])
        self.assertEqual(chunks[-1]["usage"]["completion_tokens"], 6)
        self.assertEqual(chunks[-2]["choices"][0]["finish_reason"], "length")

    def test_chat_completions_answer_with_usage(self):
        status, data = self.tm.request("POST", "/v1/chat/completions", {
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3})
        self.assertEqual(status, 200, data)
        out = json.loads(data)
        self.assertEqual(out["choices"][0]["message"]["role"], "assistant")
        self.assertEqual(out["usage"]["completion_tokens"], 3)

    def test_chat_stream_ends_with_done(self):
        events = [e for _, e in self.tm.stream("/v1/chat/completions", {
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": True})]
        self.assertEqual(events[-1], "[DONE]")
        self.assertEqual(len(events), 5)
        self.assertIn("content", json.loads(events[0])["choices"][0]["delta"])


class TestmodelPacing(unittest.TestCase):
    def setUp(self):
        self.tm = Testmodel()  # speed 1: the model's own pace

    def tearDown(self):
        self.tm.stop()

    def decode_step_ms(self):
        return json.loads(self.tm.request("GET", "/info")[1])["decode_step_ms_batch1"]

    @TIMING
    def test_inter_token_latency_alone_matches_the_decode_step_within_10_percent(self):
        body = {"prompt": "x" * 512, "max_tokens": 41, "stream": True}  # 128 prompt tokens
        times = [t for t, e in self.tm.stream("/v1/completions", body) if e != "[DONE]"]
        self.assertEqual(len(times), 41)
        itl_ms = statistics.median(b - a for a, b in zip(times, times[1:])) * 1e3
        want = self.decode_step_ms()
        self.assertLess(abs(itl_ms - want) / want, 0.10, f"measured {itl_ms:.2f} ms, model {want:.2f}")

    def test_concurrent_requests_share_decode_steps(self):
        body = {"prompt": "x" * 64, "max_tokens": 30, "stream": True}
        durations = []

        def one():
            t0 = time.monotonic()
            n = sum(1 for _ in self.tm.stream("/v1/completions", body))
            self.assertEqual(n, 31)
            durations.append(time.monotonic() - t0)

        one()
        alone = durations.pop()
        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Four at once take about as long as one alone (sequentially they would take 4x).
        self.assertLess(max(durations), 1.6 * alone, f"alone {alone:.3f}s, four {durations}")


class TestmodelFailureKnobs(unittest.TestCase):
    def test_fail_invocations_answers_500(self):
        tm = Testmodel("--fail-invocations")
        try:
            status, _ = tm.request("POST", "/invocations", {"inputs": "x"})
            self.assertEqual(status, 500)
            self.assertEqual(tm.request("GET", "/ping")[0], 200)
        finally:
            tm.stop()

    def test_fail_ping_answers_503(self):
        tm = Testmodel("--fail-ping")
        try:
            self.assertEqual(tm.request("GET", "/ping")[0], 503)
        finally:
            tm.stop()

    def test_fail_after_tokens_cuts_the_stream(self):
        tm = Testmodel("--speed", "50", "--fail-after-tokens", "3")
        try:
            events = []
            try:  # the connection is cut: python may report it or just see the end
                for _, e in tm.stream("/v1/completions",
                                      {"prompt": "x", "max_tokens": 10, "stream": True}):
                    events.append(e)
            except http.client.HTTPException:
                pass
            self.assertEqual(len(events), 4, events)
            self.assertNotIn("[DONE]", events)
            self.assertIn("error", json.loads(events[-1]))
        finally:
            tm.stop()

    def test_control_kills_the_process_on_the_nth_invocation_without_answering(self):
        tm = Testmodel("--speed", "50", "--control")
        try:
            status, body = tm.request("POST", "/control", {"exit_on_invocation": 2})
            self.assertEqual((status, json.loads(body)), (200, {"exit_on_invocation": 2}))
            status, body = tm.request("POST", "/invocations", {"inputs": "x", "parameters": {
                "max_new_tokens": 2}})
            self.assertEqual(status, 200, body)
            with self.assertRaises((http.client.HTTPException, ConnectionError)):
                tm.request("POST", "/invocations", {"inputs": "x"})
            self.assertEqual(tm.proc.wait(timeout=10), -9)  # SIGKILL, as `kill -9` would.
            self.assertIn("as POST /control asked", tm.proc.stderr.read())
        finally:
            tm.stop()

    def test_control_is_absent_unless_asked_for_and_checks_its_body(self):
        tm = Testmodel()
        try:
            self.assertEqual(tm.request("POST", "/control", {"exit_on_invocation": 1})[0], 404)
            self.assertEqual(tm.request("POST", "/invocations", {"inputs": "x", "parameters": {
                "max_new_tokens": 1}})[0], 200)
        finally:
            tm.stop()
        tm = Testmodel("--control")
        try:
            status, body = tm.request("POST", "/control", {"exit_on_invocation": -1})
            self.assertEqual(status, 400)
            self.assertIn("exit_on_invocation", json.loads(body)["error"]["message"])
        finally:
            tm.stop()

    def test_env_selects_the_model_and_target(self):
        env = dict(os.environ, CARVE_MODEL="llama-3.1-8b", CARVE_TARGET="a100-80gb")
        proc = subprocess.Popen([CARVE, "--json", "testmodel", "--port", "0"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            port = json.loads(proc.stdout.readline())["port"]
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/info")
            self.assertEqual(json.loads(c.getresponse().read())["target"], "a100-80gb")
            c.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            proc.stdout.close()
            proc.stderr.close()

    def test_unknown_model_is_an_input_error(self):
        out = subprocess.run([CARVE, "testmodel", "--model", "no-such-model"],
                             capture_output=True, text=True, timeout=20)
        self.assertEqual(out.returncode, 2)
        self.assertIn("no-such-model", out.stderr)


if __name__ == "__main__":
    unittest.main()
