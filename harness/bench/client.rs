//! The parent's side of a bench worker: starts `stackbench __bench` for a combination with its
//! search path pinned (as `check` pins its workers), sends the setup and then one command at a
//! time, and turns a worker that crashes or hangs into a reason, never a hang of its own.

use super::protocol::{Command, Reply, Setup};
use crate::check::combination::Combination;
use crate::check::model::CheckResult;
use crate::check::pin;
use crate::check::protocol::CheckRequest;
use crate::check::runner::{died, worker_search_path};
use crate::process::{kill_group, start_conversation, Collected, Worker};
use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command as Process};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;
use tempfile::TempDir;

/// A live bench worker of one combination.
pub struct Client {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<Reply>,
    errors: Option<Collected>,
    /// The pinning directory, alive as long as the worker.
    _pin: TempDir,
    /// The setup checks' results.
    pub setup: Vec<CheckResult>,
}

impl Client {
    /// Starts a worker for `combination` and runs the setup checks `check.run` in it, giving
    /// them `timeout`.
    pub fn start(
        combination: &Combination,
        check: CheckRequest,
        worker: &Path,
        timeout: Duration,
    ) -> Result<Client, String> {
        let pin = pin::pin(combination)
            .map_err(|e| format!("cannot create the worker's pinning directory: {e}"))?;
        let mut process = Process::new(worker);
        process.arg("__bench").env(
            "LD_LIBRARY_PATH",
            worker_search_path(pin.path(), combination),
        );
        let (
            Worker {
                child,
                events,
                errors,
            },
            stdin,
        ) = start_conversation::<Reply>(process).map_err(|e| {
            format!(
                "the bench worker {} could not be started: {e}",
                worker.display()
            )
        })?;
        let mut client = Client {
            child,
            stdin,
            replies: events,
            errors: Some(errors),
            _pin: pin,
            setup: Vec::new(),
        };
        match client.ask_line(&Setup { check }, timeout)? {
            Reply::Ready { results } => {
                client.setup = results;
                Ok(client)
            }
            other => Err(format!(
                "the bench worker answered its setup with {other:?}"
            )),
        }
    }

    /// Sends `command` and waits up to `timeout` for the answer.
    pub fn ask(&mut self, command: &Command, timeout: Duration) -> Result<Reply, String> {
        self.ask_line(command, timeout)
    }

    fn ask_line(
        &mut self,
        line: &impl serde::Serialize,
        timeout: Duration,
    ) -> Result<Reply, String> {
        let mut bytes = serde_json::to_vec(line).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        if self
            .stdin
            .write_all(&bytes)
            .and_then(|()| self.stdin.flush())
            .is_err()
        {
            return Err(self.death());
        }
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

    /// How the worker died, with its last words.
    fn death(&mut self) -> String {
        kill_group(&mut self.child);
        let status = self.child.wait().ok();
        let said = self
            .errors
            .take()
            .map(Collected::finish)
            .unwrap_or_default();
        let lines: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
        let last = lines[lines.len().saturating_sub(3)..].join(" | ");
        let mut reason = format!("the bench worker died: {}", died(status));
        if !last.is_empty() {
            reason.push_str(&format!("; its last words: {last}"));
        }
        reason
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        kill_group(&mut self.child);
        let _ = self.child.wait();
    }
}
