#!/usr/bin/env python3
"""Mechanical mutation sampling: how many generated bugs in one folder do its tests kill?

  tools/mutate_sample.py --dir src/server/autoscaling -n 40 --seed 1
  make mutate-sample DIR=src/server/autoscaling N=40 SEED=1

Generates every mutant of the folder's production sources (tools/mutants.py: operator flips,
constants +-1, statements removed, early returns, twin names and arguments swapped, conditions
forced), draws N of them with the seed, and for each one writes it into the scratch copy of the
tree that `make mutate` uses (build-mutate/), builds what the folder's tests run, and runs the
folder's unit tests, then, if they all pass, the integration suites that exercise the folder
(SUITES below; --tests overrides). Each mutant is

  killed       a test failed
  timed out    a test ran past 3x its unpatched time (at least 60 s): counted as killed
  survived     every test passed: its diff is printed, to be killed by a new test or explained
               as an equivalent mutant in docs/testing.md
  not compiled the build failed: left out of the score

score = (killed + timed out) / (killed + timed out + survived). The same seed on the same commit
draws the same mutants. Not part of `make test`: each mutant costs a compile, a link and the
tests, one to three minutes on the 2-core machine.
"""

import argparse
import datetime
import os
import random
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutants as gen  # noqa: E402
import mutate  # noqa: E402

# For each folder: its unit tests, then the integration suites that drive its code through the
# server as clients do. The unit tests run first, and the (slower) suites only for mutants that
# survive them.
SUITES = {
    "src/server/autoscaling": ("^autoscaling_test$", "^integration_autoscaling_test$"),
    "src/server/sagemaker": ("^sagemaker_test$",
                             "^integration_(sagemaker_rules|sagemaker_flow|rolling_update)_test$"),
    "src/server/queues": ("^queues_test$", "^integration_(mgpu_queue|ray_queue)_test$"),
    "src/runtime": ("^runtime_test$", "^integration_(runtime|openai_route)_test$"),
    "src/http": ("^http_test$", "^integration_(principals|tls|signing_region)_test$"),
    "src/aws": ("^aws_test$",
                "^integration_(signing_region|principals|openai_route|token_revoke)_test$"),
    "src/store": ("^(store_test|store_kill_test)$",
                  "^integration_(sagemaker_durability|store_migrate)_test$"),
    "src/interposer": ("^(interposer_core_test|interposer_floor_test|interposer_preload_.*)$",
                       "^integration_mgpu_enforcement_test$"),
}


def log(msg):
    print(msg, flush=True)


def ctest_times(output):
    """{test: seconds} from ctest's output."""
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.+.*?([\d.]+) sec", output,
                                 re.M)}


def object_source(target):
    """The source an object target compiles: "src/server/CMakeFiles/x.dir/a/b.cc.o" is
    src/server/a/b.cc (the object's path below its target's .dir, in its CMake directory)."""
    m = re.match(r"^(.*?)/?CMakeFiles/[^/]+\.dir/(.+)\.o$", target)
    if not m:
        return None
    return os.path.normpath(os.path.join(m.group(1), m.group(2)))


def run_stage(scratch, regex, timeout_s):
    """(result, detail) of running one ctest regex: 'passed', 'killed' or 'timed out'."""
    try:  # mutate.run kills the whole process group on timeout: no test's server outlives it.
        code, out = mutate.run(["ctest", "--test-dir", scratch.build, "-R", regex, "-j", "2",
                                "--timeout", str(timeout_s), "--stop-on-failure",
                                "--output-on-failure"], timeout=timeout_s * 4)
    except subprocess.TimeoutExpired:
        return "timed out", regex
    if code == 0:
        return "passed", ""
    if re.search(r"\*\*\*Timeout", out):
        return "timed out", ", ".join(re.findall(r"(\S+) \.+\*\*\*Timeout", out))
    return "killed", ", ".join(mutate.failed_tests(out)) or "(see ctest output)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="folder to mutate, e.g. src/server/autoscaling")
    ap.add_argument("-n", type=int, default=40, help="mutants to sample (default %(default)s)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tests", help="ctest regexes 'UNIT[;INTEGRATION]' instead of SUITES")
    ap.add_argument("--list", action="store_true", help="print the sample and stop")
    ap.add_argument("--scratch", default=os.path.join(mutate.ROOT, "build-mutate"))
    ap.add_argument("--report", help="also write the results and survivors to this Markdown file")
    args = ap.parse_args()

    folder = os.path.normpath(args.dir)
    if args.tests:
        stages = tuple(args.tests.split(";"))
    elif folder in SUITES:
        stages = SUITES[folder]
    else:
        raise SystemExit(f"no suites known for {folder}: give --tests 'UNIT;INTEGRATION'")
    every = gen.enumerate_mutants(mutate.ROOT, folder)
    if not every:
        raise SystemExit(f"no mutants in {folder}")
    sample = random.Random(args.seed).sample(every, min(args.n, len(every)))
    commit = subprocess.run(["git", "-C", mutate.ROOT, "rev-parse", "--short", "HEAD"],
                            stdout=subprocess.PIPE, text=True).stdout.strip()
    by_op = {}
    for m in every:
        by_op[m.op] = by_op.get(m.op, 0) + 1
    log(f"{folder} at {commit}: {len(every)} mutants ({', '.join(f'{k} {v}' for k, v in sorted(by_op.items()))}); "
        f"seed {args.seed} draws {len(sample)}")
    if args.list:
        for m in sample:
            log(f"  {m.ident}\n    - {m.before.strip()}\n    + {m.after.strip()}")
        return 0

    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    scratch = mutate.Scratch(mutate.ROOT, os.path.abspath(args.scratch), [])
    os.makedirs(scratch.tree, exist_ok=True)
    scratch.snapshot()
    log(f"syncing {scratch.tree}: {scratch.sync()} files written")
    scratch.configure()
    scratch.regenerate()
    regex_all = "|".join(f"({s})" for s in stages)
    outputs = sorted({o for _, needs in scratch.tests(regex_all) for o in needs})
    code, out = scratch.build_outputs(outputs, 3600)
    if code != 0:
        raise SystemExit("the unpatched tree does not build:\n" + out[-4000:])
    p = subprocess.run(["ctest", "--test-dir", scratch.build, "-R", regex_all, "-j", "2",
                        "--output-on-failure"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if p.returncode != 0:
        raise SystemExit("the folder's tests fail without a mutant:\n" + p.stdout[-4000:])
    times = ctest_times(p.stdout)
    timeout_s = max(60, int(3 * max(times.values(), default=20)))
    log(f"baseline: {len(times)} tests pass; per-test timeout {timeout_s} s")

    rows = []
    for i, m in enumerate(sample, 1):
        t = time.monotonic()
        text = scratch.files[m.path][0].decode()
        diff = m.diff(text)
        try:
            with open(os.path.join(scratch.tree, m.path), "w") as f:
                f.write(m.apply(text))
            # Every object compiled from the mutated file, too: a file no test links (a check
            # of compile-time assertions) must still build, or the mutant did not compile.
            objects = sorted(o for o in scratch.ninja_targets() if object_source(o) == m.path)
            code, out = scratch.build_outputs(sorted(set(outputs) | set(objects)), 1800)
            if code != 0:
                errors = [line for line in out.splitlines() if "error:" in line]
                result, detail = "not compiled", (errors or out.strip().splitlines() or [""])[0]
            else:
                result, detail = "survived", ""
                for regex in stages:
                    result, detail = run_stage(scratch, regex, timeout_s)
                    if result != "passed":
                        break
                if result == "passed":
                    result, detail = "survived", "passed: " + " then ".join(stages)
        finally:
            scratch.sync()
        seconds = time.monotonic() - t
        rows.append((m, result, seconds, detail, diff))
        log(f"[{i}/{len(sample)}] {result} ({seconds:.0f} s) {m.ident}")
        if result == "survived":
            log(diff)

    counts = {r: sum(1 for row in rows if row[1] == r)
              for r in ("killed", "timed out", "survived", "not compiled")}
    scored = counts["killed"] + counts["timed out"] + counts["survived"]
    score = (counts["killed"] + counts["timed out"]) / scored if scored else 0.0
    elapsed = time.monotonic() - t0
    summary = (f"{folder} at {commit}, seed {args.seed}, {len(rows)} mutants: "
               f"{counts['killed']} killed, {counts['timed out']} timed out, "
               f"{counts['survived']} survived, {counts['not compiled']} not compiled; "
               f"score {100 * score:.0f} % in {elapsed / 60:.1f} min")
    log("\n" + summary)
    if args.report:
        with open(args.report, "w") as f:
            f.write(f"{summary} ({started:%Y-%m-%d %H:%M} UTC)\n\n")
            f.write("| mutant | result | seconds | detail |\n|---|---|---|---|\n")
            for m, result, seconds, detail, _ in rows:
                detail = detail.replace("|", "\\|").replace("\n", " ")[:160]
                f.write(f"| `{m.ident}` | {result} | {seconds:.0f} | {detail} |\n")
            for m, result, _, _, diff in rows:
                if result == "survived":
                    f.write(f"\n`{m.ident}`\n\n```diff\n{diff}```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
