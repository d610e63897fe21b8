"""Mechanical mutants of C++ sources: single-line bugs generated from the code itself.

tests/mutations/ holds bugs their authors imagined; these come from rules, so they probe what
nobody thought of. Each operator makes one small change to one line of a production source file:

  relational       <  <=  >  >=  ==  != each turned into its neighbour (` < ` -> ` <= `, ...)
  logical          ` && ` <-> ` || `, and a `!` dropped from a condition
  constant         an integer literal +1 and -1 (0 only +1)
  boolean          true <-> false
  condition        `if (` / `while (` forced: `if (true || ...`, `if (false && ...`
  statement        a one-line call, assignment or increment replaced by `{}`
  early-return     `return;` (void) or `return true;` / `return false;` (bool) as a function's
                   first statement
  swap-name        an identifier turned into its twin that exists elsewhere in src/: one word of
                   it replaced by its opposite (ScaleInCooldown -> ScaleOutCooldown, min_ -> max_)
  swap-args        a call's two plain arguments swapped: f(a, b) -> f(b, a)

The scanner is lexical, not a C++ parser: it skips comments, string and character literals,
raw strings and preprocessor lines, and relies on clang-format's spacing (binary operators have a
space on each side, template brackets and `T&&` do not). A mutant that does not compile is
reported as such and left out of the score; one that compiles but cannot change behaviour (an
equivalent mutant) can only be told by reading it, which is why every survivor's diff is shown.

Enumeration is deterministic (files sorted, lines in order, operators in a fixed order), so a seed
and a commit name one sample.
"""

import difflib
import os
import re

# Word pairs of the swap-name operator, each used in both directions.
OPPOSITES = [
    ("in", "out"), ("In", "Out"), ("min", "max"), ("Min", "Max"), ("lower", "upper"),
    ("Lower", "Upper"), ("first", "last"), ("First", "Last"), ("read", "write"),
    ("Read", "Write"), ("start", "stop"), ("Start", "Stop"), ("before", "after"),
    ("Before", "After"), ("low", "high"), ("Low", "High"), ("src", "dst"), ("old", "new"),
    ("Old", "New"), ("create", "update"), ("Create", "Update"), ("desired", "current"),
    ("Desired", "Current"), ("used", "free"), ("Used", "Free"), ("head", "worker"),
    ("Head", "Worker"), ("enter", "leave"), ("open", "close"), ("Open", "Close"),
    ("ok", "failed"), ("Ok", "Failed"), ("cpu", "gpu"), ("Cpu", "Gpu"), ("core", "memory"),
    ("Core", "Memory"), ("rollout", "rollback"), ("Rollout", "Rollback"),
]

RELATIONAL = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
LITERAL_SUFFIXES = r"(?:ULL|ull|UL|ul|LL|ll|U|u|L|l|ms|us|ns|min|s|h)?"
STATEMENT_SKIP = ("return", "break", "continue", "case ", "default:", "using ", "namespace ",
                  "template", "typedef", "static_assert", "CARVE_ASSIGN_OR_RETURN", "co_",
                  "goto ", "throw", "else", "do ", "friend ")


class Mutant:
    def __init__(self, path, line_no, op, before, after, note):
        self.path = path        # relative to the repository root
        self.line_no = line_no  # 1-based
        self.op = op
        self.before = before    # the line as it was (no newline)
        self.after = after      # what replaces it: one line, or several joined by "\n"
        self.note = note

    @property
    def ident(self):
        return f"{self.path}:{self.line_no}:{self.op}:{self.note}"

    def apply(self, text):
        lines = text.split("\n")
        if lines[self.line_no - 1] != self.before:
            raise ValueError(f"{self.ident}: line changed since it was scanned")
        lines[self.line_no - 1] = self.after
        return "\n".join(lines)

    def diff(self, text):
        return "".join(difflib.unified_diff(
            text.splitlines(True), self.apply(text).splitlines(True),
            f"a/{self.path}", f"b/{self.path}", n=2))


def code_mask(lines):
    """For each line, a list of booleans: True where the character is code (not a comment, a
    string or character literal), or None for a line not to mutate at all (preprocessor, inside
    a block comment or a raw string)."""
    masks = []
    in_block = False
    raw_end = None
    for line in lines:
        if raw_end is not None:
            masks.append(None)
            if raw_end in line:
                raw_end = None
            continue
        stripped = line.lstrip()
        if stripped.startswith("#"):
            masks.append(None)
            continue
        mask = [False] * len(line)
        i = 0
        skip_line = False
        while i < len(line):
            c = line[i]
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                    break
                in_block = False
                i = end + 2
                continue
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_block = True
                i += 2
                continue
            m = re.match(r'R"([^(\s]*)\(', line[i:])
            if m and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
                close = ")" + m.group(1) + '"'
                end = line.find(close, i + m.end())
                skip_line = True
                if end < 0:
                    raw_end = close
                    break
                i = end + len(close)
                continue
            if c == '"':
                j = i + 1
                while j < len(line) and line[j] != '"':
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
                continue
            if c == "'":
                # A digit separator (1'000) is code; a character literal is not.
                if i > 0 and line[i - 1].isalnum() and i + 1 < len(line) and line[i + 1].isalnum():
                    mask[i] = True
                    i += 1
                    continue
                j = i + 1
                while j < len(line) and line[j] != "'":
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
                continue
            mask[i] = True
            i += 1
        masks.append(None if skip_line else mask)
    return masks


def _in_code(mask, start, end):
    return all(mask[start:end])


def _replace(line, start, end, new):
    return line[:start] + new + line[end:]


def _words(identifier):
    """Splits snake_case and CamelCase into parts; joining the parts gives it back."""
    return re.findall(r"_+|[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+|[A-Z]", identifier)


def _twins(identifier, known):
    parts = _words(identifier)
    if "".join(parts) != identifier:
        return []
    out = []
    for i, part in enumerate(parts):
        for a, b in OPPOSITES:
            for x, y in ((a, b), (b, a)):
                if part == x:
                    twin = "".join(parts[:i] + [y] + parts[i + 1:])
                    if twin != identifier and twin in known:
                        out.append(twin)
    return sorted(set(out))


def _matching_paren(line, open_at):
    depth = 0
    for j in range(open_at, len(line)):
        if line[j] == "(":
            depth += 1
        elif line[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _statement_start(lines, masks, n):
    """Whether line n begins a statement: the code line before it ended one."""
    k = n - 1
    while k >= 0:
        if masks[k] is None:
            return False
        code = "".join(ch for ch, m in zip(lines[k], masks[k]) if m).strip()
        if code:
            return code.endswith((";", "{", "}")) or re.fullmatch(r"\w+:|(public|private):", code)
        k -= 1
    return True


def scan(path, text, known):
    """Every mutant of one file's text, in a fixed order. `known`: identifiers that exist in the
    project, for swap-name."""
    lines = text.split("\n")
    masks = code_mask(lines)
    out = []

    def add(n, op, after, note):
        out.append(Mutant(path, n + 1, op, lines[n], after, note))

    for n, line in enumerate(lines):
        mask = masks[n]
        if mask is None or not any(mask):
            continue
        code = "".join(ch if m else " " for ch, m in zip(line, mask))
        stripped = code.strip()
        indent = line[:len(line) - len(line.lstrip())]

        for m in re.finditer(r"(?<=\s)(<=|>=|==|!=|<|>)(?=\s)", code):
            new = RELATIONAL[m.group(1)]
            add(n, "relational", _replace(line, m.start(), m.end(), new),
                f"col{m.start()} {m.group(1)}->{new}")
        for m in re.finditer(r"(?<=\s)(&&|\|\|)(?=\s)", code):
            new = "||" if m.group(1) == "&&" else "&&"
            add(n, "logical", _replace(line, m.start(), m.end(), new),
                f"col{m.start()} {m.group(1)}->{new}")
        for m in re.finditer(r"(?<=[(\s])!(?=[\w(*])", code):
            add(n, "logical", _replace(line, m.start(), m.end(), ""), f"col{m.start()} !dropped")
        for m in re.finditer(r"(?<![\w.'])(\d[\d']*)(" + LITERAL_SUFFIXES + r")(?![\w.'])", code):
            value = int(m.group(1).replace("'", ""))
            for new in ([value + 1] + ([value - 1] if value > 0 else [])):
                add(n, "constant", _replace(line, m.start(1), m.end(1), str(new)),
                    f"col{m.start()} {value}->{new}")
        for m in re.finditer(r"\b(true|false)\b", code):
            new = "false" if m.group(1) == "true" else "true"
            add(n, "boolean", _replace(line, m.start(), m.end(), new), f"col{m.start()} {new}")
        for m in re.finditer(r"\b(if|while) \(", code):
            rest = code[m.end():].lstrip()
            close = _matching_paren(code, m.end() - 1)
            cond = code[m.end():close] if close > 0 else code[m.end():]
            if rest.startswith(("auto", "const ", "constexpr")) or ";" in cond:
                continue  # An init-statement or a declaration: no plain condition to force.
            for forced in ("true || ", "false && "):
                if m.group(1) == "while" and forced.startswith("true"):
                    continue  # An endless loop is a timeout, not a finding.
                add(n, "condition", _replace(line, m.end(), m.end(), forced),
                    f"{m.group(1)} {forced.split()[0]}")

        if (stripped.endswith(";") and not stripped.startswith(STATEMENT_SKIP) and
                stripped.count("(") == stripped.count(")") and
                _statement_start(lines, masks, n) and
                (re.match(r"(\*?[A-Za-z_]\w*(\[[^\]]*\])?(\.|->|::))*[A-Za-z_]\w*(<[\w:, ]*>)?\(",
                          stripped) or
                 re.match(r"[A-Za-z_][\w.\->\[\]]*\s(=|\+=|-=|\*=|/=|\|=|&=)\s", stripped) or
                 re.match(r"(\+\+|--)[A-Za-z_][\w.\->]*;$|[A-Za-z_][\w.\->]*(\+\+|--);$",
                          stripped))):
            add(n, "statement", indent + "{}", "removed")

        if not indent and re.match(r"(static |inline )?(void|bool) [\w:~]+\(", stripped):
            # A function definition: its body opens on this line or within the next four.
            for k in range(n, min(n + 5, len(lines))):
                if masks[k] is None:
                    break
                kcode = "".join(ch for ch, mm in zip(lines[k], masks[k]) if mm).rstrip()
                if kcode.endswith(";") or kcode.endswith("}"):
                    break
                if kcode.endswith("{"):
                    returns = (["return;"] if stripped.startswith(("void", "static void",
                                                                   "inline void"))
                               else ["return true;", "return false;"])
                    for r in returns:
                        out.append(Mutant(path, k + 1, "early-return", lines[k],
                                          lines[k] + "\n  " + r, r))
                    break

        for m in re.finditer(r"\b[A-Za-z_]\w*\b", code):
            for twin in _twins(m.group(0), known):
                add(n, "swap-name", _replace(line, m.start(), m.end(), twin),
                    f"col{m.start()} {m.group(0)}->{twin}")
        for m in re.finditer(r"\b(\w+)\(([A-Za-z_][\w.]*), ([A-Za-z_][\w.]*)\)", code):
            if m.group(2) != m.group(3) and m.group(1) not in ("if", "while", "for", "switch"):
                swapped = f"{m.group(1)}({m.group(3)}, {m.group(2)})"
                add(n, "swap-args", _replace(line, m.start(), m.end(), swapped),
                    f"col{m.start()} {m.group(1)}")
    return out


def production_sources(root, folder):
    """The .cc files of `folder` (relative to root) that ship: tests, fakes (fake_*.cc,
    testing/), fuzzers and test drivers left out."""
    found = []
    for dirpath, dirnames, files in os.walk(os.path.join(root, folder)):
        dirnames[:] = sorted(d for d in dirnames if d not in ("testing", "fuzz", "testdata"))
        for f in sorted(files):
            if (f.endswith(".cc") and not f.endswith(("_test.cc", "_fuzz.cc", "_bench.cc",
                                                      "_driver.cc")) and
                    not f.startswith("fake_")):
                found.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(found)


def project_identifiers(root):
    known = set()
    for dirpath, _dirnames, files in os.walk(os.path.join(root, "src")):
        for f in files:
            if f.endswith((".h", ".cc")):
                with open(os.path.join(dirpath, f), errors="replace") as fh:
                    known.update(re.findall(r"\b[A-Za-z_]\w*\b", fh.read()))
    return known


def enumerate_mutants(root, folder):
    known = project_identifiers(root)
    mutants = []
    for rel in production_sources(root, folder):
        with open(os.path.join(root, rel)) as f:
            mutants.extend(scan(rel, f.read(), known))
    return mutants
