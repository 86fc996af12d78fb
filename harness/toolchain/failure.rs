//! A failed build explained from its own output: the lines compilers, linkers and build scripts
//! print when a part of the toolkit is missing (`fatal error: cuda.h: No such file or
//! directory`, `nvcc: not found`, `cannot find -lcuda`, `unsupported GNU version!`,
//! `CUDA_HOME environment variable is not set`), and the toolkit the build used, from the
//! `-I` directories on its compiler lines.
//!
//! The output is the evidence a user sees too, and pip prints a failed build's output in full;
//! tracing every `open` would need ptrace and name far more files than the one that mattered.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Which part of the toolkit a build missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Missed {
    /// No nvcc where the build looked.
    Compiler,
    /// No `cuda.h` (or the runtime's headers).
    Headers,
    /// Nothing to link `-lcuda` against.
    LinkStub,
    /// nvcc refused the host compiler.
    HostCompiler,
    /// `CUDA_HOME` unset or pointing at no toolkit (PyTorch's extension builder).
    CudaHome,
}

/// What each signature says, as printed by gcc, ld, sh, pip's build backends and PyTorch. A
/// missing header is any `fatal error: <cu*|nv*>.h: No such file or directory` (see
/// [`missing_header`]).
const SIGNATURES: [(&str, Missed); 11] = [
    (": No such file or directory", Missed::Headers),
    ("nvcc: not found", Missed::Compiler),
    ("nvcc: command not found", Missed::Compiler),
    ("nvcc not in path", Missed::Compiler),
    ("No such file or directory: 'nvcc'", Missed::Compiler),
    ("/nvcc': No such file or directory", Missed::Compiler),
    ("cannot find -lcuda", Missed::LinkStub),
    ("unsupported GNU version", Missed::HostCompiler),
    ("unsupported clang version", Missed::HostCompiler),
    (
        "CUDA_HOME environment variable is not set",
        Missed::CudaHome,
    ),
    ("No CUDA runtime is found", Missed::CudaHome),
];

/// The substrings that make an output line worth keeping as evidence.
pub fn patterns() -> impl Iterator<Item = &'static str> {
    SIGNATURES.iter().map(|(p, _)| *p)
}

/// Each part the output shows missing, once, with the first line that shows it.
pub fn missed(lines: &[String]) -> Vec<(Missed, String)> {
    let mut out: Vec<(Missed, String)> = Vec::new();
    for line in lines {
        for (pattern, what) in SIGNATURES {
            let Some(at) = line.find(pattern) else {
                continue;
            };
            // `-lcudart` and `-lcudnn` are other libraries.
            let after = line[at + pattern.len()..].chars().next();
            if what == Missed::LinkStub
                && after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                continue;
            }
            if what == Missed::Headers && missing_header(line).is_none() {
                continue;
            }
            if !out.iter().any(|(w, _)| *w == what) {
                out.push((what, line.clone()));
            }
        }
    }
    out
}

/// The CUDA header a compiler's `fatal error: cudaProfiler.h: No such file or directory` names.
pub fn missing_header(line: &str) -> Option<&str> {
    let rest = &line[line.find("fatal error: ")? + "fatal error: ".len()..];
    let header = rest.strip_suffix(": No such file or directory")?.trim();
    let name = header.rsplit('/').next()?;
    ((name.starts_with("cu") || name.starts_with("nv")) && name.ends_with(".h")).then_some(header)
}

/// The pip package of CUDA 13 that ships a header (`cudaProfiler.h`: `nvidia-cuda-profiler-api`).
pub fn header_package(header: &str) -> &'static str {
    match header {
        "cudaProfiler.h" | "cuda_profiler_api.h" => "nvidia-cuda-profiler-api",
        h if h.starts_with("curand") => "nvidia-curand",
        h if h.starts_with("cublas") => "nvidia-cublas",
        h if h.starts_with("cufft") => "nvidia-cufft",
        h if h.starts_with("nvrtc") => "nvidia-cuda-nvrtc",
        h if h.starts_with("crt/") => "nvidia-cuda-crt",
        _ => "nvidia-cuda-runtime",
    }
}

/// The `-I` directories of one output line that runs a compiler (`gcc`, `g++`, `c++`, `cc`,
/// `clang`, `nvcc`), as given.
pub fn include_dirs(line: &str) -> Vec<PathBuf> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let compiler = words.iter().any(|w| {
        let name = w.rsplit('/').next().unwrap_or(w);
        ["gcc", "g++", "c++", "cc", "clang", "clang++", "nvcc"]
            .iter()
            .any(|c| {
                name == *c || name.ends_with(&format!("-{c}")) || name.starts_with(&format!("{c}-"))
            })
    });
    if !compiler {
        return Vec::new();
    }
    let mut dirs = Vec::new();
    for (at, word) in words.iter().enumerate() {
        let dir = match *word {
            "-I" => words.get(at + 1).copied(),
            w => w.strip_prefix("-I").filter(|d| !d.is_empty()),
        };
        if let Some(dir) = dir {
            dirs.push(PathBuf::from(dir.trim_matches(['"', '\''])));
        }
    }
    dirs
}

/// The toolkit a build used: the root above the first `-I` directory that is a known toolkit's
/// include directory (`known`), else one that names CUDA (`/usr/local/cuda/include` is
/// `/usr/local/cuda`).
pub fn toolkit_used(include_dirs: &[PathBuf], known: &[PathBuf]) -> Option<PathBuf> {
    let real = |d: &Path| crate::hostfs::real_path(d).unwrap_or_else(|_| d.to_path_buf());
    let known: Vec<PathBuf> = known.iter().map(|k| real(k)).collect();
    let is_include = |d: &&PathBuf| d.file_name().is_some_and(|n| n == "include");
    include_dirs
        .iter()
        .filter(is_include)
        .find(|d| known.contains(&real(d)))
        .or_else(|| {
            include_dirs
                .iter()
                .filter(is_include)
                .find(|d| d.to_string_lossy().to_ascii_lowercase().contains("cuda"))
        })
        .and_then(|d| d.parent().map(Path::to_path_buf))
}

/// How the build finds its toolkit, so the fix sets what it reads: PyCUDA takes its CUDA root
/// from the `nvcc` on `PATH` (its `CUDA_ROOT` is a `siteconf.py` setting, not read from the
/// environment); PyTorch's extensions and most other builds read `CUDA_HOME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finds {
    NvccOnPath,
    CudaHome,
}

/// Whether `command` is a build that may compile CUDA code: it runs nvcc, a build tool (make,
/// cmake, ninja, a `setup.py`), or pip installing or building something (a source build happens
/// inside `pip install` whenever no wheel fits).
pub fn is_a_build(command: &[String]) -> bool {
    let names = |w: &String| w.rsplit('/').next().unwrap_or(w).to_owned();
    let words: Vec<String> = command.iter().map(names).collect();
    let has = |w: &str| words.iter().any(|x| x == w);
    let pip = words.iter().any(|w| w.starts_with("pip"));
    ["nvcc", "make", "cmake", "ninja", "setup.py"]
        .iter()
        .any(|w| has(w))
        || (pip && (has("install") || has("wheel")))
}

/// How the build run as `command` finds its toolkit.
pub fn finds_toolkit_by(command: &[String], lines: &[String]) -> Finds {
    let said = |what: &str| {
        command.iter().any(|w| w.contains(what)) || lines.iter().any(|l| l.contains(what))
    };
    if said("pycuda") {
        Finds::NvccOnPath
    } else {
        Finds::CudaHome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    #[test]
    fn each_signature_names_its_part_once_and_other_libraries_are_not_the_stub() {
        let out = lines(
            "src/cpp/cuda.hpp:14:10: fatal error: cuda.h: No such file or directory\n\
             bash: ./configure: No such file or directory\n\
             /usr/bin/ld: cannot find -lcudart: No such file or directory\n\
             /usr/bin/ld: cannot find -lcuda: No such file or directory\n\
             #error -- unsupported GNU version! gcc versions later than 15 are not supported!\n\
             sh: 1: nvcc: not found\n\
             another: cuda.h: No such file or directory",
        );
        let parts: Vec<Missed> = missed(&out).into_iter().map(|(m, _)| m).collect();
        assert_eq!(
            parts,
            [
                Missed::Headers,
                Missed::LinkStub,
                Missed::HostCompiler,
                Missed::Compiler
            ]
        );
        assert!(missed(&lines("cannot find -lcudart")).is_empty());
        let profiler =
            "src/cpp/cuda.hpp:23:10: fatal error: cudaProfiler.h: No such file or directory";
        assert_eq!(missing_header(profiler), Some("cudaProfiler.h"));
        assert_eq!(header_package("cudaProfiler.h"), "nvidia-cuda-profiler-api");
        assert_eq!(
            missing_header("fatal error: Python.h: No such file or directory"),
            None
        );
    }

    #[test]
    fn builds_are_told_from_other_commands_by_their_words() {
        let words = |text: &str| text.split(' ').map(String::from).collect::<Vec<_>>();
        for build in [
            "/venv/bin/python -m pip install pycuda",
            "pip3 wheel .",
            "python3 setup.py build_ext",
            "/usr/local/cuda/bin/nvcc -c k.cu",
            "cmake --build build",
        ] {
            assert!(is_a_build(&words(build)), "{build}");
        }
        for other in [
            "python3 -c import torch",
            "pip list",
            "./train --install-dir x",
        ] {
            assert!(!is_a_build(&words(other)), "{other}");
        }
    }

    #[test]
    fn the_toolkit_used_is_read_from_the_compiler_line() {
        let line = "x86_64-linux-gnu-g++ -pthread -DPYGPU_PACKAGE=pycuda -Isrc/cpp -I/usr/local/cuda/include -I/venv/numpy/core/include -c src/cpp/cuda.cpp";
        let dirs = include_dirs(line);
        assert_eq!(dirs.len(), 3);
        assert_eq!(
            toolkit_used(&dirs, &[]),
            Some(PathBuf::from("/usr/local/cuda"))
        );
        let wheel = "g++ -I/v/site-packages/nvidia/cu13/include -c src/cpp/cuda.cpp";
        let known = [PathBuf::from("/v/site-packages/nvidia/cu13/include")];
        assert_eq!(toolkit_used(&include_dirs(wheel), &[]), None);
        assert_eq!(
            toolkit_used(&include_dirs(wheel), &known),
            Some(PathBuf::from("/v/site-packages/nvidia/cu13"))
        );
        assert!(include_dirs("note: -I/usr/local/cuda/include was given").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_output_never_panics(text in ".{0,200}") {
            let _ = missed(std::slice::from_ref(&text));
            let _ = include_dirs(&text);
        }
    }
}
