#!/usr/bin/env python3
"""Autoscaling reaction time: from a load step to new copies taking traffic.

Each trial starts a fresh `carve server` (embedded simulated fleet, real `carve testmodel` copy
processes), one inference component with one copy, registered with Application Auto Scaling
(Min 1, Max 4) and a target-tracking policy on
SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution with TargetValue 1. At t=0
four clients start, each keeping one long request in flight (4x the target). It records:
  decision  - the scaling activity's start (the policy raised DesiredCopyCount),
  serving   - CurrentCopyCount reached the new count,
  traffic   - a new copy answered its first request (carve_runtime_copy_attempts_total).
The expected decision time is the scale-out evaluation period plus at most one sample interval.

Usage: python3 bench/autoscaling_reaction.py [--trials 3] [--sample-ms 1000] [--scale-out-s 5]
Needs the built `carve` (CARVE_BIN, default build/carve)."""

import argparse
import json
import os
import re
import statistics
import sys
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "integration"))
os.environ.setdefault("CARVE_BIN", os.path.join(here, "..", "build", "carve"))

import boto3  # noqa: E402
import botocore.config  # noqa: E402

from carve_harness import (AWS_DATA_PATH, REGION, SEED_LAYOUT, CarveServer,  # noqa: E402
                           component_spec, poll, seed_variant)


def trial(args):
    server = CarveServer(extra_args=[
        "--autoscaling-sample-ms", str(args.sample_ms),
        "--scale-out-evaluation-s", str(args.scale_out_s),
        "--high-resolution-scale-out-evaluation-s", str(args.scale_out_s),
        "--scale-in-evaluation-s", "600"]).start()
    stop = threading.Event()
    try:
        sm = server.client()
        ak, sk = server.profile_keys()
        os.environ["AWS_DATA_PATH"] = AWS_DATA_PATH
        session = boto3.session.Session()
        config = botocore.config.Config(retries={"total_max_attempts": 1},
                                        max_pool_connections=16, read_timeout=120)
        rt = session.client("sagemaker-runtime", endpoint_url=server.url, region_name=REGION,
                            aws_access_key_id=ak, aws_secret_access_key=sk, config=config)
        aas = session.client("application-autoscaling", endpoint_url=server.url,
                             region_name=REGION, aws_access_key_id=ak, aws_secret_access_key=sk,
                             config=config)
        sm.create_model(ModelName="m", PrimaryContainer={
            "Image": "carve/testmodel", "Environment": {"CARVE_TESTMODEL_SPEED": "1"}})
        sm.create_endpoint_config(EndpointConfigName="ep",
                                  ProductionVariants=[seed_variant(SEED_LAYOUT)])
        sm.create_endpoint(EndpointName="ep", EndpointConfigName="ep")
        sm.get_waiter("endpoint_in_service").wait(EndpointName="ep",
                                                  WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        sm.create_inference_component(
            InferenceComponentName="ic", EndpointName="ep", VariantName="AllTraffic",
            Specification=component_spec("m", "mig-1g.5gb", memory_mb=1024),
            RuntimeConfig={"CopyCount": 1})

        def copies():
            rc = sm.describe_inference_component(InferenceComponentName="ic")["RuntimeConfig"]
            return rc["DesiredCopyCount"], rc["CurrentCopyCount"]
        poll(lambda: copies() == (1, 1), timeout_s=60, what="one copy")
        target = {"ServiceNamespace": "sagemaker", "ResourceId": "inference-component/ic",
                  "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount"}
        aas.register_scalable_target(**target, MinCapacity=1, MaxCapacity=4)
        aas.put_scaling_policy(
            PolicyName="concurrency", PolicyType="TargetTrackingScaling", **target,
            TargetTrackingScalingPolicyConfiguration={
                "TargetValue": 1.0, "ScaleOutCooldown": 60, "ScaleInCooldown": 60,
                "PredefinedMetricSpecification": {"PredefinedMetricType":
                    "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"}})

        def attempts():
            text = server.metrics_text(timeout=10)
            return {c: float(v) for c, v in re.findall(
                r'^carve_runtime_copy_attempts_total\{account="\d{12}",component="ic",copy="([^"]+)",'
                r'outcome="answered"\} (\S+)$', text, re.M)}

        def client():
            while not stop.is_set():
                try:
                    rt.invoke_endpoint(EndpointName="ep", InferenceComponentName="ic",
                                       ContentType="application/json",
                                       Body=json.dumps({"inputs": "x",
                                                        "parameters": {"max_new_tokens": 40}}))
                except Exception:  # noqa: BLE001 - load only; the figures come from the server
                    pass
        t0 = time.monotonic()
        wall0 = time.time()
        workers = [threading.Thread(target=client) for _ in range(4)]
        for w in workers:
            w.start()
        first = {w["id"] for n in server.nodes().values() for w in n["Workloads"]
                 if "/ic/" in w["id"]}  # The copy there was before the step.
        poll(lambda: copies()[0] > 1, timeout_s=120, interval_s=0.05, what="scale-out")
        acts = aas.describe_scaling_activities(**{k: target[k] for k in ("ServiceNamespace",
                                                                          "ResourceId")})
        start = min(a["StartTime"].timestamp() for a in acts["ScalingActivities"])
        decision = start - wall0
        want = copies()[0]
        poll(lambda: copies() == (want, want), timeout_s=120, interval_s=0.05, what="serving")
        serving = time.monotonic() - t0
        poll(lambda: any(n > 0 for c, n in attempts().items() if c not in first),
             timeout_s=120, interval_s=0.05, what="a new copy answered")
        traffic = time.monotonic() - t0
        return {"decision_s": round(decision, 2), "serving_s": round(serving, 2),
                "traffic_s": round(traffic, 2), "copies": want}
    finally:
        stop.set()
        server.cleanup()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--sample-ms", type=int, default=1000)
    p.add_argument("--scale-out-s", type=int, default=5)
    args = p.parse_args()
    results = []
    for i in range(args.trials):
        r = trial(args)
        print(json.dumps({"trial": i + 1, **r}), flush=True)
        results.append(r)
    summary = {k: statistics.median(r[k] for r in results)
               for k in ("decision_s", "serving_s", "traffic_s")}
    summary.update({"sample_ms": args.sample_ms, "scale_out_evaluation_s": args.scale_out_s,
                    "trials": args.trials})
    print(json.dumps({"median": summary}))


if __name__ == "__main__":
    main()
