"""Restart recovery and kill -9 durability of the SageMaker service's state."""

import concurrent.futures
import threading
import time
import unittest

from carve_harness import CarveServer, SEED_LAYOUT, component_spec, poll, seed_variant


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
