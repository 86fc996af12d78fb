//! Live loading in a worker process: dlopen as a program would, with crashes and hangs contained.
//!
//! The parent ([`run`]) re-executes stackbench as `stackbench __probe` with the installation's
//! library directories in front of `LD_LIBRARY_PATH` and `LD_DEBUG=libs`, sends the request on
//! stdin, and reads one JSON line per event from the worker's stdout. The worker ([`worker`]) loads
//! each library in turn with `dlopen(RTLD_NOW | RTLD_LOCAL)`, lists what the loader mapped, and
//! calls the library's own version APIs. A library that crashes or hangs its worker is recorded as
//! such and a fresh worker takes the rest, so one bad library never costs the others' results.
//!
//! Layers, as in cudarc: `sys` (raw C signatures), `dl` and `calls` (loading and one safe function
//! per C function), `api` (which calls a library gets, reported as [`ApiCall`]s); `decode` and
//! `trail` are pure (version numbers, signal names; the loader's trail cut per library).

mod api;
pub(crate) mod calls;
pub mod decode;
pub(crate) mod dl;
pub(crate) mod sys;
pub mod trail;
pub mod worker;

use serde::{Deserialize, Serialize};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// How long one library may take (load, constructors, version APIs) before its worker is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a worker may take outside any library: starting up, between libraries, exiting.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// What to load, and the environment to load it in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbeRequest {
    /// The files to `dlopen`, in order. A name without a `/` is searched for by the loader, as a
    /// program's `dlopen("libcudart.so.12")` would be.
    #[serde(with = "crate::pathname::list")]
    pub libraries: Vec<PathBuf>,
    /// The environment's `LD_LIBRARY_PATH` exactly as given, empty entries included.
    pub ld_library_path: Option<String>,
    /// How long each library may take.
    pub timeout: Duration,
    /// One fresh worker per library, so that nothing one library mapped is already there for the
    /// next. Without it, `loaded` and `search_trail` show only what each library added.
    pub isolate: bool,
    /// The user the worker runs as, when not stackbench's own (the files' owner, under root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_as: Option<crate::trust::Identity>,
}

impl Default for ProbeRequest {
    fn default() -> Self {
        ProbeRequest {
            libraries: Vec::new(),
            ld_library_path: None,
            timeout: DEFAULT_TIMEOUT,
            isolate: false,
            run_as: None,
        }
    }
}

impl ProbeRequest {
    /// A request to load `libraries` with the default timeout and no extra search directories.
    pub fn new(libraries: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        ProbeRequest {
            libraries: libraries.into_iter().map(Into::into).collect(),
            ..ProbeRequest::default()
        }
    }
}

/// What loading one library did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadReport {
    /// The library as requested.
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub outcome: LoadOutcome,
    /// Every object the loader mapped for it that was not mapped before, in load order.
    pub loaded: Vec<LoadedObject>,
    /// The loader's `LD_DEBUG=libs` lines for this library only, without the pid prefix.
    pub search_trail: Vec<String>,
    /// The library's version APIs and what they answered.
    pub api: Vec<ApiCall>,
    /// Time from `dlopen` to the last API call (to the crash or the kill otherwise).
    pub millis: u64,
    /// Other lines written to standard error meanwhile (a library's own messages).
    #[serde(default)]
    pub messages: Vec<String>,
}

/// How loading ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoadOutcome {
    /// `dlopen` succeeded (whatever the APIs then answered).
    Loaded,
    /// `dlopen` failed; `error` is the loader's message (`dlerror`).
    Failed { error: String },
    /// The worker died while loading it or calling its APIs: by a signal, or by exiting.
    Crashed {
        signal: Option<i32>,
        signal_name: Option<String>,
        exit_code: Option<i32>,
    },
    /// No answer within the timeout (`after_ms`, the limit that was set, not the wall time the
    /// kill took, so two runs with the same `--timeout` say the same); the worker was killed.
    TimedOut { after_ms: u64 },
    /// The library was never tried: no worker could be started or none got as far as it.
    NotProbed { reason: String },
}

/// When an object was mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadStage {
    /// By the `dlopen` itself (dependencies in `DT_NEEDED`, constructors' own `dlopen`s).
    Dlopen,
    /// Later, by a version API (`cudaGetDeviceCount` opening `libcuda.so.1`).
    ApiCall,
}

/// One object the loader mapped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadedObject {
    /// Its `DT_SONAME`, or its file name when it has none.
    pub name: String,
    /// The file the loader actually mapped, canonical.
    #[serde(with = "crate::pathname")]
    pub path: PathBuf,
    pub stage: LoadStage,
    /// Mapped for a while, then unmapped again before the report (libcudart unloads a libcuda
    /// that fails to initialise).
    #[serde(default)]
    pub unloaded: bool,
}

/// One version API called, and its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiCall {
    /// The C function (`cudaRuntimeGetVersion`).
    pub function: String,
    /// The status returned, for functions that return one (0 is success).
    pub status: Option<i64>,
    /// The version or count written (only on success).
    pub value: Option<i64>,
    /// The value as people write it (`12.9`), or the status's name (`cudaErrorNoDevice`).
    pub text: Option<String>,
}

/// One line of the worker's protocol on its stdout.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum WorkerEvent {
    /// About to load library `index` of the worker's request.
    Start {
        index: usize,
        #[serde(with = "crate::pathname")]
        path: PathBuf,
    },
    /// Library `index` is done.
    Done {
        index: usize,
        outcome: LoadOutcome,
        loaded: Vec<LoadedObject>,
        api: Vec<ApiCall>,
        millis: u64,
    },
}

/// Loads every library of `request` in workers started as `<worker> __probe` (`worker` is a
/// stackbench binary). One report per library, in the request's order.
pub fn run_with(request: &ProbeRequest, worker: &Path) -> Vec<LoadReport> {
    let mut reports = Vec::with_capacity(request.libraries.len());
    while reports.len() < request.libraries.len() {
        let rest = &request.libraries[reports.len()..];
        let batch = if request.isolate { &rest[..1] } else { rest };
        let outcome = run_batch(request, worker, batch);
        if outcome.settled.is_empty() {
            let reason = outcome
                .stop
                .unwrap_or_else(|| "the probe worker stopped before loading anything".to_owned());
            reports.extend(not_probed(rest, &reason));
            break;
        }
        reports.extend(outcome.settled);
    }
    reports
}

fn not_probed(libraries: &[PathBuf], reason: &str) -> Vec<LoadReport> {
    libraries
        .iter()
        .map(|path| {
            empty_report(
                path.clone(),
                LoadOutcome::NotProbed {
                    reason: reason.to_owned(),
                },
                0,
            )
        })
        .collect()
}

fn empty_report(path: PathBuf, outcome: LoadOutcome, millis: u64) -> LoadReport {
    LoadReport {
        path,
        outcome,
        loaded: Vec::new(),
        search_trail: Vec::new(),
        api: Vec::new(),
        millis,
        messages: Vec::new(),
    }
}

/// The worker's `LD_LIBRARY_PATH`: the environment's value as given. `None`: leave it unset, as
/// for an empty value (an empty entry would mean the current directory, which the environment
/// did not say).
pub fn library_path(ld_library_path: Option<&str>) -> Option<OsString> {
    ld_library_path
        .filter(|s| !s.is_empty())
        .map(OsString::from)
}

/// What one worker settled: reports for a prefix of its batch, and why it stopped early if it did.
struct Batch {
    settled: Vec<LoadReport>,
    stop: Option<String>,
}

fn run_batch(request: &ProbeRequest, worker: &Path, batch: &[PathBuf]) -> Batch {
    let failed = |stop: String| Batch {
        settled: Vec::new(),
        stop: Some(stop),
    };
    let input = ProbeRequest {
        libraries: batch.to_vec(),
        ..request.clone()
    };
    let input = match serde_json::to_vec(&input) {
        Ok(input) => input,
        Err(e) => return failed(format!("cannot encode the probe request: {e}")),
    };
    let mut command = crate::process::worker_command(worker);
    command
        .arg("__probe")
        .env("LD_DEBUG", "libs")
        .env_remove("LD_DEBUG_OUTPUT");
    match library_path(request.ld_library_path.as_deref()) {
        Some(path) => command.env("LD_LIBRARY_PATH", path),
        None => command.env_remove("LD_LIBRARY_PATH"),
    };
    let crate::process::Worker {
        mut child,
        events,
        errors,
    } = match crate::process::start_worker::<WorkerEvent>(command, request.run_as.as_ref(), input) {
        Ok(worker) => worker,
        Err(e) => {
            return failed(format!(
                "cannot start the probe worker {}{}: {e}",
                worker.display(),
                crate::trust::identity::as_user(request.run_as.as_ref())
            ));
        }
    };

    let mut settled: Vec<LoadReport> = Vec::new();
    let mut current: Option<(usize, Instant)> = None;
    let mut last = Instant::now();
    let mut killed_idle = false;
    let mut hung = false;
    loop {
        let deadline = match current {
            Some((_, since)) => since + request.timeout,
            None => last + IDLE_TIMEOUT.max(request.timeout),
        };
        // A library's constructor can write events of its own to the pipe it inherits: only
        // the next library starts, once, and only it is done, so each event moves the worker
        // one step on and no deadline moves back (a worker lasts at most each library's
        // timeout and each wait before one).
        match events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(WorkerEvent::Start { index, .. }) => {
                if current.is_none() && index == settled.len() {
                    current = Some((index, Instant::now()));
                    last = Instant::now();
                }
            }
            Ok(WorkerEvent::Done {
                index,
                outcome,
                loaded,
                api,
                millis,
            }) => {
                let Some(path) = batch.get(index).filter(|_| index == settled.len()) else {
                    continue;
                };
                settled.push(LoadReport {
                    loaded,
                    api,
                    ..empty_report(path.clone(), outcome, millis)
                });
                current = None;
                last = Instant::now();
                if settled.len() == batch.len() {
                    // All done: end the worker and anything a library left running (which
                    // would otherwise hold the pipes open and outlive doctor).
                    crate::process::kill_group(&mut child);
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                crate::process::kill_group(&mut child);
                match current.take() {
                    Some((index, since)) => {
                        if let Some(path) = batch.get(index).filter(|_| index == settled.len()) {
                            settled.push(empty_report(
                                path.clone(),
                                LoadOutcome::TimedOut {
                                    after_ms: millis(request.timeout),
                                },
                                millis(since.elapsed()),
                            ));
                        }
                        hung = true;
                    }
                    None => killed_idle = true,
                }
                break;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = wait(&mut child);
    if let (Some((index, since)), false) = (current, hung) {
        if let Some(path) = batch.get(index).filter(|_| index == settled.len()) {
            settled.push(empty_report(
                path.clone(),
                died(status),
                millis(since.elapsed()),
            ));
        }
    }
    let stderr = errors.finish();
    let mut blocks = trail::split(&stderr);
    for (index, report) in settled.iter_mut().enumerate() {
        if let Some(block) = blocks.remove(&index) {
            add_initialised(&mut report.loaded, &block, |p| {
                crate::hostfs::real_path(p).ok()
            });
            report.search_trail = block.trail;
            report.messages = block.messages;
        }
    }
    let stop = settled.is_empty().then(|| {
        let how = if killed_idle {
            format!(
                "did not start loading within {} s",
                IDLE_TIMEOUT.max(request.timeout).as_secs()
            )
        } else {
            match status {
                Some(status) => format!("stopped ({status}) before loading anything"),
                None => "stopped before loading anything".to_owned(),
            }
        };
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| {
                trail::strip_pid(l).is_none() && !l.contains(trail::MARKER) && !l.trim().is_empty()
            })
            .collect();
        let said = said[said.len().saturating_sub(3)..].join("; ");
        if said.is_empty() {
            format!("the probe worker {how}")
        } else {
            format!("the probe worker {how}: {said}")
        }
    });
    Batch { settled, stop }
}

/// Adds the objects the trail shows initialised that the worker never saw mapped: those mapped
/// and unmapped again within one call (libcudart 12.9 and 13 load `libcuda.so.1` inside
/// `cudaDriverGetVersion` and unload it before returning when it finds no device).
fn add_initialised(
    loaded: &mut Vec<LoadedObject>,
    block: &trail::Block,
    canonical: impl Fn(&Path) -> Option<PathBuf>,
) {
    for object in block.initialised() {
        let opened = PathBuf::from(&object.path);
        let path = canonical(&opened).unwrap_or_else(|| opened.clone());
        if loaded.iter().any(|o| o.path == path) {
            continue;
        }
        let name = opened
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| object.path.clone());
        loaded.push(LoadedObject {
            name,
            path,
            stage: if object.during_api {
                LoadStage::ApiCall
            } else {
                LoadStage::Dlopen
            },
            unloaded: true,
        });
    }
}

/// Reaps the worker, killing it if it does not exit on its own soon.
fn wait(child: &mut Child) -> Option<ExitStatus> {
    let deadline = Instant::now() + IDLE_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                crate::process::kill_group(child);
                return child.wait().ok();
            }
            Err(_) => return None,
        }
    }
}

/// How a worker that died mid-library ended.
fn died(status: Option<ExitStatus>) -> LoadOutcome {
    let signal = status.and_then(|s| s.signal());
    LoadOutcome::Crashed {
        signal,
        signal_name: signal.and_then(crate::exit::signal_name).map(str::to_owned),
        exit_code: status.and_then(|s| s.code()),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(None, None)]
    #[case(Some(""), None)]
    #[case(Some("/x::/y"), Some("/x::/y"))]
    #[case(Some(":/x"), Some(":/x"))]
    #[case(Some("/x:"), Some("/x:"))]
    fn ld_library_path(#[case] given: Option<&str>, #[case] want: Option<&str>) {
        assert_eq!(library_path(given), want.map(OsString::from));
    }

    #[rstest]
    #[case(LoadOutcome::Loaded, r#"{"kind":"loaded"}"#)]
    #[case(LoadOutcome::Failed { error: "x".into() }, r#"{"kind":"failed","error":"x"}"#)]
    #[case(
        LoadOutcome::Crashed { signal: Some(11), signal_name: Some("SIGSEGV".into()), exit_code: None },
        r#"{"kind":"crashed","signal":11,"signal_name":"SIGSEGV","exit_code":null}"#
    )]
    #[case(LoadOutcome::TimedOut { after_ms: 1000 }, r#"{"kind":"timed_out","after_ms":1000}"#)]
    fn outcome_json(#[case] outcome: LoadOutcome, #[case] json: &str) {
        assert_eq!(serde_json::to_string(&outcome).unwrap(), json);
        assert_eq!(serde_json::from_str::<LoadOutcome>(json).unwrap(), outcome);
    }

    #[test]
    fn worker_events_round_trip() {
        let event = WorkerEvent::Done {
            index: 2,
            outcome: LoadOutcome::Loaded,
            loaded: vec![LoadedObject {
                name: "libcuda.so.1".into(),
                path: "/d/libcuda.so.535.261.03".into(),
                stage: LoadStage::ApiCall,
                unloaded: true,
            }],
            api: vec![ApiCall {
                function: "cuDriverGetVersion".into(),
                status: Some(0),
                value: Some(12020),
                text: Some("12.2".into()),
            }],
            millis: 3,
        };
        let line = serde_json::to_string(&event).unwrap();
        assert!(
            line.starts_with(r#"{"event":"done","index":2,"outcome":{"kind":"loaded"}"#),
            "{line}"
        );
        assert!(line.contains(r#""stage":"api_call""#), "{line}");
        let back: WorkerEvent = serde_json::from_str(&line).unwrap();
        assert!(matches!(back, WorkerEvent::Done { index: 2, .. }));
    }

    #[test]
    fn initialised_objects_fill_the_gaps() {
        let block = trail::Block {
            trail: vec![
                "calling init: /x/libcudart.so.12".into(),
                "calling init: /d/libcuda.so.1".into(),
                "calling fini: /d/libcuda.so.1 [0]".into(),
            ],
            api_from: Some(1),
            messages: vec![],
        };
        let mut loaded = vec![LoadedObject {
            name: "libcudart.so.12".into(),
            path: "/real/libcudart.so.12.9.79".into(),
            stage: LoadStage::Dlopen,
            unloaded: false,
        }];
        let canonical = |p: &Path| match p.to_str() {
            Some("/x/libcudart.so.12") => Some(PathBuf::from("/real/libcudart.so.12.9.79")),
            Some("/d/libcuda.so.1") => Some(PathBuf::from("/d/libcuda.so.535.261.03")),
            _ => None,
        };
        add_initialised(&mut loaded, &block, canonical);
        assert_eq!(loaded.len(), 2);
        assert_eq!(
            loaded[1],
            LoadedObject {
                name: "libcuda.so.1".into(),
                path: "/d/libcuda.so.535.261.03".into(),
                stage: LoadStage::ApiCall,
                unloaded: true,
            }
        );
    }

    #[test]
    fn request_defaults() {
        let request: ProbeRequest =
            serde_json::from_str(r#"{"libraries":["/x/libcudart.so.12"]}"#).unwrap();
        assert_eq!(request, ProbeRequest::new(["/x/libcudart.so.12"]));
        assert_eq!(request.timeout, Duration::from_secs(10));
    }

    #[test]
    fn missing_worker_is_not_probed() {
        let request = ProbeRequest::new(["/x/liba.so", "/x/libb.so"]);
        let reports = run_with(&request, Path::new("/nonexistent/stackbench"));
        assert_eq!(reports.len(), 2);
        for report in &reports {
            match &report.outcome {
                LoadOutcome::NotProbed { reason } => {
                    assert!(reason.contains("cannot start the probe worker"), "{reason}")
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_worker_that_reads_nothing_is_not_probed() {
        // `true` exits at once, printing nothing: no progress, no endless restarts.
        let reports = run_with(&ProbeRequest::new(["/x/liba.so"]), Path::new("/bin/true"));
        assert!(
            matches!(&reports[0].outcome, LoadOutcome::NotProbed { reason } if reason.contains("before loading anything")),
            "{reports:?}"
        );
    }

    #[rstest]
    #[case(ExitStatus::from_raw(11), Some(11), Some("SIGSEGV"), None)]
    #[case(ExitStatus::from_raw(6 | 0x80), Some(6), Some("SIGABRT"), None)]
    #[case(ExitStatus::from_raw(3 << 8), None, None, Some(3))]
    fn deaths(
        #[case] status: ExitStatus,
        #[case] signal: Option<i32>,
        #[case] name: Option<&str>,
        #[case] code: Option<i32>,
    ) {
        assert_eq!(
            died(Some(status)),
            LoadOutcome::Crashed {
                signal,
                signal_name: name.map(str::to_owned),
                exit_code: code
            }
        );
    }
}
