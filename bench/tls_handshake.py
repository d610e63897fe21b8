#!/usr/bin/env python3
"""What TLS on the listener costs (docs/benchmarks.md, "TLS on the listener"): runs
`carve server --no-local-agent` with --tls off and --tls on, sends N `GET /ping` with Python's
http.client, a new connection per request and then over one keep-alive connection, and prints
the client's p50 and the server's CPU per request (from /proc/<pid>/stat).

    python3 bench/tls_handshake.py build/carve [N]
"""

import http.client
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time


def start(carve, data_dir, tls):
    p = subprocess.Popen([carve, "server", "--listen", "127.0.0.1:0", "--data-dir", data_dir,
                          "--no-local-agent", "--log-level", "warn", "--tls", tls],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in p.stdout:
        m = re.search(r"listening on (https?)://127\.0\.0\.1:(\d+)", line)
        if m:
            return p, m.group(1), int(m.group(2))
    raise SystemExit("carve server did not start")


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def p50_us(scheme, port, cafile, n, new_connection):
    ctx = ssl.create_default_context(cafile=cafile) if scheme == "https" else None

    def connect():
        if ctx:
            return http.client.HTTPSConnection("127.0.0.1", port, context=ctx)
        return http.client.HTTPConnection("127.0.0.1", port)

    conn = connect()
    took = []
    for _ in range(n):
        began = time.perf_counter()
        if new_connection:
            conn = connect()
        conn.request("GET", "/ping")
        conn.getresponse().read()
        if new_connection:
            conn.close()
        took.append(time.perf_counter() - began)
    took.sort()
    return took[len(took) // 2] * 1e6


def main():
    carve = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    data_dir = tempfile.mkdtemp(prefix="carve-tls-bench-")
    try:
        for tls in ("off", "on"):
            proc, scheme, port = start(carve, data_dir, tls)
            cafile = os.path.join(data_dir, "tls", "cert.pem")
            for new_connection in (True, False):
                p50_us(scheme, port, cafile, 50, new_connection)
                before = cpu_seconds(proc.pid)
                p50 = p50_us(scheme, port, cafile, n, new_connection)
                cpu = (cpu_seconds(proc.pid) - before) / n * 1e6
                how = "a new connection each" if new_connection else "keep-alive"
                print(f"{scheme:5} {how:22} p50 {p50:6.0f} us   server CPU {cpu:5.0f} us/request")
            proc.terminate()
            proc.wait()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
