"""tools/check_range_temporaries.py: the tree is clean, the two loops CI's ASan stage found are
caught, and loops over a named value or a whole temporary are not."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_range_temporaries.py")
ROOT = os.path.normpath(os.path.join(HERE, ".."))

CAUGHT = {
    # stop 46, nodes_test
    "deref": "for (const auto& r : *store_.ListAllAccounts(std::string(kind))) {\n}\n",
    # stop 26, sagemaker_test
    "arrow": ("for (const auto& w :\n     registry_.WaitDesired(\"a\", registry_.epoch(), 0, 0ms)"
              "->workloads) {\n}\n"),
    "value": "for (const auto& x : Load(path).value()) {\n}\n",
    # stop 54, sagemaker_test (ASan, before landing): a one-statement body, no braces
    "unbraced": "for (const auto& r : components().value()) again.push_back(r.version);\n",
}
CLEAN = {
    "named": "const auto all = store_.ListAllAccounts(kind);\nfor (const auto& r : *all) {\n}\n",
    "whole": "for (const auto& n : claims_.NodesOf(Owner::Endpoint(a, e, v))) {\n}\n",
    "member": "for (const auto& w : d->workloads) {\n}\n",
    "classic": "for (int i = 0; i < n; ++i) {\n}\n",
    "classic_unbraced": "for (int i = 0; i < f(n); ++i) sum += g(i).value();\n",
    "json": 'for (const json& c : list.value("Copies", json::array())) {\n}\n',
}


def run(*src):
    args = [sys.executable, CHECK]
    for s in src:
        args += ["--src", s]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


class CheckRangeTemporariesTest(unittest.TestCase):
    def test_the_tree_has_none(self):
        r = run(*(os.path.join(ROOT, d) for d in ("src", "fuzz", "bench")))
        self.assertEqual(r.returncode, 0, r.stderr)

    def check(self, snippets):
        with tempfile.TemporaryDirectory() as d:
            for name, text in snippets.items():
                with open(os.path.join(d, name + ".cc"), "w") as f:
                    f.write("void f() {\n" + text + "}\n")
            return run(d)

    def test_each_loop_ci_found_is_caught(self):
        for name, text in CAUGHT.items():
            with self.subTest(name):
                r = self.check({name: text})
                self.assertEqual(r.returncode, 1, r.stdout)
                self.assertIn(f"{name}.cc:2:", r.stderr)

    def test_a_named_value_or_a_whole_temporary_is_fine(self):
        r = self.check(CLEAN)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
