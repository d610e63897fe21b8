"""Restart recovery and kill -9 durability of the SageMaker service's state."""

import concurrent.futures
import json
import threading
import time
import unittest

from carve_harness import (CarveServer, SEED_LAYOUT, component_spec, pid_alive, poll,
                           seed_variant, workload_pids)


def placements(server, endpoint):
    """Where every copy of `endpoint` sits: {copy id: (component, copy index, node, GPU,
    partition type, start)}, from its carve view."""
    status, carve = server.signed_get(f"/v1/endpoints/{endpoint}/carve")
    if status != 200:
        raise AssertionError(f"carve view answered {status}: {carve}")
    out = {}
    for n in carve["nodes"]:
        for g in n["gpus"]:
            for p in g["partitions"]:
                if p["copy"]:
                    out[p["copy"]["id"]] = (p["copy"]["component"], p["copy"]["index"], n["name"],
                                            g["index"], p["partition_type"], p["start"])
    return out


class SageMakerDurabilityTest(unittest.TestCase):
    def test_an_endpoint_left_creating_resumes_after_a_restart(self):
        # 300 ms per GPU: carving a p4d takes 2.4 s, long enough to stop the server mid-way.
        server = CarveServer(carve_ms=300).start()
        try:
            sm = server.client()
            sm.create_model(ModelName="m", PrimaryContainer={"Image": "img"})
            sm.create_endpoint_config(EndpointConfigName="c",
                                      ProductionVariants=[seed_variant(SEED_LAYOUT)])
            sm.create_endpoint(EndpointName="e", EndpointConfigName="c")
            self.assertEqual(sm.describe_endpoint(EndpointName="e")["EndpointStatus"],
                             "Creating")
            server.kill9()
            server.start()
            sm = server.client()
            self.assertEqual(sm.describe_endpoint(EndpointName="e")["EndpointStatus"],
                             "Creating")
            poll(lambda: sm.describe_endpoint(EndpointName="e")["EndpointStatus"] ==
                 "InService", timeout_s=60, what="InService after restart")
            sm.create_inference_component(
                InferenceComponentName="ic", EndpointName="e",
                Specification=component_spec("m", "mig-1g.5gb"), RuntimeConfig={"CopyCount": 3})
            poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")
                 ["RuntimeConfig"]["CurrentCopyCount"] == 3, what="3 copies")
            # A graceful restart keeps every placement: each copy, by its id, on the same node,
            # GPU and partition.
            before = placements(server, "e")
            self.assertEqual(len(before), 3, before)
            self.assertEqual(sorted(c[1] for c in before.values()), [0, 1, 2])
            self.assertEqual(server.stop(), 0)
            server.start()
            sm = server.client()
            self.assertEqual(placements(server, "e"), before)
            d = poll(lambda: (x := sm.describe_inference_component(InferenceComponentName="ic"))
                     ["RuntimeConfig"]["CurrentCopyCount"] == 3 and x, what="3 copies again")
            self.assertEqual(d["RuntimeConfig"]["DesiredCopyCount"], 3)
            self.assertEqual(placements(server, "e"), before)
        finally:
            server.cleanup()

    def test_deleting_a_model_keeps_its_copies_serving_through_a_crash(self):
        # SageMaker's DeleteModel removes the model's entry only; what is deployed keeps serving.
        server = CarveServer().start()
        try:
            sm = server.client()
            sm.create_model(ModelName="m", PrimaryContainer={
                "Image": "carve/testmodel", "Environment": {"CARVE_TESTMODEL_SPEED": "4"}})
            sm.create_endpoint_config(EndpointConfigName="c",
                                      ProductionVariants=[seed_variant(SEED_LAYOUT)])
            sm.create_endpoint(EndpointName="e", EndpointConfigName="c")
            poll(lambda: sm.describe_endpoint(EndpointName="e")["EndpointStatus"] ==
                 "InService", what="InService")
            sm.create_inference_component(
                InferenceComponentName="ic", EndpointName="e",
                Specification=component_spec("m", "mig-1g.5gb"), RuntimeConfig={"CopyCount": 2})
            poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")
                 ["InferenceComponentStatus"] == "InService", what="2 copies serving")
            copies = sorted(workload_pids(server.data_dir))
            self.assertEqual(len(copies), 2)

            def serves():
                rt = server.boto_client("sagemaker-runtime")
                r = rt.invoke_endpoint(EndpointName="e", InferenceComponentName="ic",
                                       ContentType="application/json",
                                       Body=json.dumps({"inputs": "hi",
                                                        "parameters": {"max_new_tokens": 2}}))
                return r["ResponseMetadata"]["HTTPStatusCode"] == 200

            sm.delete_model(ModelName="m")
            with self.assertRaisesRegex(Exception, "Could not find model"):
                sm.describe_model(ModelName="m")
            # A third copy cannot start, and the status says why; the pass that says so is the
            # one that would have stopped the two running copies.
            sm.update_inference_component_runtime_config(InferenceComponentName="ic",
                                                         DesiredRuntimeConfig={"CopyCount": 3})
            d = poll(lambda: (x := sm.describe_inference_component(InferenceComponentName="ic"))
                     .get("StatusMessage", "").find("was deleted") >= 0 and x,
                     what="a status naming the deleted model")
            self.assertIn("1 of 3 copies are not placed: its model m was deleted (DeleteModel): "
                          "the copies that run keep serving, and no new copy can start",
                          d["StatusMessage"])
            self.assertEqual(d["InferenceComponentStatus"], "Updating")
            self.assertEqual(d["RuntimeConfig"]["CurrentCopyCount"], 2)
            self.assertTrue(serves())
            self.assertEqual(sorted(workload_pids(server.data_dir)), copies)
            self.assertTrue(all(pid_alive(p) for p in copies))

            # After kill -9 the new server rebuilds each copy's workload from the container the
            # component kept: the agents keep the same processes, nothing starts twice.
            server.kill9()
            server.start()
            sm = server.client()
            poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")
                 ["RuntimeConfig"]["CurrentCopyCount"] == 2, what="2 copies after the crash")
            poll(serves, what="invocations after the crash")
            self.assertEqual(sorted(workload_pids(server.data_dir)), copies)
            self.assertTrue(all(pid_alive(p) for p in copies))
            sm.update_inference_component_runtime_config(InferenceComponentName="ic",
                                                         DesiredRuntimeConfig={"CopyCount": 2})
            poll(lambda: sm.describe_inference_component(InferenceComponentName="ic")
                 ["InferenceComponentStatus"] == "InService", what="InService at 2 copies")
        finally:
            server.cleanup()

    def test_kill9_loses_no_acknowledged_create(self):
        server = CarveServer(carve_ms=10).start()
        try:
            acknowledged = []
            lock = threading.Lock()
            stop = threading.Event()

            def writer(worker):
                sm = server.client()
                i = 0
                while not stop.is_set():
                    name = f"w{worker}-{i}"
                    try:
                        sm.create_model(ModelName=name, PrimaryContainer={"Image": "img"})
                    except Exception:  # The kill cuts requests in flight: not acknowledged.
                        return
                    with lock:
                        acknowledged.append(name)
                    i += 1

            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                futures = [pool.submit(writer, w) for w in range(8)]
                poll(lambda: len(acknowledged) >= 40, timeout_s=60, what="40 acknowledged")
                server.kill9()
                stop.set()
                for f in futures:
                    f.result()
            with lock:
                expected = set(acknowledged)
            server.start()
            sm = server.client()
            names = set()
            for page in sm.get_paginator("list_models").paginate(PaginationConfig={
                    "PageSize": 100}):
                names.update(m["ModelName"] for m in page["Models"])
            self.assertFalse(expected - names, f"lost {sorted(expected - names)[:10]}")
        finally:
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
