#!/usr/bin/env python3
"""Fails when a process started from a build's binaries is still alive (docs/testing.md).

CTest runs this last, as the cleanup of the `carve_processes` fixture that every integration,
CLI and browser suite requires: a test that leaves a server, an agent or a copy running is a
defect, and this names it. A process counts as the tests' when its executable lies inside the
build directory (carve itself, `carve testmodel` copies, the probe programs) or its command line
names that directory (a copy started through a shell). Leftovers are reported, then killed, so
that the next stage of CI starts clean.

    leftover_processes.py BUILD_DIR [--no-kill]
"""
import os
import re
import signal
import sys
import time


def leftovers(build_dir):
    build_dir = os.path.realpath(build_dir)
    # The directory itself, not a sibling that shares its prefix (build/ against build-asan/).
    named = re.compile(re.escape(build_dir) + r"(?=$|[/\s;:'\"])")
    build_dir += os.sep
    mine = {os.getpid(), os.getppid()}
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in mine:
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone meanwhile
        if state == "Z" or not argv:
            continue  # a zombie holds nothing; its parent is reported if it is ours
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            exe = ""
        if exe.startswith(build_dir) or any(named.search(a) for a in argv):
            found.append((pid, exe, " ".join(argv)[:300]))
    return found


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    found = leftovers(sys.argv[1])
    if not found:
        print(f"no process of {sys.argv[1]} is alive")
        return 0
    print(f"{len(found)} process(es) started by the tests are still alive:", file=sys.stderr)
    for pid, exe, cmd in found:
        print(f"  pid {pid} ({exe}): {cmd}", file=sys.stderr)
    if "--no-kill" not in sys.argv:
        for pid, _, _ in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)
    return 1


if __name__ == "__main__":
    sys.exit(main())
