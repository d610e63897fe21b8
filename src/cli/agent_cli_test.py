"""`carve agent` and `carve logs` driven as a user would."""
import json
import os
import queue
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

CARVE = os.environ.get("CARVE_BIN", "carve")
# The agents started here leave the host's iptables alone (--sandbox-network, docs/security.md).
os.environ["CARVE_SANDBOX_NETWORK"] = "off"


def run(*args, env_drop=()):
    env = {k: v for k, v in os.environ.items() if k not in env_drop}
    return subprocess.run([CARVE, *args], capture_output=True, text=True, timeout=60, env=env)


def Hostname():
    return socket.gethostname()


def write_credential(data_dir, node_id):
    """<data_dir>/node-credential as a join leaves it (mode 0600), for `node_id`."""
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, "node-credential")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"node_id": node_id,
                   "credential": "carve-node." + "0" * 16 + "." + "1" * 64}, f)
    os.chmod(path, 0o600)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AgentHelpTest(unittest.TestCase):
    def test_help_says_workloads_keep_running_and_how_to_stop(self):
        r = run("agent", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        text = " ".join(r.stdout.split())
        self.assertIn("SIGTERM", text)
        self.assertIn("leaves its workloads running", text)
        self.assertIn("adopts them", text)
        for flag in ("--server", "--join-token", "--driver", "--instance-type",
                     "--sim-config", "--node-id", "--data-dir"):
            self.assertIn(flag, r.stdout)

    def test_server_and_credentials_are_required(self):
        r = run("agent")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--server", r.stderr)

    def test_without_a_credential_or_a_token_it_says_how_to_join(self):
        with tempfile.TemporaryDirectory() as d:
            r = run("agent", "--server", "http://127.0.0.1:1", "--driver", "sim",
                    "--instance-type", "ml.p4d.24xlarge", "--node-id", "n1", "--data-dir", d,
                    env_drop=("CARVE_JOIN_TOKEN",))
            self.assertEqual(r.returncode, 2)
            self.assertIn(os.path.join(d, "node-credential"), r.stderr)
            self.assertIn("--join-token", r.stderr)
            self.assertIn("carve node token create", r.stderr)

    def test_a_credential_of_another_node_or_readable_by_others_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            write_credential(d, "node-b")
            r = run("agent", "--server", "http://127.0.0.1:1", "--driver", "sim",
                    "--instance-type", "ml.p4d.24xlarge", "--node-id", "node-a", "--data-dir", d)
            self.assertEqual(r.returncode, 2)
            self.assertIn("holds the credential of node node-b, not node-a", r.stderr)
            write_credential(d, "node-a")
            os.chmod(os.path.join(d, "node-credential"), 0o644)
            r = run("agent", "--server", "http://127.0.0.1:1", "--driver", "sim",
                    "--instance-type", "ml.p4d.24xlarge", "--node-id", "node-a", "--data-dir", d)
            self.assertEqual(r.returncode, 2)
            self.assertIn("chmod 600", r.stderr)

    def test_an_unreachable_server_fails_the_join_and_names_it(self):
        with tempfile.TemporaryDirectory() as d:
            port = free_port()
            r = run("agent", "--server", f"http://127.0.0.1:{port}", "--join-token",
                    "abcdef.0123456789abcdef", "--driver", "sim", "--instance-type",
                    "ml.p4d.24xlarge", "--node-id", "n1", "--data-dir", d)
            self.assertEqual(r.returncode, 2)
            self.assertIn("joining as node n1", r.stderr)
            self.assertIn(str(port), r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "node-credential")))

    def test_an_unknown_driver_is_rejected(self):
        r = run("agent", "--server", "http://x", "--driver", "cuda")
        self.assertEqual(r.returncode, 2)
        self.assertIn("cuda", r.stderr)


class AgentRunTest(unittest.TestCase):
    def test_runs_with_simulated_gpus_while_the_server_is_down_and_stops_on_sigterm(self):
        with tempfile.TemporaryDirectory() as d:
            write_credential(os.path.join(d, "data"), "cli-node")  # As a node that joined once.
            proc = subprocess.Popen(
                [CARVE, "agent", "--server", f"http://127.0.0.1:{free_port()}",
                 "--driver", "sim", "--instance-type",
                 "ml.p4d.24xlarge", "--node-id", "cli-node", "--data-dir",
                 os.path.join(d, "data")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            lines = queue.Queue()
            reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout],
                                      daemon=True)
            reader.start()
            try:
                seen = []
                failures = 0
                deadline = time.monotonic() + 30
                # It prints that it serves, then retries the unreachable server (with backoff)
                # instead of exiting: wait for the banner and two failed registrations.
                while time.monotonic() < deadline and not (
                        failures >= 2 and any("serving" in x for x in seen)):
                    try:
                        seen.append(lines.get(timeout=0.5))
                    except queue.Empty:
                        continue
                    failures += "registration failed" in seen[-1]
                self.assertIn("node cli-node (ml.p4d.24xlarge, 8 GPUs, driver sim)",
                              "".join(seen))
                self.assertGreaterEqual(failures, 2, "".join(seen))
                self.assertIsNone(proc.poll(), "".join(seen))
                proc.send_signal(signal.SIGTERM)
                self.assertEqual(proc.wait(timeout=30), 0)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                reader.join(timeout=10)
                proc.stdout.close()

    def test_an_instance_type_that_does_not_match_the_gpus_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            write_credential(os.path.join(d, "data"), Hostname())
            r = run("agent", "--server", "http://127.0.0.1:1",
                    "--driver", "sim", "--sim-config", "gpus: 3 x a100-40gb", "--data-dir",
                    os.path.join(d, "data"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("a100-40gb", r.stderr)
            self.assertIn("--instance-type", r.stderr)


class LogsTest(unittest.TestCase):
    def write_logs(self, root, workload_id, name, copy, out, err):
        # As the agent lays them out: one directory per workload id, '/' written as '+'.
        d = os.path.join(root, "logs", workload_id.replace("/", "+"))
        os.makedirs(d)
        with open(os.path.join(d, "owner"), "w") as f:
            f.write(f"{workload_id}\n{name}\n{copy}\n")
        with open(os.path.join(d, "stdout.log"), "w") as f:
            f.write(out)
        with open(os.path.join(d, "stderr.log"), "w") as f:
            f.write(err)

    def test_nothing_there_names_the_directory(self):
        with tempfile.TemporaryDirectory() as d:
            r = run("logs", "ic-chat", "--copy", "2", "--data-dir", d)
            self.assertEqual(r.returncode, 1)
            self.assertIn(os.path.join(d, "logs"), r.stderr)

    def test_a_name_that_is_not_plain_is_an_input_error(self):
        with tempfile.TemporaryDirectory() as d:
            r = run("logs", "..", "--data-dir", d)
            self.assertEqual(r.returncode, 2)
            self.assertIn("..", r.stderr)

    def test_prints_both_streams_and_only_stderr_on_request(self):
        with tempfile.TemporaryDirectory() as d:
            self.write_logs(d, "acct/ic-chat/a1", "ic-chat", 1, "line1\nline2\nserving\n",
                            "warming up\n")
            r = run("logs", "ic-chat", "--copy", "1", "--data-dir", d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("serving", r.stdout)
            self.assertIn("warming up", r.stdout)
            r = run("logs", "ic-chat", "--copy", "1", "--data-dir", d, "--stderr")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("serving", r.stdout)
            self.assertIn("warming up", r.stdout)
            r = run("logs", "ic-chat", "--copy", "1", "--data-dir", d, "--tail", "1")
            self.assertNotIn("line1", r.stdout)
            self.assertIn("serving", r.stdout)

    def test_finds_the_logs_of_a_servers_embedded_agents(self):
        with tempfile.TemporaryDirectory() as d:
            self.write_logs(os.path.join(d, "nodes", "node-1"), "acct/ic-x/b2", "ic-x", 0,
                            "from node 1\n", "")
            r = run("logs", "ic-x", "--data-dir", d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("from node 1", r.stdout)

    def test_one_name_of_two_accounts_is_told_apart_by_account_or_id(self):
        with tempfile.TemporaryDirectory() as d:
            self.write_logs(d, "alice/ic-x/a1", "ic-x", 0, "alice's line\n", "")
            self.write_logs(d, "bob/ic-x/b1", "ic-x", 0, "bob's line\n", "")
            r = run("logs", "ic-x", "--account", "bob", "--data-dir", d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("bob's line", r.stdout)
            self.assertNotIn("alice", r.stdout)
            r = run("logs", "alice/ic-x/a1", "--data-dir", d)
            self.assertIn("alice's line", r.stdout)
            self.assertNotIn("bob", r.stdout)
            r = run("logs", "ic-x", "--data-dir", d)
            self.assertIn("### alice/ic-x/a1", r.stdout)
            self.assertIn("### bob/ic-x/b1", r.stdout)


if __name__ == "__main__":
    unittest.main()
