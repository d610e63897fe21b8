"""Principals (docs/security.md): a hostile second tenant, a scraper and anonymous callers
against a live `carve server`, with the stock clients and raw signed HTTP.

Account A is the server's first key, an operator; account B is an ordinary tenant. Every route
of the live route table (GET /v1/routes) is called by every principal it does not serve, and
each must be refused (401 or 403) before its handler runs. Then the attacks the review ran as B:
registering a node, reporting A's copy as its own, reading the fleet-wide views, scraping
/metrics. Each is refused and changes nothing, and A's invocations stay answered by A's copy."""

import json
import re
import unittest
import urllib.error
import urllib.request

import botocore.auth
import botocore.awsrequest
import botocore.credentials

from carve_harness import (REGION, SEED_LAYOUT, CarveServer, component_spec, poll,
                           seed_variant)

# The principals a caller can be, and how the test makes one of each.
CALLERS = ("anonymous", "tenant", "operator", "scraper", "node", "joiner")


class PrincipalsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A is the server's first key, the operator; B an ordinary tenant.
        cls.server = CarveServer(carve_ms=10).start_with_second_account("b", "222222222222")
        try:
            cls._deploy()
            # A node of its own ("thief", joined with an operator's token), and a fresh token.
            cls.join_token = cls.server.node_token()
            status, body = cls.join(cls.server.node_token(), "thief")
            assert status == 201, body
            cls.node_credential = json.loads(body)["credential"]
        except Exception:
            cls.server.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.cleanup()

    @classmethod
    def _deploy(cls):
        sm = cls.server.client()
        sm.create_model(ModelName="m", PrimaryContainer={
            "Image": "carve/testmodel", "Environment": {"CARVE_TESTMODEL_SPEED": "50",
                                                       "SECRET": "a-secret-of-account-a"}})
        sm.create_endpoint_config(EndpointConfigName="ep",
                                  ProductionVariants=[seed_variant(SEED_LAYOUT)])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        sm.get_waiter("endpoint_in_service").wait(
            EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        spec = component_spec("m", "mig-1g.5gb")
        sm.create_inference_component(
            InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
            Specification=spec, RuntimeConfig={"CopyCount": 1})
        poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")[
            "InferenceComponentStatus"] == "InService", timeout_s=60, what="ic InService")

    @classmethod
    def join(cls, token, node_id):
        """POST /v1/agent/join with a bootstrap token: (status, body text)."""
        r = urllib.request.Request(cls.server.url + "/v1/agent/join",
                                   data=json.dumps({"node_id": node_id}).encode(), method="POST",
                                   headers={"Authorization": "Bearer " + token,
                                            "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=30) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    # ---- one request as each principal ----

    def call(self, caller, method, path, body=b"", headers=None):
        """(status, body text) of one request made as `caller`."""
        headers = dict(headers or {})
        if body and "Content-Type" not in headers:
            headers["Content-Type"] = "application/json"
        if caller in ("tenant", "operator"):
            ak, sk = self.server.profile_keys("b" if caller == "tenant" else "default")
            req = botocore.awsrequest.AWSRequest(method=method, url=self.server.url + path,
                                                 data=body, headers=headers)
            botocore.auth.SigV4Auth(botocore.credentials.Credentials(ak, sk), "sagemaker",
                                    REGION).add_auth(req)
            headers = dict(req.prepare().headers)
        elif caller == "scraper":
            headers["Authorization"] = "Bearer " + self.server.scrape_token()
        elif caller == "node":
            headers["Authorization"] = "Bearer " + self.node_credential
        elif caller == "joiner":
            headers["Authorization"] = "Bearer " + self.join_token
        r = urllib.request.Request(self.server.url + path, data=body or None, headers=headers,
                                   method=method)
        try:
            with urllib.request.urlopen(r, timeout=30) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def routes(self):
        status, text = self.call("operator", "GET", "/v1/routes")
        self.assertEqual(status, 200, text)
        return json.loads(text)["routes"]

    # ---- the route table ----

    def test_every_route_refuses_every_principal_it_does_not_serve(self):
        routes = self.routes()
        self.assertGreater(len(routes), 25)
        serves_of = {(r["method"], r["pattern"]): set(r["serves"].split(", ")) for r in routes}
        # The rows this issue fixed, as the server holds them.
        self.assertEqual(serves_of[("POST", "/v1/agent/register")], {"node"})
        self.assertEqual(serves_of[("POST", "/v1/agent/join")], {"joiner"})
        self.assertEqual(serves_of[("POST", "/v1/node-tokens")], {"operator"})
        self.assertEqual(serves_of[("DELETE", "/v1/nodes/{node}/credential")], {"operator"})
        self.assertEqual(serves_of[("GET", "/v1/nodes")], {"operator"})
        self.assertEqual(serves_of[("GET", "/v1/cluster")], {"operator"})
        self.assertEqual(serves_of[("GET", "/metrics")], {"operator", "scraper"})
        self.assertEqual(serves_of[("GET", "/v1/routes")], {"operator"})
        # What each caller proves to be: an operator's key is also a tenant of its account.
        proves = {"anonymous": {"anonymous"}, "tenant": {"tenant"},
                  "operator": {"tenant", "operator"}, "scraper": {"scraper"},
                  "node": {"node"}, "joiner": {"joiner"}}
        refused = 0
        for r in routes:
            serves = serves_of[(r["method"], r["pattern"])]
            if "anonymous" in serves:
                continue  # Served to anyone: nothing to refuse.
            path = re.sub(r"\{[^}]+\}", "x", r["pattern"])
            headers = {"X-Amz-Target": "SageMaker.ListModels"} if path == "/" else {}
            body = b"{}" if r["method"] in ("POST", "PUT") else b""
            for caller in CALLERS:
                if proves[caller] & serves:
                    continue
                with self.subTest(route=f'{r["method"]} {r["pattern"]}', caller=caller):
                    status, text = self.call(caller, r["method"], path, body, headers)
                    self.assertIn(status, (401, 403), text)
                    refused += 1
        self.assertGreater(refused, 50)

    def test_a_refusal_names_the_route_and_whom_it_serves(self):
        status, text = self.call("tenant", "GET", "/v1/nodes")
        self.assertEqual(status, 403)
        err = json.loads(text)
        self.assertEqual(err["__type"], "AccessDeniedException")
        self.assertEqual(err["message"],
                         "GET /v1/nodes serves operator; the caller is tenant")

    # ---- the attacks ----

    def node_ids(self):
        return set(self.server.nodes())

    def test_a_tenant_cannot_register_report_or_poll_as_a_node(self):
        before = self.node_ids()
        reg = {"node_id": "evil", "instance_type": "ml.p4d.24xlarge", "driver": "sim"}
        status, _ = self.call("tenant", "POST", "/v1/agent/register", json.dumps(reg).encode())
        self.assertEqual(status, 403)
        node = sorted(before)[0]
        for method, path, body in [
                ("POST", "/v1/agent/heartbeat", {"node_id": node}),
                ("POST", "/v1/agent/status", {"node_id": node, "workloads": []}),
                ("GET", f"/v1/agent/desired?node={node}", None)]:
            with self.subTest(path=path):
                status, text = self.call("tenant", method, path,
                                         json.dumps(body).encode() if body else b"")
                self.assertEqual(status, 403, text)
                self.assertNotIn("a-secret-of-account-a", text)
        self.assertEqual(self.node_ids(), before)

    def test_a_tenant_sees_no_fleet_wide_view_and_no_host_path(self):
        for path in ("/v1/nodes", "/v1/cluster", "/v1/routes"):
            with self.subTest(path=path):
                status, text = self.call("tenant", "GET", path)
                self.assertEqual(status, 403)
                self.assertNotIn(self.server.data_dir, text)
        status, text = self.call("operator", "GET", "/v1/cluster")
        self.assertEqual(status, 200, text)

    def test_metrics_need_the_scrape_token_or_an_operator(self):
        self.assertEqual(self.call("scraper", "GET", "/metrics")[0], 200)
        self.assertEqual(self.call("operator", "GET", "/metrics")[0], 200)
        status, text = self.call("anonymous", "GET", "/metrics")
        self.assertEqual(status, 403)
        self.assertNotIn("carve_", text)
        status, text = self.call("tenant", "GET", "/metrics")
        self.assertEqual(status, 403)
        self.assertNotIn("carve_", text)
        status, text = self.call("anonymous", "GET", "/metrics",
                                 headers={"Authorization": "Bearer " + "0" * 64})
        self.assertEqual(status, 401)
        self.assertNotIn("carve_", text)

    def test_a_node_cannot_take_over_another_nodes_copy(self):
        """The hijack: a node reports A's copy as running at its own address. Even a node that
        joined properly ("thief", with an operator's token) cannot: the copy stays where it was
        placed, and A's invocations keep reaching it."""
        nodes = self.server.nodes()
        placed = [(n, w) for n, node in nodes.items() for w in node["Workloads"]
                  if w["id"].split("/")[1:2] == ["ic"] and w["state"] == "running"]
        self.assertEqual(len(placed), 1, nodes)
        home, copy = placed[0]
        reg = {"node_id": "thief", "instance_type": "ml.p4d.24xlarge", "driver": "sim"}
        status, text = self.call("node", "POST", "/v1/agent/register", json.dumps(reg).encode())
        self.assertEqual(status, 200, text)
        epoch = json.loads(text)["epoch"]
        forged = {"node_id": "thief", "epoch": epoch, "status_version": 1,
                  "workloads": [{"id": copy["id"], "state": "running",
                                 "address": "127.0.0.1:9", "port": 9}]}
        status, text = self.call("node", "POST", "/v1/agent/status", json.dumps(forged).encode())
        self.assertEqual(status, 200, text)
        # Nor can it speak as the copy's own node.
        forged["node_id"] = home
        status, text = self.call("node", "POST", "/v1/agent/status", json.dumps(forged).encode())
        self.assertEqual(status, 403, text)
        self.assertIn("a node speaks only for itself", text)
        after = self.server.nodes()
        self.assertEqual([w["id"] for w in after["thief"]["Workloads"]], [])
        self.assertIn(copy["id"], [w["id"] for w in after[home]["Workloads"]])
        rt = self.server.boto_client("sagemaker-runtime")
        for _ in range(3):
            out = rt.invoke_endpoint(
                EndpointName="ep", InferenceComponentName="ic", ContentType="application/json",
                Body=json.dumps({"inputs": "hi", "parameters": {"max_new_tokens": 2}}))
            self.assertIn("generated_text", json.loads(out["Body"].read()))

    def test_a_node_id_outside_the_alphabet_is_refused(self):
        before = self.node_ids()
        for bad in ("../../etc", "a" * 64, "-rf"):
            with self.subTest(node=bad):
                status, text = self.join(self.join_token, bad)
                self.assertEqual(status, 400, text)
                self.assertIn("node_id", text)
        self.assertEqual(self.node_ids(), before)
        self.assertNotIn("../../etc", self.credentialed())

    def credentialed(self):
        status, body = self.server.signed_get("/v1/node-credentials")
        self.assertEqual(status, 200, body)
        return {c["node_id"] for c in body["Credentials"]}


if __name__ == "__main__":
    unittest.main()
