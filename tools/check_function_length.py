#!/usr/bin/env python3
"""Checks that no function in the server's parts is longer than a limit (issue 37: 100 lines).

Usage: tools/check_function_length.py [--max N] [--allow FILE] [--src DIR] PART...

Each PART is a folder under --src (default: the repository's src/); every non-test .cc file in
it is read. A function is a definition at namespace scope: a head with a parenthesis that opens
a brace, up to the brace that closes it. Its length counts from the first line of its head to
that brace. Comments, string and character literals (raw strings too) are blanked first, so a
brace inside one does not count. Lambdas and local classes belong to the function around them.

--allow names functions that are over the limit and known, one "path: head prefix" per line
(# comments allowed): a ratchet for work in progress, so no new one appears and the listed ones
only shrink. An allowed function that is no longer over the limit is reported too, so the list
shrinks with the code.

Exits 0 when every function is within the limit or allowed, 1 listing each offender (file, line,
length and head), 2 for bad arguments.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def blank_comments_and_strings(text):
    """The text with comments and literals replaced by spaces, newlines kept."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|'
                         r"'(?:\\.|[^'\\\n])*'", re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def functions(text):
    """[(first line, length in lines, head)] of the namespace-scope definitions in `text`."""
    lines = blank_comments_and_strings(text).split("\n")
    out = []
    depth = 0        # braces open, namespaces included
    namespaces = 0   # how many of them are namespaces
    head_start = None
    current = None   # (first line index, head) of the function being read
    for i, line in enumerate(lines):
        stripped = line.strip()
        if current is None and depth == namespaces:
            if re.match(r"^(inline\s+)?namespace\b[^;]*\{\s*$", stripped):
                namespaces += 1
                depth += 1
                head_start = None
                continue
            if stripped == "}" and namespaces > 0:
                namespaces -= 1
                depth -= 1
                continue
            if head_start is None and stripped and not stripped.startswith("#"):
                head_start = i
            if "{" in line and head_start is not None:
                head = " ".join(x.strip() for x in lines[head_start:i + 1])
                if "(" in head and not re.match(r"(struct|class|enum|union|using)\b", head) \
                        and "=" not in head.split("(")[0]:
                    current = (head_start, head)
        depth += line.count("{") - line.count("}")
        if depth == namespaces:
            if current is not None and "}" in line:
                out.append((current[0] + 1, i - current[0] + 1, current[1]))
                current = None
                head_start = None
            elif stripped.endswith(";") or stripped.endswith("}"):
                head_start = None
    return out


def read_allowed(path):
    allowed = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            file, _, prefix = line.partition(":")
            if not prefix.strip():
                raise SystemExit(f"{path}: '{line}' is not 'path: head prefix'")
            allowed.append((file.strip(), prefix.strip()))
    return allowed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("parts", nargs="+")
    ap.add_argument("--max", type=int, default=100)
    ap.add_argument("--allow")
    ap.add_argument("--src", default=os.path.join(ROOT, "src"))
    args = ap.parse_args()
    allowed = read_allowed(args.allow) if args.allow else []
    used = set()
    long_ones = []
    for part in args.parts:
        folder = os.path.join(args.src, part)
        if not os.path.isdir(folder):
            print(f"no folder {folder}", file=sys.stderr)
            return 2
        for dirpath, _, names in os.walk(folder):
            for name in sorted(names):
                if not name.endswith(".cc") or name.endswith("_test.cc"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, args.src)
                with open(path) as f:
                    text = f.read()
                for line, length, head in functions(text):
                    if length <= args.max:
                        continue
                    match = [a for a in allowed if a[0] == rel and head.startswith(a[1])]
                    if match:
                        used.update(match)
                        continue
                    long_ones.append(f"{rel}:{line}: {length} lines (at most {args.max}): {head}")
    stale = [f"{file}: {prefix}" for file, prefix in allowed if (file, prefix) not in used]
    for s in long_ones:
        print(s, file=sys.stderr)
    for s in stale:
        print(f"allowed but no longer over {args.max} lines (remove it from the list): {s}",
              file=sys.stderr)
    if long_ones or stale:
        return 1
    print(f"no function over {args.max} lines in {', '.join(args.parts)} "
          f"({len(allowed)} allowed, listed in the allow file)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
