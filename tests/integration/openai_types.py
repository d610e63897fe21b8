"""OpenAI answers checked against the types of OpenAI's own client, the `openai` npm package
(pinned in ui/package-lock.json with the TypeScript compiler, both installed by the build's
`npm ci`). Each answer becomes a typed constant in a TypeScript file and `tsc --noEmit --strict`
judges it: a missing required member, a member the type lacks (TypeScript's excess-property
check on object literals), a wrong type or a value outside a literal union each fail, with
tsc's message naming the member."""

import json
import os
import subprocess
import tempfile

from carve_harness import SOURCE_DIR

UI = os.path.join(SOURCE_DIR, "ui")
TSC = os.path.join(UI, "node_modules", "typescript", "bin", "tsc")
OPENAI = os.path.join(UI, "node_modules", "openai")

# What each answer is, as the client declares it.
TYPES = {
    "ChatCompletion": "openai/resources/chat/completions",
    "ChatCompletionChunk": "openai/resources/chat/completions",
}


def type_check(answers):
    """answers: [(name, type name in TYPES, parsed JSON)]. Returns (passed, tsc's output)."""
    for path in (TSC, OPENAI):
        if not os.path.exists(path):
            raise AssertionError(f"{path} is missing: the build's `npm ci` in ui/ installs it")
    with tempfile.TemporaryDirectory(prefix="carve-openai-types-") as d:
        lines = [f'import type {{ {t} }} from "{m}";' for t, m in TYPES.items()]
        for name, type_name, value in answers:
            lines.append(f"export const {name}: {type_name} = {json.dumps(value, indent=1)};")
        with open(os.path.join(d, "answers.ts"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        config = {"compilerOptions": {
            "strict": True, "noEmit": True, "target": "es2022", "module": "esnext",
            "moduleResolution": "bundler", "skipLibCheck": True, "types": [],
            "baseUrl": ".", "paths": {"openai/*": [OPENAI + "/*"], "openai": [OPENAI]}},
            "files": ["answers.ts"]}
        with open(os.path.join(d, "tsconfig.json"), "w", encoding="utf-8") as f:
            json.dump(config, f)
        p = subprocess.run(["node", TSC, "-p", d], capture_output=True, text=True, timeout=120)
        return p.returncode == 0, p.stdout + p.stderr
