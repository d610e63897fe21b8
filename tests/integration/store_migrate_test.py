"""`carve store migrate` (docs/ha.md): a server's SQLite records move into etcd, and a server
started on etcd with the same data directory carries on with the same endpoint and component,
their creation times unchanged. The migration refuses a directory a server holds, and a prefix
that already holds records."""

import subprocess
import unittest

from carve_harness import CarveServer, EtcdCluster, carve_bin, component_spec, poll, seed_variant


def migrate(data_dir, to):
    return subprocess.run([carve_bin(), "store", "migrate", "--data-dir", data_dir, "--to", to],
                          capture_output=True, text=True, timeout=120)


class StoreMigrateTest(unittest.TestCase):
    def setUp(self):
        self.etcd = EtcdCluster(1)
        self.server = CarveServer(p4d=1, p5=1)
        self.addCleanup(self.etcd.cleanup)
        self.addCleanup(self.server.cleanup)

    def test_a_sqlite_deployment_moves_to_etcd_and_carries_on(self):
        s = self.server.start()
        sm = s.client()
        sm.create_model(ModelName="m", PrimaryContainer={"Image": "carve/testmodel"})
        sm.create_endpoint_config(EndpointConfigName="ep", ProductionVariants=[
            seed_variant(["mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"])])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        sm.get_waiter("endpoint_in_service").wait(
            EndpointName="ep", WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        sm.create_inference_component(
            InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
            Specification=component_spec("m", "mig-1g.5gb"), RuntimeConfig={"CopyCount": 1})
        poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")
             ["InferenceComponentStatus"] == "InService", timeout_s=60, what="ic InService")
        before = sm.describe_endpoint(EndpointName="ep")
        url = self.etcd.url("/migrated")

        held = migrate(s.data_dir, url)
        self.assertEqual(held.returncode, 1, held.stdout + held.stderr)
        self.assertIn("stop the server", held.stderr)

        s.stop()
        done = migrate(s.data_dir, url)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("Endpoint: 1", done.stdout)
        self.assertIn("InferenceComponent: 1", done.stdout)

        s.extra_args += ["--store", url]
        s.start()
        sm = s.client()
        after = sm.describe_endpoint(EndpointName="ep")
        self.assertEqual(after["CreationTime"], before["CreationTime"])
        self.assertEqual(after["EndpointStatus"], "InService")
        poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")
             ["InferenceComponentStatus"] == "InService", timeout_s=60,
             what="ic InService on etcd")
        self.assertEqual([m["ModelName"] for m in sm.list_models()["Models"]], ["m"])
        s.stop()

        again = migrate(s.data_dir, url)
        self.assertEqual(again.returncode, 1)
        self.assertIn("already exists", again.stderr)


if __name__ == "__main__":
    unittest.main()
