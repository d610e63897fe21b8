"""tools/check_deps.py: the rule holds on the real tree, and a planted violation fails it."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_deps.py")
SRC = os.path.normpath(os.path.join(HERE, "..", "src"))


def run(*args):
    return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True,
                          timeout=60)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class CheckDepsTest(unittest.TestCase):
    def make_tree(self, root, rules):
        write(os.path.join(root, "DEPENDENCIES"), rules)
        write(os.path.join(root, "common", "result.h"), "#pragma once\n")
        write(os.path.join(root, "core", "layout.h"), '#include "common/result.h"\n')
        write(os.path.join(root, "server", "api.h"), '#include "core/layout.h"\n#include <map>\n')

    def test_the_real_tree_keeps_the_rule(self):
        r = run("--src", SRC)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("dependency rule holds", r.stdout)

    def test_an_allowed_tree_passes(self):
        with tempfile.TemporaryDirectory() as root:
            self.make_tree(root, "common:\ncore: common\nserver: common core\n")
            r = run("--src", root)
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_planted_violation_names_file_line_include_and_rule(self):
        with tempfile.TemporaryDirectory() as root:
            self.make_tree(root, "common:\ncore: common\nserver: common core\n")
            write(os.path.join(root, "core", "placement.cc"),
                  '#include "core/layout.h"\n\n#include "server/api.h"\n')
            r = run("--src", root)
            self.assertEqual(r.returncode, 1)
            self.assertIn('core/placement.cc:3: #include "server/api.h": core/ may include from '
                          'common, not server/', r.stderr)
            self.assertIn("1 include(s) break the dependency rule", r.stderr)

    def test_a_planted_violation_in_the_real_tree_fails(self):
        with tempfile.TemporaryDirectory() as root:
            src = os.path.join(root, "src")
            subprocess.run(["cp", "-r", SRC, src], check=True)
            write(os.path.join(src, "core", "planted_violation.cc"), '#include "store/store.h"\n')
            r = run("--src", src)
            self.assertEqual(r.returncode, 1)
            self.assertIn('core/planted_violation.cc:1: #include "store/store.h"', r.stderr)

    def test_two_server_parts_that_must_not_know_each_other_are_kept_apart(self):
        # Issue 37: sagemaker and queues apart, the data plane knowing no control-plane part, the
        # HTTP layer knowing neither, ui knowing neither service; each planted include fails the
        # real tree's rule.
        for part, include in (("server/queues", "server/sagemaker/resources.h"),
                              ("server/sagemaker", "server/queues/queue_model.h"),
                              ("runtime", "server/sagemaker/resources.h"),
                              ("runtime", "server/reconciler_loop.h"),
                              ("http", "runtime/router.h"),
                              ("http", "server/nodes/node_registry.h"),
                              ("server/ui", "server/queues/queue_model.h"),
                              ("server/autoscaling", "server/sagemaker/resources.h"),
                              ("server", "server/sagemaker/resources.h")):
            with self.subTest(part=part, include=include), \
                    tempfile.TemporaryDirectory() as root:
                src = os.path.join(root, "src")
                subprocess.run(["cp", "-r", SRC, src], check=True)
                write(os.path.join(src, part, "planted_violation.cc"), f'#include "{include}"\n')
                r = run("--src", src)
                self.assertEqual(r.returncode, 1, r.stdout)
                target = include.rsplit("/", 1)[0]
                self.assertIn(f'{part}/planted_violation.cc:1: #include "{include}": {part}/ may '
                              f"include from ", r.stderr)
                self.assertIn(f"not {target}/", r.stderr)

    def test_naming_a_folder_allows_its_parts_only_from_outside_it(self):
        with tempfile.TemporaryDirectory() as root:
            self.make_tree(root, "common:\ncore: common\nserver: common core\n"
                                 "server/a: common server\nserver/b: common server\n")
            write(os.path.join(root, "server", "a", "a.h"), '#include "server/api.h"\n')
            write(os.path.join(root, "server", "b", "b.h"), '#include "common/result.h"\n')
            write(os.path.join(root, "app", "main.cc"), '#include "server/a/a.h"\n')
            with open(os.path.join(root, "DEPENDENCIES"), "a", encoding="utf-8") as f:
                f.write("app: common server\n")
            r = run("--src", root)
            self.assertEqual(r.returncode, 0, r.stderr)  # app may use server's parts
            write(os.path.join(root, "server", "b", "b.cc"), '#include "server/a/a.h"\n')
            r = run("--src", root)
            self.assertEqual(r.returncode, 1)  # a sibling part may not: "server" is its root
            self.assertIn('server/b/b.cc:1: #include "server/a/a.h": server/b/ may include from '
                          "common server, not server/a/", r.stderr)

    def test_a_part_whose_folder_is_missing_is_an_error(self):
        with tempfile.TemporaryDirectory() as root:
            self.make_tree(root, "common:\ncore: common\nserver: common core\n"
                                 "server/gone: common\n")
            r = run("--src", root)
            self.assertEqual(r.returncode, 2)
            self.assertIn("'server/gone'", r.stderr)

    def test_a_folder_without_a_rule_is_an_error(self):
        with tempfile.TemporaryDirectory() as root:
            self.make_tree(root, "common:\ncore: common\n")
            r = run("--src", root)
            self.assertEqual(r.returncode, 2)
            self.assertIn("folder 'server'", r.stderr)

    def test_a_rule_naming_a_missing_folder_is_an_error(self):
        with tempfile.TemporaryDirectory() as root:
            self.make_tree(root, "common:\ncore: common nowhere\nserver: common core\n")
            r = run("--src", root)
            self.assertEqual(r.returncode, 2)
            self.assertIn("'nowhere'", r.stderr)


if __name__ == "__main__":
    unittest.main()
