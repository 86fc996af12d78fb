//! Python environments: the interpreter on PATH, virtualenvs, the user site, conda environments.

use super::Host;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the interpreter on PATH may take to say where its site-packages are.
const INTERPRETER_TIMEOUT: Duration = Duration::from_secs(5);

/// The interpreter's path, then its site directories. Run with `-I -S`: no `site` processing, so
/// no `.pth` file of a site directory runs; `site` only computes paths when imported so.
const SITE_QUERY: &str = "import site,sys;print('\\n'.join([sys.executable]+site.getsitepackages()+[site.getusersitepackages()]))";

/// The site-packages and the user site of the `python3` on PATH, and its prefix when it is a
/// virtual environment (a system interpreter's prefix is `/usr`, far too wide to walk); none if
/// it is missing, fails or hangs, or if the trust rule would not let it run (it runs as the
/// trust rule would load it: another user's virtualenv first on root's PATH runs as that user).
pub fn interpreter_sites() -> Vec<PathBuf> {
    let Some(interpreter) = on_path("python3") else {
        return Vec::new();
    };
    let out = crate::trust::output_if_trusted(
        &interpreter,
        &["-I", "-S", "-c", SITE_QUERY],
        INTERPRETER_TIMEOUT,
    )
    .unwrap_or_default();
    let mut lines = out.lines().filter(|l| !l.is_empty()).map(PathBuf::from);
    let executable = lines.next();
    executable
        .as_deref()
        .and_then(venv_prefix)
        .into_iter()
        .chain(lines)
        .collect()
}

/// The virtual environment an interpreter belongs to, found as `site` finds it without running
/// `site`: a `pyvenv.cfg` beside the executable or one directory up.
fn venv_prefix(executable: &Path) -> Option<PathBuf> {
    let bin = executable.parent()?;
    [bin, bin.parent()?]
        .into_iter()
        .find(|dir| dir.join("pyvenv.cfg").is_file())
        .map(Path::to_path_buf)
}

/// The first `name` on `PATH` that is a file, as `execvp` would find it.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Every Python or conda environment prefix (or site directory) this host names, in order:
/// its interpreter's (asked only when the sysroot is this machine's own `/`), the environment
/// variables', the current directory's, and those kept where their tools keep them.
pub fn environments(host: &Host) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match &host.python_sites {
        Some(sites) => sites.iter().map(|d| host.place(d)).collect(),
        None if host.is_own_root() => interpreter_sites(),
        None => Vec::new(),
    };
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(dir) = host.env.get(var).filter(|v| !v.is_empty()) {
            dirs.push(host.place(dir));
        }
    }
    if let Ok(cwd) = std::env::current_dir() {
        let cwd = host.place(cwd);
        dirs.extend(
            [cwd.join(".venv"), cwd.join("venv")]
                .into_iter()
                .filter(|d| host.is_file(d.join("pyvenv.cfg"))),
        );
    }
    let mut conda_bases = vec![host.place("/opt/conda")];
    if let Some(home) = &host.home {
        let home = host.place(home);
        for holder in [
            ".virtualenvs",
            ".local/share/virtualenvs",
            ".pyenv/versions",
        ] {
            dirs.extend(host.children_matching(&home.join(holder), |_| true));
        }
        for base in [
            "miniconda3",
            "anaconda3",
            "miniforge3",
            "mambaforge",
            ".conda",
        ] {
            conda_bases.push(home.join(base));
        }
        let listed = host
            .read(home.join(".conda/environments.txt"))
            .map(|text| conda_environments_txt(&String::from_utf8_lossy(&text)))
            .unwrap_or_default();
        dirs.extend(listed.iter().map(|d| host.place(d)));
    }
    for base in conda_bases {
        if host.is_dir(base.join("conda-meta")) {
            dirs.push(base.clone());
        }
        dirs.extend(host.children_matching(&base.join("envs"), |_| true));
    }
    let mut unique = Vec::new();
    for dir in dirs {
        if host.is_dir(&dir) && !unique.contains(&dir) {
            unique.push(dir);
        }
    }
    unique
}

/// The environment prefixes conda records in `~/.conda/environments.txt`.
fn conda_environments_txt(text: &str) -> Vec<PathBuf> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('/'))
        .map(PathBuf::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_venv_is_found_beside_its_interpreter_or_one_up() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        assert_eq!(venv_prefix(&venv.join("bin/python3")), None);
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(venv_prefix(&venv.join("bin/python3")), Some(venv.clone()));
        assert_eq!(venv_prefix(&venv.join("python3")), Some(venv));
    }

    #[test]
    fn finds_virtualenvs_and_conda_envs_under_home() {
        let home = tempfile::tempdir().unwrap();
        let venv = home.path().join(".virtualenvs/torch");
        let env = home.path().join("miniconda3/envs/cu13");
        std::fs::create_dir_all(&venv).unwrap();
        std::fs::create_dir_all(env.join("conda-meta")).unwrap();
        std::fs::create_dir_all(home.path().join(".conda")).unwrap();
        std::fs::write(
            home.path().join(".conda/environments.txt"),
            format!("{}\n", env.display()),
        )
        .unwrap();
        let host = Host {
            home: Some(home.path().to_path_buf()),
            python_sites: Some(vec![]),
            ..Host::default()
        };
        let found = environments(&host);
        assert!(found.contains(&venv), "{found:?}");
        assert_eq!(found.iter().filter(|d| **d == env).count(), 1, "{found:?}");
    }
}
