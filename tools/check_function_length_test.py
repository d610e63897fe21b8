#!/usr/bin/env python3
"""Tests of tools/check_function_length.py on planted trees, and the real tree with its allow list."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "check_function_length.py")


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def function(name, body_lines, extra=""):
    body = "".join(f"  x += {i};{extra}\n" for i in range(body_lines))
    return f"int {name}(int x) {{\n{body}  return x;\n}}\n"


class CheckFunctionLengthTest(unittest.TestCase):
    def tree(self, files):
        root = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", root])
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        return root

    def test_a_function_of_the_limit_passes_and_one_line_more_fails_naming_it(self):
        # 98 statements + head + return + brace = 101 lines; 97 make 100.
        ok = self.tree({"p/a.cc": "namespace n {\n" + function("Fits", 97) + "}  // namespace n\n"})
        self.assertEqual(run("--src", ok, "p").returncode, 0)
        long = self.tree({"p/a.cc": "namespace n {\n" + function("TooLong", 98) +
                          "}  // namespace n\n"})
        r = run("--src", long, "p")
        self.assertEqual(r.returncode, 1)
        self.assertIn("p/a.cc:2: 101 lines (at most 100): int TooLong(int x) {", r.stderr)

    def test_braces_in_comments_and_strings_do_not_count_and_tests_are_not_read(self):
        text = function("Quoted", 60, extra=' // }}} "{"') + 'const char* s = "}}";\n'
        root = self.tree({"p/a.cc": text, "p/a_test.cc": function("LongTest", 200)})
        r = run("--src", root, "--max", "63", "p")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("--src", root, "--max", "62", "p")
        self.assertIn("int Quoted(int x)", r.stderr)
        self.assertNotIn("LongTest", r.stderr)

    def test_an_allowed_function_passes_and_a_stale_entry_fails(self):
        root = self.tree({"p/a.cc": function("Known", 150) + function("Short", 3)})
        allow = os.path.join(root, "allow")
        with open(allow, "w") as f:
            f.write("# known\np/a.cc: int Known(\n")
        self.assertEqual(run("--src", root, "--allow", allow, "p").returncode, 0)
        with open(allow, "a") as f:
            f.write("p/a.cc: int Short(\n")
        r = run("--src", root, "--allow", allow, "p")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no longer over 100 lines (remove it from the list): p/a.cc: int Short(",
                      r.stderr)

    def test_the_real_tree_holds_with_its_allow_list(self):
        r = run("--allow", os.path.join(HERE, "long_functions.allow"), "server", "http", "runtime")
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
