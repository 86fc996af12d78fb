//! `doctor --build`: whether a toolkit compiles, shown by compiling. A small probe (a kernel, a
//! launch, `cuda.h` and a driver call, so the device compiler, the runtime's headers and the
//! driver API are all needed) is compiled with the toolkit's nvcc and linked against
//! `-lcudart` and `-lcuda` in a private temporary directory, within a time limit, as the owner
//! of the toolkit under the trust rule (never as root for another user's nvcc). A failure names
//! its step, the tool that stopped (cicc, ptxas, the host compiler, the linker), its exit status
//! and its first error line.

use super::compiler::HostCompiler;
use super::toolkit::Toolkit;
use crate::lifetime::Scratch;
use crate::trust::identity::Identity;
use crate::trust::{Decision, Policy};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long each step (compile, link) may take.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// The most of a step's output kept to read its first error from.
const OUTPUT_LIMIT: u64 = 64 << 10;

/// The most of a step's output read past [`OUTPUT_LIMIT`] and dropped.
const DRAIN_LIMIT: u64 = 16 << 20;

/// The probe: device code, the runtime's launch and the driver API.
const PROBE_CU: &str = r#"#include <cuda.h>
#include <cuda_runtime.h>

__global__ void stackbench_probe(int *x) { x[threadIdx.x] += 1; }

int main() {
    CUdevice device;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS) return 2;
    int *x = nullptr;
    if (cudaMalloc(&x, sizeof(int)) != cudaSuccess) return 3;
    stackbench_probe<<<1, 1>>>(x);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
"#;

/// What compiling and linking the probe showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// nvcc compiled the probe to an object.
    pub compiled: bool,
    /// nvcc linked it into an executable (`-lcudart -lcuda`).
    pub linked: bool,
    /// The step that stopped it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<StepFailure>,
    /// Milliseconds both steps took.
    pub millis: u64,
    /// The user the compile ran as, where not this process's (` as alice (uid 1000)`), read
    /// from the owner of the object it wrote.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ran_as: String,
}

/// A step of the probe that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepFailure {
    /// `compile` or `link`.
    pub step: String,
    /// The tool the first error came from: `cicc`, `ptxas`, `host compiler`, `linker`, `nvcc`.
    pub tool: String,
    /// `exited with status 255`, `timed out after 120 s`, `not run: ...`.
    pub status: String,
    /// The first line of its output that says what went wrong.
    pub line: String,
}

impl StepFailure {
    /// `compile: ptxas, exited with status 255: ptxas fatal : Unsupported .version 9.5; ...`.
    pub fn describe(&self) -> String {
        format!(
            "{}: {}, {}: {}",
            self.step, self.tool, self.status, self.line
        )
    }
}

/// A probe that never started, and why.
pub fn not_run(why: String) -> Probe {
    Probe {
        compiled: false,
        linked: false,
        failure: Some(StepFailure {
            step: "compile".into(),
            tool: "nvcc".into(),
            status: format!("not run: {why}"),
            line: String::new(),
        }),
        millis: 0,
        ran_as: String::new(),
    }
}

/// Compiles and links the probe with `toolkit`'s nvcc, `compiler` as its host compiler (always
/// given with `-ccbin`: nvcc without it runs the first `gcc` on `PATH`) and `libcuda` (a stub
/// or the driver's development link) to link against; `None` where the toolkit has no nvcc.
/// The steps see a `PATH` of the judged chain's directories only.
pub fn run(toolkit: &Toolkit, compiler: &HostCompiler, libcuda: Option<&Path>) -> Option<Probe> {
    let nvcc = toolkit.nvcc.as_ref()?;
    let started = Instant::now();
    let search_path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let chain = chain(nvcc, compiler);
    let launch = match Policy::strict().decide(&chain, &[], &search_path) {
        Decision::Load(launch) => launch,
        Decision::Refuse(refusal) => {
            return Some(not_run(format!("the trust rule: {}", refusal.reason())))
        }
    };
    let Ok(path) = std::env::join_paths(judged_dirs(&chain)) else {
        return Some(not_run("a judged directory's name holds a `:`".into()));
    };
    let dir = match workspace(launch.user.as_ref().map(|u| (u.uid, u.gid))) {
        Ok(dir) => dir,
        Err(e) => return Some(not_run(format!("no private directory for the probe: {e}"))),
    };
    let step = |args: Vec<String>| {
        let mut command = Command::new(nvcc);
        command.args(args).current_dir(dir.path());
        // The host compiler is the judged one given with -ccbin: nothing of the environment
        // names another or adds flags that would.
        for name in NVCC_VARIABLES {
            command.env_remove(name);
        }
        command.env("PATH", &path);
        match launch.search_path.as_str() {
            "" => command.env_remove("LD_LIBRARY_PATH"),
            path => command.env("LD_LIBRARY_PATH", path),
        };
        run_step(command, launch.user.as_ref())
    };
    let ccbin: Vec<String> = vec!["-ccbin".into(), compiler.path.display().to_string()];
    let mut compile = vec![
        "-c".to_owned(),
        "probe.cu".into(),
        "-o".into(),
        "probe.o".into(),
    ];
    compile.extend(ccbin.iter().cloned());
    let done = |compiled, linked, failure, ran_as| Probe {
        compiled,
        linked,
        failure,
        millis: started.elapsed().as_millis() as u64,
        ran_as,
    };
    if let Err((status, output)) = step(compile) {
        let failed = failure("compile", status, &output);
        return Some(done(false, false, Some(failed), String::new()));
    }
    let ran_as = compiled_by(&dir.path().join("probe.o"));
    let mut link = vec!["probe.o".to_owned(), "-o".into(), "probe".into()];
    link.extend(ccbin);
    link.extend(library_dirs(toolkit, libcuda).map(|d| format!("-L{}", d.display())));
    link.push("-lcuda".into());
    match step(link) {
        Ok(()) => Some(done(true, true, None, ran_as)),
        Err((status, output)) => {
            let failed = failure("link", status, &output);
            Some(done(true, false, Some(failed), ran_as))
        }
    }
}

/// What nvcc reads of the environment to choose its host compiler or add to its command line.
const NVCC_VARIABLES: [&str; 3] = ["NVCC_CCBIN", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"];

/// The programs nvcc starts from its own `bin`, beside `nvcc.profile` (read as code).
const NVCC_TOOLS: [&str; 6] = [
    "nvcc.profile",
    "ptxas",
    "cudafe++",
    "fatbinary",
    "nvlink",
    "bin2c",
];

/// Every file a compile runs or reads as code, judged together by the trust rule: nvcc, its
/// `nvcc.profile`, the tools it starts from its `bin` ([`NVCC_TOOLS`]) and `nvvm/bin` (`cicc`),
/// and the host compiler it is given; those a toolkit lacks are left out.
fn chain(nvcc: &Path, compiler: &HostCompiler) -> Vec<PathBuf> {
    let bin = nvcc.parent().unwrap_or(Path::new("/"));
    let top = bin.parent().unwrap_or(bin);
    let beside = (NVCC_TOOLS.iter().map(|tool| bin.join(tool))).chain([top.join("nvvm/bin/cicc")]);
    std::iter::once(nvcc.to_path_buf())
        .chain(beside.filter(|p| p.exists()))
        .chain([compiler.path.clone()])
        .collect()
}

/// The directories of the judged chain, in its order, each once: the steps' whole `PATH`, so
/// nothing the rule did not judge is found by name (g++ runs `as` and `ld` from `PATH`: they
/// come from the host compiler's own directory).
fn judged_dirs(chain: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in chain.iter().filter_map(|p| p.parent()) {
        if !dirs.iter().any(|d| d == dir) {
            dirs.push(dir.to_path_buf());
        }
    }
    dirs
}

/// ` as alice (uid 1000)` when the object the compile wrote is another user's than ours.
fn compiled_by(object: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(owner) = std::fs::symlink_metadata(object).map(|m| m.uid()) else {
        return String::new();
    };
    // SAFETY: geteuid has no preconditions.
    match owner == unsafe { libc::geteuid() } {
        true => String::new(),
        false => format!(" as {}", crate::trust::identity::owner_of(owner)),
    }
}

/// A private directory holding the probe's source, made over to `owner` (uid, gid) where the
/// steps run as another user, so that only they and root can write it.
fn workspace(owner: Option<(u32, u32)>) -> std::io::Result<Scratch> {
    let dir = Scratch::new("stackbench-probe-", 0o700)?;
    std::fs::write(dir.path().join("probe.cu"), PROBE_CU)?;
    dir.made_over(owner)
}

/// The directories the link searches besides nvcc's own: the toolkit's `lib` and `lib64` (pip's
/// layout has `lib`, where nvcc looks only in `lib64`) and the directory of `libcuda`.
fn library_dirs<'a>(
    toolkit: &'a Toolkit,
    libcuda: Option<&'a Path>,
) -> impl Iterator<Item = PathBuf> + 'a {
    let top = (toolkit.nvcc.as_deref())
        .and_then(|n| n.parent()?.parent())
        .map(Path::to_path_buf);
    let own = top
        .into_iter()
        .flat_map(|t| [t.join("lib"), t.join("lib64")])
        .filter(|d| d.is_dir());
    own.chain(libcuda.and_then(Path::parent).map(Path::to_path_buf))
}

/// Runs one step; its output (standard output and error together) when it fails, with its
/// status in words.
fn run_step(mut command: Command, user: Option<&Identity>) -> Result<(), (String, String)> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = crate::process::spawn(&mut command, user, crate::process::Sight::Own)
        .map_err(|e| (format!("not run: {e}"), String::new()))?;
    let readers: Vec<_> = (crate::process::output_streams(&mut child).into_iter())
        .map(|mut stream| {
            std::thread::spawn(move || {
                // The first OUTPUT_LIMIT bytes are kept and up to DRAIN_LIMIT more read and
                // dropped: a step writing more must not die of a closed pipe, and one writing
                // without end is not read without end.
                let mut kept = Vec::new();
                let _ = (&mut stream).take(OUTPUT_LIMIT).read_to_end(&mut kept);
                let _ = std::io::copy(&mut stream.take(DRAIN_LIMIT), &mut std::io::sink());
                String::from_utf8_lossy(&kept).into_owned()
            })
        })
        .collect();
    let status = crate::process::exit_within(&mut child, STEP_TIMEOUT);
    let output: String = (readers.into_iter())
        .filter_map(|r| r.join().ok())
        .collect::<Vec<_>>()
        .join("\n");
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => Err((crate::exit::died(Some(s)), output)),
        None => Err((
            format!("timed out after {} s", STEP_TIMEOUT.as_secs()),
            output,
        )),
    }
}

/// The step's failure: its first error line and the tool that wrote it.
fn failure(step: &str, status: String, output: &str) -> StepFailure {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = (lines.iter())
        .find(|l| {
            let lower = l.to_ascii_lowercase();
            [
                "error",
                "fatal",
                "not found",
                "cannot find",
                "undefined reference",
            ]
            .iter()
            .any(|w| lower.contains(w))
        })
        .or(lines.first())
        .map(|l| (*l).to_owned())
        .unwrap_or_default();
    StepFailure {
        step: step.into(),
        tool: tool_of(&line).into(),
        status,
        line,
    }
}

/// The tool an error line comes from.
fn tool_of(line: &str) -> &'static str {
    if line.contains("cicc") {
        "cicc"
    } else if line.contains("ptxas") {
        "ptxas"
    } else if line.contains("ld:")
        || line.contains("collect2")
        || line.contains("undefined reference")
    {
        "linker"
    } else if line.contains("fatal error:") || line.contains("error: ") && line.contains(".h") {
        "host compiler"
    } else {
        "nvcc"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_whole_compiler_chain_is_judged_and_another_user_s_compiler_runs_as_them() {
        let dir = tempfile::tempdir().unwrap();
        let open = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        open(dir.path(), 0o755);
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(dir.path().join("nvvm/bin")).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        for dir in [
            dir.path().join("nvvm"),
            dir.path().join("nvvm/bin"),
            bin.clone(),
        ] {
            open(&dir, 0o755);
        }
        let tools = [
            "bin/nvcc",
            "bin/nvcc.profile",
            "bin/ptxas",
            "bin/cudafe++",
            "bin/fatbinary",
            "bin/nvlink",
            "nvvm/bin/cicc",
        ];
        for tool in tools {
            std::fs::write(dir.path().join(tool), b"").unwrap();
            open(&dir.path().join(tool), 0o755);
        }
        let gcc = dir.path().join("g++");
        std::fs::write(&gcc, b"").unwrap();
        open(&gcc, 0o755);
        let compiler = HostCompiler {
            path: gcc.clone(),
            named_by: "NVCC_CCBIN".into(),
            kind: super::super::host_config::CompilerKind::Gnu,
            version: "12.2.0".into(),
            major: 12,
        };
        let nvcc = bin.join("nvcc");
        let judged = chain(&nvcc, &compiler);
        for tool in tools.into_iter().chain(["g++"]) {
            assert!(
                judged.contains(&dir.path().join(tool)),
                "{tool}: {judged:?}"
            );
        }
        // The chain is decided as one: any of its tools anyone may rewrite stops the compile.
        for tool in ["ptxas", "cudafe++", "fatbinary", "nvlink"] {
            open(&bin.join(tool), 0o777);
            assert!(
                matches!(
                    Policy::strict().decide(&judged, &[], ""),
                    Decision::Refuse(_)
                ),
                "{tool}"
            );
            open(&bin.join(tool), 0o755);
        }
        // The steps' PATH: the chain's directories, each once, in its order.
        assert_eq!(
            judged_dirs(&judged),
            [
                bin.clone(),
                dir.path().join("nvvm/bin"),
                dir.path().to_path_buf()
            ]
        );
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // As root, a service user's g++ under root's nvcc runs as that user, not as root.
            std::os::unix::fs::chown(&gcc, Some(4242), Some(4242)).unwrap();
            match Policy::strict().decide(&judged, &[], "") {
                Decision::Load(launch) => {
                    assert_eq!(launch.user.map(|u| u.uid), Some(4242))
                }
                Decision::Refuse(refusal) => panic!("{}", refusal.reason()),
            }
        }
    }

    #[test]
    fn the_first_error_and_its_tool_are_read_from_each_step_s_output() {
        let ptxas = failure(
            "compile",
            "exited with status 255".into(),
            "ptxas /tmp/tmpxft_0000755c_00000000-6_p.ptx, line 9; fatal   : Unsupported .version 9.5; current version is '9.0'\nptxas fatal   : Ptx assembly aborted due to errors\n",
        );
        assert_eq!(ptxas.tool, "ptxas");
        assert!(ptxas.line.contains("Unsupported .version 9.5"), "{ptxas:?}");
        let cicc = failure(
            "compile",
            "exited with status 127".into(),
            "sh: 1: /v/nvidia/cu13/bin/../nvvm/bin/cicc: not found\n",
        );
        assert_eq!(cicc.tool, "cicc");
        let header = failure(
            "compile",
            "exited with status 1".into(),
            "probe.cu:2:10: fatal error: cuda_runtime.h: No such file or directory\ncompilation terminated.\n",
        );
        assert_eq!(header.tool, "host compiler");
        assert!(header.line.contains("cuda_runtime.h"));
        let link = failure(
            "link",
            "exited with status 1".into(),
            "/usr/bin/ld: cannot find -lcuda: No such file or directory\ncollect2: error: ld returned 1 exit status\n",
        );
        assert_eq!(link.tool, "linker");
        assert_eq!(
            link.describe(),
            "link: linker, exited with status 1: /usr/bin/ld: cannot find -lcuda: No such file or directory"
        );
    }
}
