//! The environment of a worker run as another user, reset as `sudo`'s `env_reset` resets one:
//! nothing of ours goes along but an allow-list, so the secrets a root run holds (a CI runner's
//! tokens, cloud keys, Kerberos caches) never reach another user's code. The worker gets a fixed
//! `PATH`, its user's `HOME`, `USER`, `LOGNAME` and `SHELL`, our locale and time zone, and the
//! settings the load and the GPU need; stackbench adds what it sets for the worker itself
//! (`LD_LIBRARY_PATH`, filtered by the trust rule, among them).

use super::Identity;
use std::ffi::{OsStr, OsString};
use std::process::Command;

/// The `PATH` a worker run as another user gets, whatever ours is.
pub const SAFE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Variables passed along, by exact name: the locale and time zone, the settings of CUDA and
/// NCCL that choose devices and behaviour, and the simulated GPU's (tests only). None names
/// code or a place a library reads from or writes to: `CUDA_INJECTION64_PATH`,
/// `NVTX_INJECTION64_PATH` and NCCL's plugin variables name code a library loads unjudged, and
/// `CUDA_CACHE_PATH` would share one user's JIT cache with another's; they stay ours.
const KEPT: [&str; 40] = [
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "TZ",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_MAXSIZE",
    "CUDA_FORCE_PTX_JIT",
    "CUDA_DISABLE_PTX_JIT",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUDA_AUTO_BOOST",
    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
    "NCCL_DEBUG",
    "NCCL_DEBUG_SUBSYS",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_IB_HCA",
    "NCCL_NET",
    "NCCL_SOCKET_IFNAME",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NVLS_ENABLE",
    "NCCL_CUMEM_ENABLE",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "STACKBENCH_SIM_PROFILE",
    "STACKBENCH_SIM_TRACE",
    "STACKBENCH_SIM_BOOT",
];

/// The variables that name code a CUDA or NCCL library loads by itself, unjudged by the loader's
/// search: CUPTI's and NVTX's injection libraries, NCCL's network, tuner and profiler plugins.
pub const CODE_VARIABLES: [&str; 5] = [
    "CUDA_INJECTION64_PATH",
    "NVTX_INJECTION64_PATH",
    "NCCL_NET_PLUGIN",
    "NCCL_TUNER_PLUGIN",
    "NCCL_PROFILER_PLUGIN",
];

/// The code variables among `vars` whose file `uid` may not load by the trust rule, each with
/// its value and why: a worker of `uid` must not get them. A bare name (`NCCL_NET_PLUGIN=ofi`)
/// is a library the loader searches for, judged as every search path is; a file that is missing
/// loads nothing.
pub fn untrusted_code<'v>(
    uid: u32,
    vars: impl IntoIterator<Item = (&'v str, &'v str)>,
) -> Vec<(&'v str, &'v str, super::rule::Distrust)> {
    vars.into_iter()
        .filter(|(name, value)| CODE_VARIABLES.contains(name) && value.starts_with('/'))
        .filter_map(|(name, value)| {
            match super::rule::check(std::path::Path::new(value), false, uid) {
                Ok(()) | Err(super::rule::Distrust::Missing { .. }) => None,
                Err(distrust) => Some((name, value, distrust)),
            }
        })
        .collect()
}

/// Leaves out of `command`'s environment the code variables of ours that name a file this
/// process's user may not load ([`untrusted_code`]): a worker run as ourselves (root) would
/// otherwise run another user's injection library or plugin as root.
pub fn drop_untrusted_code(command: &mut Command) {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let ours: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let pairs = ours.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    for (name, _, _) in untrusted_code(me, pairs) {
        command.env_remove(name);
    }
}

/// Whether a variable of ours goes along to a worker run as another user.
pub fn is_kept(name: &OsStr) -> bool {
    name.to_str().is_some_and(|name| KEPT.contains(&name))
}

/// The variables a worker run as `user` starts with, from `ours` (our own environment): the
/// allow-listed ones, then `PATH` and the user's own.
pub fn for_user(
    user: &Identity,
    ours: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut vars: Vec<(OsString, OsString)> =
        ours.into_iter().filter(|(name, _)| is_kept(name)).collect();
    vars.push(("PATH".into(), SAFE_PATH.into()));
    if let Some(home) = &user.home {
        vars.push(("HOME".into(), home.into()));
    }
    if let Some(name) = &user.name {
        vars.push(("USER".into(), name.into()));
        vars.push(("LOGNAME".into(), name.into()));
    }
    if let Some(shell) = &user.shell {
        vars.push(("SHELL".into(), shell.into()));
    }
    vars
}

/// The names of the variables [`for_user`] gives `user` from our environment, sorted: what a
/// report lists (never the values).
pub fn names_for(user: &Identity) -> Vec<String> {
    let mut names: Vec<String> = for_user(user, std::env::vars_os())
        .into_iter()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Resets `command`'s environment for a worker run as `user`: what stackbench set on it
/// explicitly stays, and of ours only what [`for_user`] allows.
pub fn reset(command: &mut Command, user: &Identity) {
    let explicit: Vec<(OsString, Option<OsString>)> = command
        .get_envs()
        .map(|(name, value)| (name.to_owned(), value.map(OsStr::to_owned)))
        .collect();
    command.env_clear();
    command.envs(for_user(user, std::env::vars_os()));
    for (name, value) in explicit {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn alice() -> Identity {
        Identity {
            uid: 1000,
            gid: 1000,
            groups: vec![1000],
            name: Some("alice".into()),
            home: Some(PathBuf::from("/home/alice")),
            shell: Some(PathBuf::from("/bin/bash")),
        }
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(n, v)| (OsString::from(n), OsString::from(v)))
            .collect()
    }

    #[test]
    fn only_the_allow_list_and_the_users_own_go_along() {
        let ours = vars(&[
            ("CI_SECRET_TOKEN", "s3cret"),
            ("AWS_SECRET_ACCESS_KEY", "k"),
            ("KRB5CCNAME", "/tmp/krb5cc_0"),
            ("LD_PRELOAD", "/tmp/x.so"),
            ("LD_LIBRARY_PATH", "/home/bob/lib"),
            ("PYTHONPATH", "/root/py"),
            ("PATH", "/root/bin:/usr/bin"),
            ("HOME", "/root"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("TZ", "UTC"),
            ("CUDA_VISIBLE_DEVICES", "0"),
            ("CUDA_MODULE_LOADING", "LAZY"),
            ("NVIDIA_VISIBLE_DEVICES", "all"),
            ("NCCL_DEBUG", "INFO"),
            ("STACKBENCH_SIM_PROFILE", "h100"),
            // Code and places a library reads: never another user's to get from root.
            ("CUDA_INJECTION64_PATH", "/root/inject.so"),
            ("NVTX_INJECTION64_PATH", "/root/nvtx.so"),
            ("NCCL_NET_PLUGIN", "/root/net.so"),
            ("NCCL_TUNER_PLUGIN", "/root/tuner.so"),
            ("NCCL_PROFILER_PLUGIN", "/root/profiler.so"),
            ("CUDA_CACHE_PATH", "/root/.nv/ComputeCache"),
            ("NCCL_DEBUG_FILE", "/root/nccl.%h.%p"),
        ]);
        let got = for_user(&alice(), ours);
        let expected = vars(&[
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("TZ", "UTC"),
            ("CUDA_VISIBLE_DEVICES", "0"),
            ("CUDA_MODULE_LOADING", "LAZY"),
            ("NVIDIA_VISIBLE_DEVICES", "all"),
            ("NCCL_DEBUG", "INFO"),
            ("STACKBENCH_SIM_PROFILE", "h100"),
            ("PATH", SAFE_PATH),
            ("HOME", "/home/alice"),
            ("USER", "alice"),
            ("LOGNAME", "alice"),
            ("SHELL", "/bin/bash"),
        ]);
        assert_eq!(got, expected);
    }

    #[test]
    fn code_variables_naming_a_file_others_can_change_are_found() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &std::path::Path, m| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        mode(dir.path(), 0o755);
        let ours = dir.path().join("inject.so");
        let open = dir.path().join("plugin.so");
        for file in [&ours, &open] {
            std::fs::write(file, b"").unwrap();
        }
        mode(&ours, 0o644);
        mode(&open, 0o666);
        let (ours, open) = (ours.display().to_string(), open.display().to_string());
        let vars = [
            ("CUDA_INJECTION64_PATH", ours.as_str()),
            ("NCCL_NET_PLUGIN", open.as_str()),
            ("NCCL_TUNER_PLUGIN", "ofi"),
            ("NVTX_INJECTION64_PATH", "/nonexistent/nvtx.so"),
            ("LD_PRELOAD", open.as_str()),
        ];
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let found: Vec<&str> = untrusted_code(me, vars)
            .into_iter()
            .map(|(n, _, _)| n)
            .collect();
        assert_eq!(found, ["NCCL_NET_PLUGIN"]);
    }

    #[test]
    fn a_user_without_an_entry_gets_the_safe_path_alone() {
        let nobody = Identity::of(4242, 4242);
        assert_eq!(
            for_user(&nobody, vars(&[("HOME", "/root"), ("USER", "root")])),
            vars(&[("PATH", SAFE_PATH)])
        );
    }

    #[test]
    fn what_stackbench_sets_stays_and_nothing_else_of_ours() {
        let mut command = Command::new("env");
        command
            .env("LD_LIBRARY_PATH", "/opt/lib")
            .env("HOME", "/set/explicitly")
            .env_remove("LANG");
        reset(&mut command, &alice());
        let envs: Vec<(String, Option<String>)> = command
            .get_envs()
            .map(|(n, v)| {
                (
                    n.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let value = |name: &str| {
            envs.iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, v)| v.clone())
        };
        assert_eq!(value("LD_LIBRARY_PATH").as_deref(), Some("/opt/lib"));
        assert_eq!(value("HOME").as_deref(), Some("/set/explicitly"));
        assert_eq!(value("PATH").as_deref(), Some(SAFE_PATH));
        assert_eq!(value("LANG"), None);
        // Whatever the test runner's environment holds, nothing outside the allow-list is set.
        for (name, _) in &envs {
            assert!(
                is_kept(OsStr::new(name))
                    || [
                        "LD_LIBRARY_PATH",
                        "PATH",
                        "HOME",
                        "USER",
                        "LOGNAME",
                        "SHELL",
                        "LANG"
                    ]
                    .contains(&name.as_str()),
                "{name}"
            );
        }
    }
}
