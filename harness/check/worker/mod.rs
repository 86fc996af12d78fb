//! The worker side of `check`: runs as `stackbench __check` in a process of its own per
//! combination, with the combination's search path pinned (see [`crate::check::pin`]), so CUDA
//! 11, 12 and 13 libraries never meet in one address space.
//!
//! It reads a [`CheckRequest`] on stdin and runs the requested checks in order on one thread.
//! Before each it sends `start` on the protocol channel (the original stdout; stdout itself goes
//! to stderr so nothing a library prints can corrupt it), after each `done` with the result and
//! `mapped` with the objects the loader mapped meanwhile. A check never aborts the worker: a
//! library error is that check's failure, a panic (cudarc panics on a missing symbol) too, and a
//! check whose needs did not pass is skipped. Crashes and hangs are the parent's to see.
//!
//! Calls go through cudarc (dynamic loading) where its bindings fit the library, and through
//! small own `sys` layers where the ABI differs from what cudarc binds (cuDNN 8's status codes).

pub(crate) mod cublas;
mod cudart;
mod cudnn;
mod cufft;
pub(crate) mod cupti;
mod curand;
pub(crate) mod device;
mod driver;
#[cfg(test)]
pub(crate) mod fixtures;
pub(crate) mod fp8;
mod load;
mod nccl;
mod nccl_build;
mod nodes;
pub(crate) mod nvml;
pub(crate) mod nvrtc;
pub mod outcome;
pub mod session;
pub(crate) mod symbols;

use super::protocol::{CheckEvent, CheckRequest, Component};
use super::spec::{self, Side, Spec};
use crate::kernels::Kernel;
use crate::nccl::collective::Collective;
use crate::nccl::log::{self as nccl_log, DebugLog};
use crate::probe::dl;
use crate::probe::worker::{leave, plain_crashes, protocol_channel, read_request, send, Seen};
use crate::probe::LoadStage;
use crate::schema::check::CheckResult;
use outcome::{Checked, Outcome};
use session::Session;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;
use std::time::Instant;

/// Runs the worker: a request on stdin, events on the protocol channel.
pub fn run() -> ExitCode {
    plain_crashes();
    let request: CheckRequest = match read_request() {
        Ok(request) => request,
        Err(e) => {
            eprintln!("stackbench __check: cannot read the request on standard input: {e}");
            return ExitCode::from(2);
        }
    };
    let mut channel = match protocol_channel() {
        Ok(channel) => channel,
        Err(e) => {
            eprintln!("stackbench __check: cannot set up the protocol channel: {e}");
            return ExitCode::from(2);
        }
    };
    let nccl_log = nccl_log::wanted(&request.run)
        .then(DebugLog::of_this_process)
        .flatten();
    let mut seen = Seen::new(&dl::mapped_objects());
    let ids = request.run.clone();
    let mut session = Session::new(request);
    if let Some(log) = nccl_log {
        session.keep(log);
    }
    let mut ran = HashSet::new();
    for id in ids {
        if send(&mut channel, &CheckEvent::Start { id: id.clone() }).is_err() {
            leave(3); // the parent is gone
        }
        let result = run_one(&id, &mut session, &mut ran);
        seen.observe(LoadStage::Dlopen);
        let objects = seen.drain(&dl::mapped_objects());
        session.settled.push(result.clone());
        let done = CheckEvent::Done { result };
        let mapped = CheckEvent::Mapped { id, objects };
        if send(&mut channel, &mapped).is_err() || send(&mut channel, &done).is_err() {
            leave(3);
        }
    }
    leave(0)
}

/// Runs one check: skipped when a check it needs did not pass, a failure when it panics. `ran`
/// holds the checks this worker has run.
pub(crate) fn run_one(
    id: &str,
    session: &mut Session,
    ran: &mut HashSet<&'static str>,
) -> CheckResult {
    let started = Instant::now();
    let (library, outcome) = match spec::spec(id) {
        None => (String::new(), Outcome::fail(format!("no such check: {id}"))),
        Some(spec) if spec.side != Side::Worker => (
            spec.library.to_owned(),
            Outcome::fail(format!("{id} is not a worker-side check")),
        ),
        Some(spec) => {
            let outcome = match spec::unmet_need(spec, &session.settled) {
                Err(reason) => Outcome::skip(reason),
                Ok(()) => match restore(spec, session, ran) {
                    Err(failure) => failure,
                    Ok(()) => guarded(spec.id, session),
                },
            };
            ran.insert(spec.id);
            (spec.library.to_owned(), outcome)
        }
    };
    CheckResult {
        id: id.to_owned(),
        library,
        status: outcome.status,
        reason: outcome.reason,
        duration_ms: started.elapsed().as_secs_f64() * 1e3,
        details: outcome.details,
        device: None,
    }
}

/// Runs a check's function; a panic is its failure.
fn guarded(id: &str, session: &mut Session) -> Outcome {
    catch_unwind(AssertUnwindSafe(|| dispatch(id, session)))
        .unwrap_or_else(|panic| Err(Outcome::fail(panicked(panic.as_ref()))))
        .unwrap_or_else(|failure| failure)
}

/// Sets up again what the checks `spec` needs left in an earlier worker (which crashed or hung
/// later): the device and its context, handles, compiled kernels. Each need this worker has not
/// run is run again first, quietly; its result was already reported.
fn restore(
    spec: &Spec,
    session: &mut Session,
    ran: &mut HashSet<&'static str>,
) -> Result<(), Outcome> {
    for need in spec.needs {
        let Some(need) = spec::spec(need).filter(|n| n.side == Side::Worker) else {
            continue;
        };
        if ran.contains(need.id) {
            continue;
        }
        restore(need, session, ran)?;
        let again = guarded(need.id, session);
        ran.insert(need.id);
        if !again.status.satisfies() {
            return Err(Outcome::fail(format!(
                "needs {}, which passed in an earlier worker but not when set up again in this \
                 one: {}",
                need.id, again.reason
            )));
        }
    }
    Ok(())
}

/// A panic's message as a failure's reason.
pub(crate) fn panicked(panic: &(dyn std::any::Any + Send)) -> String {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    format!("panicked: {message}")
}

/// The function behind each worker-side check.
fn dispatch(id: &str, s: &mut Session) -> Checked {
    if let Some(world) = s.request.world.clone() {
        match id {
            "nccl.init" => return nodes::init(s, world),
            "nccl.transport" => return nodes::transport(s),
            "nccl.node_pairs" => return nodes::node_pairs(s),
            _ => {
                if let Some(collective) = id.strip_prefix("nccl.").and_then(Collective::from_id) {
                    return nodes::verify(s, collective);
                }
            }
        }
    }
    match id {
        "driver.library" => driver::library(s),
        "driver.init" => driver::init(s),
        "driver.version" => driver::version(s),
        "driver.devices" => driver::devices(s),
        "driver.nvml" => nvml::agreement(s),
        "driver.health" => nvml::health(s),
        "cudart.load" => load::load(s, Component::Cudart),
        "cudart.memcpy" => cudart::memcpy(s),
        "nvrtc.load" => load::load(s, Component::Nvrtc),
        "nvrtc.compile_vector_add" => nvrtc::compile(s, Kernel::VectorAdd),
        "nvrtc.compile_matmul" => nvrtc::compile(s, Kernel::TiledMatmul),
        "nvrtc.launch_vector_add" => nvrtc::launch_vector_add(s),
        "nvrtc.launch_matmul" => nvrtc::launch_matmul(s),
        "cublas.load" => load::load(s, Component::Cublas),
        "cublas.handle" => cublas::handle(s),
        "cublas.sgemm" => cublas::sgemm(s),
        "cublas.gemm_fp16" => cublas::gemm_fp16(s),
        "cublas.gemm_bf16" => cublas::gemm_bf16(s),
        "cublasLt.load" => load::load(s, Component::CublasLt),
        "cublasLt.handle" => cublas::lt_handle(s),
        "cublasLt.matmul" => cublas::lt_matmul(s),
        "cublasLt.matmul_fp8" => fp8::check(s),
        "cudnn.load" => load::load(s, Component::Cudnn),
        "cudnn.versions" => cudnn::versions(s),
        "cudnn.handle" => cudnn::handle(s),
        "cudnn.conv_forward" => cudnn::conv_forward(s),
        "cupti.load" => load::load(s, Component::Cupti),
        "cupti.activity" => cupti::activity(s),
        "cufft.load" => load::load(s, Component::Cufft),
        "cufft.c2c" => cufft::c2c(s),
        "curand.load" => load::load(s, Component::Curand),
        "curand.generate" => curand::generate(s),
        "nccl.load" => load::load(s, Component::Nccl),
        "nccl.versions" => nccl_build::versions(s),
        "nccl.init" => nccl::init(s),
        "nccl.all_reduce" => nccl::verify(s, Collective::AllReduce),
        "nccl.all_gather" => nccl::verify(s, Collective::AllGather),
        "nccl.reduce_scatter" => nccl::verify(s, Collective::ReduceScatter),
        "nccl.broadcast" => nccl::verify(s, Collective::Broadcast),
        "nccl.transport" => nccl::transport(s),
        "nccl.node_pairs" => Err(Outcome::skip(
            "only across nodes: `check --nodes` on three nodes or more",
        )),
        other => Err(Outcome::fail(format!("no worker-side check named {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_check_is_dispatched() {
        let request = CheckRequest::default();
        for spec in spec::SPECS.iter().filter(|s| s.side == Side::Worker) {
            // Checks that need nothing run for real here; with no libraries they must say so
            // rather than fall through to "no worker-side check".
            let mut session = Session::new(request.clone());
            let result = run_one(spec.id, &mut session, &mut HashSet::new());
            assert!(
                !result.reason.contains("no worker-side check"),
                "{}: {}",
                spec.id,
                result.reason
            );
        }
    }

    #[test]
    fn panics_are_failures() {
        let panic: Box<dyn std::any::Any + Send> = Box::new("Missing symbol cuFoo".to_owned());
        assert_eq!(panicked(panic.as_ref()), "panicked: Missing symbol cuFoo");
    }
}
