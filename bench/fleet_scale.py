#!/usr/bin/env python3
"""Fleet-scale benchmark (issue 14): one `carve server` (SQLite, no local agent) and one
`carve fleet-sim` process of N simulated ml.p4d.24xlarge agents over real HTTP on loopback,
simulated carve and start time 0, so the figures are the control plane's own. Phases:

  register   all N agents registered and Ready
  endpoint   CreateEndpoint over all N instances with the seed's layout -> InService
  scale      one inference component (mig-1g.5gb) updated from 1 to COPIES copies -> all running
  quiet      every agent heartbeats every 2 s: DescribeEndpoint and ListInferenceComponents
             latency from boto3 (p50/p99), server CPU and RSS
  loss       10% of the agents stop; time until the copies they held are placed again and
             running elsewhere (node timeout + 2 s is the target)
  idle       IDLE idle TCP connections held open by one client: the API's p99 against quiet,
             and the same for nginx (a 204 location) when nginx is installed

usage: bench/fleet_scale.py [--nodes N] [--copies C] [--idle I] [--quiet-s S] [--build DIR]
Prints one line per phase and a JSON summary at the end.
"""
import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import carve_harness as h  # noqa: E402

NODE_TIMEOUT_MS = 10000


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] * 1000


def timed(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1250)
    ap.add_argument("--copies", type=int, default=10000)
    ap.add_argument("--idle", type=int, default=10000)
    ap.add_argument("--quiet-s", type=float, default=20)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--perf", default="", help="a phase (endpoint, scale, quiet) to record with "
                    "`perf record -g` into fleet-<phase>.perf.data")
    args = ap.parse_args()
    os.environ.setdefault("CARVE_BIN", os.path.join(args.build, "carve"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    results = {"nodes": args.nodes, "gpus": args.nodes * 8, "machine": f"{os.cpu_count()} CPUs"}

    profiler = {}

    def perf_start(phase):
        if args.perf == phase and shutil.which("perf"):
            profiler[phase] = subprocess.Popen(
                ["perf", "record", "-F", "499", "-g", "-p", str(server.proc.pid), "-o",
                 f"fleet-{phase}.perf.data"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def perf_stop(phase):
        if phase in profiler:
            profiler.pop(phase).send_signal(2)

    def report(phase, **kv):
        perf_stop(phase)
        results[phase] = kv
        print(f"{phase:9s} " + ", ".join(f"{k} {v}" for k, v in kv.items()), flush=True)

    server = h.CarveServer(carve_ms=0, extra_args=[
        "--no-local-agent", "--node-timeout-ms", str(NODE_TIMEOUT_MS)]).start()
    sim = None
    try:
        pid = server.proc.pid
        sm = server.client()
        t0 = time.monotonic()
        sim = h.FleetSim(server, args.nodes, stats_ms=1000)
        h.poll(lambda: sim.last.get("registered") == args.nodes, timeout_s=300, interval_s=0.2,
               what="agents registered")
        h.poll(lambda: sum(1 for n in server.nodes().values() if n["Status"] == "Ready")
               == args.nodes, timeout_s=120, interval_s=0.5, what="nodes Ready")
        report("register", seconds=round(time.monotonic() - t0, 2),
               rss_mib=round(proc_rss_mib(pid)))

        sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/r",
                        PrimaryContainer={"Image": "carve/testmodel"})
        sm.create_endpoint_config(EndpointConfigName="c", ProductionVariants=[
            h.seed_variant(h.SEED_LAYOUT, count=args.nodes)])
        perf_start("endpoint")
        t1 = time.monotonic()
        sm.create_endpoint(EndpointName="e", EndpointConfigName="c")
        d = h.poll(lambda: (x := sm.describe_endpoint(EndpointName="e"))["EndpointStatus"]
                   != "Creating" and x, timeout_s=600, interval_s=0.1, what="endpoint")
        report("endpoint", status=d["EndpointStatus"] + (" (" + d.get("FailureReason", "") + ")" if d.get("FailureReason") else ""), seconds=round(time.monotonic() - t1, 2),
               rss_mib=round(proc_rss_mib(pid)))

        sm.create_inference_component(
            InferenceComponentName="big", EndpointName="e", VariantName="AllTraffic",
            Specification=h.component_spec("m", "mig-1g.5gb"), RuntimeConfig={"CopyCount": 1})
        h.poll(lambda: sm.describe_inference_component(InferenceComponentName="big")
               ["RuntimeConfig"]["CurrentCopyCount"] == 1, timeout_s=60, what="first copy")
        perf_start("scale")
        t2 = time.monotonic()
        sm.update_inference_component(InferenceComponentName="big",
                                      RuntimeConfig={"CopyCount": args.copies})
        h.poll(lambda: sm.describe_inference_component(InferenceComponentName="big")
               ["RuntimeConfig"]["CurrentCopyCount"] == args.copies, timeout_s=600,
               interval_s=0.1, what=f"{args.copies} copies running")
        report("scale", copies=args.copies, seconds=round(time.monotonic() - t2, 2),
               rss_mib=round(proc_rss_mib(pid)))

        time.sleep(3)  # Let the fleet settle into heartbeats.
        perf_start("quiet")
        beats0, cpu0, w0 = sim.last.get("heartbeats", 0), proc_cpu_s(pid), time.monotonic()
        describe = timed(lambda: sm.describe_endpoint(EndpointName="e"), args.samples)
        listing = timed(lambda: sm.list_inference_components(EndpointNameEquals="e"),
                        args.samples)
        rest = args.quiet_s - (time.monotonic() - w0)
        if rest > 0:
            time.sleep(rest)
        wall = time.monotonic() - w0
        cpu = proc_cpu_s(pid) - cpu0
        beats = sim.last.get("heartbeats", 0) - beats0
        report("quiet", heartbeats_per_s=round(beats / wall), server_cpu_cores=round(cpu / wall, 3),
               describe_p50_ms=round(pct(describe, 50), 1),
               describe_p99_ms=round(pct(describe, 99), 1),
               list_p50_ms=round(pct(listing, 50), 1), list_p99_ms=round(pct(listing, 99), 1),
               rss_mib=round(proc_rss_mib(pid)))

        # Node loss: scale to what 90% of the fleet holds, then lose 10% of the agents.
        lost = max(1, args.nodes // 10)
        keep = min(args.copies, (args.nodes - lost) * 8 * 9 // 10)
        if keep != args.copies:
            sm.update_inference_component(InferenceComponentName="big",
                                          RuntimeConfig={"CopyCount": keep})
            h.poll(lambda: sm.describe_inference_component(InferenceComponentName="big")
                   ["RuntimeConfig"]["CurrentCopyCount"] == keep, timeout_s=300,
                   what="scaled for the loss phase")
        t3 = time.monotonic()
        sim.command(f"stop {lost}")
        h.poll(lambda: sm.describe_endpoint(EndpointName="e")["ProductionVariants"][0]
               ["CurrentInstanceCount"] == args.nodes - lost,
               timeout_s=NODE_TIMEOUT_MS / 1000 + 30, interval_s=0.1, what="lost nodes NotReady")
        notready = time.monotonic() - t3

        def replaced():
            d = sm.describe_inference_component(InferenceComponentName="big")
            return d["RuntimeConfig"]["CurrentCopyCount"] == keep

        h.poll(replaced, timeout_s=120, interval_s=0.1, what="copies placed again")
        report("loss", nodes_lost=lost, copies=keep, notready_s=round(notready, 2),
               replaced_s=round(time.monotonic() - t3, 2),
               target_s=NODE_TIMEOUT_MS / 1000 + 2)
        sim.command("start all")

        if args.idle > 0:
            results["idle"] = idle_phase(args, server, sm, pid, report)
    finally:
        if sim:
            sim.stop()
        server.stop()
        server.cleanup()
    print(json.dumps(results))


def hold_idle(port, count):
    socks = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        socks.append(s)
    return socks


def idle_phase(args, server, sm, pid, report):
    quiet = timed(lambda: sm.list_inference_components(EndpointNameEquals="e"), args.samples)
    rss0 = proc_rss_mib(pid)
    socks = hold_idle(server.port, args.idle)
    time.sleep(1)
    loaded = timed(lambda: sm.list_inference_components(EndpointNameEquals="e"), args.samples)
    rss1 = proc_rss_mib(pid)
    for s in socks:
        s.close()
    out = {"carve_quiet_p99_ms": round(pct(quiet, 99), 1),
           "carve_idle_p99_ms": round(pct(loaded, 99), 1),
           "carve_kib_per_idle_connection": round((rss1 - rss0) * 1024 / args.idle, 1)}
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx")
                                      else None)
    if nginx:
        out.update(nginx_idle(nginx, args))
    report("idle", connections=args.idle, **out)
    return out


def nginx_idle(nginx, args):
    import http.client
    d = tempfile.mkdtemp(prefix="fleet-nginx-")
    port = h.free_port()
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1; daemon off; pid {d}/nginx.pid; error_log {d}/error.log;
events {{ worker_connections {args.idle + 512}; }}
http {{ access_log off; client_body_temp_path {d}; proxy_temp_path {d};
  fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};
  server {{ listen 127.0.0.1:{port}; keepalive_timeout 300s; client_header_timeout 300s;
    location / {{ return 200 '{{"InferenceComponents":[]}}'; }} }} }}
""")
    proc = subprocess.Popen([nginx, "-c", conf, "-p", d], stderr=subprocess.DEVNULL)
    try:
        def up():
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                return True
            except OSError:
                return False

        h.poll(up, timeout_s=10, what="nginx up")

        def get():
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/")
            c.getresponse().read()
            c.close()

        quiet = timed(get, args.samples)
        socks = hold_idle(port, args.idle)
        time.sleep(1)
        loaded = timed(get, args.samples)
        for s in socks:
            s.close()
        return {"nginx_quiet_p99_ms": round(pct(quiet, 99), 2),
                "nginx_idle_p99_ms": round(pct(loaded, 99), 2)}
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
