//! The parent's side of a bench worker: starts `stackbench __bench` for a combination with its
//! search path pinned (as `check` pins its workers), sends the setup and then one command at a
//! time, and turns a worker that crashes or hangs into a reason, never a hang of its own.

use super::protocol::{Command, Reply, Setup};
use crate::check::combination::Combination;
use crate::check::pin;
use crate::check::protocol::CheckRequest;
use crate::check::runner::{run_as, worker_search_path};
use crate::exit::{died, last_words};
use crate::lifetime::Scratch;
use crate::process::{kill_group, start_conversation, Collected, Worker};
use crate::schema::check::{CheckResult, Status};
use crate::trust::identity::as_user;
use crate::trust::Decision;
use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// A live bench worker of one combination.
pub struct Client {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<Reply>,
    errors: Option<Collected>,
    /// The pinning directory, alive as long as the worker.
    _pin: Scratch,
    /// The setup checks' results.
    pub setup: Vec<CheckResult>,
}

impl Client {
    /// Starts a worker for `combination` and runs the setup checks `check.run` in it, each
    /// given `timeout`. A check that crashes or hangs the worker fails with what happened, and a
    /// fresh worker runs the setup again without it (told of the failure, so the checks that need
    /// it are skipped as `check` would skip them): one bad library costs only what needs it, and
    /// the worker that goes on holds everything the others set up (device, handles, kernels).
    pub fn start(
        combination: &Combination,
        check: CheckRequest,
        worker: &Path,
        timeout: Duration,
    ) -> Result<Client, String> {
        let mut broken: Vec<CheckResult> = Vec::new();
        loop {
            let mut client = Client::spawn(combination, worker)?;
            let setup = Setup {
                check: CheckRequest {
                    run: check
                        .run
                        .iter()
                        .filter(|id| !broken.iter().any(|b| &b.id == *id))
                        .cloned()
                        .collect(),
                    settled: [check.settled.as_slice(), &broken].concat(),
                    ..check.clone()
                },
            };
            client.send(&setup)?;
            let mut results = Vec::new();
            let mut current = None;
            let why = loop {
                match client.next(timeout) {
                    Ok(Reply::Starting { id }) => current = Some(id),
                    Ok(Reply::Settled { result }) => {
                        results.push(result);
                        current = None;
                    }
                    Ok(Reply::Ready) => {
                        client.setup = in_order(&check.run, results, broken);
                        return Ok(client);
                    }
                    Ok(other) => {
                        return Err(format!(
                            "the bench worker answered its setup with {other:?}"
                        ))
                    }
                    Err(why) => break why,
                }
            };
            match current {
                Some(id) => broken.push(CheckResult::new(&id, Status::Fail, why)),
                None => return Err(why),
            }
        }
    }

    /// A worker for `combination`, its search path pinned, not yet set up.
    fn spawn(combination: &Combination, worker: &Path) -> Result<Client, String> {
        if let Some(Decision::Refuse(refusal)) = &combination.decision {
            return Err(format!("{}; fix: {}", refusal.reason(), refusal.fix()));
        }
        let pin = pin::pin(combination)
            .map_err(|e| format!("cannot create the worker's pinning directory: {e}"))?;
        let mut process = crate::process::worker_command(worker);
        process
            .arg("__bench")
            .env(
                "LD_LIBRARY_PATH",
                worker_search_path(pin.path(), combination),
            )
            .env(
                crate::devices::DEVICE_ORDER.0,
                crate::devices::DEVICE_ORDER.1,
            );
        let user = run_as(combination);
        let (
            Worker {
                child,
                events,
                errors,
            },
            stdin,
        ) = start_conversation::<Reply>(process, user, crate::process::Sight::Own).map_err(
            |e| {
                format!(
                    "the bench worker {} could not be started{}: {e}",
                    worker.display(),
                    as_user(user)
                )
            },
        )?;
        Ok(Client {
            child,
            stdin,
            replies: events,
            errors: Some(errors),
            _pin: pin,
            setup: Vec::new(),
        })
    }

    /// Sends `command` and waits up to `timeout` for the answer.
    pub fn ask(&mut self, command: &Command, timeout: Duration) -> Result<Reply, String> {
        self.send(command)?;
        self.next(timeout)
    }

    /// Writes one line to the worker.
    fn send(&mut self, line: &impl serde::Serialize) -> Result<(), String> {
        let mut bytes = serde_json::to_vec(line).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        match self
            .stdin
            .write_all(&bytes)
            .and_then(|()| self.stdin.flush())
        {
            Ok(()) => Ok(()),
            Err(_) => Err(self.death()),
        }
    }

    /// The worker's next reply, waiting up to `timeout`; a worker that does not answer in time
    /// is killed.
    fn next(&mut self, timeout: Duration) -> Result<Reply, String> {
        match self.replies.recv_timeout(timeout) {
            Ok(reply) => Ok(reply),
            Err(RecvTimeoutError::Timeout) => {
                kill_group(&mut self.child);
                Err(format!(
                    "no answer within {:.0} s: the bench worker hung and was killed",
                    timeout.as_secs_f64()
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.death()),
        }
    }

    /// Whether the worker is still running (it is not after a crash, or a hang it was killed
    /// for).
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// How the worker died, with its last words.
    fn death(&mut self) -> String {
        kill_group(&mut self.child);
        let status = self.child.wait().ok();
        let said = self
            .errors
            .take()
            .map(Collected::finish)
            .unwrap_or_default();
        let last = last_words(&said);
        let mut reason = format!("the bench worker died: {}", died(status));
        if !last.is_empty() {
            reason.push_str(&format!("; its last words: {last}"));
        }
        reason
    }
}

/// The results of `ids`, in that order, from the last worker's and the broken ones.
fn in_order(
    ids: &[String],
    results: Vec<CheckResult>,
    broken: Vec<CheckResult>,
) -> Vec<CheckResult> {
    let mut all: Vec<CheckResult> = results.into_iter().chain(broken).collect();
    let mut ordered = Vec::with_capacity(all.len());
    for id in ids {
        if let Some(at) = all.iter().position(|r| &r.id == id) {
            ordered.push(all.swap_remove(at));
        }
    }
    ordered
}

impl Drop for Client {
    fn drop(&mut self) {
        kill_group(&mut self.child);
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_results_come_back_in_the_asked_order() {
        let ids: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let result = |id: &str| CheckResult::new(id, Status::Pass, "");
        let ordered = in_order(
            &ids,
            vec![result("c"), result("a")],
            vec![CheckResult::new("b", Status::Fail, "crashed")],
        );
        let got: Vec<(&str, Status)> = ordered.iter().map(|r| (r.id.as_str(), r.status)).collect();
        assert_eq!(
            got,
            [
                ("a", Status::Pass),
                ("b", Status::Fail),
                ("c", Status::Pass)
            ]
        );
    }

    #[test]
    fn a_worker_that_cannot_start_says_so() {
        let combination = Combination::empty("x");
        let error = Client::start(
            &combination,
            CheckRequest::default(),
            Path::new("/nonexistent/stackbench"),
            Duration::from_secs(5),
        )
        .err()
        .unwrap_or_default();
        assert!(error.contains("could not be started"), "{error}");
    }
}
