"""TLS on the listener (docs/security.md, "TLS"): `carve server --tls on` generates a certificate
on its first start and serves HTTPS with it; the stock aws CLI and boto3 trust it with
--ca-bundle; plain HTTP to it is refused; an agent joins only a server whose certificate has the
pin `carve node token create` prints, and one given a wrong pin sends nothing. Off loopback TLS
is the default, and plain HTTP there needs --insecure-plain-http."""

import json
import os
import re
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import time
import unittest
import urllib.error
import urllib.request

from carve_harness import CarveAgent, CarveServer, EtcdCluster, carve_bin, free_port, poll


def openssl_pin(cert_file):
    """The pin of `cert_file` as the OpenSSL command line computes it (kubeadm's recipe)."""
    pub = subprocess.run(["openssl", "x509", "-in", cert_file, "-pubkey", "-noout"],
                         capture_output=True, check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub,
                         capture_output=True, check=True).stdout
    digest = subprocess.run(["openssl", "dgst", "-sha256", "-r"], input=der,
                            capture_output=True, check=True).stdout.split()[0].decode()
    return "sha256:" + digest


def tls_version(port, cafile, minimum=None, maximum=None):
    """The version a Python ssl client negotiates with 127.0.0.1:port, or the SSLError."""
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["http/1.1"])
    if minimum is not None:
        # Let this client offer old versions at all; the server must be the one that refuses.
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        ctx.minimum_version = minimum
    if maximum is not None:
        ctx.maximum_version = maximum
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return s.version(), s.selected_alpn_protocol()


class TlsListenerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = CarveServer(port=free_port(), extra_args=[
            "--tls", "on", "--no-local-agent", "--node-timeout-ms", "1500",
            "--heartbeat-ms", "300"])
        cls.addClassCleanup(cls.server.cleanup)
        cls.server.start()

    def cli(self, *args, check=True, ca_bundle=True):
        cmd = [carve_bin(), *args, "--endpoint-url", self.server.url, "--credentials",
               self.server.credentials_file]
        if ca_bundle:
            cmd += ["--ca-bundle", self.server.ca_bundle]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if check:
            self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def credentialed(self):
        status, body = self.server.signed_get("/v1/node-credentials")
        self.assertEqual(status, 200, body)
        return {c["node_id"] for c in body["Credentials"]}

    def agent(self, node, pin, token):
        a = CarveAgent(self.server, node, server_cert_sha256=pin)
        self.addCleanup(a.cleanup)
        a.server = _TokenSource(self.server, token)
        return a

    def test_the_server_generates_its_certificate_and_prints_its_pin(self):
        s = self.server
        self.assertEqual(s.scheme, "https")
        self.assertEqual(s.tls_cert_file, os.path.join(s.data_dir, "tls", "cert.pem"))
        key = os.path.join(s.data_dir, "tls", "key.pem")
        self.assertEqual(stat.S_IMODE(os.stat(key).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(key)).st_mode), 0o700)
        self.assertEqual(s.tls_pin, openssl_pin(s.tls_cert_file))
        text = subprocess.run(["openssl", "x509", "-in", s.tls_cert_file, "-noout", "-ext",
                               "subjectAltName"], capture_output=True, text=True).stdout
        for name in ("DNS:localhost", "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1"):
            self.assertIn(name, text)

    def test_the_aws_cli_and_boto3_work_over_https_with_the_ca_bundle(self):
        self.assertEqual(self.server.aws("list-endpoints").get("Endpoints"), [])
        sm = self.server.client()
        self.assertEqual(sm.list_models()["Models"], [])
        # AWS_CA_BUNDLE works as --ca-bundle does, for the aws CLI and carve's own CLI alike.
        env = self.server.aws_env()
        env["AWS_CA_BUNDLE"] = self.server.ca_bundle
        p = subprocess.run(["aws", "sagemaker", "list-models", "--endpoint-url", self.server.url],
                           env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        r = subprocess.run([carve_bin(), "node", "token", "list", "--endpoint-url",
                            self.server.url, "--credentials", self.server.credentials_file],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Without it the generated certificate is trusted by nobody.
        env.pop("AWS_CA_BUNDLE")
        p = subprocess.run(["aws", "sagemaker", "list-models", "--endpoint-url", self.server.url],
                           env=env, capture_output=True, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("CERTIFICATE_VERIFY_FAILED", p.stderr)
        r = self.cli("node", "token", "list", check=False, ca_bundle=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not trusted", r.stderr)
        # The dashboard's page comes over https too (a secure context from another machine).
        with urllib.request.urlopen(self.server.url + "/ui/", timeout=30,
                                    context=self.server.ssl_context()) as page:
            self.assertEqual(page.status, 200)

    def test_plain_http_to_the_tls_port_is_refused(self):
        plain = self.server.url.replace("https://", "http://")
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(plain + "/ping", timeout=30)
        self.assertEqual(refused.exception.code, 400)
        self.assertIn("this port speaks HTTPS only", refused.exception.read().decode())

    def test_tls_is_1_2_or_newer_and_1_3_is_preferred(self):
        port, ca = self.server.port, self.server.ca_bundle
        self.assertEqual(tls_version(port, ca), ("TLSv1.3", "http/1.1"))
        self.assertEqual(tls_version(port, ca, maximum=ssl.TLSVersion.TLSv1_2)[0], "TLSv1.2")
        with self.assertRaises(ssl.SSLError):
            tls_version(port, ca, minimum=ssl.TLSVersion.TLSv1, maximum=ssl.TLSVersion.TLSv1_1)
        # openssl s_client, as an operator would check it.
        p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-brief",
                            "-CAfile", ca, "-alpn", "http/1.1"],
                           input="", capture_output=True, text=True, timeout=30)
        self.assertIn("Protocol version: TLSv1.3", p.stderr)
        self.assertIn("Verification: OK", p.stderr)

    def test_an_agent_joins_with_the_printed_pin_and_keeps_it(self):
        r = self.cli("node", "token", "create", "--ttl", "10m")
        token = r.stdout.strip()
        line = re.search(r"carve agent --server (\S+) --join-token (\S+) "
                         r"--server-cert-sha256 (sha256:[0-9a-f]{64})", r.stderr)
        self.assertIsNotNone(line, r.stderr)
        self.assertEqual(line.group(1), self.server.url)
        self.assertEqual(line.group(2), token)
        self.assertEqual(line.group(3), self.server.tls_pin)
        created = json.loads(self.cli("node", "token", "create", "--json").stdout)
        self.assertEqual(created["server_cert_sha256"], self.server.tls_pin)

        a = self.agent("node-pinned", line.group(3), token).start()
        poll(lambda: self.server.nodes().get("node-pinned", {}).get("Status") == "Ready",
             timeout_s=60, what="node-pinned Ready")
        with open(os.path.join(a.data_dir, "node-credential")) as f:
            self.assertEqual(json.load(f)["server_cert_sha256"], [self.server.tls_pin])
        # A restart without the flag checks the pin it kept.
        a.stop()
        a.server_cert_sha256 = None
        a.start()
        poll(lambda: self.server.nodes().get("node-pinned", {}).get("Status") == "Ready",
             timeout_s=60, what="node-pinned Ready again")

    def test_an_agent_given_another_pin_sends_nothing(self):
        token = self.cli("node", "token", "create").stdout.strip()
        wrong = "sha256:" + "0" * 64
        a = self.agent("node-wrong-pin", wrong, token).start()
        rc = a.proc.wait(timeout=60)
        self.assertEqual(rc, 2)
        with open(os.path.join(a.data_dir, "agent.log")) as f:
            log = f.read()
        self.assertIn(f"has pin {self.server.tls_pin}, not the expected {wrong}", log)
        self.assertIn("refused before sending anything", log)
        self.assertFalse(os.path.exists(os.path.join(a.data_dir, "node-credential")))
        # The server saw no join: no credential for the node, and the token still joins it.
        self.assertNotIn("node-wrong-pin", self.credentialed())
        with open(self.server.log_path) as f:
            self.assertNotIn("node node-wrong-pin joined", f.read())
        b = self.agent("node-wrong-pin", self.server.tls_pin, token).start()
        poll(lambda: "node-wrong-pin" in self.credentialed(), timeout_s=60,
             what="the same token joining with the right pin")
        b.stop()

    def test_an_agent_will_not_send_its_token_over_plain_http_to_another_machine(self):
        data_dir = self.server.data_dir + "-plain-agent"
        self.addCleanup(shutil.rmtree, data_dir, True)
        # TEST-NET-1 (RFC 5737): never reached, the agent refuses before it connects.
        r = subprocess.run([carve_bin(), "agent", "--server", "http://192.0.2.1:8080",
                            "--join-token", "abcdef.0123456789abcdef", "--driver", "sim",
                            "--node-id", "node-plain", "--data-dir", data_dir],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("would cross the network in the clear", r.stderr)
        self.assertIn("--insecure-plain-http", r.stderr)


class _TokenSource:
    """Stands in for the server in CarveAgent.start(): hands out one given token."""

    def __init__(self, server, token):
        self._server = server
        self._token = token

    def node_token(self):
        return self._token

    def __getattr__(self, name):
        return getattr(self._server, name)


class EmbeddedAgentsTlsTest(unittest.TestCase):
    def test_embedded_agents_speak_https_and_a_restart_keeps_the_certificate(self):
        server = CarveServer(port=free_port(), extra_args=["--tls", "on"])
        self.addCleanup(server.cleanup)
        server.start()
        poll(lambda: len(server.nodes()) >= 1 and
             all(n["Status"] == "Ready" for n in server.nodes().values()),
             timeout_s=60, what="the embedded nodes Ready over https")
        pin = server.tls_pin
        with open(server.tls_cert_file) as f:
            cert = f.read()
        server.stop()
        server.start()
        self.assertEqual(server.tls_pin, pin)
        with open(server.tls_cert_file) as f:
            self.assertEqual(f.read(), cert)
        poll(lambda: all(n["Status"] == "Ready" for n in server.nodes().values()),
             timeout_s=60, what="the embedded nodes Ready after a restart")


    def test_a_stop_while_the_embedded_agents_talk_over_https_exits_cleanly(self):
        """OpenSSL's writes raised SIGPIPE when the server closed a connection its own agents
        were writing to, and the server died of it instead of exiting 0 (1 stop in 8 here). carve
        ignores SIGPIPE; what it launches does not inherit that."""
        server = CarveServer(port=free_port(), extra_args=["--tls", "on"])
        self.addCleanup(server.cleanup)
        for _ in range(5):
            server.start()
            with open(f"/proc/{server.proc.pid}/status") as f:
                ignored = int(next(x for x in f if x.startswith("SigIgn:")).split()[1], 16)
            self.assertTrue(ignored & (1 << (signal.SIGPIPE - 1)), hex(ignored))
            self.assertEqual(server.stop(), 0)


class ReplicasShareTheKeyTest(unittest.TestCase):
    """docs/ha.md, "TLS": a second replica given the first one's credentials and tls/ serves the
    same key, forwards to the leader over https trusting it, and agents join through it."""

    def test_a_standby_forwards_over_https_and_an_agent_joins_through_it(self):
        etcd = EtcdCluster(1)
        self.addCleanup(etcd.cleanup)
        replicas = [CarveServer(port=free_port(), extra_args=[
            "--tls", "on", "--no-local-agent", "--store", etcd.url("/carve-tls"),
            "--leader-ttl-s", "2", "--node-timeout-ms", "3000", "--heartbeat-ms", "300"])
            for _ in range(2)]
        for r in replicas:
            self.addCleanup(r.cleanup)
        a, b = replicas
        a.start()
        shutil.copy2(a.credentials_file, b.credentials_file)
        shutil.copytree(os.path.join(a.data_dir, "tls"), os.path.join(b.data_dir, "tls"))
        b.launch().await_standby()
        self.assertEqual(b.scheme, "https")
        self.assertEqual(b.tls_pin, a.tls_pin)
        # A write sent to the standby reaches the leader over https.
        b.client().create_model(ModelName="via-standby", PrimaryContainer={"Image": "img"})
        self.assertEqual([m["ModelName"] for m in a.client().list_models()["Models"]],
                         ["via-standby"])
        agent = CarveAgent(a, "node-ha", server_urls=b.url)
        self.addCleanup(agent.cleanup)
        agent.start()
        poll(lambda: a.nodes().get("node-ha", {}).get("Status") == "Ready", timeout_s=60,
             what="node-ha Ready, joined through the standby")


class OffLoopbackTest(unittest.TestCase):
    def test_tls_is_the_default_off_loopback_and_plain_http_needs_a_flag(self):
        data = CarveServer(listen_host="0.0.0.0", extra_args=["--tls", "off", "--no-local-agent"])
        self.addCleanup(data.cleanup)
        data.launch()
        self.assertEqual(data.proc.wait(timeout=60), 2)

        def refused():
            with open(data.log_path) as f:
                return "--insecure-plain-http" in f.read()
        poll(refused, timeout_s=10, what="the refusal in the server's output")
        data.stop()
        data.extra_args = ["--no-local-agent"]
        data.start()
        self.assertEqual(data.scheme, "https")
        self.assertIsNotNone(data.tls_pin)
        data.stop()
        data.extra_args = ["--no-local-agent", "--insecure-plain-http"]
        data.start()
        self.assertEqual(data.scheme, "http")


if __name__ == "__main__":
    unittest.main()
