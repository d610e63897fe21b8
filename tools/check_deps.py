#!/usr/bin/env python3
"""Checks that every source under src/ includes only from the parts src/DEPENDENCIES allows.

Usage: tools/check_deps.py [--src DIR] [--rules FILE]

A part is a folder of src/ ("store") or a folder inside one that has a rule of its own
("server/sagemaker"); a file belongs to the deepest part that holds it, so
"server/reconciler_loop.h" is in part server and "server/sagemaker/ops.h" in part server/sagemaker. An include counts when
it is a quoted include whose first path component is a folder of src/; it names the deepest part
its path lies in. A part may include from itself and from the parts its rule lists. Naming a
folder allows all of its parts to everyone outside that folder; inside it, the name means the
folder's own files only, so the parts of one folder are kept apart by their rules.
Angle-bracket includes (system and third-party headers) are not checked here. Exits 0 when every
include is allowed, 1 listing each offending file, line and include with the rule that forbids
it, and 2 when the rules file is malformed or names a folder that does not exist, or when a
folder of src/ has no rule.
"""

import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_rules(path, src):
    rules = {}
    problems = []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if ":" not in line:
                problems.append(f"{path}:{number}: expected 'folder: allowed folders', got {raw.strip()!r}")
                continue
            folder, allowed = line.split(":", 1)
            folder = folder.strip()
            if folder in rules:
                problems.append(f"{path}:{number}: folder {folder!r} has a second rule")
            rules[folder] = set(allowed.split())
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    for folder, allowed in rules.items():
        for name in sorted({folder} | allowed):
            if not os.path.isdir(os.path.join(src, name)) or name.split("/", 1)[0] not in folders:
                problems.append(f"{path}: rule for {folder!r} names {name!r}, which is not a "
                                f"folder of {src}")
    for folder in sorted(folders - set(rules)):
        problems.append(f"{path}: folder {folder!r} of {src} has no rule; add one")
    return rules, folders, problems


def part_of(relpath, rules):
    """The deepest part (a rule's folder) holding `relpath`, or its first component."""
    best = relpath.split("/", 1)[0]
    for part in rules:
        if (relpath == part or relpath.startswith(part + "/")) and len(part) > len(best):
            best = part
    return best


def allowed(own, target, rules):
    if target == own or target in rules[own]:
        return True
    top = target.split("/", 1)[0]
    # From outside a folder, naming it allows all of its parts.
    return "/" in target and top in rules[own] and own.split("/", 1)[0] != top


def violations(src, rules, folders):
    out = []
    for folder in sorted(f for f in rules if "/" not in f):
        root = os.path.join(src, folder)
        for dirpath, _, files in os.walk(root):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".cu", ".c")):
                    continue
                path = os.path.join(dirpath, name)
                own = part_of(os.path.relpath(path, src).replace(os.sep, "/"), rules)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        if m.group(1).split("/", 1)[0] not in folders:
                            continue
                        target = part_of(m.group(1), rules)
                        if allowed(own, target, rules):
                            continue
                        names = " ".join(sorted(rules[own])) or "nothing"
                        out.append(f"{os.path.relpath(path, os.path.dirname(src))}:{number}: "
                                   f'#include "{m.group(1)}": {own}/ may include from '
                                   f"{names}, not {target}/")
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=os.path.join(here, "..", "src"))
    parser.add_argument("--rules")
    args = parser.parse_args()
    src = os.path.normpath(args.src)
    rules_path = args.rules or os.path.join(src, "DEPENDENCIES")
    rules, folders, problems = read_rules(rules_path, src)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    found = violations(src, rules, folders)
    if found:
        print("\n".join(found), file=sys.stderr)
        print(f"{len(found)} include(s) break the dependency rule in {rules_path}", file=sys.stderr)
        return 1
    print(f"dependency rule holds: {len(folders)} folders of {src}, {len(rules)} parts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
