"""Node identity (docs/security.md, "Nodes"): a `carve agent` joins with an operator's bootstrap
token from `carve node token create`, keeps its own node credential, and speaks only for its
node; tokens expire and can be deleted; `carve node revoke` shuts a node out without a restart.
Driven with the carve CLI, real agents and raw HTTP against a live `carve server`. Each refusal
is checked to have changed nothing: no node registered, no credential written."""

import json
import os
import stat
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from carve_harness import CarveAgent, CarveServer, carve_bin, free_port, poll


def raw(server, method, path, bearer, body=None):
    """(status, body text) of one request with `Authorization: Bearer <bearer>`."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": "Bearer " + bearer}
    if data is not None:
        headers["Content-Type"] = "application/json"
    r = urllib.request.Request(server.url + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def read_credential(agent):
    with open(os.path.join(agent.data_dir, "node-credential")) as f:
        return json.load(f)["credential"]


class JoinTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer(port=free_port(), extra_args=[
            "--no-local-agent", "--node-timeout-ms", "1500", "--heartbeat-ms", "300"])
        cls.addClassCleanup(cls.server.cleanup)
        cls.server.start()

    def cli(self, *args, check=True):
        r = subprocess.run([carve_bin(), *args, "--endpoint-url", self.server.url,
                            "--credentials", self.server.credentials_file],
                           capture_output=True, text=True, timeout=60)
        if check:
            self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def token(self, *args):
        r = self.cli("node", "token", "create", *args)
        token = r.stdout.strip()
        self.assertRegex(token, r"^[a-z0-9]{6}\.[a-z0-9]{16}$")
        self.assertIn("carve agent --server " + self.server.url + " --join-token " + token,
                      r.stderr)
        return token

    def credentialed(self):
        r = self.cli("node", "credentials", "--json")
        return {c["node_id"]: c for c in json.loads(r.stdout)["Credentials"]}

    def ready(self, node):
        return self.server.nodes().get(node, {}).get("Status") == "Ready"

    def agent(self, node, token=None):
        """A `carve agent` for `node` that joins with `token` (a fresh one when None)."""
        a = CarveAgent(self.server, node)
        self.addCleanup(a.cleanup)
        if token is not None:
            a.server = _TokenSource(self.server, token)
        return a

    def test_an_agent_joins_with_a_token_and_keeps_its_own_credential(self):
        token = self.token("--ttl", "10m", "--description", "rack 7")
        listed = json.loads(self.cli("node", "token", "list", "--json").stdout)["Tokens"]
        mine = [t for t in listed if t["id"] == token[:6]]
        self.assertEqual(len(mine), 1, listed)
        self.assertEqual(mine[0]["description"], "rack 7")
        self.assertNotIn("token", mine[0], "a listed token shows its secret")
        self.assertNotIn(token[7:], self.cli("node", "token", "list").stdout)

        a = self.agent("node-a", token).start()
        poll(lambda: self.ready("node-a"), timeout_s=60, what="node-a Ready")
        path = os.path.join(a.data_dir, "node-credential")
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        credential = read_credential(a)
        self.assertRegex(credential, r"^carve-node\.[0-9a-f]{16}\.[0-9a-f]{64}$")
        self.assertEqual(self.credentialed()["node-a"]["joined_with"], token[:6])
        # A restart needs no token: the credential in the data dir speaks for the node.
        a.stop()
        a.start()
        poll(lambda: self.ready("node-a"), timeout_s=60, what="node-a Ready again")
        self.assertEqual(read_credential(a), credential)

    def test_a_node_speaks_only_for_itself(self):
        a = self.agent("node-b").start()
        poll(lambda: self.ready("node-b"), timeout_s=60, what="node-b Ready")
        mine = read_credential(a)
        before = set(self.server.nodes())
        # As another node, or a node that does not exist: refused, nothing registered.
        for node in ("node-c", "node-b2"):
            reg = {"node_id": node, "instance_type": "ml.p4d.24xlarge", "driver": "sim"}
            status, text = raw(self.server, "POST", "/v1/agent/register", mine, reg)
            self.assertEqual(status, 403, text)
            self.assertIn("a node speaks only for itself", text)
        status, text = raw(self.server, "GET", "/v1/agent/desired?node=node-c&wait_ms=0", mine)
        self.assertEqual(status, 403, text)
        self.assertEqual(set(self.server.nodes()), before)
        # Joining as node-b again, even with a valid token, is refused: the id is bound.
        status, text = raw(self.server, "POST", "/v1/agent/join", self.token(),
                           {"node_id": "node-b"})
        self.assertEqual(status, 409, text)
        self.assertIn("carve node revoke node-b", text)
        self.assertEqual(read_credential(a), mine)
        self.assertTrue(self.ready("node-b"))
        # The node credential opens no other door.
        for method, path in (("GET", "/v1/nodes"), ("GET", "/v1/queues"),
                             ("POST", "/v1/node-tokens"), ("POST", "/v1/agent/join")):
            status, text = raw(self.server, method, path, mine, {} if method == "POST" else None)
            self.assertIn(status, (401, 403), f"{method} {path}: {text}")
        # An operator's key speaks for no node.
        status, body = self.server.signed("POST", "/v1/agent/heartbeat", {"node_id": "node-b"})
        self.assertEqual(status, 403, body)

    def test_an_expired_or_deleted_token_joins_nothing(self):
        expired = self.token("--ttl", "1")
        deleted = self.token()
        self.cli("node", "token", "delete", deleted[:6])
        time.sleep(1.2)
        for token in (expired, deleted, deleted[:-1] + "x", deleted + "0"):
            with self.subTest(token=token):
                status, text = raw(self.server, "POST", "/v1/agent/join", token,
                                   {"node_id": "node-d"})
                self.assertEqual(status, 401, text)
        self.assertNotIn("node-d", self.credentialed())
        r = self.cli("node", "token", "delete", deleted[:6], check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no bootstrap token " + deleted[:6], r.stderr)
        r = self.cli("node", "token", "create", "--ttl", "8d", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("ttl_seconds 691200", r.stderr)

    def test_a_revoked_node_is_refused_from_its_next_request_without_a_restart(self):
        a = self.agent("node-e").start()
        poll(lambda: self.ready("node-e"), timeout_s=60, what="node-e Ready")
        credential = read_credential(a)
        r = self.cli("node", "revoke", "node-e")
        self.assertIn("node-e: credential revoked", r.stderr)
        status, text = raw(self.server, "POST", "/v1/agent/heartbeat", credential,
                           {"node_id": "node-e"})
        self.assertEqual(status, 401, text)
        self.assertIn("unknown or was revoked", text)
        poll(lambda: self.server.nodes()["node-e"]["Status"] != "Ready", timeout_s=30,
             what="node-e no longer Ready")
        self.assertNotIn("node-e", self.credentialed())
        self.assertEqual(self.cli("node", "revoke", "node-e", check=False).returncode, 1)
        # It comes back only by joining again, with a new token.
        a.stop()
        os.remove(os.path.join(a.data_dir, "node-credential"))
        a.start()
        poll(lambda: self.ready("node-e"), timeout_s=60, what="node-e Ready after a new join")
        self.assertNotEqual(read_credential(a), credential)


class _TokenSource:
    """Stands in for the server in CarveAgent.start(): hands out one given token."""

    def __init__(self, server, token):
        self._server = server
        self._token = token

    def node_token(self):
        return self._token

    def __getattr__(self, name):
        return getattr(self._server, name)


class EmbeddedAgentsTest(unittest.TestCase):
    def test_each_embedded_agent_holds_its_own_node_credential(self):
        server = CarveServer(port=free_port())
        self.addCleanup(server.cleanup)
        server.start()
        poll(lambda: len(server.nodes()) >= 1 and
             all(n["Status"] == "Ready" for n in server.nodes().values()),
             timeout_s=60, what="the embedded nodes Ready")
        status, body = server.signed_get("/v1/node-credentials")
        self.assertEqual(status, 200, body)
        held = {c["node_id"]: c for c in body["Credentials"]}
        self.assertEqual(set(held), set(server.nodes()))
        self.assertEqual({c["joined_with"] for c in held.values()}, {"embedded"})
        self.assertEqual(len({c["credential_id"] for c in held.values()}), len(held))


if __name__ == "__main__":
    unittest.main()
