#!/usr/bin/env python3
"""The mutation check: does the suite catch each plausible bug in tests/mutations/?

Each patch there is one bug (`# bug:`), the tests that must catch it (`# catches:`, a `ctest -R`
regex) and a `git diff` applicable at the repository root (tests/mutations/README.md). For each
patch this script

  1. brings a scratch copy of the working tree (tracked and untracked, not ignored, files, as
     they were when the run started) up to date, writing only files whose bytes differ, so the
     scratch build stays incremental;
  2. applies the patch there (`git apply`); a patch that no longer applies is reported "stale";
  3. builds only what the named tests need: the executables their commands run and the build
     outputs their environment names (CARVE_BIN=.../carve and the like), with ninja;
  4. runs the named tests with ctest, and calls the patch "caught" when at least one fails.

It reports every patch the suite did not catch ("SURVIVED"), every stale one, and every one whose
regex names no test or whose build broke, and exits 1 if there is any. Before the patches it runs
every named test once on the unpatched tree (--no-baseline skips this): a test that fails without
a bug cannot be said to catch one.

The scratch directory (default build-mutate/, ignored by git like every /build*) keeps its tree
and its CMake build (tree/build) between runs; the build uses ccache when it is installed.

  tools/mutate.py                         every patch
  tools/mutate.py tests/mutations/store-*.patch
  tools/mutate.py --report out.md         also writes the results as a Markdown table
"""

import argparse
import datetime
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def log(msg):
    print(msg, flush=True)


def run(cmd, cwd=None, timeout=None, quiet=True):
    """Runs `cmd` in a process group of its own; returns (returncode, combined output). Output is
    echoed unless quiet. Past `timeout` the whole group is killed, not only `cmd` (ctest), so no
    process a test started (a server, an agent) outlives a mutant that made it hang, and
    subprocess.TimeoutExpired is raised."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    if not quiet:
        sys.stdout.write(out)
    return p.returncode, out


class Patch:
    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.name = os.path.basename(path)[:-len(".patch")]
        self.bug = ""
        self.catches = ""
        with open(path) as f:
            for line in f:
                if not line.startswith("#"):
                    break
                m = re.match(r"#\s*(bug|catches):\s*(.*\S)\s*$", line)
                if m:
                    setattr(self, m.group(1), m.group(2))


class Scratch:
    """A copy of the source tree and a CMake build of it, both persistent."""

    def __init__(self, source, scratch, cmake_flags):
        self.source = source
        self.tree = os.path.join(scratch, "tree")
        # The build sits inside the tree as build/ sits inside the checkout, so every compile
        # command is the same relative to its directory and ccache (base_dir) hits on the objects
        # the ordinary build already made: only what a patch changed is compiled.
        self.build = os.path.join(self.tree, "build")
        self.manifest = os.path.join(scratch, "manifest.json")
        self.cmake_flags = cmake_flags
        self._ninja_targets = None

    def source_files(self):
        code, out = run(["git", "-C", self.source, "ls-files", "-z", "--cached", "--others",
                         "--exclude-standard"])
        if code != 0:
            raise SystemExit("git ls-files failed:\n" + out)
        return sorted({f for f in out.split("\0") if f and
                       os.path.isfile(os.path.join(self.source, f))})

    def snapshot(self):
        """Reads the source's files once: every patch runs against the tree as it was when the
        run started, whatever is edited in the source meanwhile."""
        self.files = {}
        for rel in self.source_files():
            path = os.path.join(self.source, rel)
            with open(path, "rb") as f:
                self.files[rel] = (f.read(), os.stat(path).st_mode & 0o777)

    def sync(self):
        """Makes tree/ byte-identical to the snapshot; returns how many files it wrote.

        Files are written, never given their old times back, so every file a patch touched gets
        a new modification time when restored and ninja rebuilds what depends on it."""
        files = sorted(self.files)
        previous = []
        if os.path.exists(self.manifest):
            with open(self.manifest) as f:
                previous = json.load(f)
        written = 0
        for rel in files:
            data, mode = self.files[rel]
            dst = os.path.join(self.tree, rel)
            try:
                with open(dst, "rb") as f:
                    same = f.read() == data and os.stat(dst).st_mode & 0o777 == mode
            except OSError:
                same = False
            if same:
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.lexists(dst) and not os.path.isfile(dst):
                shutil.rmtree(dst)
            with open(dst, "wb") as f:
                f.write(data)
            os.chmod(dst, mode)
            written += 1
        for rel in set(previous) - set(files):
            try:
                os.remove(os.path.join(self.tree, rel))
                written += 1
            except OSError:
                pass
        with open(self.manifest, "w") as f:
            json.dump(files, f)
        return written

    def configure(self):
        if os.path.exists(os.path.join(self.build, "build.ninja")):
            return
        # cmake/ccache.cmake compiles through ccache when it is installed.
        flags = ["-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
        log(f"configuring {self.build}")
        code, out = run(["cmake", "-S", self.tree, "-B", self.build, "-G", "Ninja", *flags,
                         *self.cmake_flags])
        if code != 0:
            raise SystemExit("cmake failed:\n" + out)

    def regenerate(self):
        """Re-runs CMake when a synced CMakeLists.txt (or a globbed test file) changed, so that
        ctest and ninja know the tree as it is now."""
        code, out = run(["ninja", "-C", self.build, "build.ninja"])
        if code != 0:
            raise SystemExit("regenerating the scratch build failed:\n" + out[-4000:])
        self._ninja_targets = None

    def ninja_targets(self):
        if self._ninja_targets is None:
            code, out = run(["ninja", "-C", self.build, "-t", "targets", "all"])
            if code != 0:
                raise SystemExit("ninja -t targets failed:\n" + out)
            self._ninja_targets = {line.rsplit(": ", 1)[0] for line in out.splitlines()}
        return self._ninja_targets

    def tests(self, regex):
        """The tests `ctest -R regex` selects: [(name, [build outputs they need])]."""
        code, out = run(["ctest", "--test-dir", self.build, "-N", "-R", regex,
                         "--show-only=json-v1"])
        if code != 0:
            raise SystemExit(f"ctest -N -R {regex!r} failed:\n" + out)
        targets = self.ninja_targets()
        build = self.build + os.sep
        found = []
        for t in json.loads(out).get("tests", []):
            # ctest leaves out the command of a test whose executable is not built yet.
            words = list(t.get("command", [])) or self.declared_commands().get(t["name"], [])
            for prop in t.get("properties", []):
                if prop["name"] == "ENVIRONMENT":
                    words += [v.split("=", 1)[1] for v in prop["value"] if "=" in v]
            needs = set()
            for w in words:
                for path in w.split(";"):
                    if path.startswith(build) and path[len(build):] in targets:
                        needs.add(path[len(build):])
            found.append((t["name"], sorted(needs)))
        return found

    def declared_commands(self):
        """{test: [executable]} as the CTestTestfile.cmake files declare them."""
        commands = {}
        for root, _dirs, files in os.walk(self.build):
            if "CTestTestfile.cmake" not in files:
                continue
            with open(os.path.join(root, "CTestTestfile.cmake")) as f:
                for m in re.finditer(r'^add_test\(\[=\[(.+?)\]=\] "([^"]+)"', f.read(), re.M):
                    commands[m.group(1)] = [m.group(2)]
        return commands

    def build_outputs(self, outputs, timeout_s):
        if not outputs:
            return 0, ""
        return run(["ninja", "-C", self.build, *outputs], timeout=timeout_s)

    def ctest(self, regex, jobs, timeout_s):
        return run(["ctest", "--test-dir", self.build, "-R", regex, "--output-on-failure",
                    "-j", str(jobs), "--timeout", str(timeout_s)])


def failed_tests(ctest_output):
    return re.findall(r"^\s*\d+ - (\S+) \(", ctest_output, re.M)


def git_apply(scratch, *args):
    """`git apply` in the scratch tree, which is no repository: git must not find the one the
    scratch directory may sit in (from inside a repository, git apply silently skips every path
    outside the current directory)."""
    env = dict(os.environ, GIT_CEILING_DIRECTORIES=os.path.dirname(scratch.tree))
    p = subprocess.run(["git", "apply", *args], cwd=scratch.tree, env=env, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p.returncode, p.stdout


def check_patch(scratch, patch, args):
    """Returns (result, detail) for one patch. The tree is synced back afterwards by the caller."""
    if not patch.catches or not patch.bug:
        return "malformed", "the patch lacks a '# bug:' or '# catches:' line"
    code, out = git_apply(scratch, "--check", patch.path)
    if code != 0:
        return "stale", out.strip().splitlines()[-1] if out.strip() else "git apply --check failed"
    scratch.regenerate()  # The previous patch may have been undone in a CMakeLists.txt.
    tests = scratch.tests(patch.catches)
    if not tests:
        return "no tests", f"ctest -R {patch.catches!r} selects no test"
    code, out = git_apply(scratch, "--numstat", patch.path)
    files = [line.split("\t")[-1] for line in out.splitlines() if line.strip()]
    code, out = git_apply(scratch, patch.path)
    if code != 0:
        return "stale", out.strip()
    if any(os.path.basename(f) == "CMakeLists.txt" or f.endswith(".cmake") for f in files):
        scratch.regenerate()
        tests = scratch.tests(patch.catches)
    for rel in files:  # A patch that changed nothing would "survive" for the wrong reason.
        try:
            with open(os.path.join(scratch.tree, rel), "rb") as f:
                if rel in scratch.files and f.read() == scratch.files[rel][0]:
                    return "stale", f"applying it left {rel} unchanged"
        except FileNotFoundError:
            pass  # Deleted by the patch: changed.
    outputs = sorted({o for _, needs in tests for o in needs})
    code, out = scratch.build_outputs(outputs, args.build_timeout)
    if code != 0:
        tail = "\n".join(out.splitlines()[-15:])
        return "build failed", f"building {' '.join(outputs)} with the patch failed:\n{tail}"
    code, out = scratch.ctest(patch.catches, args.jobs, args.test_timeout)
    if code != 0:
        return "caught", "failed: " + ", ".join(failed_tests(out) or ["(see ctest output)"])
    return "SURVIVED", "passed: " + ", ".join(name for name, _ in tests)


def baseline(scratch, patches, args):
    """Runs every test the patches name on the unpatched tree; returns the ones that fail."""
    names = set()
    for p in patches:
        if p.catches:
            names.update(name for name, _ in scratch.tests(p.catches))
    if not names:
        return set()
    outputs = set()
    for name in names:
        for _, needs in scratch.tests("^" + re.escape(name) + "$"):
            outputs.update(needs)
    code, out = scratch.build_outputs(sorted(outputs), args.build_timeout)
    if code != 0:
        raise SystemExit("the unpatched tree does not build:\n" + out[-4000:])
    regex = "^(" + "|".join(re.escape(n) for n in sorted(names)) + ")$"
    log(f"baseline: {len(names)} tests on the unpatched tree")
    code, out = scratch.ctest(regex, args.jobs, args.test_timeout)
    return set(failed_tests(out)) if code != 0 else set()


def write_report(path, rows, started, elapsed_s):
    with open(path, "w") as f:
        f.write(f"Run {started:%Y-%m-%d %H:%M} UTC, {elapsed_s / 60:.1f} min, "
                f"{len(rows)} patches\n\n")
        f.write("| patch | result | seconds | detail |\n|---|---|---|---|\n")
        for name, result, seconds, detail in rows:
            detail = detail.replace("|", "\\|").replace("\n", " ")[:200]
            f.write(f"| {name} | {result} | {seconds:.0f} | {detail} |\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("patches", nargs="*", help="patch files (default: tests/mutations/*.patch)")
    ap.add_argument("--scratch", default=os.path.join(ROOT, "build-mutate"),
                    help="persistent scratch directory (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=2, help="ctest -j (default: %(default)s)")
    ap.add_argument("--test-timeout", type=int, default=900, help="seconds per test")
    ap.add_argument("--build-timeout", type=int, default=3600, help="seconds per build")
    ap.add_argument("--no-baseline", action="store_true",
                    help="do not run the named tests on the unpatched tree first")
    ap.add_argument("--cmake-flag", action="append", default=[], help="extra CMake flag")
    ap.add_argument("--report", help="also write the results to this Markdown file")
    args = ap.parse_args()

    paths = args.patches or sorted(glob.glob(os.path.join(ROOT, "tests", "mutations", "*.patch")))
    if not paths:
        raise SystemExit("no patches")
    patches = [Patch(p) for p in paths]
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    scratch = Scratch(ROOT, os.path.abspath(args.scratch), args.cmake_flag)
    os.makedirs(scratch.tree, exist_ok=True)
    scratch.snapshot()
    log(f"syncing {scratch.tree}: {scratch.sync()} files written")
    scratch.configure()
    scratch.regenerate()

    broken = set() if args.no_baseline else baseline(scratch, patches, args)
    if broken:
        log("baseline FAILED (these tests fail without any patch): " + ", ".join(sorted(broken)))

    rows = []
    for i, patch in enumerate(patches, 1):
        t = time.monotonic()
        log(f"[{i}/{len(patches)}] {patch.name}: {patch.bug}")
        try:
            result, detail = check_patch(scratch, patch, args)
        except subprocess.TimeoutExpired as e:
            result, detail = "timed out", str(e)
        finally:
            scratch.sync()  # Undo the patch (rewritten files get new times: ninja rebuilds).
        if result == "caught":
            failing = set(re.findall(r"[\w.-]+", detail.split(":", 1)[1]))
            if failing and failing <= broken:
                result, detail = "inconclusive", "only tests that fail without the patch failed"
        seconds = time.monotonic() - t
        rows.append((patch.name, result, seconds, detail))
        log(f"    {result} ({seconds:.0f} s): {detail.splitlines()[0] if detail else ''}")

    elapsed = time.monotonic() - t0
    bad = [r for r in rows if r[1] != "caught"]
    log(f"\n{len(rows) - len(bad)} of {len(rows)} patches caught in {elapsed / 60:.1f} min")
    for name, result, _, detail in bad:
        log(f"  {result}: {name}: {detail}")
    if args.report:
        write_report(args.report, rows, started, elapsed)
    return 1 if bad or broken else 0


if __name__ == "__main__":
    sys.exit(main())
