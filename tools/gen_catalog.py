#!/usr/bin/env python3
"""Generates the MIG GPU tables in src/catalog/data/ from shared/reference/mig-catalog.json.

Usage: tools/gen_catalog.py [--reference PATH] [--out DIR]
       tools/gen_catalog.py --check    # regenerate to a temp dir and diff against the tree

The reference is the single source of truth for MIG geometry. Its gaps (nulls) are filled here,
never silently: every inferred figure lowers the row's confidence and says how it was inferred
in the row's note. GPU-level figures the reference lacks may come from SUPPLEMENTS below, each
with its public source. The output is committed; the CTest `catalog_tables_match_reference`
runs --check, so the tables cannot drift from the reference. --check exits 0 when the committed
files match, 1 with a diff when they do not, and 77 (CTest's skip code) when the reference is
absent.
"""

import argparse
import difflib
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_REFERENCE = os.path.join(HERE, "..", "..", "shared", "reference", "mig-catalog.json")
DEFAULT_OUT = os.path.join(HERE, "..", "src", "catalog", "data")

# Reference name -> (canonical carve id, output family file). The ids are issue 2's list.
CANONICAL = {
    "A30-24GB": ("a30-24gb", "ampere"),
    "A100-SXM4-40GB": ("a100-40gb", "ampere"),
    "A100-80GB": ("a100-80gb", "ampere"),
    "H100-SXM5-80GB": ("h100-80gb", "hopper"),
    "H100-PCIe-80GB": ("h100-pcie-80gb", "hopper"),
    "H100-NVL-94GB": ("h100-nvl-94gb", "hopper"),
    "GH200-96GB": ("gh200-96gb", "hopper"),
    "GH200-144GB": ("gh200-144gb", "hopper"),
    "H20-96GB": ("h20-96gb", "hopper"),
    "H200-141GB": ("h200-141gb", "hopper"),
    "B200-180GB": ("b200-180gb", "blackwell"),
    "GB200-186GB": ("gb200-186gb", "blackwell"),
    "B300-288GB": ("b300-288gb", "blackwell"),
    "GB300-288GB": ("gb300-288gb", "blackwell"),
    "RTX-PRO-6000-Blackwell-96GB": ("rtx-pro-6000", "rtx_pro"),
    "RTX-PRO-5000-Blackwell-48GB": ("rtx-pro-5000", "rtx_pro"),
    "RTX-PRO-4500-Blackwell-32GB": ("rtx-pro-4500", "rtx_pro"),
}

FAMILIES = {
    "ampere": ("AmpereGpus", "Ampere (GA100) MIG GPUs"),
    "hopper": ("HopperGpus", "Hopper (GH100) MIG GPUs, including Grace Hopper and H20"),
    "blackwell": ("BlackwellGpus", "Blackwell datacenter (GB100, Blackwell Ultra) MIG GPUs"),
    "rtx_pro": ("RtxProGpus", "RTX PRO Blackwell (GB202/GB203) MIG GPUs"),
}

# NVML product names (nvmlDeviceGetName, the "Name" nvidia-smi prints) the reference does not
# list as aliases, so a node agent can resolve the GPU it finds by name as well as by PCI id.
EXTRA_ALIASES = {
    "a100-40gb": ["NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"],
    "a100-80gb": ["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"],
    "gh200-144gb": ["NVIDIA GH200 144G HBM3e"],
    "h200-141gb": ["NVIDIA H200", "NVIDIA H200 NVL"],
    "gb200-186gb": ["NVIDIA GB200"],
    "gb300-288gb": ["NVIDIA GB300"],
    "rtx-pro-4500": ["NVIDIA RTX PRO 4500 Blackwell Server Edition"],
}

# GPU-level figures missing (null) in the reference, from public NVIDIA product pages. Applied only
# where the reference is null; each adds its source to the row's notes.
SUPPLEMENTS = {
    "rtx-pro-5000": {
        "sms": 110, "bandwidth_gbps": 1344,
        "source": "sms (14,080 CUDA cores / 128) and bandwidth 1344 GB/s: NVIDIA RTX PRO 5000 "
                  "Blackwell product page/datasheet (not in the reference; medium confidence)",
    },
    "rtx-pro-4500": {
        "sms": 82, "bandwidth_gbps": 896,
        "source": "sms (10,496 CUDA cores / 128) and bandwidth 896 GB/s: NVIDIA RTX PRO 4500 "
                  "Blackwell product page/datasheet (not in the reference; medium confidence)",
    },
}

# Architectures with FP8 tensor cores (compute capability >= 8.9): Ada, Hopper, Blackwell.
def fp8_supported(cc):
    major, minor = (int(x) for x in cc.split("."))
    return (major, minor) >= (8, 9)

CONFIDENCE_ORDER = ["kHigh", "kMediumHigh", "kMedium", "kLowMedium", "kLow"]


def confidence(text):
    """Maps a reference confidence string ("high (real -lgipp)", "low-medium ...") to the enum."""
    if text is None:
        return "kLow"
    t = text.strip().lower()
    for prefix, value in (("medium-high", "kMediumHigh"), ("low-medium", "kLowMedium"),
                          ("high", "kHigh"), ("medium", "kMedium"), ("low", "kLow"),
                          ("unknown", "kLow")):
        if t.startswith(prefix):
            return value
    raise SystemExit(f"unrecognised confidence '{text}'")


def worst(*values):
    return max(values, key=CONFIDENCE_ORDER.index)


def driver(text):
    """'R525 (>= 525.85.12) ...' -> (525, 85, 12); 'R470 (by analogy)' -> (470, 0, 0)."""
    if text is None:
        return None
    m = re.search(r">=\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
    if m:
        return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    m = re.match(r"\s*R?(\d+)", text)
    if not m:
        raise SystemExit(f"unparseable driver '{text}'")
    return (int(m.group(1)), 0, 0)


SUFFIXES = (("+me.all", "kMeAll"), ("+me", "kMe"), ("-me", "kNoMe"), ("+gfx", "kGfx"))


def suffix(name):
    for text, value in SUFFIXES:
        if name.endswith(text):
            return value
    return "kNone"


def base_name(name):
    for text, _ in SUFFIXES:
        if name.endswith(text):
            return name[: -len(text)]
    return name


def snap64(mib):
    return int(mib) // 64 * 64


def cxx_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def ident(gpu_id):
    return "k" + "".join(part.capitalize() for part in re.split(r"[-.+]", gpu_id))


def infer_memory(gpu, profile, siblings):
    """Memory for a profile the reference leaves null. Prefers scaling the known sibling with the
    most memory slices (same silicon and driver); else the GPU's memory pro rata (an upper bound:
    NVML reports 1-3% less)."""
    known = [s for s in siblings if s.get("memory_mib")]
    if known:
        sib = max(known, key=lambda s: s["memory_slices"])
        mib = snap64(sib["memory_mib"] * profile["memory_slices"] / sib["memory_slices"])
        return mib, "kMedium", f"memory scaled from {sib['name']} by memory slices"
    total = gpu.get("memory_mib_reported") or gpu["memory_mib"]
    mib = snap64(total * profile["memory_slices"] / gpu["memory_slices"])
    return mib, "kLowMedium", "memory pro rata of the GPU's (upper bound; NVML reports a little less)"


def rtx_pro_analogue(gpu, profile, reference_gpu):
    """RTX PRO 5000/4500 profiles have no ids or placements in the reference. Take them from the RTX
    PRO 6000 (same GB20x MIG design) profile with the same memory fraction and suffix, scaling its
    placement grid by the slice ratio; None when the 6000 has no such profile."""
    fraction = profile["memory_slices"] / gpu["memory_slices"]
    for p in reference_gpu["profiles"]:
        if (p["memory_slices"] / reference_gpu["memory_slices"] == fraction
                and suffix(p["name"]) == suffix(profile["name"])):
            scale = gpu["memory_slices"] / reference_gpu["memory_slices"]
            size = p["placement_size"] * scale
            units = reference_gpu["placement_units"] * scale
            if size != int(size) or units != int(units):
                return None
            starts = [s * scale for s in p["placements"]]
            if any(s != int(s) or s + size > units for s in starts):
                return None
            return {
                "id": p["id"], "nvml_profile_enum_value": p["nvml_profile_enum_value"],
                "placement_size": int(size), "placements": [int(s) for s in starts],
                "placement_units": int(units), "analogue": p["name"],
            }
    return None


def build_gpu(gpu, reference):
    gid, family = CANONICAL[gpu["name"]]
    notes = []
    supplement = SUPPLEMENTS.get(gid, {})
    spec = {}
    for field in ("sms", "bandwidth_gbps", "bf16_tflops", "fp8_tflops"):
        value = gpu.get(field)
        if value is None and field in supplement:
            value = supplement[field]
        spec[field] = value or 0
    if supplement:
        notes.append(supplement["source"])
    if gpu.get("spec_notes"):
        notes.append(gpu["spec_notes"])
    missing = [f for f in ("sms", "bandwidth_gbps", "bf16_tflops") if not spec[f]]
    if missing:
        notes.append("not known (0): " + ", ".join(missing))

    placement_units = gpu["placement_units"]
    gpu_conf = confidence(gpu["placement_confidence"])
    rtx6000 = next(g for g in reference["gpus"] if CANONICAL[g["name"]][0] == "rtx-pro-6000")
    profiles, omitted = [], []
    for p in gpu["profiles"]:
        row = dict(p)
        pnotes = [p["notes"]] if p.get("notes") else []
        conf = worst(confidence(p.get("placement_confidence")),
                     confidence(p.get("id_confidence", "high")))
        if p.get("id") is None:
            analogue = rtx_pro_analogue(gpu, p, rtx6000)
            if analogue is None:
                omitted.append(p["name"])
                continue
            row.update(analogue)
            placement_units = analogue["placement_units"]
            conf = "kLow"
            pnotes.append(f"id, enum and placements inferred from RTX PRO 6000 {analogue['analogue']} "
                          "(same memory fraction and suffix); no -lgipp seen")
        if row.get("memory_mib") is None:
            mib, mconf, how = infer_memory(gpu, row, [q for q in gpu["profiles"] if q.get("memory_mib")])
            row["memory_mib"] = mib
            conf = worst(conf, mconf)
            pnotes.append(how)
        if row.get("sms") is None:
            row["sms"] = 0
            pnotes.append("SMs not known (0)")
        min_driver = driver(p.get("min_driver"))
        if p.get("min_driver") and not re.search(r">=|^R\d+$", p["min_driver"].strip()):
            pnotes.append("min driver: " + p["min_driver"])
        if conf != "kHigh" and p.get("placement_confidence"):
            pnotes.insert(0, "reference: " + p["placement_confidence"])
        row.update(confidence_enum=conf, suffix_enum=suffix(p["name"]), min_driver_tuple=min_driver,
                   note="; ".join(pnotes))
        profiles.append(row)
    if omitted:
        notes.append("profiles left out (no id or placement in the reference and no RTX PRO 6000 "
                     "analogue): " + ", ".join(omitted))
    if placement_units is None:
        raise SystemExit(f"{gid}: no placement units")
    if gpu["placement_units"] is None:
        gpu_conf = "kLow"
        notes.append(f"placement units ({placement_units}) inferred from the RTX PRO 6000 grid")

    pci = []
    for text in gpu.get("pci_device_ids", []):
        m = re.match(r"\s*(0x[0-9A-Fa-f]{8})\s*(.*)", text)
        pci.append((int(m.group(1), 16), m.group(2).strip(" ()-")))
    if not pci:
        notes.append("PCI device ids not in the reference")
    aliases = list(gpu["aliases"]) + [a for a in EXTRA_ALIASES.get(gid, []) if a not in gpu["aliases"]]
    return {
        "id": gid, "family": family, "display_name": gpu["name"], "aliases": aliases, "pci": pci,
        "architecture": gpu["architecture"], "cc": gpu["compute_capability"],
        "memory_mib": gpu["memory_mib"], "spec": spec, "compute_slices": gpu["compute_slices"],
        "memory_slices": gpu["memory_slices"], "placement_units": placement_units,
        "max_gpu_instances": gpu["max_gpu_instances"], "min_driver": driver(gpu["min_driver"]),
        "min_driver_text": gpu["min_driver"], "confidence": gpu_conf, "profiles": profiles,
        "sources": gpu["sources"], "notes": "; ".join(notes),
    }


def fmt_number(v):
    return repr(float(v)) if isinstance(v, float) and not float(v).is_integer() else str(int(v))


def fmt_driver(d):
    return "{}" if d is None else "{%d, %d, %d}" % d


def emit_gpu(g):
    k = ident(g["id"])
    out = [f"// {g['display_name']} ({g['id']}): sources in {k}Sources, caveats in its notes."]
    out.append(f"constexpr std::string_view {k}Aliases[] = {{")
    out += [f"    {cxx_string(a)}," for a in g["aliases"]]
    out.append("};")
    if g["pci"]:
        out.append(f"constexpr uint32_t {k}Pci[] = {{")
        out += [f"    0x{v:08X},  // {c}" if c else f"    0x{v:08X}," for v, c in g["pci"]]
        out.append("};")
    out.append(f"constexpr std::string_view {k}Sources[] = {{")
    out += [f"    {cxx_string(s)}," for s in g["sources"]]
    out.append("};")
    for i, p in enumerate(g["profiles"]):
        starts = ", ".join(str(s) for s in p["placements"])
        out.append(f"constexpr uint8_t {k}Starts{i}[] = {{{starts}}};")
    out.append(f"constexpr MigProfile {k}Profiles[] = {{")
    for i, p in enumerate(g["profiles"]):
        out.append(
            f"    {{.name = {cxx_string(p['name'])}, .id = NvmlProfileId{{{p['id']}}}, "
            f".nvml_enum = {p['nvml_profile_enum_value']}, .compute_slices = {p['compute_slices']}, "
            f".memory_slices = {p['memory_slices']},\n"
            f"     .memory_mib = {p['memory_mib']}, .sms = {p['sms']}, .max_count = {p['max_count']}, "
            f".starts = {k}Starts{i}, .placement_size = {p['placement_size']},\n"
            f"     .min_driver = {fmt_driver(p['min_driver_tuple'])}, "
            f".suffix = ProfileSuffix::{p['suffix_enum']}, "
            f".confidence = Confidence::{p['confidence_enum']},\n"
            f"     .note = {cxx_string(p['note'])}}},")
    out.append("};")
    return out


def emit_gpu_row(g):
    k = ident(g["id"])
    s = g["spec"]
    pci = f"{k}Pci" if g["pci"] else "{}"
    return [
        f"    {{.id = {cxx_string(g['id'])}, .display_name = {cxx_string(g['display_name'])}, "
        f".aliases = {k}Aliases, .pci_device_ids = {pci},",
        f"     .architecture = {cxx_string(g['architecture'])}, .sms = {s['sms']}, "
        f".memory_mib = {g['memory_mib']}, .bandwidth_gbps = {s['bandwidth_gbps']},",
        f"     .bf16_tflops = {fmt_number(s['bf16_tflops'])}, "
        f".fp8_tflops = {fmt_number(s['fp8_tflops'])}, .compute_slices = {g['compute_slices']}, "
        f".memory_slices = {g['memory_slices']}, .placement_units = {g['placement_units']},",
        f"     .max_gpu_instances = {g['max_gpu_instances']}, "
        f".min_driver = {fmt_driver(g['min_driver'])},  // {g['min_driver_text']}",
        f"     .placement_confidence = Confidence::{g['confidence']}, .profiles = {k}Profiles, "
        f".sources = {k}Sources,",
        f"     .notes = {cxx_string(g['notes'])},",
        f"     .fp8_supported = {'true' if fp8_supported(g['cc']) else 'false'}, "
        f".compute_capability = {cxx_string(g['cc'])}}},",
    ]


def emit_family(family, gpus):
    fn, what = FAMILIES[family]
    lines = [
        "// GENERATED by tools/gen_catalog.py from shared/reference/mig-catalog.json; do not edit.",
        f"// {what}: one row per GPU, each citing the reference's sources. Figures the reference",
        "// lacks are inferred only with lowered confidence and a note saying how.",
        "// clang-format off",
        '#include "catalog/data/tables.h"',
        "",
        "namespace carve::catalog::data {",
        "namespace {",
        "",
    ]
    for g in gpus:
        lines += emit_gpu(g) + [""]
    lines.append("constexpr GpuModel kGpus[] = {")
    for g in gpus:
        lines += emit_gpu_row(g)
    lines += ["};", "", "}  // namespace", "",
              f"std::span<const GpuModel> {fn}() {{ return kGpus; }}", "",
              "}  // namespace carve::catalog::data", ""]
    return "\n".join(lines)


def generate(reference_path, out_dir):
    with open(reference_path) as f:
        reference = json.load(f)
    names = [g["name"] for g in reference["gpus"]]
    unknown = [n for n in names if n not in CANONICAL]
    if unknown:
        sys.exit(f"reference GPUs without a canonical id: {unknown}")
    gpus = [build_gpu(g, reference) for g in reference["gpus"]]
    os.makedirs(out_dir, exist_ok=True)
    for family in FAMILIES:
        path = os.path.join(out_dir, f"{family}.cc")
        with open(path, "w") as f:
            f.write(emit_family(family, [g for g in gpus if g["family"] == family]))


def check(reference_path, committed_dir):
    if not os.path.exists(reference_path):
        print(f"skip: no reference at {reference_path}")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        generate(reference_path, tmp)
        drift = False
        for family in FAMILIES:
            name = f"{family}.cc"
            with open(os.path.join(tmp, name)) as f:
                fresh = f.readlines()
            committed_path = os.path.join(committed_dir, name)
            committed = open(committed_path).readlines() if os.path.exists(committed_path) else []
            diff = list(difflib.unified_diff(committed, fresh, f"committed/{name}", f"generated/{name}"))
            if diff:
                drift = True
                sys.stdout.writelines(diff)
    if drift:
        print("src/catalog/data differs from the reference: run tools/gen_catalog.py and commit")
        return 1
    print("catalog tables match the reference")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", default=DEFAULT_REFERENCE)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true",
                    help="regenerate to a temp dir and diff against --out instead of writing")
    args = ap.parse_args()
    if args.check:
        return check(args.reference, args.out)
    generate(args.reference, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
