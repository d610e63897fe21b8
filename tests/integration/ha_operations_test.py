"""Operating carve on etcd as docs/ha.md tells an operator to, with Debian's etcdctl:

1. the space quota fills: API writes get a retryable 503 that names etcd's NOSPACE alarm and
   the page to read, from boto3 and the aws CLI; reads keep working; after the documented
   compaction, defragmentation and disarm the same server writes again without a restart, and
   every acknowledged write is there and no refused one is;
2. backup and restore: `etcdctl snapshot save` while carve runs, the cluster restored from it
   with `etcdctl snapshot restore` on every member, and the server carries on from what the
   snapshot holds: what was written before it is there, what came after is gone, and writes
   work."""

import base64
import json
import os
import subprocess
import tempfile
import unittest
import urllib.error
import urllib.request

import botocore.exceptions

from carve_harness import CarveServer, EtcdCluster, poll

QUOTA_BYTES = 4 << 20


def carve_on(etcd, prefix="/carve"):
    return CarveServer(extra_args=["--no-local-agent", "--store", etcd.url(prefix),
                                   "--leader-ttl-s", "2"])


def model_names(sm):
    return sorted(m["ModelName"] for m in sm.list_models(MaxResults=100)["Models"])


class SpaceQuotaTest(unittest.TestCase):
    def setUp(self):
        self.etcd = EtcdCluster(1, extra_args=[f"--quota-backend-bytes={QUOTA_BYTES}"])
        self.addCleanup(self.etcd.cleanup)
        self.server = carve_on(self.etcd)
        self.addCleanup(self.server.cleanup)
        self.server.start()

    def fill_quota(self):
        """Overwrites one key outside carve's prefix with 512 KiB values until etcd raises its
        NOSPACE alarm (every revision is kept until a compaction)."""
        value = base64.b64encode(os.urandom(512 << 10)).decode()
        key = base64.b64encode(b"/filler").decode()
        for _ in range(64):
            req = urllib.request.Request(f"http://{self.etcd.endpoint(0)}/v3/kv/put",
                                         data=json.dumps({"key": key, "value": value}).encode(),
                                         method="POST")
            try:
                urllib.request.urlopen(req, timeout=10).close()
            except urllib.error.HTTPError as e:
                body = e.read().decode()
                self.assertIn("database space exceeded", body)
                return
        self.fail(f"64 writes of 512 KiB never filled a {QUOTA_BYTES}-byte quota")

    def test_a_full_quota_is_a_retryable_503_and_the_documented_recovery_needs_no_restart(self):
        sm = self.server.client()
        acked = [f"m-{i}" for i in range(5)]
        for name in acked:
            sm.create_model(ModelName=name, PrimaryContainer={"Image": "img"})
        self.fill_quota()

        with self.assertRaises(botocore.exceptions.ClientError) as refused:
            sm.create_model(ModelName="refused-boto3", PrimaryContainer={"Image": "img"})
        r = refused.exception.response
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 503, r)
        self.assertEqual(r["Error"]["Code"], "ServiceUnavailable", r)
        self.assertIn("NOSPACE", r["Error"]["Message"])
        self.assertIn("docs/ha.md", r["Error"]["Message"])

        env = self.server.aws_env()  # One attempt: the CLI would retry a 503.
        cli = subprocess.run(
            ["aws", "sagemaker", "create-model", "--endpoint-url", self.server.url,
             "--model-name", "refused-cli", "--primary-container", "Image=img"],
            capture_output=True, text=True, env=env, timeout=120)
        self.assertNotEqual(cli.returncode, 0, cli.stdout)
        self.assertIn("ServiceUnavailable", cli.stderr)
        self.assertIn("NOSPACE", cli.stderr)

        # Reads do not need space.
        self.assertEqual(model_names(sm), acked)
        self.assertEqual(sm.describe_model(ModelName="m-0")["ModelName"], "m-0")

        # docs/ha.md, "Compaction and the space quota", step by step.
        status = json.loads(self.etcd.etcdctl("endpoint", "status", "--write-out=json"))
        revision = status[0]["Status"]["header"]["revision"]
        self.etcd.etcdctl("compaction", str(revision))
        self.etcd.etcdctl("defrag", "--cluster")
        self.etcd.etcdctl("alarm", "disarm")
        self.assertEqual(self.etcd.etcdctl("alarm", "list").strip(), "")

        def writes_again():
            try:
                sm.create_model(ModelName="after-disarm", PrimaryContainer={"Image": "img"})
                return True
            except botocore.exceptions.ClientError as e:
                self.assertEqual(e.response["ResponseMetadata"]["HTTPStatusCode"], 503)
                return False
        poll(writes_again, timeout_s=15, what="a write after the alarm was disarmed")
        self.assertIsNone(self.server.proc.poll(), "the server kept running through NOSPACE")
        self.assertEqual(model_names(sm), sorted(acked + ["after-disarm"]))


class SnapshotRestoreTest(unittest.TestCase):
    def setUp(self):
        self.etcd = EtcdCluster(3)
        self.addCleanup(self.etcd.cleanup)
        self.server = carve_on(self.etcd)
        self.addCleanup(self.server.cleanup)
        self.server.start()

    def test_a_cluster_restored_from_a_snapshot_serves_what_it_holds(self):
        sm = self.server.client()
        for name in ("before-1", "before-2"):
            sm.create_model(ModelName=name, PrimaryContainer={"Image": "img"})
        snapshot = os.path.join(tempfile.mkdtemp(dir=self.etcd.dir), "carve.db")
        self.etcd.etcdctl("snapshot", "save", snapshot, member=0)  # While carve runs.
        status = json.loads(self.etcd.etcdctl("snapshot", "status", snapshot, "--write-out=json"))
        self.assertGreater(status["totalKey"], 0, status)
        sm.create_model(ModelName="after-snapshot", PrimaryContainer={"Image": "img"})

        self.server.stop()
        self.etcd.restore(snapshot)
        self.server.start()
        sm = self.server.client()
        self.assertEqual(model_names(sm), ["before-1", "before-2"])
        with self.assertRaises(botocore.exceptions.ClientError) as gone:
            sm.describe_model(ModelName="after-snapshot")
        self.assertIn("Could not find model", gone.exception.response["Error"]["Message"])
        sm.create_model(ModelName="after-restore", PrimaryContainer={"Image": "img"})
        self.assertEqual(model_names(sm), ["after-restore", "before-1", "before-2"])
        members = json.loads(self.etcd.etcdctl("endpoint", "status", "--write-out=json"))
        self.assertEqual(len(members), 3, members)


if __name__ == "__main__":
    unittest.main()
