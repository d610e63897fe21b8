"""The tenant sandbox, played by a hostile tenant: on a `carve server` whose embedded agents
sandbox tenant processes (docs/security.md, "Sandbox"), account B submits an mGPU queue job whose
command tries to read the server's credentials file, list the data dir (to see the credentials
file and A's workloads), write outside /tmp and its own log directory, and read and write account
A's task logs. Every attempt must fail, each task must run as
its account's uid from the configured range (B's differs from A's on every node of the host),
and the same job on a server started with --sandbox off must succeed at every attempt, so the
test cannot pass because the attempts were broken."""

import glob
import os
import shutil
import tempfile
import unittest
import uuid

from carve_harness import CarveServer, add_account, live_processes, poll

FLEET = """
fleet:
  carve_time_ms: 20
  nodes:
    - instance_type: ml.g5.48xlarge
      count: 2
runtimes:
  default_runtime: carve/testmodel
"""

SEED = "emr.serverless.mgpu.core=30;emr.serverless.mgpu.memory=1000;"
UID_BASE = 230000
ACCOUNT_B = "222222222222"


def can_sandbox():
    return os.geteuid() == 0 and any(
        os.access(os.path.join(d, "bwrap"), os.X_OK) for d in os.environ["PATH"].split(":"))


def can_create_cgroups():
    """Whether this process can make a cgroup (root on a VM: yes; in a container: often not)."""
    base = "/sys/fs/cgroup" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else \
        "/sys/fs/cgroup/memory"
    probe = os.path.join(base, f"carve-probe-{os.getpid()}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
        return True
    except OSError:
        return False


class Tenants:
    """A server with two accounts (A: the operator, B), each with an mGPU queue on its own node."""

    def __init__(self, test, *args):
        self.test = test
        # Not below /tmp, which the sandbox replaces whole: the data dir must be hidden by its own
        # tmpfs (a 0700 directory, as `carve server` makes it).
        data_dir = tempfile.mkdtemp(prefix="carve-sandbox-it-", dir="/var/tmp")
        test.addCleanup(shutil.rmtree, data_dir, True)
        self.server = CarveServer(data_dir=data_dir, config=FLEET, extra_args=list(args))
        test.addCleanup(self.server.cleanup)
        self.server.start()
        self.server.stop()  # The first start wrote the credentials file (A).
        add_account(self.server.credentials_file, "b", ACCOUNT_B)
        self.server.start()
        poll(lambda: len([n for n in self.server.nodes().values() if n["Status"] == "Ready"]) == 2,
             timeout_s=60, what="both embedded agents' nodes Ready")
        for profile, queue in (("default", "qa"), ("b", "qb")):
            status, body = self.server.signed("POST", "/v1/queues", {
                "name": queue, "mgpu": True,
                "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1}}, profile=profile)
            test.assertEqual(status, 201, body)

    def run(self, profile, queue, command):
        """Runs a one-task job to its end; returns (job, its stdout)."""
        status, job = self.server.signed("POST", f"/v1/queues/{queue}/jobs",
                                         {"command": command, "parameters": SEED},
                                         profile=profile)
        self.test.assertEqual(status, 201, job)

        def done():
            status, j = self.server.signed("GET", f"/v1/queues/{queue}/jobs/{job['id']}",
                                           profile=profile)
            return j if status == 200 and j["state"] in ("Succeeded", "Failed") else None
        job = poll(done, timeout_s=60, interval_s=0.2, what=f"job {job['id']} done")
        status, logs = self.server.signed("GET", f"/v1/queues/{queue}/jobs/{job['id']}/logs",
                                          profile=profile)
        self.test.assertEqual(status, 200, logs)
        return job, logs["tasks"][0].get("stdout", "")

    def log_dir_holding(self, marker):
        """The agent log directory whose stdout.log holds `marker` (A's task logs)."""
        for path in glob.glob(os.path.join(self.server.data_dir, "nodes", "*", "logs", "**",
                                           "stdout.log"), recursive=True):
            with open(path, errors="replace") as f:
                if marker in f.read():
                    return os.path.dirname(path)
        self.test.fail(f"no task log holds {marker}")

    def play(self):
        """A runs a task, then B plays the hostile tenant. Returns (A's output, B's output)."""
        marker = f"A-MARKER-{uuid.uuid4().hex}"
        # The agent places a workload in its cgroup before the program runs (the launch's
        # record hook), so the task's first read already shows it.
        job, out_a = self.run("default", "qa",
                              f"echo {marker} uid=$(id -u); cat /proc/self/cgroup")
        self.test.assertEqual(job["state"], "Succeeded", job)
        a_logs = self.log_dir_holding(marker)
        data = self.server.data_dir
        outside = f"/var/tmp/carve-sandbox-test-{uuid.uuid4().hex}"
        self.test.addCleanup(lambda: os.path.exists(outside) and os.remove(outside))
        hostile = "; ".join([
            f"cat {data}/credentials && echo HOSTILE-READ-CREDENTIALS",
            # The data dir exists in the sandbox as an empty tmpfs holding only the mount points
            # of B's own directories: listing it must not show carve's files or A's task logs
            # (logs/<account>+qa+<job>+..., the workload id's directory: workload_logs.h).
            f"ls {data} | grep -qx credentials && echo HOSTILE-LISTED-DATA-DIR",
            f"ls -R {data}/nodes | grep -q +qa+ && echo HOSTILE-LISTED-WORKLOADS",
            f"echo pwned > {data}/pwned && echo HOSTILE-WROTE-DATA-DIR",
            f"echo pwned > {outside} && echo HOSTILE-WROTE-OUTSIDE",
            f"cat {a_logs}/stdout.log && echo HOSTILE-READ-A-LOGS",
            f"echo pwned > {a_logs}/pwned && echo HOSTILE-WROTE-A-LOGS",
            "echo ok > /tmp/scratch && echo OWN-TMP-WRITABLE",
            f'd=$(echo {data}/nodes/*/logs/*+qb+$CARVE_JOB_ID+*) && '
            'echo ok > "$d/mine" && echo OWN-LOG-DIR-WRITABLE',
            "echo uid=$(id -u)",
            "true"])
        _job, out_b = self.run("b", "qb", hostile)
        return out_a, out_b


HOSTILE = ["HOSTILE-READ-CREDENTIALS", "HOSTILE-LISTED-DATA-DIR", "HOSTILE-LISTED-WORKLOADS",
           "HOSTILE-WROTE-DATA-DIR", "HOSTILE-WROTE-OUTSIDE", "HOSTILE-READ-A-LOGS",
           "HOSTILE-WROTE-A-LOGS"]


class SandboxTest(unittest.TestCase):
    def test_without_the_sandbox_every_attempt_succeeds(self):
        tenants = Tenants(self, "--sandbox", "off")
        out_a, out_b = tenants.play()
        _ak, a_secret = tenants.server.profile_keys("default")
        for word in HOSTILE:
            self.assertIn(word, out_b)
        self.assertIn(a_secret, out_b, "B read A's secret key")
        self.assertIn(f"uid={os.geteuid()}", out_a)

    @unittest.skipUnless(can_sandbox(), "needs root and bwrap (Debian package bubblewrap)")
    def test_a_hostile_tenant_sees_nothing_of_carve_or_other_accounts(self):
        tenants = Tenants(self, "--sandbox", "required", "--sandbox-uid-base", str(UID_BASE))
        out_a, out_b = tenants.play()
        _ak, a_secret = tenants.server.profile_keys("default")
        for word in HOSTILE:
            self.assertNotIn(word, out_b)
        self.assertNotIn(a_secret, out_b)
        self.assertIn("OWN-TMP-WRITABLE", out_b)
        self.assertIn("OWN-LOG-DIR-WRITABLE", out_b)
        # Uids in order of each account's first launch on this host: the embedded agents share
        # one allocation, so B's uid differs from A's although each ran on a node of its own.
        # (Per-node allocations gave both the first uid, and the same host uid for two tenants.)
        self.assertIn(f"uid={UID_BASE}", out_a)
        self.assertIn(f"uid={UID_BASE + 1}", out_b)
        self.assertFalse(os.path.exists(os.path.join(tenants.server.data_dir, "pwned")))
        # A task with no host limits still runs in a cgroup of its own (v1: in the memory
        # hierarchy too; v2: the one hierarchy), where the host lets carve make one.
        if can_create_cgroups():
            self.assertRegex(out_a, r"(?m)^\d+:(memory|):/carve/[^/\s]+$")

        # Cancelling stops the whole sandboxed tree: a child that left the session with setsid()
        # and ignores SIGTERM included (it runs below bwrap, in a pid namespace of its own).
        tag = f"carve-sandbox-tree-{uuid.uuid4().hex[:12]}"
        loop = "trap '' TERM; while :; do sleep 0.2; done"
        status, job = tenants.server.signed("POST", "/v1/queues/qb/jobs", {
            "command": f'setsid sh -c "{loop}" {tag}-child & {loop} # {tag}',
            "parameters": SEED}, profile="b")
        self.assertEqual(status, 201, job)
        tagged = lambda: live_processes("cmdline", lambda c: tag.encode() in c)
        poll(lambda: len(tagged()) >= 2, timeout_s=60, what="the leader and its setsid child")
        status, body = tenants.server.signed("POST", f"/v1/queues/qb/jobs/{job['id']}/cancel",
                                             profile="b")
        self.assertEqual(status, 200, body)
        poll(lambda: not tagged(), timeout_s=60, what="every process of the cancelled tree gone")
        # B on the node A ran on: B's uid still, not A's.
        status, body = tenants.server.signed("DELETE", "/v1/queues/qa")
        self.assertEqual(status, 200, body)
        status, body = tenants.server.signed("POST", "/v1/queues", {
            "name": "qb2", "mgpu": True,
            "allocation": {"instance_type": "ml.g5.48xlarge", "count": 1}}, profile="b")
        self.assertEqual(status, 201, body)
        job, out = tenants.run("b", "qb2", "echo uid=$(id -u)")
        self.assertEqual(job["state"], "Succeeded", job)
        self.assertIn(f"uid={UID_BASE + 1}", out)

if __name__ == "__main__":
    unittest.main()
