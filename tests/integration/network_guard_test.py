"""The port guard, played by a hostile tenant (docs/security.md, "The network"): account A serves
a model on a `carve server` whose embedded agents sandbox tenant processes, and account B submits
an mGPU job whose command connects straight to A's copy on 127.0.0.1, past the router. With
`--sandbox-network auto` B's connection is reset while the router still serves A, and the rules
go when A's copy does; with `--sandbox-network off` the same command reaches A's copy, so the
test cannot pass because the attempt was broken.

The suite runs in a network namespace of its own (unshare(CLONE_NEWNET) at module set-up, its
loopback brought up), so the agents' iptables chains live and die with it and the host's tables
are never touched. Skipped where that cannot be made: not root, or no bwrap, iptables or ip."""

import ctypes
import glob
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import unittest

from carve_harness import (SEED_LAYOUT, CarveServer, add_account, component_spec, poll,
                           seed_variant)

FLEET = """
fleet:
  carve_time_ms: 20
  nodes:
    - instance_type: ml.p4d.24xlarge
      count: 1
    - instance_type: ml.g5.48xlarge
      count: 1
runtimes:
  default_runtime: carve/testmodel
"""
SEED = "emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=1000;"
UID_BASE = 240000
CLONE_NEWNET = 0x40000000


def why_not():
    """Why this host cannot run the suite, or None."""
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("bwrap", "iptables", "ip"):
        if shutil.which(tool, path=os.environ["PATH"] + ":/usr/sbin:/sbin") is None:
            return f"needs {tool}"
    return None


def setUpModule():
    if why_not() is not None:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        raise unittest.SkipTest(f"unshare(CLONE_NEWNET): {os.strerror(ctypes.get_errno())}")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


class Tenants:
    """A server whose first account, A, serves one copy of a model and whose second, B, has an
    mGPU queue; `network` is --sandbox-network."""

    def __init__(self, test, network):
        self.test = test
        data_dir = tempfile.mkdtemp(prefix="carve-netguard-it-", dir="/var/tmp")
        test.addCleanup(shutil.rmtree, data_dir, True)
        self.server = CarveServer(data_dir=data_dir, config=FLEET, extra_args=[
            "--sandbox", "required", "--sandbox-network", network,
            "--sandbox-uid-base", str(UID_BASE)])
        test.addCleanup(self.server.cleanup)
        self.server.start()
        self.server.stop()  # The first start wrote the credentials file (A).
        add_account(self.server.credentials_file, "b", "222222222222")
        self.server.start()
        sm = self.sm = self.server.client()
        sm.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
        sm.create_endpoint_config(EndpointConfigName="ep",
                                  ProductionVariants=[seed_variant(SEED_LAYOUT)])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        sm.get_waiter("endpoint_in_service").wait(EndpointName="ep",
                                                  WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        sm.create_inference_component(
            InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
            Specification=component_spec("m", "mig-1g.5gb", memory_mb=1024),
            RuntimeConfig={"CopyCount": 1})
        poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")[
            "InferenceComponentStatus"] == "InService", timeout_s=60, what="ic InService")
        status, body = self.server.signed("POST", "/v1/queues", {
            "name": "qb", "mgpu": True,
            "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1}}, profile="b")
        test.assertEqual(status, 201, body)

    def copy_port(self):
        """The port A's one copy serves on, from its agent's pid file."""
        ports = []
        for path in glob.glob(os.path.join(self.server.data_dir, "nodes", "*", "workloads", "*",
                                           "pid")):
            with open(path) as f:
                ports.append(json.load(f)["port"])
        self.test.assertEqual(len(ports), 1, ports)
        return ports[0]

    def invoke(self):
        rt = self.server.boto_client("sagemaker-runtime")
        answer = rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic",
                                    ContentType="application/json", Body=b'{"inputs": "hi"}')
        return answer["ResponseMetadata"]["HTTPStatusCode"]

    def attack(self, port):
        """B's job connects to `port` and asks for /ping; returns the job's output."""
        probe = ("import socket\n"
                 "try:\n"
                 f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
                 "    s.sendall(b'GET /ping HTTP/1.0\\r\\n\\r\\n')\n"
                 "    print('REACHED', s.recv(12))\n"
                 "except OSError as e:\n"
                 "    print('BLOCKED', e.errno)\n")
        command = f"/usr/bin/python3 -c {shlex.quote(probe)}; echo uid=$(id -u)"
        status, job = self.server.signed("POST", "/v1/queues/qb/jobs",
                                         {"command": command, "parameters": SEED}, profile="b")
        self.test.assertEqual(status, 201, job)

        def done():
            status, j = self.server.signed("GET", f"/v1/queues/qb/jobs/{job['id']}",
                                           profile="b")
            return j if status == 200 and j["state"] in ("Succeeded", "Failed") else None
        job = poll(done, timeout_s=60, interval_s=0.2, what=f"job {job['id']} done")
        status, logs = self.server.signed("GET", f"/v1/queues/qb/jobs/{job['id']}/logs",
                                          profile="b")
        self.test.assertEqual(status, 200, logs)
        task = logs["tasks"][0]
        return task.get("stdout", "") + task.get("stderr", "")

    def chain_rules(self):
        out = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, text=True,
                             check=True).stdout
        return [line for line in out.splitlines() if line.startswith("-A CARVE-")]


@unittest.skipIf(why_not() is not None, why_not() or "")
class NetworkGuardTest(unittest.TestCase):
    def test_another_tenants_job_cannot_reach_a_copy_past_the_router(self):
        tenants = Tenants(self, "auto")
        port = tenants.copy_port()
        rules = tenants.chain_rules()
        self.assertTrue(any(f"--ctorigdstport {port} " in r and "--uid-owner "
                            f"{UID_BASE}-4294967294 -j REJECT" in r for r in rules), rules)
        out = tenants.attack(port)
        self.assertIn("BLOCKED 111", out)  # ECONNREFUSED: the reset
        self.assertNotIn("REACHED", out)
        self.assertIn(f"uid={UID_BASE + 1}", out)  # B, sandboxed, not A's uid
        self.assertEqual(tenants.invoke(), 200)  # The router (carve's own uid) still serves A.
        # The copy's rules go with it.
        tenants.sm.delete_inference_component(InferenceComponentName="ic")
        poll(lambda: not any(f"--ctorigdstport {port} " in r for r in tenants.chain_rules()),
             timeout_s=60, what=f"the rules of port {port} removed")

    def test_without_the_guard_the_same_job_reaches_the_copy(self):
        tenants = Tenants(self, "off")
        port = tenants.copy_port()
        out = tenants.attack(port)
        self.assertIn("REACHED b'HTTP/1.", out)
        # No rule for it (the other case's server may have left its chain, emptied of ports).
        self.assertFalse([r for r in tenants.chain_rules() if f"--ctorigdstport {port} " in r])


if __name__ == "__main__":
    unittest.main()
