"""Shared harness for carve's integration suites: starts the real `carve server` binary
($CARVE_BIN) on a free loopback port with a temporary data dir, and drives it with the stock
aws CLI and boto3 as a user would. Nothing sleeps to wait: every wait polls with a deadline."""

import atexit
import configparser
import json
import os
import queue
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.credentials

import wire_shapes

SOURCE_DIR = os.environ.get(
    "CARVE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
AWS_DATA_PATH = os.path.join(SOURCE_DIR, "contrib", "aws")
REGION = "us-east-1"
# The server refuses signatures scoped to any region but its own (--region, default us-east-1),
# and carve's own clients sign for $AWS_REGION / $AWS_DEFAULT_REGION: the processes the suites
# start sign for the test servers' region whatever the developer's shell says.
os.environ["AWS_REGION"] = REGION
os.environ["AWS_DEFAULT_REGION"] = REGION
# The servers and agents the suites start leave the host's iptables alone: the port guard
# (--sandbox-network auto) is tested in a network namespace of its own (network_guard_test.py).
os.environ["CARVE_SANDBOX_NETWORK"] = "off"

# The aws CLI's configuration for every command the suites run: no profile settings, and
# wire_shapes as a plugin, which checks each answer against botocore's model.
_AWS_CONFIG_DIR = tempfile.mkdtemp(prefix="carve-awscfg-")
atexit.register(shutil.rmtree, _AWS_CONFIG_DIR, True)
_AWS_CONFIG = os.path.join(_AWS_CONFIG_DIR, "config")
with open(_AWS_CONFIG, "w", encoding="utf-8") as _f:
    _f.write("[plugins]\nwire_shapes = wire_shapes\n")

# A small fleet for tests, run by the server's embedded agent with simulated GPUs. Every image
# the tests name is served by the simulator (`carve testmodel`), as in the default config.
FAST_FLEET = """
fleet:
  carve_time_ms: {carve_ms}
  nodes:
    - instance_type: ml.p4d.24xlarge
      count: {p4d}
    - instance_type: ml.p5.48xlarge
      count: {p5}
runtimes:
  default_runtime: carve/testmodel
"""


# One simulated 8-GPU ml.g5.48xlarge node, for the mGPU queue suites.
ONE_G5_FLEET = """
fleet:
  carve_time_ms: 20
  nodes:
    - instance_type: ml.g5.48xlarge
      count: 1
runtimes:
  default_runtime: carve/testmodel
"""


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def workload_records(data_dir):
    """(pid, start_time) of every workload the agents' pid files under `data_dir` name (live or
    not); start_time is field 22 of /proc/<pid>/stat when the agent started it."""
    records = []
    for root, _dirs, files in os.walk(data_dir):
        for name in files:
            if name != "pid":
                continue
            try:
                with open(os.path.join(root, name)) as f:
                    record = json.load(f)
                records.append((int(record["pid"]), int(record.get("start_time", 0))))
            except (OSError, ValueError, KeyError):
                pass
    return records


def workload_pids(data_dir):
    """Pids the agents' pid files under `data_dir` name (live or not)."""
    return [pid for pid, _ in workload_records(data_dir)]


def proc_stat(pid):
    """The fields of /proc/<pid>/stat after the command name (state is [0]), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()
    except OSError:
        return None


def pid_alive(pid):
    stat = proc_stat(pid)
    return stat is not None and stat[0] != "Z"


def live_processes(proc_file, matches):
    """Pids of live processes whose /proc/<pid>/<proc_file> ("cmdline", "environ") bytes satisfy
    matches(bytes); processes that went or cannot be read are skipped."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/{proc_file}", "rb") as f:
                text = f.read()
        except OSError:
            continue
        if matches(text) and pid_alive(int(name)):
            found.append(int(name))
    return found


def kill_workloads(data_dir, also=()):
    """Kills every workload process (and its group) recorded under `data_dir`, and those of the
    (pid, start_time) records `also` (what the pid files named earlier): what a test that killed
    an agent or server with SIGKILL must clean up itself. A pid file names only the newest
    process of its copy, so a process that a later agent replaced instead of adopting is found
    only through `also`.

    Pids wrap quickly on a busy machine (pid_max is often 32768), so a recorded pid whose process
    has another start time belongs to someone else now and is left alone; its group is gone too,
    since Linux does not reuse a pid that still names a process group."""
    for pid, start_time in set(workload_records(data_dir)) | set(also):
        stat = proc_stat(pid)
        if stat is not None and start_time and int(stat[19]) != start_time:
            continue
        targets = [lambda: os.killpg(pid, signal.SIGKILL)]
        if stat is not None:
            targets.append(lambda: os.kill(pid, signal.SIGKILL))
        for target in targets:
            try:
                target()
            except OSError:
                pass
        # A sandboxed workload's program runs in a session of its own below bwrap (the leader the
        # pid file names), so its group is not the leader's: it is found by its launch id, as the
        # agent finds it (launch/process_launcher.h).
        if start_time:
            launch_id = f"\0CARVE_LAUNCH_ID={pid}-{start_time}\0".encode()
            for member in live_processes("environ", lambda env: launch_id in b"\0" + env):
                try:
                    os.kill(member, signal.SIGKILL)
                except OSError:
                    pass


def tenant_python():
    """A Python interpreter a sandboxed tenant process can execute: this one, unless it lives below
    a directory other users cannot enter (a pyenv under a 0700 /root), where the sandboxed uid
    (docs/security.md, "Sandbox") gets "Permission denied"; then the system's."""
    import sys
    path = os.path.realpath(sys.executable)
    parent = os.path.dirname(path)
    while parent != "/":
        if not os.stat(parent).st_mode & 0o001:
            return shutil.which("python3", path="/usr/bin:/bin") or sys.executable
        parent = os.path.dirname(parent)
    return sys.executable


def carve_bin():
    path = os.environ.get("CARVE_BIN")
    if not path:
        raise RuntimeError("CARVE_BIN is not set (ctest sets it)")
    return path


def poll(predicate, timeout_s=30.0, interval_s=0.05, what="condition"):
    """Calls predicate() until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}; last={last!r}")


class CarveServer:
    """One `carve server` process. Reusable across restarts on the same data dir."""

    def __init__(self, carve_ms=20, data_dir=None, extra_args=(), p4d=2, p5=1, port=0,
                 log_dir=None, config=None, listen_host="127.0.0.1"):
        self.owns_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="carve-it-")
        # The server's output goes to <log_dir>/server.log: a test that fills the data dir's
        # disk keeps its log elsewhere, where writing it cannot fail.
        self.log_path = os.path.join(log_dir or self.data_dir, "server.log")
        self.config = os.path.join(self.data_dir, "carve.yaml")
        with open(self.config, "w") as f:
            f.write(config if config is not None else
                    FAST_FLEET.format(carve_ms=carve_ms, p4d=p4d, p5=p5))
        self.extra_args = list(extra_args)
        self.proc = None
        self.port = None
        self.listen_host = listen_host
        self.listen_port = port  # 0: any free port (a restart then gets another one)
        # With TLS on (`--tls on`, or a listen address off loopback): "https", the certificate's
        # pin and file as the server printed them at start.
        self.scheme = "http"
        self.tls_pin = None
        self.tls_cert_file = None
        self.lines = queue.Queue()
        # Every workload the pid files named when a process of this server was stopped or killed,
        # so that cleanup also finds the copies of an earlier incarnation.
        self.seen_workloads = set()

    # -- process control ---------------------------------------------------------------------
    def start(self, timeout_s=30.0):
        return self.launch().await_listening(timeout_s)

    def launch(self):
        """Starts the process without waiting for it to listen (an HA standby waits to lead)."""
        self.proc = subprocess.Popen(
            [carve_bin(), "server", "--listen", f"{self.listen_host}:{self.listen_port}",
             "--data-dir", self.data_dir,
             "--config", self.config, "--log-level", os.environ.get("CARVE_TEST_LOG_LEVEL", "warn"), *self.extra_args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc, self.lines), daemon=True).start()
        return self

    def await_listening(self, timeout_s=30.0):
        deadline = time.monotonic() + timeout_s
        seen = []
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            seen.append(line)
            self._note_tls(line)
            m = re.search(r"listening on (https?)://127\.0\.0\.1:(\d+)", line)
            if m:
                self.scheme, self.port = m.group(1), int(m.group(2))
                return self
        raise AssertionError("carve server did not start; output:\n" + "".join(seen))

    def _note_tls(self, line):
        m = re.search(r"TLS certificate (\S+) \(.*\), pin (sha256:[0-9a-f]{64})", line)
        if m:
            self.tls_cert_file, self.tls_pin = m.group(1), m.group(2)

    def await_standby(self, timeout_s=30.0):
        """Waits until a replica on etcd serves as a standby (reads here, the rest forwarded)."""
        deadline = time.monotonic() + timeout_s
        seen = []
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            seen.append(line)
            self._note_tls(line)
            m = re.search(r"standby on (https?)://127\.0\.0\.1:(\d+)", line)
            if m:
                self.scheme, self.port = m.group(1), int(m.group(2))
                return self
        raise AssertionError("carve server did not serve as a standby; output:\n" + "".join(seen))

    def scrape_token(self):
        """The token a scraper presents on GET /metrics (<data-dir>/scrape-token)."""
        with open(os.path.join(self.data_dir, "scrape-token")) as f:
            return f.read().strip()

    def metrics_text(self, timeout=30):
        """GET /metrics as Prometheus scrapes it: with the scrape token as a bearer token."""
        req = urllib.request.Request(self.url + "/metrics", headers={
            "Authorization": "Bearer " + self.scrape_token()})
        with urllib.request.urlopen(req, timeout=timeout, context=self.ssl_context()) as r:
            return r.read().decode()

    def metric(self, name, **labels):
        """The value of one series of GET /metrics (0 when absent)."""
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        series = f"{name}{{{want}}}" if labels else name
        for line in self.metrics_text().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
        return 0.0

    def _pump(self, proc, q):
        with open(self.log_path, "a") as log:
            for line in proc.stdout:
                q.put(line)
                log.write(line)
                log.flush()

    def start_with_second_account(self, profile, account_id):
        """Starts the server once so it writes the credentials file (its key is the operator's),
        adds a tenant account `profile` and starts it again. Returns self; cleans up on failure."""
        self.start()
        try:
            self.stop()
            add_account(self.credentials_file, profile, account_id)
            self.start()
        except Exception:
            self.cleanup()
            raise
        return self

    def stop(self, sig=signal.SIGTERM, timeout_s=30.0):
        if self.proc is None:
            return None
        self.seen_workloads.update(workload_records(self.data_dir))
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout_s)
        self.proc.stdout.close()
        self.proc = None
        return rc

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def cleanup(self):
        self.stop()
        # After a kill -9 the copies outlive the server.
        kill_workloads(self.data_dir, self.seen_workloads)
        if self.owns_dir and not os.environ.get("CARVE_TEST_KEEP"):
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- clients -----------------------------------------------------------------------------
    @property
    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def ca_bundle(self):
        """What a client trusts this server by over https (the aws CLI's --ca-bundle): the
        certificate the server generated, or None on plain HTTP."""
        return self.tls_cert_file if self.scheme == "https" else None

    def ssl_context(self):
        """For urllib: trusts exactly this server's certificate over https (None on http)."""
        return ssl.create_default_context(cafile=self.ca_bundle) if self.ca_bundle else None

    @property
    def credentials_file(self):
        return os.path.join(self.data_dir, "credentials")

    def profile_keys(self, profile="default"):
        cp = configparser.ConfigParser()
        cp.read(self.credentials_file)
        return cp[profile]["aws_access_key_id"], cp[profile]["aws_secret_access_key"]

    def account_id(self, profile="default"):
        """The account of `profile`'s key (carve_account_id in the credentials file)."""
        cp = configparser.ConfigParser()
        cp.read(self.credentials_file)
        return cp[profile]["carve_account_id"]

    def client(self, profile="default", access_key=None, secret_key=None, region=REGION):
        if access_key is None:
            access_key, secret_key = self.profile_keys(profile)
        os.environ["AWS_DATA_PATH"] = AWS_DATA_PATH  # Teach boto3 the partition members.
        session = boto3.session.Session()
        return wire_shapes.watch(session.client(
            "sagemaker", endpoint_url=self.url, region_name=region,
            aws_access_key_id=access_key, aws_secret_access_key=secret_key,
            verify=self.ca_bundle if self.ca_bundle else None,
            config=botocore.config.Config(retries={"max_attempts": 1})))

    def boto_client(self, service, profile="default", attempts=1, max_pool_connections=10,
                    read_timeout=60):
        """A boto3 client of `service` (sagemaker-runtime, application-autoscaling, ...) for this
        server, making `attempts` attempts per call (1: no retry)."""
        ak, sk = self.profile_keys(profile)
        os.environ["AWS_DATA_PATH"] = AWS_DATA_PATH
        return wire_shapes.watch(boto3.session.Session().client(
            service, endpoint_url=self.url, region_name=REGION, aws_access_key_id=ak,
            aws_secret_access_key=sk, verify=self.ca_bundle if self.ca_bundle else None,
            config=botocore.config.Config(
                retries={"total_max_attempts": attempts},
                max_pool_connections=max_pool_connections, read_timeout=read_timeout)))

    def aws_env(self, profile="default"):
        env = dict(os.environ)
        env.update({"AWS_SHARED_CREDENTIALS_FILE": self.credentials_file,
                    "AWS_DATA_PATH": AWS_DATA_PATH, "AWS_DEFAULT_REGION": REGION,
                    "AWS_PROFILE": profile, "AWS_CONFIG_FILE": _AWS_CONFIG,
                    "AWS_MAX_ATTEMPTS": "1"})
        here = os.path.dirname(os.path.abspath(__file__))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        return env

    def aws(self, *args, profile="default", check=True, service="sagemaker"):
        """Runs `aws <service> <args> --endpoint-url ...`; returns parsed JSON stdout (or {})."""
        cmd = ["aws", service, *args, "--endpoint-url", self.url, "--output", "json"]
        if self.ca_bundle:
            cmd += ["--ca-bundle", self.ca_bundle]
        env = self.aws_env(profile)
        with tempfile.NamedTemporaryFile(prefix="carve-wire-") as violations:
            env["CARVE_WIRE_VIOLATIONS"] = violations.name
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
            found = violations.read().decode()
        if found:
            raise wire_shapes.WireViolation(f"aws {service} {' '.join(args)}: {found}")
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({p.returncode}): {p.stderr}")
        if p.returncode != 0:
            return p
        return json.loads(p.stdout) if p.stdout.strip() else {}

    def signed(self, method, path, body=None, profile="default"):
        """A native route, SigV4-signed like the aws CLI signs; (status, parsed JSON body)."""
        ak, sk = self.profile_keys(profile)
        data = json.dumps(body).encode() if body is not None else b""
        headers = {"Content-Type": "application/json"} if body is not None else {}
        req = botocore.awsrequest.AWSRequest(method=method, url=self.url + path, data=data,
                                             headers=headers)
        botocore.auth.SigV4Auth(botocore.credentials.Credentials(ak, sk), "sagemaker",
                                REGION).add_auth(req)
        prepared = req.prepare()
        r = urllib.request.Request(prepared.url, data=data or None,
                                   headers=dict(prepared.headers), method=method)
        try:
            with urllib.request.urlopen(r, timeout=30, context=self.ssl_context()) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def signed_get(self, path, profile="default"):
        return self.signed("GET", path, profile=profile)

    def node_token(self, ttl_seconds=3600):
        """A bootstrap token for `carve agent --join-token` (POST /v1/node-tokens, the operator's
        call)."""
        status, body = self.signed("POST", "/v1/node-tokens", {"ttl_seconds": ttl_seconds})
        if status != 201:
            raise AssertionError(f"POST /v1/node-tokens: {status} {body}")
        return body["token"]

    def nodes(self):
        """GET /v1/nodes: {node id: node} with each node's reported workloads."""
        status, body = self.signed_get("/v1/nodes")
        if status != 200:
            raise AssertionError(f"/v1/nodes answered {status}: {body}")
        return {n["NodeId"]: n for n in body["Nodes"]}


class CarveAgent:
    """One `carve agent` process with simulated GPUs, talking to `server`."""

    def __init__(self, server, node_id, instance_type="ml.p4d.24xlarge", extra_args=(),
                 server_urls=None, env=None, server_cert_sha256=None):
        self.server = server
        # The pin a first start joins with: the server's own, unless a test names another.
        self.server_cert_sha256 = server_cert_sha256
        self.env = env  # None: this process's environment
        self.server_urls = server_urls or server.url  # "URL,URL": the replicas, tried in turn.
        self.node_id = node_id
        self.instance_type = instance_type
        self.extra_args = list(extra_args)
        self.data_dir = tempfile.mkdtemp(prefix=f"carve-agent-{node_id}-")
        self.proc = None
        self.log = open(os.path.join(self.data_dir, "agent.log"), "a")
        self.seen_workloads = set()  # As CarveServer.seen_workloads.

    def start(self):
        """Starts the agent; the first start joins with a fresh bootstrap token, later ones use
        the node credential the first left in the data dir."""
        join = []
        if not os.path.exists(os.path.join(self.data_dir, "node-credential")):
            join = ["--join-token", self.server.node_token()]
            pin = self.server_cert_sha256 or getattr(self.server, "tls_pin", None)
            if pin and self.server_urls.startswith("https://"):
                join += ["--server-cert-sha256", pin]
        self.proc = subprocess.Popen(
            [carve_bin(), "agent", "--server", self.server_urls, *join, "--driver", "sim",
             "--instance-type", self.instance_type, "--node-id", self.node_id, "--data-dir",
             self.data_dir, *self.extra_args],
            stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
        return self

    def kill9(self):
        self.seen_workloads.update(workload_records(self.data_dir))
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None

    def stop(self):
        self.seen_workloads.update(workload_records(self.data_dir))
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.proc = None

    def cleanup(self):
        self.stop()
        kill_workloads(self.data_dir, self.seen_workloads)
        self.log.close()
        if not os.environ.get("CARVE_TEST_KEEP"):
            shutil.rmtree(self.data_dir, ignore_errors=True)


def add_account(credentials_file, profile, account_id):
    """Appends a second account to the credentials file (read by the server at start)."""
    import secrets
    import string
    alphabet = string.ascii_uppercase + "234567"
    ak = "AKIA" + "".join(secrets.choice(alphabet) for _ in range(16))
    sk = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40))
    with open(credentials_file, "a") as f:
        f.write(f"\n[{profile}]\naws_access_key_id = {ak}\naws_secret_access_key = {sk}\n"
                f"carve_account_id = {account_id}\n")


def two_node_fleet(node_timeout_ms, heartbeat_ms=300, agent_args=()):
    """A server without an embedded agent and two `carve agent`s (node-a, node-b, simulated
    ml.p4d.24xlarge), both Ready. Returns (server, {node: agent})."""
    server = CarveServer(port=free_port(), extra_args=[
        "--no-local-agent", "--node-timeout-ms", str(node_timeout_ms),
        "--heartbeat-ms", str(heartbeat_ms)]).start()
    agents = {n: CarveAgent(server, n, extra_args=agent_args).start()
              for n in ("node-a", "node-b")}
    poll(lambda: all(server.nodes().get(n, {}).get("Status") == "Ready" for n in agents),
         timeout_s=60, what="both agents registered")
    return server, agents


def spread_copies(sm, copies=2):
    """Endpoint "ep" on two instances carved with the seed layout, and component "ic" of model
    "m" (the simulator, fast) spreading `copies` copies over them."""
    sm.create_model(ModelName="m", PrimaryContainer={
        "Image": "carve/testmodel", "Environment": {"CARVE_TESTMODEL_SPEED": "50"}})
    sm.create_endpoint_config(EndpointConfigName="ep",
                              ProductionVariants=[seed_variant(SEED_LAYOUT, count=2)])
    sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
    sm.get_waiter("endpoint_in_service").wait(
        EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    sm.create_inference_component(
        InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
        Specification=component_spec("m", "mig-1g.5gb", strategy="SPREAD"),
        RuntimeConfig={"CopyCount": copies})


# The seed's objects.
SEED_LAYOUT = ["mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"]


def seed_variant(layout=None, instance_type="ml.p4d.24xlarge", count=1, ami=None):
    v = {"VariantName": "AllTraffic", "InstanceType": instance_type,
         "InitialInstanceCount": count}
    if ami is not None:
        v["InferenceAmiVersion"] = ami
    if layout is not None:
        v["AcceleratorPartitionLayouts"] = [{"AcceleratorPartitionTypes": layout}]
    return v


def component_spec(model, partition_type=None, devices=1, cpus=1, memory_mb=2048,
                   strategy=None):
    crr = {"NumberOfAcceleratorDevicesRequired": devices, "NumberOfCpuCoresRequired": cpus,
           "MinMemoryRequiredInMb": memory_mb}
    if partition_type is not None:
        crr["AcceleratorPartitionType"] = partition_type
    spec = {"ModelName": model, "ComputeResourceRequirements": crr}
    if strategy:
        spec["SchedulingConfig"] = {"PlacementStrategy": strategy}
    return spec


class FleetSim:
    """One `carve fleet-sim` process; its latest JSON progress line in `last`."""

    def __init__(self, server, nodes, *extra, stats_ms=200):
        self.proc = subprocess.Popen(
            [carve_bin(), "fleet-sim", "--server", server.url, "--join-token",
             server.node_token(), "--nodes", str(nodes), "--stats-interval-ms", str(stats_ms),
             "--json", *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.last = {}
        self.banner = None
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.last = json.loads(line)
            elif self.banner is None:
                self.banner = line

    def command(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class EtcdCluster:
    """N real etcd members (Debian's `etcd`) on free loopback ports with data in a temp dir,
    elections tuned short as in src/store/etcd_test_env.h. Members fsync as in production."""

    def __init__(self, members=3, extra_args=()):
        self.dir = tempfile.mkdtemp(prefix="carve-etcd-")
        self.extra_args = list(extra_args)
        self.names = [f"m{i}" for i in range(members)]
        self.client_ports = [free_port() for _ in self.names]
        self.peer_ports = [free_port() for _ in self.names]
        self.procs = [None] * members
        self.cluster = ",".join(f"{n}=http://127.0.0.1:{p}"
                                for n, p in zip(self.names, self.peer_ports))
        for i in range(members):
            self.launch(i)
        for i in range(members):
            self.await_healthy(i)

    def endpoint(self, i):
        return f"127.0.0.1:{self.client_ports[i]}"

    def url(self, prefix="/carve"):
        return "etcd://" + ",".join(self.endpoint(i) for i in range(len(self.names))) + prefix

    def launch(self, i):
        name, c, p = self.names[i], self.client_ports[i], self.peer_ports[i]
        log = open(os.path.join(self.dir, f"{name}.log"), "a")
        self.procs[i] = subprocess.Popen(
            ["etcd", f"--name={name}", f"--data-dir={os.path.join(self.dir, name)}",
             f"--listen-client-urls=http://127.0.0.1:{c}",
             f"--advertise-client-urls=http://127.0.0.1:{c}",
             f"--listen-peer-urls=http://127.0.0.1:{p}",
             f"--initial-advertise-peer-urls=http://127.0.0.1:{p}",
             f"--initial-cluster={self.cluster}", "--initial-cluster-state=new",
             "--initial-cluster-token=carve-it", "--heartbeat-interval=50",
             "--election-timeout=500", "--auto-compaction-mode=revision",
             "--auto-compaction-retention=10000", "--logger=zap", "--log-level=warn",
             *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def await_healthy(self, i, timeout_s=30):
        def healthy():
            try:
                with urllib.request.urlopen(f"http://{self.endpoint(i)}/health", timeout=1) as r:
                    return json.loads(r.read()).get("health") == "true"
            except (OSError, ValueError):
                return False
        poll(healthy, timeout_s=timeout_s, interval_s=0.05, what=f"etcd member {i} healthy")

    def leader(self):
        """The index of the member that leads now."""
        for i, proc in enumerate(self.procs):
            if proc is None or proc.poll() is not None:
                continue
            try:
                req = urllib.request.Request(f"http://{self.endpoint(i)}/v3/maintenance/status",
                                             data=b"{}", method="POST")
                with urllib.request.urlopen(req, timeout=1) as r:
                    st = json.loads(r.read())
            except (OSError, ValueError):
                continue
            if st.get("leader") and st["leader"] == st["header"]["member_id"]:
                return i
        return None

    def etcdctl(self, *args, member=None, timeout_s=60):
        """Debian's etcdctl, as docs/ha.md runs it, against every member or only `member` (a
        snapshot is taken from one); returns its stdout."""
        members = range(len(self.names)) if member is None else [member]
        endpoints = ",".join(f"http://{self.endpoint(i)}" for i in members)
        p = subprocess.run(["etcdctl", f"--endpoints={endpoints}", *args], capture_output=True,
                           text=True, timeout=timeout_s, env={**os.environ, "ETCDCTL_API": "3"})
        if p.returncode != 0:
            raise AssertionError(f"etcdctl {' '.join(args)}: {p.stderr.strip()}")
        return p.stdout

    def restore(self, snapshot):
        """Stops every member and starts each on a data directory restored from `snapshot`
        with `etcdctl snapshot restore`, as docs/ha.md describes."""
        for i in range(len(self.names)):
            self.kill9(i)
        for i, name in enumerate(self.names):
            data = os.path.join(self.dir, name)
            shutil.rmtree(data)
            subprocess.run(
                ["etcdctl", "snapshot", "restore", snapshot, f"--name={name}",
                 f"--data-dir={data}", f"--initial-cluster={self.cluster}",
                 f"--initial-advertise-peer-urls=http://127.0.0.1:{self.peer_ports[i]}",
                 "--initial-cluster-token=carve-restored"],
                check=True, capture_output=True, timeout=60, env={**os.environ, "ETCDCTL_API": "3"})
        for i in range(len(self.names)):
            self.launch(i)
        for i in range(len(self.names)):
            self.await_healthy(i)

    def kill9(self, i):
        if self.procs[i] is not None and self.procs[i].poll() is None:
            self.procs[i].kill()
            self.procs[i].wait(timeout=30)
        self.procs[i] = None

    def cleanup(self):
        for i in range(len(self.procs)):
            self.kill9(i)
        if not os.environ.get("CARVE_TEST_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
