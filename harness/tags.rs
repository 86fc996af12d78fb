//! The schema tag of every file stackbench writes, `stackbench.<kind>/v<major>`, in one list:
//! a reader of any layer can tell one kind of file from another. Fields are only ever added
//! within a major version.

/// Schema tag of the scan report.
pub const SCAN_SCHEMA: &str = "stackbench.scan/v1";

/// Schema tag of the doctor report.
pub const DOCTOR_SCHEMA: &str = "stackbench.doctor/v1";

/// Schema tag of the check report.
pub const CHECK_SCHEMA: &str = "stackbench.check/v1";

/// Schema tag of the bench report.
pub const BENCH_SCHEMA: &str = "stackbench.bench/v1";

/// The minor version of [`BENCH_SCHEMA`] this stackbench writes: 1 adds `repeat` and each
/// benchmark's `repetitions` (files without them, minor 0, are one repetition each); 2 adds
/// each GPU benchmark's `device` in runs over several GPUs and the run's `findings` (files
/// without them ran on one GPU, or found nothing). The NCCL benchmarks' `nccl` figures came
/// later within 2: a file without them has no NCCL rows. 3 adds each result's `conditions`
/// (its GPU's state before and after the run) and the run's `allow_busy`: a file without them
/// did not read its GPUs' state. 4 adds the run's `clocks_locked` and each result's
/// `telemetry.sm_clock_mhz_mean`: a file without them measured unlocked, and cannot be judged
/// in cycles. 5 adds each combination's `spec` and each result's `pct_of_spec`. 6 adds
/// `rerendered`: a run `bench --from` renders again keeps the minor of the run that measured
/// it (its derived figures are computed anew; what it never measured stays absent) and says
/// when, and by which stackbench, it was rendered again. 7 adds to each of `clocks_locked` its
/// GPU's `uuid`, the lock's `target` (`tdp` or `default_applications`), `persistence_mode` and
/// `held_below`, and reads its `sm_mhz` back once locked: a file without them locked at the
/// default applications clock. 8 adds the run's `run_id`: a file without one is known by its
/// host and start time. 9 adds `job` (`bench --nodes`), each NCCL row's `nccl.hosts` and its
/// key's `parameters.job`: a file without them ran on one node.
pub const BENCH_SCHEMA_MINOR: u32 = 9;

/// Schema tag of the comparison.
pub const COMPARE_SCHEMA: &str = "stackbench.compare/v1";

/// Schema tag of a calibration.
pub const CALIBRATION_SCHEMA: &str = "stackbench.calibration/v1";

/// Schema tag of the merged table.
pub const MERGE_SCHEMA: &str = "stackbench.merge/v1";

/// Schema tag of a baseline.
pub const BASELINE_SCHEMA: &str = "stackbench.baseline/v1";

/// Schema tag of the ingest report.
pub const INGEST_SCHEMA: &str = "stackbench.ingest/v1";

/// Schema tag of the fleet comparison.
pub const FLEET_SCHEMA: &str = "stackbench.fleet/v1";

/// Schema tag of the history.
pub const HISTORY_SCHEMA: &str = "stackbench.history/v1";
