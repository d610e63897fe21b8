#!/usr/bin/env python3
"""A stand-in for Ray's `ray` and `serve` command lines, for carve's end-to-end tests.

Ray cannot be installed on the machines carve is tested on (no PyPI), and Ray's own behaviour is
not what those tests check: they check carve's orchestration of it. This program behaves as Ray
does at the points carve relies on, and nowhere else:

  fake_ray.py start --head --port=P --dashboard-port=D [--num-gpus=N] [--block]
      The head. Listens for workers and drivers on 127.0.0.1:P and serves a dashboard on
      127.0.0.1:D, printing its address as `ray start --head` does. The dashboard answers
      GET /api/cluster_status (the head, its workers, their GPU counts and environment) and
      Serve's REST API: PUT, GET and DELETE /api/serve/applications/.
  fake_ray.py start --address=HOST:P [--num-gpus=N] [--block]
      A worker. Connects to the head (retrying for up to 60 s, as `ray start` waits for the GCS),
      registers its --num-gpus and the environment carve gave it, and runs until the head goes
      away (exit 1) or it is stopped (SIGTERM: exit 0).
  fake_ray.py driver [--expect-workers=N] [--expect-gpus-per-worker=G] [--timeout=S]
      A driver. Connects through RAY_ADDRESS, as `ray.init()` does, waits up to S seconds for N
      workers, prints cluster_resources() and the workers, and exits 0 when every worker has G
      GPUs (3 otherwise).
  fake_ray.py serve deploy CONFIG --address=http://HOST:D
      Sends the Serve config (YAML, as `serve deploy` takes) to the head's dashboard. The head then
      serves HTTP for each application at its route_prefix on http_options.host:port; a request
      is answered with a JSON echo naming the application. Application status goes DEPLOYING,
      then RUNNING.
  fake_ray.py status [--address=HOST:P]
      Prints the head's cluster status as JSON (RAY_ADDRESS when --address is not given).

What it does not model: scheduling of tasks and actors, object store, resources other than GPU
counts, autoscaling, the import_path of an application (every application answers with the same
echo), runtime_env, GCS fault tolerance (a worker whose head goes away exits), and the real
dashboard's UI and other endpoints.
"""

import argparse
import http.server
import json
import os
import signal
import socket
import socketserver
import sys
import threading
import time

ENV_PREFIXES = ("CUDA_", "CARVE_", "NVIDIA_", "RAY_", "LD_PRELOAD")


def carve_env():
    return {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}


def parse_address(text):
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


def request(address, message, timeout_s=5.0):
    """One JSON request to the head's port; the reply."""
    with socket.create_connection(parse_address(address), timeout=timeout_s) as s:
        s.sendall((json.dumps(message) + "\n").encode())
        return json.loads(s.makefile().readline())


def wait_until_stopped():
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(0.2):
        pass


class Head:
    def __init__(self, port, dashboard_port, num_gpus):
        self.port = port
        self.dashboard_port = dashboard_port
        self.num_gpus = num_gpus
        self.lock = threading.Lock()
        self.workers = {}
        self.next_worker = 1
        self.serve = None  # {"config": ..., "deployed_s": ..., "server": ...}

    # -- the cluster ---------------------------------------------------------------------------
    def status(self):
        with self.lock:
            workers = sorted(self.workers.values(), key=lambda w: w["node_id"])
            gpus = self.num_gpus + sum(w["num_gpus"] for w in workers)
            return {"head": {"address": f"127.0.0.1:{self.port}", "num_gpus": self.num_gpus,
                             "env": carve_env(), "pid": os.getpid()},
                    "workers": workers,
                    "cluster_resources": {"GPU": float(gpus),
                                          "node_count": 1 + len(workers)}}

    def serve_worker(self, conn):
        f = conn.makefile("rw")
        node_id = None
        try:
            message = json.loads(f.readline() or "{}")
            if message.get("op") == "status":
                f.write(json.dumps(self.status()) + "\n")
                f.flush()
                return
            if message.get("op") != "register":
                f.write(json.dumps({"error": "unknown op"}) + "\n")
                f.flush()
                return
            with self.lock:
                node_id = f"worker-{self.next_worker}"
                self.next_worker += 1
                self.workers[node_id] = {"node_id": node_id, "num_gpus": message["num_gpus"],
                                         "env": message["env"], "pid": message["pid"]}
            print(f"worker {node_id} joined: pid {message['pid']}, "
                  f"{message['num_gpus']} GPU(s)", flush=True)
            f.write(json.dumps({"node_id": node_id}) + "\n")
            f.flush()
            while f.readline():  # Until the worker goes.
                pass
        except (OSError, ValueError):
            pass
        finally:
            if node_id:
                with self.lock:
                    self.workers.pop(node_id, None)
                print(f"worker {node_id} left", flush=True)
            conn.close()

    def listen(self):
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def _accept(self, server):
        while True:
            conn, _ = server.accept()
            threading.Thread(target=self.serve_worker, args=(conn,), daemon=True).start()

    # -- Serve ---------------------------------------------------------------------------------
    def deploy(self, config):
        apps = config.get("applications") or []
        http_options = config.get("http_options") or {}
        host = http_options.get("host", "127.0.0.1")
        port = int(http_options.get("port", 8000))
        with self.lock:
            if self.serve and self.serve["server"].server_address[1] != port:
                raise ValueError("http_options cannot change once Serve runs")
            if not self.serve:
                # As Ray's proxy (uvicorn) does: a head restarted on the same port binds it
                # even while connections of the last one are in TIME_WAIT.
                socketserver.ThreadingTCPServer.allow_reuse_address = True
                server = socketserver.ThreadingTCPServer((host, port), self.ingress_handler())
                server.daemon_threads = True
                threading.Thread(target=server.serve_forever, daemon=True).start()
                self.serve = {"server": server}
            self.serve["config"] = config
            self.serve["apps"] = {a.get("name", "default"): a for a in apps}
            self.serve["deployed_s"] = time.time()
        print(f"serve: deployed {len(apps)} application(s) on {host}:{port}", flush=True)

    def shutdown_serve(self):
        with self.lock:
            serve, self.serve = self.serve, None
        if serve:
            serve["server"].shutdown()
            serve["server"].server_close()

    def serve_details(self):
        with self.lock:
            if not self.serve:
                return {"proxy_location": "HeadOnly", "http_options": None, "applications": {}}
            # DEPLOYING for the first half second, as replicas start, then RUNNING.
            running = time.time() - self.serve["deployed_s"] > 0.5
            apps = {name: {"name": name,
                           "route_prefix": a.get("route_prefix", "/"),
                           "status": "RUNNING" if running else "DEPLOYING",
                           "message": "" if running else "Deploying app",
                           "deployed_app_config": a}
                    for name, a in self.serve["apps"].items()}
            return {"proxy_location": self.serve["config"].get("proxy_location", "HeadOnly"),
                    "http_options": self.serve["config"].get("http_options"),
                    "applications": apps}

    def ingress_handler(self):
        head = self

        class Ingress(http.server.BaseHTTPRequestHandler):
            def answer(self):
                with head.lock:
                    apps = dict(head.serve["apps"]) if head.serve else {}
                    workers = len(head.workers)
                match = None
                for name, a in apps.items():
                    prefix = a.get("route_prefix", "/")
                    if self.path == prefix or self.path.startswith(prefix.rstrip("/") + "/"):
                        if match is None or len(prefix) > len(match[1]):
                            match = (name, prefix)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode(errors="replace") if length else ""
                if match is None:
                    self.send_response(404)
                    self.end_headers()
                    self.wfile.write(b"Path not found\n")
                    return
                reply = json.dumps({"application": match[0], "method": self.command,
                                    "path": self.path, "body": body,
                                    "workers": workers}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_GET = do_POST = answer

            def log_message(self, *args):
                pass

        return Ingress

    # -- the dashboard -------------------------------------------------------------------------
    def dashboard(self):
        head = self

        class Dashboard(http.server.BaseHTTPRequestHandler):
            def reply(self, status, value):
                body = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == "/api/cluster_status":
                    return self.reply(200, head.status())
                if self.path.rstrip("/") == "/api/serve/applications":
                    return self.reply(200, head.serve_details())
                self.reply(404, {"error": f"{self.path}: not served by the stand-in"})

            def do_PUT(self):
                if self.path.rstrip("/") != "/api/serve/applications":
                    return self.reply(404, {"error": self.path})
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    head.deploy(json.loads(self.rfile.read(length)))
                except (ValueError, OSError) as e:
                    return self.reply(400, {"error": str(e)})
                self.reply(200, {})

            def do_DELETE(self):
                head.shutdown_serve()
                self.reply(200, {})

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", self.dashboard_port), Dashboard)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()


def start_head(args):
    head = Head(args.port, args.dashboard_port, args.num_gpus)
    head.listen()
    head.dashboard()
    print("Local node IP: 127.0.0.1\n--------------------\nRay runtime started.\n"
          "--------------------\nNext steps\n  To add another node to this Ray cluster, run\n"
          f"    ray start --address='127.0.0.1:{args.port}'\n"
          "  To monitor and debug Ray, view the dashboard at\n"
          f"    127.0.0.1:{args.dashboard_port}", flush=True)
    if args.block:
        wait_until_stopped()
    return 0


def start_worker(args):
    deadline = time.time() + 60
    while True:
        try:
            conn = socket.create_connection(parse_address(args.address), timeout=5)
            break
        except OSError as e:
            if time.time() > deadline:
                print(f"could not reach the head at {args.address}: {e}", file=sys.stderr)
                return 1
            time.sleep(0.2)
    conn.settimeout(None)
    f = conn.makefile("rw")
    f.write(json.dumps({"op": "register", "num_gpus": args.num_gpus, "env": carve_env(),
                        "pid": os.getpid()}) + "\n")
    f.flush()
    reply = json.loads(f.readline() or "{}")
    print(f"Ray runtime started: joined {args.address} as {reply.get('node_id')}", flush=True)
    lost = threading.Event()

    def watch():
        f.readline()  # EOF: the head is gone.
        lost.set()

    threading.Thread(target=watch, daemon=True).start()
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    while not stopped.is_set() and not lost.is_set():
        stopped.wait(0.2)
    if lost.is_set() and not stopped.is_set():
        print(f"lost the head at {args.address}", file=sys.stderr, flush=True)
        return 1
    return 0


def driver(args):
    address = os.environ.get("RAY_ADDRESS")
    if not address:
        print("RAY_ADDRESS is not set", file=sys.stderr)
        return 2
    deadline = time.time() + args.timeout

    def status_now():
        # As ray.init() does, retry a head that is not listening yet: the agent reports the
        # head running once its process exists, which can be before it binds its port.
        while True:
            try:
                return request(address, {"op": "status"})
            except OSError as e:
                if time.time() > deadline:
                    raise
                print(f"head at {address} not answering yet ({e}); retrying", file=sys.stderr,
                      flush=True)
                time.sleep(0.2)
    status = status_now()
    while len(status["workers"]) < args.expect_workers and time.time() < deadline:
        time.sleep(0.2)
        status = status_now()
    print("cluster_resources:", json.dumps(status["cluster_resources"]))
    for w in status["workers"]:
        print("worker:", json.dumps(w, sort_keys=True))
    ok = len(status["workers"]) >= args.expect_workers
    if args.expect_gpus_per_worker is not None:
        ok = ok and all(w["num_gpus"] == args.expect_gpus_per_worker for w in status["workers"])
    return 0 if ok else 3


def serve_deploy(args):
    import urllib.error
    import urllib.request

    import yaml  # Debian's python3-yaml; what `serve deploy` reads is YAML.

    with open(args.config) as f:
        config = yaml.safe_load(f)
    url = args.address.rstrip("/") + "/api/serve/applications/"
    req = urllib.request.Request(url, data=json.dumps(config).encode(), method="PUT",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()
    except (urllib.error.URLError, OSError) as e:
        print(f"could not deploy to {url}: {e}", file=sys.stderr)
        return 1
    print("Sent deploy request successfully.")
    return 0


def status(args):
    address = args.address or os.environ.get("RAY_ADDRESS")
    print(json.dumps(request(address, {"op": "status"}), indent=2, sort_keys=True))
    return 0


def main(argv):
    p = argparse.ArgumentParser(prog="fake_ray.py", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start")
    s.add_argument("--head", action="store_true")
    s.add_argument("--address")
    s.add_argument("--port", type=int, default=6379)
    s.add_argument("--dashboard-port", type=int, default=8265)
    s.add_argument("--num-gpus", type=int, default=0)
    s.add_argument("--block", action="store_true")
    d = sub.add_parser("driver")
    d.add_argument("--expect-workers", type=int, default=0)
    d.add_argument("--expect-gpus-per-worker", type=int)
    d.add_argument("--timeout", type=float, default=30)
    sv = sub.add_parser("serve")
    sv.add_argument("verb", choices=["deploy"])
    sv.add_argument("config")
    sv.add_argument("--address", "-a", required=True)
    st = sub.add_parser("status")
    st.add_argument("--address")
    args = p.parse_args(argv)
    if args.command == "start":
        if args.head:
            return start_head(args)
        if not args.address:
            p.error("start: --head or --address=HOST:PORT")
        return start_worker(args)
    return {"driver": driver, "serve": serve_deploy, "status": status}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
