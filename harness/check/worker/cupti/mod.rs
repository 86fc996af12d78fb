//! The CUPTI check: the Activity API must record the vector-add launch with its kernel's name
//! and a duration above zero. Another profiler holding CUPTI or the device (Nsight injected
//! through `CUDA_INJECTION64_PATH`, DCGM profiling) or missing profiling privileges make it a
//! warning that names the cause, not a failure of the library.
//!
//! Calls, through a small own `sys` layer looked up with `dlsym` ([`sys`]: why not cudarc's, and
//! why the calls are the same in every CUPTI of CUDA 11.x to 13.x): `cuptiGetVersion`,
//! `cuptiActivityRegisterCallbacks`, `cuptiActivityEnable`, `cuptiActivityDisable`,
//! `cuptiActivityFlushAll`, `cuptiActivityGetNextRecord`, `cuptiGetResultString` and, where
//! exported (CUDA 12.2 on), `cuptiGetErrorMessage`. The kernel records they deliver, and why
//! one decoding fits every CUPTI version's layout, are [`record`]'s; whether an error is another
//! profiler's doing is [`conflict`]'s.

mod conflict;
pub(crate) mod record;
mod sys;

use super::device::synchronize;
use super::nvrtc;
use super::outcome::{Call, Checked, Finish, LibraryError, Outcome};
use super::session::Session;
use crate::check::protocol::Component;
use crate::kernels::Kernel;
use crate::probe::calls;
use conflict::{conflict, Conflict, Environment};
use record::Collected;
use sys::{Api, CuptiError};

impl Api {
    /// `Ok` on success; otherwise the check's end: a warning when another profiler or missing
    /// privileges are the cause, a failure naming the call and the error otherwise.
    fn check(&self, function: &str, code: sys::Status) -> Result<(), Outcome> {
        if code == sys::SUCCESS {
            return Ok(());
        }
        self.check_in(function, code, &Environment::read())
    }

    /// [`Api::check`] in a given environment.
    fn check_in(
        &self,
        function: &str,
        code: sys::Status,
        env: &Environment,
    ) -> Result<(), Outcome> {
        if code == sys::SUCCESS {
            return Ok(());
        }
        let error = self.error(code);
        match conflict(code, env) {
            Some(Conflict { cause, fix }) => Err(Outcome::warn(format!(
                "{cause}: {function} returned {} ({code}); {fix}",
                error.name()
            ))
            .detail("error_code", error.code())
            .detail("error_name", error.name())),
            None => Err(error).call(function),
        }
    }
}

/// `cupti.activity`.
pub fn activity(s: &mut Session) -> Checked {
    let lib = s.library(Component::Cupti).map_err(Outcome::fail)?;
    let api = Api::resolve(lib)?;
    let version = calls::cupti_get_version(lib).and_then(Result::ok);
    let collected = collect(&api, || {
        nvrtc::run_vector_add(s, nvrtc::VECTOR_ADD_ELEMENTS).map(drop)
    })?;
    let error = collected.error.map(|code| api.error(code));
    let outcome = verdict(
        Kernel::VectorAdd.function(),
        &collected,
        error,
        &Environment::read(),
    );
    let add = |o: Outcome| {
        let o = o
            .detail("records", collected.records)
            .detail("kernel_records", collected.kernels.len());
        match version {
            Some(v) => o.detail("cupti_api_version", v),
            None => o,
        }
    };
    outcome.finish(add)
}

/// The kernel records of the launches `run` makes, for the benchmarks' cross-check of their
/// CUDA-event times.
pub(crate) fn kernel_records(
    s: &mut Session,
    run: impl FnOnce() -> Result<(), Outcome>,
) -> Result<Vec<record::KernelRecord>, Outcome> {
    let lib = s.library(Component::Cupti).map_err(Outcome::fail)?;
    let api = Api::resolve(lib)?;
    let collected = collect(&api, run)?;
    match collected.error {
        Some(code) if collected.kernels.is_empty() => Err(Outcome::fail(format!(
            "cuptiActivityGetNextRecord: {}",
            api.error(code).describe()
        ))),
        _ => Ok(collected.kernels),
    }
}

/// Runs `run` while kernel activity is enabled, waits for its work, and has CUPTI deliver
/// every buffer (`cuptiActivityFlushAll` with `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`, which returns
/// after the completion callbacks ran): what they collected.
fn collect(api: &Api, run: impl FnOnce() -> Result<(), Outcome>) -> Result<Collected, Outcome> {
    api.check("cuptiActivityRegisterCallbacks", record::register(api))?;
    // SAFETY: a plain call with a valid activity kind.
    let code = unsafe { (api.enable)(sys::KIND_CONCURRENT_KERNEL) };
    api.check("cuptiActivityEnable(CONCURRENT_KERNEL)", code)?;
    let ran = run().and_then(|()| synchronize());
    // SAFETY: a plain call; the completion callback may run on this thread, which holds no lock.
    let flushed = unsafe { (api.flush_all)(sys::FLAG_FLUSH_FORCED) };
    // SAFETY: as for enable.
    let disabled = unsafe { (api.disable)(sys::KIND_CONCURRENT_KERNEL) };
    ran?;
    api.check("cuptiActivityFlushAll", flushed)?;
    api.check("cuptiActivityDisable(CONCURRENT_KERNEL)", disabled)?;
    Ok(record::take())
}

/// The verdict on what CUPTI delivered: a pass when the first record of `function` has
/// timestamps with `end > start`, a failure otherwise (naming `error`, the record walk's, if
/// any). With no kernel record at all while a tool is injected, a warning naming it.
fn verdict(
    function: &str,
    collected: &Collected,
    error: Option<CuptiError>,
    env: &Environment,
) -> Checked {
    let reason = match judge(function, collected) {
        Ok(pass) => return Ok(pass),
        Err(reason) => reason,
    };
    let reason = match &error {
        Some(error) => format!("{reason}; cuptiActivityGetNextRecord: {}", error.describe()),
        None => reason,
    };
    let outcome = match (&env.injection, collected.kernels.is_empty()) {
        (Some(path), true) => Outcome::warn(format!(
            "another profiler may hold CUPTI (CUDA_INJECTION64_PATH={path} is set): {reason}"
        )),
        _ => Outcome::fail(reason),
    };
    Err(match error {
        Some(error) => outcome
            .detail("error_code", error.code())
            .detail("error_name", error.name()),
        None => outcome,
    })
}

/// The pass, or why `collected` holds no good record of `function`.
fn judge(function: &str, collected: &Collected) -> Result<Outcome, String> {
    let Some(record) = collected
        .kernels
        .iter()
        .find(|k| k.name.as_deref() == Some(function))
    else {
        let seen: Vec<&str> = collected
            .kernels
            .iter()
            .map(|k| k.name.as_deref().unwrap_or("(unnamed)"))
            .collect();
        let seen = if seen.is_empty() {
            "no kernel records".to_owned()
        } else {
            format!("kernels recorded: {}", seen.join(", "))
        };
        return Err(format!(
            "the Activity API recorded no {function} launch ({} records, {seen})",
            collected.records
        ));
    };
    if record.start == 0 && record.end == 0 {
        return Err(format!(
            "the Activity API recorded {function} without timestamps (start and end 0)"
        ));
    }
    if record.end <= record.start {
        return Err(format!(
            "the Activity API recorded {function} with end {} not after start {} (ns)",
            record.end, record.start
        ));
    }
    let ns = record.end - record.start;
    Ok(Outcome::pass(format!(
        "the Activity API recorded {function}: {} on the GPU",
        duration(ns)
    ))
    .detail("kernel", function)
    .detail("duration_ns", ns)
    .detail("correlation_id", record.correlation_id)
    .detail("device_id", record.device_id)
    .detail("context_id", record.context_id)
    .detail("stream_id", record.stream_id))
}

/// `850 ns`, `12.3 us`, `4.56 ms`.
fn duration(ns: u64) -> String {
    match ns {
        0..=999 => format!("{ns} ns"),
        1_000..=999_999 => format!("{:.1} us", ns as f64 / 1e3),
        _ => format!("{:.2} ms", ns as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::conflict::tests::injected;
    use super::record::KernelRecord;
    use super::*;
    use crate::schema::check::Status;
    use rstest::rstest;
    use std::ffi::c_char;

    /// Stands in for a CUPTI function the classification tests never call.
    unsafe extern "C" fn uncalled_callbacks(
        _: Option<sys::BufferRequested>,
        _: Option<sys::BufferCompleted>,
    ) -> sys::Status {
        unreachable!("not called by these tests")
    }

    /// As above.
    unsafe extern "C" fn uncalled_flag(_: u32) -> sys::Status {
        unreachable!("not called by these tests")
    }

    /// As above.
    unsafe extern "C" fn uncalled_next(_: *mut u8, _: usize, _: *mut *mut u8) -> sys::Status {
        unreachable!("not called by these tests")
    }

    /// `cuptiGetResultString` for three codes.
    unsafe extern "C" fn three_names(code: sys::Status, text: *mut *const c_char) -> sys::Status {
        let name = match code {
            39 => c"CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
            21 => c"CUPTI_ERROR_INVALID_KIND",
            7 => c"CUPTI_ERROR_INVALID_OPERATION",
            _ => return 1,
        };
        // SAFETY: the caller passes a valid pointer to write.
        unsafe { *text = name.as_ptr() };
        0
    }

    /// An `Api` whose only working function names statuses.
    fn naming_api() -> Api {
        Api {
            register_callbacks: uncalled_callbacks,
            enable: uncalled_flag,
            disable: uncalled_flag,
            flush_all: uncalled_flag,
            next_record: uncalled_next,
            result_string: three_names,
            error_message: None,
        }
    }

    /// A record of kernel `name` that ran from `start` to `end`.
    fn kernel(name: &str, start: u64, end: u64) -> KernelRecord {
        KernelRecord {
            name: Some(name.to_owned()),
            start,
            end,
            device_id: 0,
            context_id: 1,
            stream_id: 7,
            correlation_id: 42,
        }
    }

    /// `kernels` among two records of other kinds.
    fn collected(kernels: Vec<KernelRecord>) -> Collected {
        Collected {
            records: kernels.len() + 2,
            kernels,
            error: None,
        }
    }

    /// `CUPTI_ERROR_INVALID_KIND` as the record walk may end with it.
    fn invalid_kind() -> Option<CuptiError> {
        Some(naming_api().error(21))
    }

    #[rstest]
    #[case::recorded(
        vec![kernel("other", 5, 9), kernel("vector_add", 1_000, 13_345)],
        None,
        Environment::default(),
        Status::Pass,
        "the Activity API recorded vector_add: 12.3 us on the GPU"
    )]
    #[case::absent(
        vec![kernel("other", 5, 9)],
        None,
        Environment::default(),
        Status::Fail,
        "the Activity API recorded no vector_add launch (3 records, kernels recorded: other)"
    )]
    #[case::absent_with_a_walk_error(
        vec![],
        invalid_kind(),
        Environment::default(),
        Status::Fail,
        "the Activity API recorded no vector_add launch (2 records, no kernel records); \
         cuptiActivityGetNextRecord: CUPTI_ERROR_INVALID_KIND (21)"
    )]
    #[case::absent_under_a_profiler(
        vec![],
        None,
        injected(),
        Status::Warn,
        "another profiler may hold CUPTI (CUDA_INJECTION64_PATH=/opt/nsys/target-linux-x64/\
         libToolsInjection64.so is set): the Activity API recorded no vector_add launch \
         (2 records, no kernel records)"
    )]
    #[case::absent_among_others_under_a_profiler(
        vec![kernel("other", 5, 9)],
        None,
        injected(),
        Status::Fail,
        "the Activity API recorded no vector_add launch (3 records, kernels recorded: other)"
    )]
    #[case::no_timestamps(
        vec![kernel("vector_add", 0, 0)],
        None,
        Environment::default(),
        Status::Fail,
        "the Activity API recorded vector_add without timestamps (start and end 0)"
    )]
    #[case::no_duration(
        vec![kernel("vector_add", 500, 500)],
        None,
        Environment::default(),
        Status::Fail,
        "the Activity API recorded vector_add with end 500 not after start 500 (ns)"
    )]
    #[case::backwards(
        vec![kernel("vector_add", 900, 100)],
        None,
        Environment::default(),
        Status::Fail,
        "the Activity API recorded vector_add with end 100 not after start 900 (ns)"
    )]
    fn verdicts(
        #[case] kernels: Vec<KernelRecord>,
        #[case] error: Option<CuptiError>,
        #[case] env: Environment,
        #[case] status: Status,
        #[case] reason: &str,
    ) {
        let outcome = verdict("vector_add", &collected(kernels), error, &env)
            .unwrap_or_else(|failure| failure);
        assert_eq!((outcome.status, outcome.reason.as_str()), (status, reason));
        if status == Status::Pass {
            assert_eq!(outcome.details["duration_ns"], 12_345);
            assert_eq!(outcome.details["kernel"], "vector_add");
        }
    }

    #[test]
    fn a_walk_error_is_named_in_the_details() {
        let failure = verdict(
            "vector_add",
            &collected(vec![]),
            invalid_kind(),
            &injected(),
        )
        .unwrap_err();
        assert_eq!(failure.details["error_code"], 21);
        assert_eq!(failure.details["error_name"], "CUPTI_ERROR_INVALID_KIND");
    }

    #[test]
    fn a_profiler_conflict_warns_and_anything_else_fails() {
        let api = naming_api();
        let call = "cuptiActivityEnable(CONCURRENT_KERNEL)";
        assert_eq!(api.check_in(call, 0, &injected()), Ok(()));
        let held = api.check_in(call, 39, &injected()).unwrap_err();
        assert_eq!(held.status, Status::Warn);
        assert_eq!(
            held.reason,
            "another profiler holds CUPTI (CUDA_INJECTION64_PATH=/opt/nsys/target-linux-x64/\
             libToolsInjection64.so is set): cuptiActivityEnable(CONCURRENT_KERNEL) returned \
             CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39); run the check outside the \
             profiler"
        );
        assert_eq!(held.details["error_code"], 39);
        let busy = api.check_in(call, 26, &Environment::default()).unwrap_err();
        assert_eq!(busy.status, Status::Warn);
        assert!(busy
            .reason
            .contains("returned unknown CUPTI status (26); pause it (dcgmi"));
        let failed = api.check_in(call, 7, &injected()).unwrap_err();
        assert_eq!(failed.status, Status::Fail);
        assert_eq!(
            failed.reason,
            "cuptiActivityEnable(CONCURRENT_KERNEL): CUPTI_ERROR_INVALID_OPERATION (7)"
        );
        let unknown = api.check_in(call, 46, &Environment::default()).unwrap_err();
        assert_eq!(
            (unknown.status, unknown.reason.as_str()),
            (
                Status::Fail,
                "cuptiActivityEnable(CONCURRENT_KERNEL): unknown CUPTI status (46)"
            )
        );
    }

    #[rstest]
    #[case(850, "850 ns")]
    #[case(1_000, "1.0 us")]
    #[case(12_345, "12.3 us")]
    #[case(4_560_000, "4.56 ms")]
    fn durations_read_well(#[case] ns: u64, #[case] text: &str) {
        assert_eq!(duration(ns), text);
    }
}
