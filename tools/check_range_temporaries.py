#!/usr/bin/env python3
"""Finds range-for loops over a part of a temporary, which C++20 destroys before the loop body.

    for (const auto& r : *store.ListAll(kind))          // *Result<vector>: the Result dies
    for (const auto& w : registry.WaitDesired(n)->workloads)   // ->member of a temporary
    for (const auto& x : Load(path).value())           // .value() of a temporary

C++20 extends the lifetime of a temporary bound directly to the loop's range, not of one reached
through `*`, `->` or a member function that returns a reference into it (P2718 fixes this in
C++23). GCC 12 does not warn; ASan finds it only when the test runs the loop. CI's ASan stage
found two (stop 26: sagemaker_test; stop 46: nodes_test). Name the temporary first:

    const auto all = store.ListAll(kind);
    for (const auto& r : *all)

Usage: check_range_temporaries.py [--src DIR ...]; exits 1 and lists each finding."""

import argparse
import os
import re
import sys

# `for (decl : range)`, the range up to the `)` that closes the for (nested parentheses allowed
# two deep), spanning lines; the body may be a block or one statement.
FOR = re.compile(r"\bfor\s*\(([^;()]|\([^()]*(\([^()]*\))*[^()]*\))*?\s:\s*"
                 r"(?P<range>([^()]|\((?:[^()]|\([^()]*\))*\))+?)\)", re.S)
CALL = r"[\w:.\->\[\]]*\w\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
DANGLING = [
    (re.compile(r"^\s*\*\s*" + CALL + r"\s*$", re.S), "dereferences a temporary"),
    (re.compile(r"^\s*" + CALL + r"\s*->", re.S), "reaches a member through a temporary"),
    (re.compile(r"^\s*" + CALL + r"\s*\.\s*(value|operator\*)\s*\(\s*\)\s*$", re.S),
     "takes .value() of a temporary"),
]


def findings(path, text):
    for m in FOR.finditer(text):
        rng = m.group("range")
        for pattern, why in DANGLING:
            if pattern.search(rng):
                line = text.count("\n", 0, m.start()) + 1
                yield f"{path}:{line}: range-for {why}: `{' '.join(rng.split())}`"
                break


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", action="append", required=True)
    args = ap.parse_args(argv)
    found = []
    files = 0
    for root in args.src:
        for d, _, names in os.walk(root):
            for n in sorted(names):
                if not n.endswith((".cc", ".h")):
                    continue
                path = os.path.join(d, n)
                with open(path, encoding="utf-8", errors="replace") as f:
                    found.extend(findings(path, f.read()))
                files += 1
    for f in found:
        print(f, file=sys.stderr)
    if found:
        print(f"{len(found)} range-for loop(s) over part of a temporary: name it first "
              "(tools/check_range_temporaries.py)", file=sys.stderr)
        return 1
    print(f"no range-for over part of a temporary in {files} files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
