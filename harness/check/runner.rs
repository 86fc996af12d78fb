//! The parent side of a combination's worker: starts `stackbench __check` with the combination's
//! search path pinned, streams its events, and contains what the vendor libraries do to it. A
//! check that crashes or hangs the worker fails with what happened, and a fresh worker carries
//! on with the checks after it, told the results so far so that needs are decided alike.

use super::combination::Combination;
use super::pin;
use super::protocol::{CheckEvent, CheckRequest};
use crate::exit::{died, last_words};
use crate::nccl::{self, log::LogDir};
use crate::probe::LoadedObject;
use crate::process::{start_worker, Worker};
use crate::schema::check::{CheckResult, Status};
use crate::trust::identity::as_user;
use crate::trust::{Decision, Identity, Launch, Refusal};
use std::ffi::OsString;
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// How long a worker may take outside any check: starting, between checks, exiting.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Most objects kept as mapped by one check: a process maps hundreds; more is a library
/// writing events of its own, and the rest are dropped, said in the run's messages.
const MAPPED_KEPT: usize = 4096;

/// What the workers of one combination reported.
#[derive(Debug, Default)]
pub struct WorkerRun {
    /// One result per requested check, in the requested order.
    pub results: Vec<CheckResult>,
    /// Every object the loader mapped, with the check during which it was mapped.
    pub mapped: Vec<(String, LoadedObject)>,
    /// Lines the workers (the libraries in them) wrote to standard error.
    pub messages: Vec<String>,
}

/// Runs `request.run` in workers (`<worker> __check`) until every check has a result; the
/// results `request.settled` holds (another worker's) decide needs as the run's own do.
pub fn run(
    combination: &Combination,
    request: CheckRequest,
    timeout: Duration,
    worker: &Path,
) -> WorkerRun {
    let mut run = WorkerRun::default();
    if let Some(Decision::Refuse(refusal)) = &combination.decision {
        run.results = request.run.iter().map(|id| refused(id, refusal)).collect();
        return run;
    }
    let pin = match pin::pin(combination) {
        Ok(pin) => pin,
        Err(e) => {
            let reason = format!("cannot create the worker's pinning directory: {e}");
            run.results = request.run.iter().map(|id| failed(id, &reason)).collect();
            return run;
        }
    };
    let user = run_as(combination);
    let nccl_log = match (nccl::log::wanted(&request.run))
        .then(|| LogDir::new(user))
        .transpose()
    {
        Ok(dir) => dir,
        Err(e) => {
            let reason = format!("cannot create the directory of NCCL's debug log: {e}");
            run.results = request.run.iter().map(|id| failed(id, &reason)).collect();
            return run;
        }
    };
    let mut env = vec![(
        "LD_LIBRARY_PATH",
        worker_search_path(pin.path(), combination),
    )];
    env.extend(nccl_log.iter().flat_map(LogDir::settings));
    let net = request.world.as_ref().and_then(|w| w.net.clone());
    env.extend(net.map(|net| ("NCCL_NET", OsString::from(net))));
    while run.results.len() < request.run.len() {
        let rest = CheckRequest {
            run: request.run[run.results.len()..].to_vec(),
            settled: (request.settled.iter())
                .chain(&run.results)
                .cloned()
                .collect(),
            ..request.clone()
        };
        let before = run.results.len();
        let stop = one_worker(&rest, (&env, user), timeout, worker, &mut run);
        if request.world.is_some() && run.results.len() < request.run.len() {
            // A rank of a job cannot rejoin it from a fresh worker.
            let reason = format!(
                "the check worker {stop}, and this rank cannot rejoin its job from a fresh one"
            );
            let settled = run.results.len();
            run.results
                .extend(request.run[settled..].iter().map(|id| failed(id, &reason)));
        } else if run.results.len() == before {
            // Nothing settled: this worker cannot run at all; neither would the next.
            let reason = format!("the check worker {stop}");
            let settled = run.results.len();
            run.results
                .extend(request.run[settled..].iter().map(|id| failed(id, &reason)));
        }
    }
    run
}

/// The worker's `LD_LIBRARY_PATH`: the pinning directory, the driver's directory when one was
/// given, then the combination's own search path; of those two, the entries the trust rule
/// lets its user search once that is decided.
pub(crate) fn worker_search_path(pin: &Path, combination: &Combination) -> OsString {
    let mut parts = vec![pin.as_os_str().to_owned()];
    match &combination.decision {
        Some(Decision::Load(launch)) => {
            if !launch.search_path.is_empty() {
                parts.push(launch.search_path.clone().into());
            }
        }
        _ => {
            if let Some(dir) = &combination.driver_dir {
                parts.push(dir.as_os_str().to_owned());
            }
            if !combination.search_path.is_empty() {
                parts.push(combination.search_path.clone().into());
            }
        }
    }
    parts.join(std::ffi::OsStr::new(":"))
}

/// How a combination's workers start, once the trust rule let them.
pub(crate) fn launch(combination: &Combination) -> Option<&Launch> {
    match &combination.decision {
        Some(Decision::Load(launch)) => Some(launch),
        _ => None,
    }
}

/// The user a combination's workers run as, when not ourselves (its files' owner, under root).
pub(crate) fn run_as(combination: &Combination) -> Option<&Identity> {
    launch(combination).and_then(|launch| launch.user.as_ref())
}

/// A check not run because the trust rule refused the combination's files: failed when they
/// can be written by others, skipped when they are only another user's.
pub(crate) fn refused(id: &str, refusal: &Refusal) -> CheckResult {
    let status = match refusal {
        Refusal::NotOwned { .. } => Status::Skip,
        _ => Status::Fail,
    };
    let reason = format!("{}; fix: {}", refusal.reason(), refusal.fix());
    CheckResult::new(id, status, reason)
}

/// A failure not of the check's own making.
fn failed(id: &str, reason: &str) -> CheckResult {
    CheckResult::new(id, Status::Fail, reason)
}

/// Runs one worker, with `env` added to its environment, over `request.run`, adding what it
/// settles to `run`; says how it stopped.
fn one_worker(
    request: &CheckRequest,
    (env, user): (&[(&str, OsString)], Option<&Identity>),
    timeout: Duration,
    worker: &Path,
    run: &mut WorkerRun,
) -> String {
    let input = match serde_json::to_vec(request) {
        Ok(input) => input,
        Err(e) => return format!("request could not be encoded: {e}"),
    };
    let mut command = crate::process::worker_command(worker);
    command
        .arg("__check")
        // The job's token reaches the worker in its request, not where a library could read it.
        .env_remove(crate::cluster::TOKEN_VAR)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .env(
            crate::devices::DEVICE_ORDER.0,
            crate::devices::DEVICE_ORDER.1,
        );
    let Worker {
        mut child,
        events,
        errors,
    } = match start_worker::<CheckEvent>(command, user, input) {
        Ok(worker) => worker,
        Err(e) => {
            return format!(
                "{} could not be started{}: {e}",
                worker.display(),
                as_user(user)
            )
        }
    };
    let settled_before = run.results.len();
    let mut current: Option<(String, Instant)> = None;
    let mut mapped_said = false;
    let mut last = Instant::now();
    let mut stop = "stopped".to_owned();
    loop {
        let deadline = match &current {
            Some((_, since)) => *since + timeout,
            None => last + IDLE_TIMEOUT,
        };
        // A library can write events of its own to the pipe it inherits: only the next check
        // starts, once, and only it is done, so each event moves the worker one step on and no
        // deadline moves back (a worker lasts at most each check's timeout and each wait
        // before one).
        let expected = request.run.get(run.results.len() - settled_before);
        match events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(CheckEvent::Start { id }) => {
                if current.is_none() && expected == Some(&id) {
                    current = Some((id, Instant::now()));
                    mapped_said = false;
                }
            }
            Ok(CheckEvent::Mapped { id, objects }) => {
                // Once for the running check, as the worker says it; more is a library's.
                if mapped_said || current.as_ref().is_none_or(|(running, _)| *running != id) {
                    continue;
                }
                mapped_said = true;
                if objects.len() > MAPPED_KEPT {
                    run.messages.push(format!(
                        "stackbench: {} of the {} objects said mapped by {id} were dropped, past the {MAPPED_KEPT} kept",
                        objects.len() - MAPPED_KEPT,
                        objects.len()
                    ));
                }
                run.mapped.extend(
                    objects
                        .into_iter()
                        .take(MAPPED_KEPT)
                        .map(|o| (id.clone(), o)),
                );
            }
            Ok(CheckEvent::Done { result }) => {
                if expected != Some(&result.id) {
                    continue;
                }
                run.results.push(result);
                current = None;
                last = Instant::now();
                if run.results.len() - settled_before == request.run.len() {
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                crate::process::kill_group(&mut child);
                match current.take() {
                    Some((id, since)) => {
                        let mut result = failed(
                            &id,
                            &format!(
                                "no answer within {} s: the check hung and its worker was killed",
                                timeout.as_secs_f64()
                            ),
                        );
                        result.duration_ms = since.elapsed().as_secs_f64() * 1e3;
                        run.results.push(result);
                    }
                    None => stop = format!("did not answer within {} s", IDLE_TIMEOUT.as_secs()),
                }
                break;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    crate::process::kill_group(&mut child);
    let status = child.wait().ok();
    let said = errors.finish();
    let last = last_words(&said);
    if let Some((id, since)) = current {
        let mut reason = format!("the worker died during this check: {}", died(status));
        if !last.is_empty() {
            reason.push_str(&format!("; its last words: {last}"));
        }
        let mut result = failed(&id, &reason);
        result.duration_ms = since.elapsed().as_secs_f64() * 1e3;
        run.results.push(result);
    }
    run.messages.extend(
        said.lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string),
    );
    if run.results.len() == settled_before {
        stop = match (status, last.is_empty()) {
            (Some(status), true) => format!("stopped ({status}) before running a check"),
            (Some(status), false) => {
                format!("stopped ({status}) before running a check: {last}")
            }
            (None, _) => stop,
        };
    }
    stop
}

#[cfg(test)]
mod tests {
    use super::*;

    fn combination() -> Combination {
        Combination {
            search_path: "/a:/b".into(),
            driver_dir: Some("/d".into()),
            ..Combination::empty("x")
        }
    }

    #[test]
    fn the_pin_comes_first_then_the_driver() {
        assert_eq!(
            worker_search_path(Path::new("/pin"), &combination()),
            OsString::from("/pin:/d:/a:/b")
        );
    }

    #[test]
    fn a_worker_that_cannot_start_fails_every_check_with_the_reason() {
        let request = CheckRequest {
            run: vec!["driver.library".into(), "cudart.load".into()],
            ..CheckRequest::default()
        };
        let run = run(
            &combination(),
            request,
            Duration::from_secs(5),
            Path::new("/nonexistent/stackbench"),
        );
        assert_eq!(run.results.len(), 2);
        for result in &run.results {
            assert_eq!(result.status, Status::Fail);
            assert!(
                result.reason.contains("could not be started"),
                "{}",
                result.reason
            );
        }
    }
}
