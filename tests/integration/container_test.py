"""The container contract with a real podman: an OCI image, built here, serves through the router.

Where podman is installed (scripts/setup.sh installs it, with runc), this builds an image FROM
scratch out of one static program (container_image/serve.c; no registry is reachable), and runs
it as an inference-component copy on a simulated ml.p4d.24xlarge node, through `carve agent`'s
own `podman run` command line. The suite checks what workload_command.cc promises a serving
container, from inside the container and through InvokeEndpoint:
  - it is run with the `serve` argument and SageMaker's SAGEMAKER_BIND_TO_PORT=8080, with the
    model's Environment;
  - its MIG partition comes as a CDI device: the test's CDI spec names each partition the agent
    carved and sets a variable per device, which only podman's CDI injection can put there; the
    copy's log says CDI was used;
  - ModelDataUrl (file://) is mounted read-only at /opt/ml/model;
  - deleting the component stops the container: none is left in podman's store.

podman runs in its own mount namespace (the wrapper below): its /run is private, so the test's
CDI directory becomes /run/cdi, which podman 4.3 reads (it has no setting for another), and its
images and containers live in the test's temp directory. The machine's own podman state and
/etc are not touched. Where podman cannot run a container at all (no runtime, no namespaces),
the suite is skipped with podman's own error, since no carve code is then under test.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import textwrap
import unittest
import uuid

from carve_harness import CarveAgent, CarveServer, live_processes, poll, seed_variant

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGE = "localhost/carve-it-serve:1"
NODE = "node-c"

# What this sandbox-like VM needs besides a private root: cgroupfs (no systemd), runc (crun
# refuses hybrid cgroup v1/v2 hosts), and no ulimits of podman's own (setrlimit to raise them is
# not permitted in an unprivileged container). They are harmless on an ordinary host.
CONTAINERS_CONF = textwrap.dedent("""\
    [containers]
    default_ulimits = []
    [engine]
    cgroup_manager = "cgroupfs"
    {runtime}
    """)

# The mount namespace every podman of the test runs in: a private /run holding the test's CDI
# specs, kept by a process that sleeps until the suite ends. One namespace for all invocations,
# not one each: `podman rm` must see the network namespace `podman run` mounted under
# /run/netns to tear its port mapping down, or netavark's DNAT rule for the copy's loopback port
# stays on the host and sends a later test's connections to that port to a dead container.
HOLDER = ("mount -t tmpfs tmpfs /run && mkdir -p /run/cdi && mount --bind {tmp}/cdi /run/cdi "
          "&& echo ready && exec sleep infinity")

WRAPPER = textwrap.dedent("""\
    #!/bin/sh
    # podman for the container test: the test's mount namespace (HOLDER) and its own storage.
    # The agent finds this first on its PATH and runs it as podman.
    export CONTAINERS_CONF={tmp}/containers.conf
    exec nsenter --mount=/proc/{holder}/ns/mnt \\
      {podman} --root {tmp}/storage --runroot {tmp}/runroot --tmpdir {tmp}/podman-tmp "$@"
    """)


def port_rules():
    """The destination ports of the host's NAT rules (netavark's port mappings)."""
    out = subprocess.run(["iptables", "-w", "5", "-t", "nat", "-S"], capture_output=True,
                         text=True).stdout
    return set(re.findall(r"--dport (\d+)", out))


# Each run's copies carry this in their environment (the model's Environment), so that the
# suite counts its own containers only, and kills them if it fails part-way.
TAG = f"from-the-model-{uuid.uuid4().hex[:12]}"


def serving_processes():
    """Pids of this run's containers' program (`/serve serve`), seen from the host. (The
    podman client that runs one gets the tag only in its 0600 env file, not its environment.)"""
    tagged = set(live_processes("environ", lambda env: f"MODEL_VARIABLE={TAG}".encode() in env))
    serve = live_processes("cmdline", lambda cmdline: cmdline == b"/serve\0serve\0")
    return [pid for pid in serve if pid in tagged]


def build_static(source, out):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return "no C compiler"
    p = subprocess.run([cc, "-static", "-O2", "-D_GNU_SOURCE", "-o", out, source],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return None if p.returncode == 0 else p.stdout


class ContainerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        podman = shutil.which("podman")
        if podman is None or shutil.which("unshare") is None or shutil.which("nsenter") is None:
            raise unittest.SkipTest("podman is not installed (scripts/setup.sh installs it)")
        cls.tmp = tempfile.mkdtemp(prefix="carve-podman-")
        for d in ("cdi", "bin", "model", "image", "storage", "runroot", "podman-tmp"):
            os.makedirs(os.path.join(cls.tmp, d))
        cls.rules_before = port_rules()
        cls.holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             HOLDER.format(tmp=cls.tmp)], stdout=subprocess.PIPE, text=True)
        if cls.holder.stdout.readline().strip() != "ready":
            cls.holder.kill()
            cls.holder.wait()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise unittest.SkipTest("cannot make a private mount namespace for podman here")
        runc = shutil.which("runc")
        with open(os.path.join(cls.tmp, "containers.conf"), "w") as f:
            f.write(CONTAINERS_CONF.format(runtime=f'runtime = "{runc}"' if runc else ""))
        cls.podman = os.path.join(cls.tmp, "bin", "podman")
        with open(cls.podman, "w") as f:
            f.write(WRAPPER.format(tmp=cls.tmp, podman=podman, holder=cls.holder.pid))
        os.chmod(cls.podman, 0o755)
        with open(os.path.join(cls.tmp, "model", "weights.txt"), "w") as f:
            f.write("weights-v1\n")

        image_dir = os.path.join(cls.tmp, "image")
        problem = build_static(os.path.join(HERE, "container_image", "serve.c"),
                               os.path.join(image_dir, "serve"))
        if problem is not None:
            cls.stop_holder()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise unittest.SkipTest(f"cannot build the static test server: {problem[-2000:]}")
        with open(os.path.join(image_dir, "Containerfile"), "w") as f:
            f.write('FROM scratch\nCOPY serve /serve\nENTRYPOINT ["/serve"]\n')
        built = cls.run_podman("build", "-q", "-t", IMAGE, image_dir)
        # podman itself must be able to run a container here, before carve is asked to.
        probe = cls.run_podman("run", "--rm", IMAGE, "probe") if built.returncode == 0 else built
        if probe.returncode != 2 or "run me as `serve`" not in probe.stdout:
            cls.stop_holder()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise unittest.SkipTest(f"podman cannot run a container on this machine: "
                                    f"{probe.stdout[-2000:]}")

        # No simulated fleet in the server and no default runtime: the one node is the agent
        # below, and an image is an OCI image.
        # The model's file:// ModelDataUrl must lie inside a model root (docs/security.md).
        cls.server = CarveServer(config="fleet:\n  nodes: []\n",
                                 extra_args=["--no-local-agent", "--heartbeat-ms", "300",
                                             "--model-root", os.path.join(cls.tmp, "model")]
                                 ).start()
        env = dict(os.environ, PATH=os.path.join(cls.tmp, "bin") + ":" + os.environ["PATH"])
        cls.agent = CarveAgent(cls.server, NODE, extra_args=[
            "--cdi-spec-dir", os.path.join(cls.tmp, "cdi")], env=env).start()
        poll(lambda: cls.server.nodes().get(NODE, {}).get("Status") == "Ready",
             timeout_s=60, what="the agent registered")
        cls.sm = cls.server.client()
        cls.runtime = cls.server.boto_client("sagemaker-runtime")

    @classmethod
    def tearDownClass(cls):
        cls.agent.cleanup()
        cls.server.cleanup()
        for pid in serving_processes():  # Only when a test failed before its component went.
            os.kill(pid, signal.SIGKILL)
        cls.run_podman("rm", "-a", "-f")
        cls.stop_holder()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def stop_holder(cls):
        cls.holder.kill()
        cls.holder.wait()

    @classmethod
    def run_podman(cls, *args):
        return subprocess.run([cls.podman, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=180)

    def partitions(self):
        """The MIG uuids the agent carved, as it reports them."""
        gpus = self.server.nodes()[NODE].get("Gpus", [])
        return [p["Uuid"] for g in gpus for p in g.get("Partitions", [])]

    def write_cdi_spec(self, uuids):
        """A CDI spec like `nvidia-ctk cdi generate`'s, naming each partition by its uuid; each
        device sets a variable instead of device nodes, which simulated GPUs do not have."""
        devices = [{"name": u, "containerEdits": {"env": [f"CARVE_TEST_CDI_DEVICE={u}"]}}
                   for u in uuids]
        with open(os.path.join(self.tmp, "cdi", "nvidia.json"), "w") as f:
            json.dump({"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": devices}, f)

    def test_an_image_serves_with_its_partition_model_data_and_serve_argument(self):
        sm = self.sm
        sm.create_model(ModelName="m", PrimaryContainer={
            "Image": IMAGE, "ModelDataUrl": "file://" + os.path.join(self.tmp, "model"),
            "Environment": {"MODEL_VARIABLE": TAG}})
        sm.create_endpoint_config(EndpointConfigName="cfg", ProductionVariants=[
            seed_variant(["mig-3g.20gb", "mig-3g.20gb"])])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="cfg")
        poll(lambda: sm.describe_endpoint(EndpointName="ep")["EndpointStatus"] == "InService",
             timeout_s=60, what="the endpoint InService")
        uuids = self.partitions()
        self.assertEqual(len(uuids), 16, self.server.nodes()[NODE])  # 8 GPUs, 2 partitions each
        self.write_cdi_spec(uuids)

        sm.create_inference_component(
            InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
            Specification={"ModelName": "m", "ComputeResourceRequirements": {
                "NumberOfAcceleratorDevicesRequired": 1, "AcceleratorPartitionType": "mig-3g.20gb",
                "MinMemoryRequiredInMb": 1024}},
            RuntimeConfig={"CopyCount": 1})

        def status():
            d = sm.describe_inference_component(InferenceComponentName="ic")
            if d["InferenceComponentStatus"] == "Failed":
                raise AssertionError(d.get("FailureReason"))
            return d["InferenceComponentStatus"]
        poll(lambda: status() == "InService", timeout_s=120, what="the component InService")

        answer = self.runtime.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic",
                                              ContentType="application/json", Body=b"{}")
        seen = json.loads(answer["Body"].read())
        self.assertEqual(seen["argument"], "serve")
        self.assertEqual(seen["SAGEMAKER_BIND_TO_PORT"], "8080")
        self.assertEqual(seen["MODEL_VARIABLE"], TAG)
        # The partition: CUDA_VISIBLE_DEVICES names one the agent carved, and podman's CDI
        # injection delivered that same device.
        self.assertIn(seen["CUDA_VISIBLE_DEVICES"], uuids)
        self.assertEqual(seen["CARVE_TEST_CDI_DEVICE"], seen["CUDA_VISIBLE_DEVICES"])
        self.assertEqual(seen["model"], "weights-v1")
        self.assertEqual(seen["model_writable"], "read-only")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "model", "written-by-container")))

        # The copy's log says how the GPU was passed; podman shows one running container.
        logs = []
        for root, _, files in os.walk(os.path.join(self.agent.data_dir, "logs")):
            logs += [os.path.join(root, f) for f in files if f.startswith("stdout")]
        text = ""
        for path in logs:
            with open(path, errors="replace") as f:
                text += f.read()
        self.assertIn(f"carve: podman runs {IMAGE} with its GPU passed as CDI device(s) "
                      f"nvidia.com/gpu={seen['CUDA_VISIBLE_DEVICES']}", text)
        # One container runs: its program, seen from the host. (`podman ps` from another
        # invocation of the wrapper cannot join a running container's network namespace, which
        # lives in the agent's podman's private /run.)
        self.assertEqual(len(serving_processes()), 1, serving_processes())
        # On a node that sandboxes (docs/security.md, "Containers"), podman runs the container
        # in a user namespace: the image's root is root inside (it owns and writes the image's
        # files, as an image that needs root expects) and, seen from the host, the first id of
        # the account's block (the node's first account: --sandbox-container-uid-base, 2^30),
        # not the host's root.
        with open(os.path.join(self.agent.data_dir, "agent.log")) as f:
            sandboxed = "sandbox: tenant processes run as uids" in f.read()
        if sandboxed:
            self.assertEqual((seen["uid"], seen["root_writable"]), ("0", "yes"), seen)
            pid = serving_processes()[0]
            with open(f"/proc/{pid}/status") as f:
                status = f.read()
            self.assertEqual(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1),
                             str(1 << 30), status)
            with open(f"/proc/{pid}/uid_map") as f:
                self.assertEqual(f.read().split(), ["0", str(1 << 30), "65536"])
            with open(f"/proc/{pid}/gid_map") as f:
                self.assertEqual(f.read().split(), ["0", str(1 << 30), "65536"])
        # The model's variables reach the container through the env file only: the podman
        # client (root on a real node) runs with none of them in its own environment.
        clients = live_processes("cmdline", lambda c: b"--env-file\0" in c and b"run\0" in c)
        self.assertTrue(clients, "no podman run client found")
        tagged = set(live_processes("environ", lambda env: TAG.encode() in env))
        self.assertEqual([pid for pid in clients if pid in tagged], [])

        sm.delete_inference_component(InferenceComponentName="ic")
        poll(lambda: not serving_processes(), timeout_s=60, what="the container's program gone")
        poll(lambda: self.run_podman("ps", "-a", "-q").stdout.strip() == "", timeout_s=60,
             what="the container removed from podman's store")
        # Its port mapping went with it: no NAT rule of the host names a port it did not before.
        poll(lambda: port_rules() <= self.rules_before, timeout_s=30,
             what="the copy's port mapping removed from the host's NAT table")


if __name__ == "__main__":
    unittest.main()
