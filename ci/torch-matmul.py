#!/usr/bin/env python3
"""Time torch.matmul on cuda:0, the reference that `stackbench bench`'s cuBLAS GEMMs are held to.

Square sizes (default 1024 2048 4096 8192) in f32, tf32, f16 and bf16, each in batch mode the way
stackbench measures (GUIDE.md section 7): random inputs (torch.randn, never zeros), a warm-up,
then samples of launches back to back on the benchmark's own stream between one pair of CUDA
events, each sample's time divided by its launches; sampling stops once there are at least 10
samples and 0.5 s and the relative noise (stdev / mean) is at most 0.5%, or at the time limit,
and the reason is recorded. The rate is 2 * n^3 / median time. Nothing is verified.

Before each sample a spin kernel (torch.cuda._sleep) holds the stream while Python queues the
sample's launches, so Python's launch overhead stays out of the GPU time (the figure is the GPU's,
as stackbench's is); "launch_gate" in the output says whether that was done.

Run it with the python3 that has PyTorch (on the GPU hosts, /opt/torch/.venv/bin/python3):

    /opt/torch/.venv/bin/python3 ci/torch-matmul.py --output torch-matmul.json
    python3 ci/torch-matmul.py --sizes 4096 8192 --precisions bf16 f16 --time-limit 3
    python3 ci/torch-matmul.py --quick            # 8192 only, 2 s per configuration

The JSON ("schema": "stackbench.torch-matmul/v1") goes to --output, else standard output;
progress goes to standard error. Then compare with a bench report:

    python3 ci/torch-compare.py results/bench-....json torch-matmul.json

Exit status: 0 when every configuration was measured, 1 when one failed (its reason is in the
JSON), 2 when PyTorch or CUDA is unavailable or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
import warnings

SCHEMA = "stackbench.torch-matmul/v1"
SIZES = [1024, 2048, 4096, 8192]
QUICK_SIZES = [8192]
PRECISIONS = ["f32", "tf32", "f16", "bf16"]

# The stop rule (GUIDE.md section 7), the same as stackbench bench's (harness/bench/stats.rs).
MIN_SAMPLES = 10
MIN_TIME_S = 0.5
MAX_NOISE = 0.005
TIME_LIMIT_S = 5.0
QUICK_TIME_LIMIT_S = 2.0

# A batch-mode sample lasts at least this long on the GPU (stackbench: 1 ms), with at most this
# many launches (few enough that the launch queue never fills while the gate holds the stream).
BATCH_SAMPLE_NS = 1_000_000
MAX_BATCH = 512
# Warm-up before anything is timed: at least this long and this many launches.
WARMUP_S = 0.25
WARMUP_RUNS = 3


def fail(message: str, code: int = 2) -> None:
    print(f"torch-matmul: {message}", file=sys.stderr)
    sys.exit(code)


def log(message: str) -> None:
    print(f"torch-matmul: {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="torch-matmul.py",
        description="Time torch.matmul (square, batch mode, CUDA events) for comparison with "
        "stackbench bench's cuBLAS GEMMs.",
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", metavar="N",
        help=f"square sides (default {' '.join(map(str, SIZES))}; "
        f"with --quick {' '.join(map(str, QUICK_SIZES))})",
    )
    parser.add_argument(
        "--precisions", nargs="+", choices=PRECISIONS, metavar="P",
        help=f"any of {', '.join(PRECISIONS)} (default all)",
    )
    parser.add_argument(
        "--time-limit", type=float, metavar="SECONDS",
        help=f"hard cap on sampling per configuration (default {TIME_LIMIT_S:g}; "
        f"with --quick {QUICK_TIME_LIMIT_S:g})",
    )
    parser.add_argument(
        "--quick", action="store_true",
        help="fewer sizes and a shorter time limit, as `stackbench bench --quick`",
    )
    parser.add_argument("--output", "-o", metavar="FILE", help="write the JSON here (default stdout)")
    args = parser.parse_args(argv)
    if args.sizes is None:
        args.sizes = QUICK_SIZES if args.quick else SIZES
    if any(n <= 0 for n in args.sizes):
        parser.error("--sizes must be positive")
    if args.precisions is None:
        args.precisions = PRECISIONS
    if args.time_limit is None:
        args.time_limit = QUICK_TIME_LIMIT_S if args.quick else TIME_LIMIT_S
    if not (args.time_limit > 0 and math.isfinite(args.time_limit)):
        parser.error("--time-limit must be a positive number of seconds")
    return args


# ---- statistics, as harness/bench/stats.rs ---------------------------------------------------------

def noise(samples: list[float]) -> float | None:
    """Relative standard deviation (sample stdev over the mean); None below two samples."""
    if len(samples) < 2:
        return None
    mean = sum(samples) / len(samples)
    if mean == 0:
        return None
    variance = sum((x - mean) ** 2 for x in samples) / (len(samples) - 1)
    return math.sqrt(variance) / abs(mean)


def quantile(ordered: list[float], q: float) -> float:
    at = q * (len(ordered) - 1)
    low, high = math.floor(at), math.ceil(at)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def summarize(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {
        "median_ns": quantile(ordered, 0.5),
        "q1_ns": quantile(ordered, 0.25),
        "q3_ns": quantile(ordered, 0.75),
        "min_ns": ordered[0],
        "max_ns": ordered[-1],
        "noise": noise(samples) or 0.0,
    }


class RunningNoise:
    """The noise of a growing list of samples, in O(1) per sample (Welford)."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)

    def value(self) -> float | None:
        if self.n < 2 or self.mean == 0:
            return None
        return math.sqrt(self.m2 / (self.n - 1)) / abs(self.mean)


# ---- versions ------------------------------------------------------------------------------------

def loaded_library(stem: str) -> str | None:
    """The path of a loaded shared library whose file name starts with `stem` (from /proc)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip() if len(line.split()) >= 6 else ""
                if os.path.basename(path).startswith(stem):
                    return path
    except OSError:
        pass
    return None


def cublas_version() -> tuple[str | None, str | None]:
    """cuBLAS's version as the loaded library reports it (cublasGetProperty), and its path."""
    path = loaded_library("libcublas.so")
    if path is None:
        return None, None
    try:
        lib = ctypes.CDLL(path)
        parts = []
        for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            value = ctypes.c_int()
            if lib.cublasGetProperty(prop, ctypes.byref(value)) != 0:
                return None, path
            parts.append(str(value.value))
        return ".".join(parts), path
    except (OSError, AttributeError):
        return None, path


def driver_version() -> str | None:
    """The kernel driver's version (580.xx): NVML, else nvidia-smi."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        if nvml.nvmlInit_v2() == 0:
            buf = ctypes.create_string_buffer(96)
            ok = nvml.nvmlSystemGetDriverVersion(buf, ctypes.c_uint(len(buf))) == 0
            nvml.nvmlShutdown()
            if ok and buf.value:
                return buf.value.decode(errors="replace")
    except (OSError, AttributeError):
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run(
                [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=30, check=False,
            )
            first = out.stdout.strip().splitlines()
            if out.returncode == 0 and first:
                return first[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return None


def driver_cuda_version() -> str | None:
    """The CUDA version the driver supports (cuDriverGetVersion), as `13.0`."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        value = ctypes.c_int()
        if cuda.cuDriverGetVersion(ctypes.byref(value)) == 0:
            return f"{value.value // 1000}.{value.value % 1000 // 10}"
    except (OSError, AttributeError):
        pass
    return None


def compiled_cuda_version(torch) -> str | None:
    """The CUDA runtime version torch was built against (torch._C._cuda_getCompiledVersion)."""
    try:
        value = int(torch._C._cuda_getCompiledVersion())
        return f"{value // 1000}.{value % 1000 // 10}"
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return None


# ---- measuring -----------------------------------------------------------------------------------

def set_tf32(torch, allow: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cuda.matmul.allow_tf32 = allow


def matmul_settings(torch) -> dict:
    matmul = torch.backends.cuda.matmul
    settings = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in (
            "allow_tf32",
            "allow_fp16_reduced_precision_reduction",
            "allow_bf16_reduced_precision_reduction",
        ):
            try:
                settings[name] = getattr(matmul, name)
            except (AttributeError, RuntimeError):
                pass
        try:
            settings["float32_matmul_precision"] = torch.get_float32_matmul_precision()
        except (AttributeError, RuntimeError):
            pass
    try:
        settings["preferred_blas_library"] = str(torch.backends.cuda.preferred_blas_library())
    except (AttributeError, RuntimeError):
        pass
    return settings


class Gate:
    """Holds a stream with a spin kernel (torch.cuda._sleep) while the host queues launches."""

    def __init__(self, torch, stream) -> None:
        self.torch = torch
        self.stream = stream
        self.cycles_per_ns = None
        sleep = getattr(torch.cuda, "_sleep", None)
        if sleep is None:
            return
        try:
            with torch.cuda.stream(stream):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                cycles = 10_000_000
                sleep(cycles)  # loads the kernel
                start.record(stream)
                sleep(cycles)
                end.record(stream)
                end.synchronize()
            ns = start.elapsed_time(end) * 1e6
            if ns > 0:
                self.cycles_per_ns = cycles / ns
        except RuntimeError:
            self.cycles_per_ns = None

    @property
    def active(self) -> bool:
        return self.cycles_per_ns is not None

    def hold(self, ns: float) -> None:
        if self.cycles_per_ns is not None:
            self.torch.cuda._sleep(max(1, int(ns * self.cycles_per_ns)))


def measure(torch, stream, gate: Gate, precision: str, n: int, time_limit: float) -> dict:
    dtype = {
        "f32": torch.float32, "tf32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    }[precision]
    set_tf32(torch, precision == "tf32")
    result = {
        "precision": precision,
        "size": n,
        "dtype": str(dtype).replace("torch.", ""),
        "mode": "batch",
        "settings": matmul_settings(torch),
    }
    device = torch.device("cuda", 0)
    a = b = c = None
    try:
        with torch.cuda.stream(stream):
            gen = torch.Generator(device=device)
            gen.manual_seed(n * 31 + PRECISIONS.index(precision))
            a = torch.randn(n, n, dtype=dtype, device=device, generator=gen)
            b = torch.randn(n, n, dtype=dtype, device=device, generator=gen)
            c = torch.empty(n, n, dtype=dtype, device=device)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)

            # Warm up: cuBLAS handle, workspace, kernel loading, clocks.
            began, runs = time.perf_counter(), 0
            while runs < WARMUP_RUNS or time.perf_counter() - began < WARMUP_S:
                torch.matmul(a, b, out=c)
                runs += 1
                if runs % 8 == 0:
                    stream.synchronize()
            stream.synchronize()

            # One timed launch sizes the batch; the host's time per launch sizes the gate.
            start.record(stream)
            torch.matmul(a, b, out=c)
            end.record(stream)
            end.synchronize()
            one_ns = start.elapsed_time(end) * 1e6
            batch = max(1, min(MAX_BATCH, math.ceil(BATCH_SAMPLE_NS / max(one_ns, 1.0))))
            host_began = time.perf_counter()
            for _ in range(batch):
                torch.matmul(a, b, out=c)
            host_ns_per_launch = (time.perf_counter() - host_began) * 1e9 / batch
            stream.synchronize()

            samples: list[float] = []
            running = RunningNoise()
            stopped_by = None
            began = time.perf_counter()
            while stopped_by is None:
                # The gate covers the host queueing the batch twice over, plus 50 us.
                gate.hold(2.0 * host_ns_per_launch * batch + 50_000)
                start.record(stream)
                for _ in range(batch):
                    torch.matmul(a, b, out=c)
                end.record(stream)
                end.synchronize()
                per_launch = start.elapsed_time(end) * 1e6 / batch
                samples.append(per_launch)
                running.add(per_launch)
                elapsed = time.perf_counter() - began
                quiet = running.value() is not None and running.value() <= MAX_NOISE
                if len(samples) >= MIN_SAMPLES and elapsed >= MIN_TIME_S and quiet:
                    stopped_by = "noise"
                elif elapsed >= time_limit:
                    stopped_by = "time_limit"
    except (RuntimeError, MemoryError) as error:  # torch.cuda.OutOfMemoryError is a RuntimeError
        lines = str(error).strip().splitlines() or [type(error).__name__]
        result.update(status="failed", reason=lines[0][:500])
        return result
    finally:
        del a, b, c
        torch.cuda.empty_cache()

    summary = summarize(samples)
    result.update(
        status="measured",
        launches_per_sample=batch,
        launch_gate="sleep" if gate.active else "none",
        host_ns_per_launch=host_ns_per_launch,
        samples_ns=samples,
        **summary,
        tflops=2.0 * n**3 / summary["median_ns"] / 1e3,
        stopped_by=stopped_by,
        sampling_s=time.perf_counter() - began,
    )
    return result


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError as error:
        fail(
            f"PyTorch is not importable by {sys.executable} ({error}); run this with the python3 "
            "that has it (on the GPU hosts: /opt/torch/.venv/bin/python3 ci/torch-matmul.py)"
        )
    if not torch.cuda.is_available():
        built = torch.version.cuda
        why = (
            f"PyTorch {torch.__version__} was built without CUDA"
            if built is None
            else f"PyTorch {torch.__version__} (CUDA {built}) sees no usable GPU "
            "(no device, no driver, or the driver too old for it)"
        )
        fail(f"CUDA is unavailable: {why}")

    try:
        stream = torch.cuda.Stream(device=0)
        torch.cuda.set_device(0)
        props = torch.cuda.get_device_properties(0)
        # One matmul loads cuBLAS, so that its version can be read from the loaded library.
        with torch.cuda.stream(stream):
            x = torch.randn(64, 64, device="cuda:0")
            torch.matmul(x, x)
        stream.synchronize()
        del x
    except RuntimeError as error:
        fail(f"CUDA is unavailable: {error}")

    cublas, cublas_path = cublas_version()
    report = {
        "schema": SCHEMA,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "compiled_cuda_version": compiled_cuda_version(torch),
        "cublas_version": cublas,
        "cublas_library": cublas_path,
        "cublaslt_library": loaded_library("libcublasLt.so"),
        "gpu": {
            "index": 0,
            "name": props.name,
            "compute_capability": f"{props.major}.{props.minor}",
            "sm_count": props.multi_processor_count,
            "memory_bytes": props.total_memory,
            "driver_version": driver_version(),
            "driver_cuda_version": driver_cuda_version(),
        },
        "quick": args.quick,
        "stop_rule": {
            "min_samples": MIN_SAMPLES,
            "min_time_s": MIN_TIME_S,
            "max_noise": MAX_NOISE,
            "time_limit_s": args.time_limit,
        },
        "batch_sample_ns": BATCH_SAMPLE_NS,
        "results": [],
    }
    log(
        f"{props.name}, torch {torch.__version__}, CUDA {torch.version.cuda}, cuBLAS {cublas or '?'}, "
        f"driver {report['gpu']['driver_version'] or '?'}"
    )

    gate = Gate(torch, stream)
    if not gate.active:
        log("torch.cuda._sleep is unavailable: launches are not gated, small sizes may be host-bound")
    original_tf32 = matmul_settings(torch).get("allow_tf32", False)
    try:
        for precision in args.precisions:
            for n in args.sizes:
                row = measure(torch, stream, gate, precision, n, args.time_limit)
                report["results"].append(row)
                if row["status"] == "measured":
                    log(
                        f"{precision:>4} {n:>6}: {row['tflops']:8.1f} TFLOP/s  median "
                        f"{row['median_ns'] / 1e3:10.1f} us  noise {row['noise'] * 100:.2f}%  "
                        f"{len(row['samples_ns'])} samples x {row['launches_per_sample']}, "
                        f"stopped by {row['stopped_by']}"
                    )
                else:
                    log(f"{precision:>4} {n:>6}: failed: {row['reason']}")
    finally:
        set_tf32(torch, original_tf32)

    text = json.dumps(report, indent=2) + "\n"
    if args.output:
        directory = os.path.dirname(os.path.abspath(args.output))
        os.makedirs(directory, exist_ok=True)
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
        log(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0 if all(r["status"] == "measured" for r in report["results"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
