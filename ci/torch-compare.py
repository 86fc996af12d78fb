#!/usr/bin/env python3
"""Set stackbench's cuBLAS GEMM figures beside torch.matmul's on the same GPU, precision and size.

    python3 ci/torch-compare.py results/bench-<host>-<gpu>-<date>.json torch-matmul.json
    python3 ci/torch-compare.py BENCH_JSON TORCH_JSON --tolerance 3 --json compare.json

BENCH_JSON is a `stackbench bench` report ("schema": "stackbench.bench/v1"); TORCH_JSON is what
ci/torch-matmul.py wrote on the same GPU ("schema": "stackbench.torch-matmul/v1"). Every `matmul`
row with implementation "cublas", mode "batch" and status "measured" is matched to torch's
measured result of the same precision and size, and a Markdown table goes to standard output:
TFLOP/s of each and stackbench's difference from torch in percent. The target is the issue's:
cuBLAS within the tolerance (default 3%) of torch.matmul, slower or faster. Rows without a
counterpart, a GPU that differs between the files, and noisy figures are noted under the table.

Each pair is judged: "within" the tolerance; "beyond" it by more than the two figures' combined
noise (the root of the sum of their squared relative noises); or "unclear" in between, where the
noise alone could carry the difference past the tolerance. The first H100 visit showed why:
bf16 GEMMs there are power-throttled, both sides' noise was ~5%, and one pair was 4.7% apart.

Exit status: 0 when no matched pair is beyond the tolerance; 1 when one is, or when nothing
matched (the target is then not shown); 2 on input that cannot be compared (unreadable,
not JSON, the wrong schema or shape, bad arguments), with what is wrong on standard error.
`--json FILE` also writes the comparison ("schema": "stackbench.torch-compare/v1").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

BENCH_SCHEMA = "stackbench.bench/v1"
TORCH_SCHEMA = "stackbench.torch-matmul/v1"
COMPARE_SCHEMA = "stackbench.torch-compare/v1"
PRECISION_ORDER = {"f32": 0, "tf32": 1, "f16": 2, "bf16": 3}
# A figure noisier than this (relative stdev) is noted: the difference may be partly noise.
NOISY = 0.005
# The table's last column, per judgement.
JUDGED = {
    "within": lambda r: "yes",
    "beyond": lambda r: "**no**",
    "unclear": lambda r: f"unclear (noise {r['noise_pct']:.1f}%)",
}


class BadInput(Exception):
    """Input that cannot be compared, with what is wrong."""


def load(path: str, schema: str) -> dict:
    """The JSON object at `path`, which must carry `schema`."""
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except OSError as error:
        raise BadInput(f"{path}: cannot read it ({error.strerror or error})") from error
    except ValueError as error:
        raise BadInput(f"{path}: not JSON ({error})") from error
    if not isinstance(data, dict):
        raise BadInput(f"{path}: a JSON {type(data).__name__}, expected an object with "
                       f"\"schema\": {schema!r}")
    if data.get("schema") != schema:
        raise BadInput(f"{path}: schema is {data.get('schema')!r}, expected {schema!r}")
    return data


def rows_of(data: dict, key: str, path: str) -> list[dict]:
    """The list of objects under `key`."""
    rows = data.get(key)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise BadInput(f"{path}: \"{key}\" is not a list of objects")
    return rows


def number(value) -> float | None:
    """A finite positive number, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def rate(size: int, median_ns) -> float | None:
    """TFLOP/s of a square matmul of side `size` taking `median_ns`: 2 n^3 / time."""
    median = number(median_ns)
    return 2.0 * size**3 / median / 1e3 if median and size else None


def bench_rows(bench: dict, path: str) -> list[dict]:
    """stackbench's measured cuBLAS batch matmul figures."""
    found = []
    for row in rows_of(bench, "benchmarks", path):
        parameters = row.get("parameters") if isinstance(row.get("parameters"), dict) else {}
        if (row.get("benchmark") != "matmul" or row.get("status") != "measured"
                or parameters.get("implementation") != "cublas"
                or parameters.get("mode") != "batch"):
            continue
        size, precision = parameters.get("size"), parameters.get("precision")
        if not isinstance(size, int) or not isinstance(precision, str):
            raise BadInput(f"{path}: matmul row {row.get('id') or row.get('combination')!r} has "
                           "no integer size or no precision")
        summary = row.get("summary") if isinstance(row.get("summary"), dict) else {}
        throughput = row.get("throughput") if isinstance(row.get("throughput"), dict) else {}
        tflops = None
        if throughput.get("unit") == "TFLOP/s":
            tflops = number(throughput.get("value"))
        if tflops is None:
            tflops = rate(size, summary.get("median_ns"))
        found.append({
            "combination": str(row.get("combination")),
            "precision": precision,
            "size": size,
            "tflops": tflops,
            "noise": number(summary.get("noise")),
            "stopped_by": row.get("stopped_by"),
        })
    return found


def torch_rows(torch: dict, path: str) -> tuple[dict, list[str]]:
    """torch's measured figures by (precision, size), and notes on what was left out."""
    found: dict = {}
    notes = []
    for row in rows_of(torch, "results", path):
        key = (row.get("precision"), row.get("size"))
        if row.get("status", "measured") != "measured":
            notes.append(f"torch {key[0]} {key[1]}: {row.get('status')} "
                         f"({row.get('reason') or 'no reason given'})")
            continue
        if not isinstance(key[0], str) or not isinstance(key[1], int):
            raise BadInput(f"{path}: a result has no precision or no integer size")
        tflops = number(row.get("tflops")) or rate(key[1], row.get("median_ns"))
        if tflops is None:
            notes.append(f"torch {key[0]} {key[1]}: no rate (neither tflops nor median_ns)")
            continue
        if key in found:
            notes.append(f"torch {key[0]} {key[1]}: given twice, the first is used")
            continue
        found[key] = {"tflops": tflops, "noise": number(row.get("noise")),
                      "stopped_by": row.get("stopped_by")}
    return found, notes


def gpu_names(bench: dict, torch: dict) -> tuple[str | None, str | None]:
    """The GPU each file measured on, where it says."""
    ours = None
    gpu = bench.get("gpu")
    if isinstance(gpu, dict) and isinstance(gpu.get("devices"), list) and gpu["devices"]:
        first = gpu["devices"][0]
        ours = first.get("name") if isinstance(first, dict) else None
    theirs = torch.get("gpu")
    if isinstance(theirs, dict):
        theirs = theirs.get("name")
    return ours, theirs if isinstance(theirs, str) else None


def compare(bench: dict, bench_path: str, torch: dict, torch_path: str, tolerance: float) -> dict:
    ours = bench_rows(bench, bench_path)
    theirs, notes = torch_rows(torch, torch_path)
    rows, unmatched = [], []
    for row in ours:
        key = (row["precision"], row["size"])
        other = theirs.get(key)
        if other is None or row["tflops"] is None:
            why = "no torch figure" if other is None else "no stackbench rate"
            unmatched.append({**{k: row[k] for k in ("combination", "precision", "size")},
                              "reason": why})
            continue
        difference = 100.0 * (row["tflops"] - other["tflops"]) / other["tflops"]
        noise = 100.0 * math.hypot(row["noise"] or 0.0, other["noise"] or 0.0)
        if abs(difference) <= tolerance:
            judgement = "within"
        elif abs(difference) - tolerance > noise:
            judgement = "beyond"
        else:
            judgement = "unclear"
        rows.append({
            "combination": row["combination"],
            "precision": row["precision"],
            "size": row["size"],
            "stackbench_tflops": row["tflops"],
            "torch_tflops": other["tflops"],
            "difference_pct": difference,
            "within_tolerance": judgement == "within",
            "judgement": judgement,
            "noise_pct": noise,
            "stackbench_noise": row["noise"],
            "torch_noise": other["noise"],
            "stackbench_stopped_by": row["stopped_by"],
            "torch_stopped_by": other["stopped_by"],
        })
    rows.sort(key=lambda r: (r["combination"], PRECISION_ORDER.get(r["precision"], 9),
                             r["precision"], r["size"]))
    matched = {(r["precision"], r["size"]) for r in rows}
    for key in sorted(set(theirs) - matched - {(u["precision"], u["size"]) for u in unmatched},
                      key=lambda k: (PRECISION_ORDER.get(k[0], 9), k[0], k[1])):
        notes.append(f"torch {key[0]} {key[1]}: no stackbench cuBLAS batch row to compare")
    for row in rows:
        for side in ("stackbench", "torch"):
            noise = row[f"{side}_noise"]
            if noise is not None and noise > NOISY:
                notes.append(f"{row['combination']} {row['precision']} {row['size']}: {side}'s "
                             f"noise is {noise * 100:.2f}% (stopped by "
                             f"{row[f'{side}_stopped_by'] or '?'})")
    bench_gpu, torch_gpu = gpu_names(bench, torch)
    if bench_gpu and torch_gpu and bench_gpu != torch_gpu:
        notes.insert(0, f"different GPUs: stackbench measured on {bench_gpu!r}, torch on "
                        f"{torch_gpu!r}: the comparison says little")
    if not rows:
        verdict = "nothing matched"
    elif any(r["judgement"] == "beyond" for r in rows):
        verdict = "beyond"
    elif any(r["judgement"] == "unclear" for r in rows):
        verdict = "unclear"
    else:
        verdict = "within"
    return {
        "schema": COMPARE_SCHEMA,
        "bench": bench_path,
        "torch": torch_path,
        "tolerance_pct": tolerance,
        "gpu": {"stackbench": bench_gpu, "torch": torch_gpu},
        "torch_version": torch.get("torch_version"),
        "torch_cuda_version": torch.get("cuda_version"),
        "torch_cublas_version": torch.get("cublas_version"),
        "verdict": verdict,
        "rows": rows,
        "unmatched": unmatched,
        "notes": notes,
    }


def markdown(result: dict) -> str:
    tolerance = f"{result['tolerance_pct']:g}%"
    gpu = result["gpu"]["torch"] or result["gpu"]["stackbench"] or "GPU not named"
    lines = [
        f"stackbench cuBLAS against torch.matmul on {gpu} (torch {result['torch_version']}, "
        f"CUDA {result['torch_cuda_version']}, cuBLAS {result['torch_cublas_version'] or '?'}), "
        f"batch mode, tolerance {tolerance}",
        "",
        "| combination | precision | size | stackbench TFLOP/s | torch TFLOP/s | difference % "
        f"| within {tolerance} |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in result["rows"]:
        lines.append(
            f"| `{r['combination']}` | {r['precision']} | {r['size']} | "
            f"{r['stackbench_tflops']:.1f} | {r['torch_tflops']:.1f} | "
            f"{r['difference_pct']:+.1f}% | {JUDGED[r['judgement']](r)} |"
        )
    within = sum(r["within_tolerance"] for r in result["rows"])
    lines += ["", f"{within} of {len(result['rows'])} within {tolerance}."]
    if result["verdict"] == "nothing matched":
        lines.append("Nothing matched: no measured cuBLAS batch matmul has a torch figure of the "
                     "same precision and size, so the target is not shown.")
    for u in result["unmatched"]:
        lines.append(f"- `{u['combination']}` {u['precision']} {u['size']}: {u['reason']}")
    lines += [f"- {note}" for note in result["notes"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="torch-compare.py",
        description="Compare stackbench bench's cuBLAS matmul figures with ci/torch-matmul.py's.",
    )
    parser.add_argument("bench", metavar="BENCH_JSON", help="a stackbench bench report")
    parser.add_argument("torch", metavar="TORCH_JSON", help="ci/torch-matmul.py's output")
    parser.add_argument("--tolerance", type=float, default=3.0, metavar="PERCENT",
                        help="the largest difference either way, in percent (default 3)")
    parser.add_argument("--json", metavar="FILE", help="also write the comparison here as JSON")
    args = parser.parse_args(argv)  # exits 2 on bad arguments
    if not (math.isfinite(args.tolerance) and args.tolerance >= 0):
        parser.error("--tolerance must be a percentage, 0 or more")
    try:
        bench = load(args.bench, BENCH_SCHEMA)
        torch = load(args.torch, TORCH_SCHEMA)
        result = compare(bench, args.bench, torch, args.torch, args.tolerance)
    except BadInput as error:
        print(f"torch-compare: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(result))
    if args.json:
        try:
            directory = os.path.dirname(os.path.abspath(args.json))
            os.makedirs(directory, exist_ok=True)
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(result, out, indent=2)
                out.write("\n")
        except OSError as error:
            print(f"torch-compare: cannot write {args.json}: {error}", file=sys.stderr)
            return 2
    if result["verdict"] == "nothing matched":
        print("torch-compare: nothing matched, so the target is not shown", file=sys.stderr)
        return 1
    beyond = [r for r in result["rows"] if r["judgement"] == "beyond"]
    for r in beyond:
        print(f"torch-compare: {r['combination']} {r['precision']} {r['size']}: "
              f"{r['difference_pct']:+.1f}% is beyond {args.tolerance:g}% by more than the "
              f"noise ({r['noise_pct']:.1f}%)", file=sys.stderr)
    return 1 if beyond else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
