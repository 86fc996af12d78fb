//! Every exporter's output for one hand-built `stackbench bench` report, kept as insta
//! snapshots. The figures are made up, round and labelled so (the GPU is "Example GPU (test
//! data)"): they test the views, they are not measurements.
//!
//! Two combinations: `pip:venv-cu12` measured everything but its tiled matmul, whose output did
//! not verify (a failure, not timed), and one batch sample ran throttled; `pip:venv-cu11`
//! could not start its GPU work, so its GPU benchmarks are skipped with one reason, said once.
//! Review a change with `INSTA_UPDATE=always cargo test --release --test bench_report_snapshots`
//! and a diff of `tests/snapshots/`.

use stackbench::bench::model::*;
use stackbench::bench::{shares, theoretical};
use stackbench::error::OutputError;
use stackbench::gpu::{Gpu, GpuInfo};
use stackbench::model::HostInfo;
use stackbench::report::exporter;
use stackbench::report::format::Format;
use stackbench::tags::BENCH_SCHEMA;
use std::collections::BTreeMap;

const CU12: &str = "pip:venv-cu12";
const CU11: &str = "pip:venv-cu11";
/// Holds `|`, a double quote and a comma: what every format's escaping must keep intact.
const NO_GPU: &str = "no GPU: driver.devices did not pass (skip): needs driver.init, which \
                      failed: cuInit: CUDA_ERROR_NO_DEVICE (100): \"no device\" | see nvidia-smi, dmesg";

fn key(combination: &str, benchmark: &'static str, side: Side, parameters: Parameters) -> Key {
    Key {
        combination: combination.into(),
        benchmark,
        side,
        parameters,
    }
}

fn gpu_parameters(size: u64, precision: &str, implementation: &str, mode: Mode) -> Parameters {
    Parameters {
        size: Some(size),
        precision: (!precision.is_empty()).then(|| precision.into()),
        implementation: Some(implementation.into()),
        mode: Some(mode),
        ..Parameters::default()
    }
}

fn summary(median_ns: f64) -> Summary {
    Summary {
        median_ns,
        q1_ns: median_ns * 0.99,
        q3_ns: median_ns * 1.01,
        min_ns: median_ns * 0.98,
        max_ns: median_ns * 1.05,
        noise: 0.004,
    }
}

/// A measured result with ten samples around `median_ns`.
fn measured(key: Key, median_ns: f64, rate: Option<(f64, &str)>, pct: Option<f64>) -> BenchResult {
    BenchResult {
        samples_ns: (0..10).map(|i| median_ns + f64::from(i) - 5.0).collect(),
        summary: Some(summary(median_ns)),
        throughput: rate.map(|(value, unit)| Throughput {
            value,
            unit: unit.into(),
        }),
        pct_of_peak: pct,
        stopped_by: Some(StopReason::Noise),
        ..BenchResult::from_key(key)
    }
}

fn verification(precision: &str, passed: bool, error: f64, tolerance: f64) -> Verification {
    Verification {
        passed,
        precision: precision.into(),
        max_relative_error: error,
        tolerance,
        compared: 1024,
    }
}

fn telemetry(throttled: Vec<usize>) -> Telemetry {
    Telemetry {
        readings: 120,
        sm_clock_mhz_min: Some(1700),
        sm_clock_mhz_max: Some(1800),
        sm_clock_mhz_mean: None,
        temperature_c_max: Some(60),
        power_w_max: Some(500.0),
        throttle_reasons: if throttled.is_empty() {
            Vec::new()
        } else {
            vec!["SW power cap".into()]
        },
        throttled_samples: throttled,
    }
}

/// The measured combination's rows.
fn cu12_rows() -> Vec<BenchResult> {
    let compile = key(
        CU12,
        "nvrtc_compile",
        Side::Cpu,
        Parameters {
            implementation: Some("vector_add".into()),
            arch: Some("sm_90".into()),
            ..Parameters::default()
        },
    );
    let mut copy = measured(
        key(
            CU12,
            "copy",
            Side::Gpu,
            gpu_parameters(1 << 30, "", "driver", Mode::Batch),
        ),
        1_000_000.0,
        Some((2000.0, "GB/s")),
        None,
    );
    copy.telemetry = Some(telemetry(Vec::new()));
    let mut add = measured(
        key(
            CU12,
            "vector_add",
            Side::Gpu,
            gpu_parameters(1 << 26, "f32", "nvrtc", Mode::Batch),
        ),
        400_000.0,
        Some((2000.0 * 0.9, "GB/s")),
        Some(90.0),
    );
    add.verified = Some(verification("f32", true, 0.0, 1e-4));
    add.telemetry = Some(telemetry(vec![3]));
    add.cupti = Some(CuptiCheck {
        kernel_ns: 396_000.0,
        event_over_cupti: 1.01,
        launches: 30,
    });
    add.host_median_ns = Some(401_000.0);
    // 1 Mi elements: 12 MiB, within an L2 of 50 MiB, faster than the DRAM copy.
    let mut small = measured(
        key(
            CU12,
            "vector_add",
            Side::Gpu,
            gpu_parameters(1 << 20, "f32", "nvrtc", Mode::Batch),
        ),
        4_000.0,
        Some((3145.7, "GB/s")),
        None,
    );
    small.in_l2 = true;
    small.samples_taken = Some(41_250);
    small.verified = Some(verification("f32", true, 0.0, 1e-4));
    let mut cold = measured(
        key(
            CU12,
            "vector_add",
            Side::Gpu,
            gpu_parameters(1 << 26, "f32", "nvrtc", Mode::Cold),
        ),
        410_000.0,
        Some((1900.0, "GB/s")),
        Some(95.0),
    );
    cold.stopped_by = Some(StopReason::TimeLimit);
    cold.verified = Some(verification("f32", true, 0.0, 1e-4));
    let mut bf16 = measured(
        key(
            CU12,
            "matmul",
            Side::Gpu,
            gpu_parameters(8192, "bf16", "cublas", Mode::Batch),
        ),
        2_000_000.0,
        Some((500.0, "TFLOP/s")),
        None, // cuBLAS is the ceiling: no share of itself
    );
    bf16.verified = Some(verification("bf16", true, 3e-3, 2e-2));
    bf16.reason = Some("CUPTI cross-check: no CUPTI in this combination".into());
    let mut tiled = BenchResult::failed(
        key(
            CU12,
            "matmul",
            Side::Gpu,
            gpu_parameters(8192, "f32", "nvrtc", Mode::Batch),
        ),
        "the output differs from the CPU's: relative error 1.00e-1 beyond 1e-4; not timed",
    );
    tiled.verified = Some(verification("f32", false, 0.1, 1e-4));
    vec![
        measured(compile, 20_000_000.0, None, None),
        measured(
            key(CU12, "load", Side::Cpu, Parameters::default()),
            50_000_000.0,
            None,
            None,
        ),
        copy,
        small,
        add,
        cold,
        bf16,
        tiled,
    ]
}

/// The skipped combination's rows: its CPU work measured, its GPU work skipped.
fn cu11_rows() -> Vec<BenchResult> {
    let mut rows = vec![measured(
        key(CU11, "load", Side::Cpu, Parameters::default()),
        40_000_000.0,
        None,
        None,
    )];
    for (benchmark, parameters) in [
        ("copy", gpu_parameters(1 << 30, "", "driver", Mode::Batch)),
        (
            "vector_add",
            gpu_parameters(1 << 26, "f32", "nvrtc", Mode::Batch),
        ),
        ("matmul", gpu_parameters(8192, "f16", "cublas", Mode::Batch)),
        (
            "matmul",
            gpu_parameters(8192, "bf16", "cublas", Mode::Batch),
        ),
    ] {
        rows.push(BenchResult::skipped(
            key(CU11, benchmark, Side::Gpu, parameters),
            NO_GPU,
        ));
    }
    rows
}

/// The example GPU's theoretical peaks: a compute capability 9.0 card of 132 SMs at 1980 MHz
/// with 5120 bits of memory at 2619 MHz.
fn example_spec() -> Spec {
    theoretical::peaks(&theoretical::DeviceFacts {
        name: "Example GPU (test data)".into(),
        cc: stackbench::compat::ComputeCapability::parse("9.0"),
        multiprocessors: Some(132),
        clock_mhz: Some(1980),
        memory_clock_mhz: Some(2619),
        memory_bus_bits: Some(5120),
    })
}

fn report() -> BenchReport {
    BenchReport {
        schema: BENCH_SCHEMA.into(),
        schema_minor: 0,
        repeat: 0,
        started: "2026-11-23T04:00:00Z".into(),
        host: HostInfo {
            hostname: "node-7".into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            stackbench_version: "0.1.0".into(),
            boot_id: None,
        },
        gpu: GpuInfo {
            source: "nvml".into(),
            devices: vec![Gpu {
                index: 0,
                name: "Example GPU (test data)".into(),
                compute_capability: "9.0".into(),
                uuid: None,
                pci_bus_id: None,
                memory_bytes: None,
                memory_clock_mhz: None,
            }],
            driver_version: Some("580.95.05".into()),
            note: None,
        },
        target: "sm_90".into(),
        driver_dir: None,
        quick: true,
        load_untrusted: false,
        allow_busy: false,
        clocks_locked: Vec::new(),
        simulated: false,
        combinations: vec![
            CombinationRun {
                name: CU12.into(),
                cuda_version: Some("12.9".into()),
                driver: Some("/usr/lib/x86_64-linux-gnu/libcuda.so.1".into()),
                driver_cuda_version: Some("13.0".into()),
                libraries: vec![
                    LibraryVersion {
                        component: "cudart".into(),
                        path: "/venv/nvidia/cuda_runtime/lib/libcudart.so.12".into(),
                        version: Some("12.9".into()),
                    },
                    LibraryVersion {
                        component: "cublas".into(),
                        path: "/venv/nvidia/cublas/lib/libcublas.so.12".into(),
                        version: Some("12.9.1".into()),
                    },
                ],
                peaks: Peaks {
                    copy_gbps: Some(2000.0),
                    gemm_tflops: BTreeMap::from([("bf16".into(), 500.0)]),
                },
                spec: Some(example_spec()),
                l2_bytes: Some(50 << 20),
                gpu_unavailable: None,
                simulated: false,
            },
            CombinationRun {
                name: CU11.into(),
                cuda_version: Some("11.8".into()),
                driver: Some("/usr/lib/x86_64-linux-gnu/libcuda.so.1".into()),
                driver_cuda_version: Some("13.0".into()),
                libraries: Vec::new(),
                peaks: Peaks::default(),
                spec: None,
                l2_bytes: None,
                gpu_unavailable: Some(NO_GPU.into()),
                simulated: false,
            },
        ],
        benchmarks: (cu12_rows().into_iter())
            .map(|mut r| {
                r.pct_of_spec = shares::pct_of_spec(&r, &example_spec());
                r
            })
            .chain(cu11_rows())
            .collect(),
        findings: Vec::new(),
        rerendered: None,
        job: None,
        run_id: None,
    }
}

fn render(format: Format, color: bool) -> String {
    let bytes = exporter(format, color)
        .bench(&report())
        .expect("every format but JUnit renders a bench report");
    String::from_utf8(bytes).expect("UTF-8")
}

#[test]
fn terminal() {
    insta::assert_snapshot!(render(Format::Terminal, false));
}

#[test]
fn terminal_color_only_adds_escapes() {
    let colored = render(Format::Terminal, true);
    assert!(colored.contains("\x1b["));
    let mut plain = String::new();
    let mut chars = colored.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    assert_eq!(plain, render(Format::Terminal, false));
}

#[test]
fn terminal_colors_failures_red_and_skips_dim() {
    let colored = render(Format::Terminal, true);
    assert!(colored.contains("\x1b[31m8 measured, 4 skipped, 1 failed\x1b[0m"));
    assert!(colored.contains("\x1b[31m1 failed: matmul/pip:venv-cu12/nvrtc/f32/8192/batch"));
    assert!(colored.contains("\x1b[2m4 skipped: 4 benchmarks of pip:venv-cu11"));
    assert!(colored.contains("\x1b[33m  GPU benchmarks not run: no GPU"));
}

#[test]
fn markdown() {
    insta::assert_snapshot!(render(Format::Markdown, false));
}

#[test]
fn csv() {
    insta::assert_snapshot!(render(Format::Csv, false));
}

#[test]
fn csv_has_one_row_per_benchmark_with_every_column() {
    let text = render(Format::Csv, false);
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let columns = reader.headers().unwrap().len();
    let rows: Vec<csv::StringRecord> = reader.records().collect::<Result<_, _>>().unwrap();
    assert_eq!(rows.len(), report().benchmarks.len());
    assert!(rows.iter().all(|r| r.len() == columns));
    let skipped = rows.iter().find(|r| &r[8] == "skipped").unwrap();
    assert!(
        skipped.iter().any(|cell| cell == NO_GPU),
        "reasons survive quoting"
    );
}

#[test]
fn json() {
    insta::assert_snapshot!(render(Format::Json, false));
}

#[test]
fn json_round_trips() {
    let back: BenchReport = serde_json::from_str(&render(Format::Json, false)).unwrap();
    assert_eq!(back, report());
}

#[test]
fn junit_refuses_a_bench_report() {
    let error = exporter(Format::Junit, false).bench(&report()).unwrap_err();
    assert!(
        matches!(
            error,
            OutputError::Unsupported {
                format: "junit",
                report: "bench",
                ..
            }
        ),
        "{error:?}"
    );
}

/// The same figures as a run on the simulated GPU would label them: the GPU NVML names is the
/// simulator's, `pip:venv-cu12` ran on its driver, and the report says so first.
fn simulated_report() -> BenchReport {
    let mut report = report();
    report.gpu.devices[0].name = "stackbench simulated GPU (H100-like)".into();
    report.gpu.devices[0].compute_capability = "15.0".into();
    report.target = "sm_150".into();
    report.driver_dir = Some("/tmp/stackbench-sim/driver".into());
    report.simulated = true;
    for c in &mut report.combinations {
        c.simulated = true;
    }
    report
}

fn render_simulated(format: Format) -> String {
    let bytes = exporter(format, false)
        .bench(&simulated_report())
        .expect("renders");
    String::from_utf8(bytes).expect("UTF-8")
}

#[test]
fn simulated_terminal() {
    let text = render_simulated(Format::Terminal);
    assert_eq!(
        text.lines().nth(1),
        Some(
            "SIMULATED GPU: these benchmarks ran on stackbench's simulated driver (tests/simgpu), \
             not on a GPU"
        )
    );
    insta::assert_snapshot!("simulated_terminal", text);
}

#[test]
fn simulated_markdown() {
    let text = render_simulated(Format::Markdown);
    assert!(
        text.lines()
            .nth(2)
            .unwrap()
            .starts_with("> **SIMULATED GPU**: "),
        "{text}"
    );
    insta::assert_snapshot!("simulated_markdown", text);
}

#[test]
fn simulated_is_in_the_json_only_when_true() {
    let json: serde_json::Value = serde_json::from_str(&render_simulated(Format::Json)).unwrap();
    assert_eq!(json["simulated"], true);
    assert_eq!(json["combinations"][0]["simulated"], true);
    let back: BenchReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, simulated_report());
    let real: serde_json::Value = serde_json::from_str(&render(Format::Json, false)).unwrap();
    assert!(real.get("simulated").is_none());
    assert!(real["combinations"][0].get("simulated").is_none());
}

/// `pip:venv-cu12` on a node of four GPUs of one model, GPU 2 of which is 15% slower: each GPU's
/// copy and bf16 matmul, keyed by device, the load time once, and the `slow_device` finding
/// the run draws from them.
fn node_report() -> BenchReport {
    let mut report = report();
    report.gpu.devices = (0..4)
        .map(|index| Gpu {
            index,
            name: "Example GPU (test data)".into(),
            compute_capability: "9.0".into(),
            uuid: Some(format!("GPU-0000000{index}-test-data")),
            pci_bus_id: Some(format!("00000000:{:02X}:00.0", 0x17 + 0x13 * index)),
            memory_bytes: None,
            memory_clock_mhz: None,
        })
        .collect();
    report.combinations.truncate(1);
    let load = key(CU12, "load", Side::Cpu, Parameters::default());
    let mut benchmarks = vec![measured(load, 50_000_000.0, None, None)];
    for index in 0..4u32 {
        // Per mille, so that every time is a whole number of ns.
        let permille = if index == 2 { 1150 } else { 1000 + 5 * index };
        let slow = f64::from(permille) / 1000.0;
        let device = Some(stackbench::devices::DeviceKey {
            index,
            uuid: Some(format!("GPU-0000000{index}-test-data")),
            pci_bus_id: Some(format!("0000:{:02x}:00.0", 0x17 + 0x13 * index)),
        });
        let copy = key(
            CU12,
            "copy",
            Side::Gpu,
            gpu_parameters(1 << 30, "", "driver", Mode::Batch),
        );
        let gemm = key(
            CU12,
            "matmul",
            Side::Gpu,
            gpu_parameters(8192, "bf16", "cublas", Mode::Batch),
        );
        for (key, ns, rate, unit) in [
            (copy, 1_000_000.0, 2000.0, "GB/s"),
            (gemm, 2_000_000.0, 500.0, "TFLOP/s"),
        ] {
            benchmarks.push(BenchResult {
                device: device.clone(),
                ..measured(
                    key,
                    ns * f64::from(permille) / 1000.0,
                    Some((rate / slow, unit)),
                    None,
                )
            });
        }
    }
    report.benchmarks = benchmarks;
    report.findings = stackbench::bench::node::slow_devices(&report);
    report
}

fn render_node(format: Format) -> String {
    let bytes = exporter(format, false)
        .bench(&node_report())
        .expect("renders");
    String::from_utf8(bytes).expect("UTF-8")
}

#[test]
fn node_terminal() {
    insta::assert_snapshot!(render_node(Format::Terminal));
}

#[test]
fn node_markdown() {
    insta::assert_snapshot!(render_node(Format::Markdown));
}

#[test]
fn node_csv_keys_each_gpu_row_by_device() {
    let text = render_node(Format::Csv);
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().collect::<Result<_, _>>().unwrap();
    let cell = |row: &csv::StringRecord, name: &str| row[column(name)].to_owned();
    assert_eq!(cell(&rows[0], "device"), "", "the load time is no GPU's");
    assert_eq!(cell(&rows[5], "device"), "2");
    assert_eq!(cell(&rows[5], "device_uuid"), "GPU-00000002-test-data");
    assert_eq!(cell(&rows[5], "device_pci_bus_id"), "0000:3d:00.0");
}

#[test]
fn node_json_round_trips_with_its_finding() {
    let report = node_report();
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].device.index, 2);
    let json = render_node(Format::Json);
    let back: BenchReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.findings.len(), 1);
    assert_eq!(back.findings[0].device, report.findings[0].device);
    assert_eq!(back.benchmarks[5].device, report.benchmarks[5].device);
    let again = serde_json::to_string_pretty(&back).unwrap();
    let value = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    assert_eq!(value(&again), value(&json));
}
