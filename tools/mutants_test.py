#!/usr/bin/env python3
"""tools/mutants.py: which mutants a line yields, and which it must not (comments, strings,
templates, declarations), and that a seed draws the same sample twice."""

import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutants  # noqa: E402


def scan(text, known=()):
    return mutants.scan("x.cc", text, set(known))


def changes(text, op, known=()):
    return [m.after for m in scan(text, known) if m.op == op]


class OperatorTest(unittest.TestCase):
    def test_relational_flips_binary_operators_not_template_brackets_or_streams(self):
        self.assertEqual(changes("  if (a < b) x = 1;", "relational"), ["  if (a <= b) x = 1;"])
        self.assertEqual(changes("  std::vector<int> v;", "relational"), [])
        self.assertEqual(changes("  out << a >> b;", "relational"), [])
        self.assertEqual(changes("  p->x = 1;", "relational"), [])
        self.assertEqual(changes("  return a != b;", "relational"), ["  return a == b;"])

    def test_comments_strings_characters_and_preprocessor_lines_are_not_code(self):
        text = "\n".join([
            '  log("a < b && c");  // x < y',
            "  char c = '<';",
            "#if A < 2",
            "  /* a < b",
            "     c > d */",
            '  auto s = R"(a < b',
            '  c == d)";',
        ])
        ops = {m.op for m in scan(text)} - {"statement"}
        self.assertNotIn("relational", ops)
        self.assertNotIn("logical", ops)
        self.assertNotIn("constant", [m.op for m in scan(text) if m.line_no == 3])

    def test_constants_move_by_one_and_keep_digit_separators_apart(self):
        self.assertEqual(changes("  int n = 1'000;", "constant"),
                         ["  int n = 1001;", "  int n = 999;"])
        self.assertEqual(changes("  f(0);", "constant"), ["  f(1);"])
        self.assertEqual(changes("  wait(250ms);", "constant"), ["  wait(251ms);", "  wait(249ms);"])
        self.assertEqual(changes("  x = a1 + v.2;", "constant"), [])

    def test_a_statement_is_removed_only_when_it_is_a_whole_call_or_assignment(self):
        self.assertEqual(changes("  a.b = c;", "statement"), ["  {}"])
        self.assertEqual(changes("  store.Put(k, v);", "statement"), ["  {}"])
        self.assertEqual(changes("  ++count;", "statement"), ["  {}"])
        self.assertEqual(changes("  int a = c;", "statement"), [])  # A declaration.
        self.assertEqual(changes("  return f(x);", "statement"), [])
        # The second line of a statement is not a statement.
        self.assertEqual(changes("  x = f(a,\n        g(b));", "statement"), [])

    def test_conditions_are_forced_but_not_init_statements_or_endless_loops(self):
        self.assertEqual(changes("  if (ok) f();", "condition"),
                         ["  if (true || ok) f();", "  if (false && ok) f();"])
        self.assertEqual(changes("  if (auto it = m.find(k); it != m.end()) f();", "condition"),
                         [])
        self.assertEqual(changes("  while (n > 0) --n;", "condition"), ["  while (false && n > 0) --n;"])

    def test_early_returns_open_void_and_bool_functions(self):
        text = "void Tick(int n) {\n  n++;\n}\nbool Ok(\n    int n) const {\n  return n;\n}"
        got = [(m.line_no, m.after) for m in scan(text) if m.op == "early-return"]
        self.assertEqual(got, [(1, "void Tick(int n) {\n  return;"),
                               (5, "    int n) const {\n  return true;"),
                               (5, "    int n) const {\n  return false;")])

    def test_a_name_turns_into_its_twin_only_when_the_twin_exists(self):
        line = "  wait(p.ScaleInCooldown);"
        self.assertEqual(changes(line, "swap-name", known={"ScaleOutCooldown"}),
                         ["  wait(p.ScaleOutCooldown);"])
        self.assertEqual(changes(line, "swap-name"), [])
        self.assertEqual(changes("  x = min_core;", "swap-name", known={"max_core", "min_memory"}),
                         ["  x = max_core;", "  x = min_memory;"])

    def test_two_plain_arguments_are_swapped(self):
        self.assertEqual(changes("  Copy(src, dst);", "swap-args"), ["  Copy(dst, src);"])
        self.assertEqual(changes("  Copy(src, 3);", "swap-args"), [])

    def test_a_mutant_applies_to_its_line_only_and_diffs_as_a_patch(self):
        text = "a\n  if (x < y) f();\nb\n"
        m = [m for m in scan(text) if m.op == "relational"][0]
        self.assertEqual(m.apply(text), "a\n  if (x <= y) f();\nb\n")
        self.assertIn("-  if (x < y) f();\n+  if (x <= y) f();", m.diff(text))
        with self.assertRaises(ValueError):
            m.apply("a\n  changed\nb\n")

    def test_a_seed_draws_the_same_sample(self):
        text = "\n".join(f"  if (a{i} < b) x = {i};" for i in range(50))
        every = scan(text)
        one = [m.ident for m in random.Random(7).sample(every, 10)]
        again = [m.ident for m in random.Random(7).sample(scan(text), 10)]
        other = [m.ident for m in random.Random(8).sample(every, 10)]
        self.assertEqual(one, again)
        self.assertNotEqual(one, other)



class RunTest(unittest.TestCase):
    """tools/mutate.py's run: a mutant that makes a test hang must not leave the test's processes
    (a server, an agent) behind when its time is up."""

    def test_a_run_past_its_timeout_takes_its_whole_process_group(self):
        import subprocess
        import time
        import mutate  # noqa: E402
        tag = f"sleep {300 + os.getpid() % 97}"
        with self.assertRaises(subprocess.TimeoutExpired):
            mutate.run(["sh", "-c", f"{tag} & {tag}"], timeout=1)
        time.sleep(0.3)
        left = subprocess.run(["pgrep", "-f", tag], capture_output=True, text=True).stdout
        self.assertEqual(left, "", f"left running: {left}")

if __name__ == "__main__":
    unittest.main()
