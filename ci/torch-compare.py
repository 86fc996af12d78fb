#!/usr/bin/env python3
"""Sets stackbench's cuBLAS GEMM figures beside PyTorch's on the same GPU, precision and size.

    ci/torch-compare.py results/bench-<host>-<gpu>-<date>.json torch-matmul.json [--tolerance 3]

Matches every measured `matmul` row of a `stackbench.bench/v1` file with implementation
`cublas` and mode `batch` to the `stackbench.torch-matmul/v1` result (ci/torch-matmul.py) of the
same precision and size, and prints a Markdown table: TFLOP/s of each and the difference in
percent. Exit status: 0 when every pair is within the tolerance (percent, either way), 1 when
one is not or nothing matched, 2 on unreadable input or a wrong schema. `--json FILE` also
writes the comparison as JSON.
"""

import argparse
import json
import sys

BENCH_SCHEMA = "stackbench.bench/v1"
TORCH_SCHEMA = "stackbench.torch-matmul/v1"


class BadInput(Exception):
    """A file that cannot be compared, with what to do."""


def load(path, schema):
    """The JSON at `path`, which must carry `schema`."""
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError) as error:
        raise BadInput(f"{path}: cannot read it as JSON ({error})") from error
    if not isinstance(data, dict) or data.get("schema") != schema:
        found = data.get("schema") if isinstance(data, dict) else None
        raise BadInput(f"{path}: schema is {found!r}, expected {schema!r}")
    return data


def pairs(bench, torch):
    """(combination, precision, size, stackbench TFLOP/s, torch TFLOP/s) for every match."""
    theirs = {(r["precision"], r["size"]): r["tflops"] for r in torch.get("results", [])}
    for row in bench.get("benchmarks", []):
        parameters = row.get("parameters") or {}
        if (row.get("benchmark") != "matmul" or row.get("status") != "measured"
                or parameters.get("implementation") != "cublas"
                or parameters.get("mode") != "batch" or not row.get("throughput")):
            continue
        key = (parameters.get("precision"), parameters.get("size"))
        if key in theirs:
            yield row["combination"], key[0], key[1], row["throughput"]["value"], theirs[key]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench")
    parser.add_argument("torch")
    parser.add_argument("--tolerance", type=float, default=3.0, help="percent (default 3)")
    parser.add_argument("--json", help="also write the comparison here")
    args = parser.parse_args()
    try:
        bench, torch = load(args.bench, BENCH_SCHEMA), load(args.torch, TORCH_SCHEMA)
    except BadInput as error:
        print(f"torch-compare: {error}", file=sys.stderr)
        return 2
    rows = []
    for combination, precision, size, ours, theirs in pairs(bench, torch):
        difference = 100.0 * (ours - theirs) / theirs
        rows.append({
            "combination": combination, "precision": precision, "size": size,
            "stackbench_tflops": ours, "torch_tflops": theirs,
            "difference_pct": difference, "within": abs(difference) <= args.tolerance,
        })
    print(f"stackbench cuBLAS against torch.matmul ({torch.get('gpu')}, torch "
          f"{torch.get('torch_version')}, CUDA {torch.get('cuda_version')}), tolerance "
          f"{args.tolerance:g}%\n")
    print("| combination | precision | size | stackbench TFLOP/s | torch TFLOP/s | difference | within |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| `{r['combination']}` | {r['precision']} | {r['size']} | "
              f"{r['stackbench_tflops']:.1f} | {r['torch_tflops']:.1f} | "
              f"{r['difference_pct']:+.1f}% | {'yes' if r['within'] else '**no**'} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"schema": "stackbench.torch-compare/v1", "tolerance_pct": args.tolerance,
                       "rows": rows}, out, indent=2)
            out.write("\n")
    if not rows:
        print("\nno measured cuBLAS batch matmul matches a torch result", file=sys.stderr)
        return 1
    return 0 if all(r["within"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
