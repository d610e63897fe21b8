"""Verdicts and reports of tests/gpu/device-check.sh.

  device_check_report.py probe-parts PROBE_JSON EXIT_CODE   -> PART\tSTATUS\tDETAIL lines
  device_check_report.py probe-differences PROBE_JSON       -> the catalog differences, for people
  device_check_report.py --results TSV --out DIR --started T --driver D --mig M [--probe-json F]
      writes DIR/device-check.json and DIR/device-check.txt, prints the summary, exits 1 when a
      part failed.
Whatever the probe printed, this never raises: a probe that crashed or printed something other
than one JSON document is a FAIL with what it printed.
"""
import argparse
import datetime
import json
import socket
import sys

SKIPPED_EXIT = 3  # carve-nvml-probe: no usable NVML on this host
MIG_CALLS = ("gpu_instances", "mig_devices")


def load(path):
    try:
        with open(path) as f:
            return json.load(f), None
    except (OSError, ValueError) as e:
        try:
            raw = open(path, errors="replace").read()[:300]
        except OSError:
            raw = ""
        return None, f"{e}; output: {raw!r}"


def probe_parts(path, exit_code):
    report, error = load(path)
    if report is None or not isinstance(report, dict):
        why = f"carve-nvml-probe exited {exit_code} without one JSON document ({error})"
        return [("nvml-probe", "FAIL", why), ("catalog-match", "SKIPPED", "no probe report"),
                ("nvml-read-only", "SKIPPED", "no probe report")]
    status = report.get("status")
    if exit_code == SKIPPED_EXIT or status == "skipped":
        why = f"no usable NVML here: {report.get('reason')}"
        return [(p, "SKIPPED", why) for p in ("nvml-probe", "catalog-match", "nvml-read-only")]
    if status != "ok":
        why = f"exit {exit_code}, status {status}: {report.get('reason')}"
        return [("nvml-probe", "FAIL", why), ("catalog-match", "SKIPPED", "no probe report"),
                ("nvml-read-only", "SKIPPED", "no probe report")]
    gpus = report.get("gpus", [])
    summary = report.get("summary", {})
    diffs = report.get("differences", [])
    compared = summary.get("profiles_compared", 0)
    parts = [("nvml-probe", "PASS",
              f"driver {report.get('driver_version')}, {len(gpus)} GPU(s), {compared} profile(s) "
              f"compared, {len(diffs)} difference(s) (valid JSON)")]
    if diffs:
        first = diffs[0]
        parts.append(("catalog-match", "FAIL",
                      f"{len(diffs)} difference(s) from the catalog, first [{first.get('kind')}] "
                      f"GPU {first.get('gpu')} {first.get('profile')}: {first.get('message')}"))
    elif compared == 0:
        reasons = "; ".join(sorted({str(g.get("profiles_unread")) for g in gpus})) or "no GPU"
        parts.append(("catalog-match", "SKIPPED", f"nothing compared: {reasons}"))
    else:
        parts.append(("catalog-match", "PASS", f"{compared} live profile(s) match the catalog"))
    parts.append(read_only_part(report, gpus))
    return parts


def read_only_part(report, gpus):
    calls = report.get("read_only_calls")
    if not isinstance(calls, list) or len(calls) != len(gpus):
        return ("nvml-read-only", "FAIL", "the probe reported no read-only calls for every GPU")
    figures, failures = [], []
    for row, gpu in zip(calls, gpus):
        mig_on = gpu.get("mig_current") == "enabled"
        for key in ("gpu_instances", "mig_devices", "compute_processes", "utilization"):
            value = row.get(key)
            if isinstance(value, dict) and "error" in value:
                # With MIG off the driver may refuse the MIG listings; the rest must answer.
                if key in MIG_CALLS and not mig_on:
                    figures.append(f"GPU {row.get('gpu')} {key}: refused with MIG off")
                else:
                    failures.append(f"GPU {row.get('gpu')} {key}: {value['error']}")
            elif key == "utilization":
                figures.append(f"GPU {row.get('gpu')} utilization {value.get('gpu_percent')}%")
            else:
                figures.append(f"GPU {row.get('gpu')} {key} {len(value)}")
    if failures:
        return ("nvml-read-only", "FAIL", "; ".join(failures))
    return ("nvml-read-only", "PASS", "; ".join(figures))


def probe_differences(path):
    report, _ = load(path)
    if not isinstance(report, dict):
        return
    for d in report.get("differences", []):
        print(f"  difference [{d.get('kind')}] GPU {d.get('gpu')} {d.get('profile')}: catalog "
              f"{d.get('catalog')} / live {d.get('live')}: {d.get('message')}")


def write_reports(args):
    parts = []
    with open(args.results) as f:
        for line in f:
            name, status, detail = (line.rstrip("\n").split("\t") + ["", ""])[:3]
            parts.append({"name": name, "status": status, "detail": detail})
    counts = {s: sum(p["status"] == s for p in parts) for s in ("PASS", "FAIL", "SKIPPED")}
    probe, _ = load(args.probe_json) if args.probe_json else (None, None)
    doc = {
        "started": args.started,
        "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "driver": args.driver,
        "mig_mode": args.mig,
        "parts": parts,
        "summary": {"pass": counts["PASS"], "fail": counts["FAIL"], "skipped": counts["SKIPPED"]},
        "nvml_probe": probe,
    }
    with open(f"{args.out}/device-check.json", "w") as f:
        json.dump(doc, f, indent=2)
    lines = [f"carve device check on {doc['host']}, {doc['started']} to {doc['finished']}",
             f"driver {args.driver}; MIG mode {args.mig}", ""]
    lines += [f"{p['status']:<8} {p['name']:<24} {p['detail']}" for p in parts]
    lines += ["", f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIPPED']} skipped"]
    with open(f"{args.out}/device-check.txt", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("== summary")
    print("\n".join(lines))
    print(f"(JSON: {args.out}/device-check.json)")
    return 1 if counts["FAIL"] else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "probe-parts":
        code = int(argv[2]) if argv[2].lstrip("-").isdigit() else -1
        for part in probe_parts(argv[1], code):
            print("\t".join(str(x).replace("\t", " ").replace("\n", " ") for x in part))
        return 0
    if len(argv) >= 2 and argv[0] == "probe-differences":
        probe_differences(argv[1])
        return 0
    p = argparse.ArgumentParser()
    for flag in ("--results", "--out", "--started", "--driver", "--mig"):
        p.add_argument(flag, required=True)
    p.add_argument("--probe-json")
    return write_reports(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
