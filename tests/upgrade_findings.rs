//! The failures that follow a driver upgrade, explained offline: `doctor --sysroot` on root
//! file systems built here from the real 535.261.03 driver library of the fixtures and the small
//! text files NVIDIA's driver, the Fabric Manager's package and the NVIDIA Container Toolkit
//! leave. Each finding has a tree that shows it; the healthy tree shows none of them.
//!
//! The texts are those the real files hold:
//! - `/proc/driver/nvidia/version` (the loaded module; proprietary build):
//!   `NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024`
//!   then `GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)`.
//! - `/sys/module/nvidia/version`: the version alone, `550.54.15`.
//! - the user-space driver: `libcuda.so.1 -> libcuda.so.535.261.03`, whose `.rodata` holds the
//!   NUL-terminated string `535.261.03` (read here without loading the library).
//! - `/proc/driver/nvidia/gpus/<pci address>/information`: `Model: \t\t NVIDIA GeForce RTX 4090`,
//!   `IRQ: ...`, `GPU UUID: ...`, one `Key: value` a line.
//! - `/var/lib/dpkg/status`: paragraphs `Package: nvidia-fabricmanager-550`,
//!   `Status: install ok installed`, `Version: 550.54.15-1`.
//! - a CDI spec (`nvidia-ctk cdi generate`): YAML whose `containerEdits.mounts` name
//!   `hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03`.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The module's version file as the proprietary 550.54.15 module writes it.
const PROC_550: &str = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n";
/// The same for the 535.261.03 module the fixture's library belongs to.
const PROC_535: &str = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Wed Jun  4 19:38:45 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
/// The distribution's library directory.
const LIB: &str = "usr/lib/x86_64-linux-gnu";
/// The causes of issue 21.
const UPGRADE_CAUSES: &[&str] = &[
    "kernel_module_mismatch",
    "stale_driver_library",
    "fabric_manager",
    "container_capabilities",
    "cuda_compat",
];

/// A root file system under construction.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Tree {
        Tree {
            dir: tempfile::tempdir().expect("temporary root"),
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn path(&self, inside: &str) -> PathBuf {
        self.dir.path().join(inside.trim_start_matches('/'))
    }

    fn write(&self, inside: &str, bytes: impl AsRef<[u8]>) -> &Tree {
        let path = self.path(inside);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
        self
    }

    fn link(&self, inside: &str, target: &str) -> &Tree {
        let path = self.path(inside);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, path).unwrap();
        self
    }

    /// The real 535.261.03 `libcuda` and `libnvidia-ml` in `dir`, with their soname links as
    /// the package makes them (relative), or absolute ones.
    fn driver_535(&self, dir: &str, absolute: bool) -> &Tree {
        for stem in ["libcuda.so", "libnvidia-ml.so"] {
            let file = format!("{stem}.535.261.03");
            let to = self.path(&format!("{dir}/{file}"));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            let from = fixture(&format!("{DRIVER_AMD64}/{file}"));
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).unwrap();
            }
            let target = match absolute {
                true => format!("/{dir}/{file}"),
                false => file.clone(),
            };
            self.link(&format!("{dir}/{stem}.1"), &target);
        }
        self
    }

    /// A stand-in driver library of another version: an x86-64 ELF header and the version
    /// string, as the real library holds it (enough for the static reading; never loaded).
    fn fake_libcuda(&self, dir: &str, version: &str) -> &Tree {
        let mut bytes = vec![0u8; 64];
        bytes[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
        bytes[16] = 3;
        bytes[18] = 62;
        bytes.extend_from_slice(format!("\0{version}\0").as_bytes());
        self.write(&format!("{dir}/libcuda.so.{version}"), bytes);
        self.link(
            &format!("{dir}/libcuda.so.1"),
            &format!("libcuda.so.{version}"),
        )
    }

    /// The module's files for `proc` (the `/proc` text) and its version.
    fn module(&self, proc: &str, version: &str) -> &Tree {
        self.write("/proc/driver/nvidia/version", proc)
            .write("/sys/module/nvidia/version", format!("{version}\n"))
    }
}

/// `doctor --sysroot` on the tree, as JSON, with only `env` in the environment.
fn doctor(tree: &Tree, env: &[(&str, &str)]) -> (Option<i32>, Value) {
    let home = tempfile::tempdir().unwrap();
    let output = isolated_stackbench(home.path())
        .envs(env.iter().copied())
        .args(["doctor", "--sysroot"])
        .arg(tree.dir.path())
        .args(["--format", "json"])
        .output()
        .expect("run stackbench");
    (output.status.code(), stdout_json(&output))
}

/// The causes of issue 21 among the findings.
fn upgrade_causes(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["cause"].as_str())
        .filter(|c| UPGRADE_CAUSES.contains(c))
        .map(str::to_owned)
        .collect()
}

/// A host with the 535.261.03 module loaded and its own libraries: nothing to find.
fn healthy() -> Tree {
    let tree = Tree::new();
    tree.module(PROC_535, "535.261.03").driver_535(LIB, false);
    tree
}

#[test]
fn a_550_module_under_the_535_library_is_the_first_finding_naming_both_and_exits_1() {
    let tree = Tree::new();
    // Absolute links, as some installers write them: followed inside the tree only.
    tree.module(PROC_550, "550.54.15").driver_535(LIB, true);
    // This machine's own places would answer otherwise: a library directory on
    // LD_LIBRARY_PATH holding a libcuda.so.1 of the module's version, and the machine's own
    // /proc and /usr/lib (no NVIDIA driver at all). None of it may be read.
    let decoy = Tree::new();
    decoy.fake_libcuda("lib", "550.54.15");
    let decoy_lib = decoy.path("lib");
    let (code, report) = doctor(&tree, &[("LD_LIBRARY_PATH", decoy_lib.to_str().unwrap())]);
    assert_eq!(code, Some(1), "{report:#}");
    let first = &report["findings"][0];
    assert_eq!(first["cause"], "kernel_module_mismatch", "{report:#}");
    assert_eq!(first["severity"], "error");
    let message = first["message"].as_str().unwrap();
    assert!(
        message.contains("kernel module is 550.54.15") && message.contains("driver is 535.261.03"),
        "{message}"
    );
    assert!(first["fix"].as_str().unwrap().contains("modprobe nvidia"));
    let evidence = strings(&first["evidence"]);
    assert!(
        evidence
            .iter()
            .any(|e| e.starts_with("/proc/driver/nvidia/version: NVRM version:")),
        "{evidence:?}"
    );
    // The library's version from its name and from the string inside it, both read in the tree.
    let libcuda = &report["driver_files"]["libcuda"];
    assert_eq!(libcuda.as_array().unwrap().len(), 1, "{libcuda:#}");
    assert_eq!(
        libcuda[0]["real"],
        "/usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03"
    );
    assert_eq!(libcuda[0]["name_version"], "535.261.03");
    assert_eq!(libcuda[0]["embedded_version"], "535.261.03");
    assert_eq!(
        report["driver_files"]["nvml"][0]["embedded_version"],
        "535.261.03"
    );
    assert_eq!(report["gpu"]["driver_version"], "550.54.15");
    assert_eq!(report["loaded"], false);
    // Nothing outside the tree was searched or found.
    let root = tree.root();
    for place in report["searched"].as_array().unwrap() {
        let path = Path::new(place["path"].as_str().unwrap());
        assert!(
            path.starts_with(&root),
            "searched outside the tree: {place}"
        );
    }
    for installation in report["installations"].as_array().unwrap() {
        let path = Path::new(installation["root"].as_str().unwrap());
        assert!(
            path.starts_with(&root),
            "found outside the tree: {installation}"
        );
    }
}

#[test]
fn doctor_sysroot_opens_nothing_outside_the_tree_that_a_process_does_not_open_anyway() {
    // Absolute links and no ld.so.cache: the loader's simulation finds libcuda.so.1 in the
    // default directories, behind a link that names a place this machine does not have (or
    // has with something else in it).
    let tree = Tree::new();
    tree.module(PROC_550, "550.54.15").driver_535(LIB, true);
    // This machine's places, which the tree's absolute links and LD_LIBRARY_PATH name: a
    // driver library, a conda installation, a virtualenv, a toolkit, an ld.so.conf file.
    let decoy = Tree::new();
    decoy
        .fake_libcuda("lib", "550.54.15")
        .write("conda/conda-meta/history", "")
        .write("conda/envs/e/conda-meta/history", "")
        .write("venv/pyvenv.cfg", "home = /usr/bin\n")
        .write("cuda-12.9/version.json", "{}")
        .write("host.conf", format!("{}\n", decoy.path("lib").display()));
    for (inside, place) in [
        ("opt/conda", "conda"),
        ("srv/venv", "venv"),
        ("usr/local/cuda-12.9", "cuda-12.9"),
        ("etc/ld.so.conf.d/host.conf", "host.conf"),
    ] {
        tree.link(inside, decoy.path(place).to_str().unwrap());
    }
    tree.write("etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
    let decoy_lib = decoy.path("lib");
    let env = [("LD_LIBRARY_PATH", decoy_lib.to_str().unwrap())];
    let sysroot = tree.root();
    let traced = traced_doctor_sysroot(&sysroot, &env);
    let report = &traced.report;
    assert_eq!(traced.code, Some(1), "{report:#}");
    assert_eq!(report["findings"][0]["cause"], "kernel_module_mismatch");
    assert!(findings_of(report, "no_driver").is_empty(), "{report:#}");
    assert!(
        traced.outside.is_empty(),
        "read outside the tree: {:#?}\n{}",
        traced.outside,
        traced.trace
    );
}

#[test]
fn the_healthy_tree_shows_none_of_the_upgrade_findings() {
    let tree = healthy();
    tree.write(
        "/var/lib/dpkg/status",
        "Package: nvidia-fabricmanager-535\nStatus: install ok installed\nVersion: 535.261.03-1\n",
    );
    tree.write("/usr/bin/nv-fabricmanager", "fabric manager");
    tree.link(
        "/etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service",
        "/lib/systemd/system/nvidia-fabricmanager.service",
    );
    tree.write("/proc/driver/nvidia-nvswitch/devices/0000:05:00.0", "");
    tree.write(
        "/etc/cdi/nvidia.yaml",
        "cdiVersion: 0.5.0\ncontainerEdits:\n  mounts:\n  - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03\n    hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.261.03\nkind: nvidia.com/gpu\n",
    );
    let (_, report) = doctor(&tree, &[]);
    assert_eq!(upgrade_causes(&report), Vec::<String>::new(), "{report:#}");
    assert_eq!(
        report["driver_files"]["modules"][0]["version"],
        "535.261.03"
    );
}

#[test]
fn an_old_libcuda_on_ld_library_path_before_the_driver_s_own_is_stale() {
    let tree = healthy();
    tree.fake_libcuda("/opt/old/lib", "470.57.02");
    let (code, report) = doctor(&tree, &[("LD_LIBRARY_PATH", "/opt/old/lib")]);
    assert_eq!(code, Some(1));
    let stale = findings_of(&report, "stale_driver_library");
    assert_eq!(stale.len(), 1, "{report:#}");
    assert_eq!(stale[0]["severity"], "error");
    let message = stale[0]["message"].as_str().unwrap();
    assert!(
        message.contains("470.57.02") && message.contains("535.261.03"),
        "{message}"
    );
    assert!(stale[0]["fix"]
        .as_str()
        .unwrap()
        .starts_with("take /opt/old/lib off LD_LIBRARY_PATH"));
    // Its own version is reachable: the module is not the problem.
    assert!(
        findings_of(&report, "kernel_module_mismatch").is_empty(),
        "{report:#}"
    );
}

#[test]
fn another_driver_s_files_left_beside_the_current_one_are_stale() {
    let tree = healthy();
    let mut old = vec![0u8; 64];
    old[..4].copy_from_slice(b"\x7fELF");
    tree.write(&format!("{LIB}/libcuda.so.470.57.02"), old);
    let (_, report) = doctor(&tree, &[]);
    let stale = findings_of(&report, "stale_driver_library");
    assert_eq!(stale.len(), 1, "{report:#}");
    assert_eq!(stale[0]["severity"], "warning");
    assert!(stale[0]["fix"]
        .as_str()
        .unwrap()
        .ends_with("sudo rm /usr/lib/x86_64-linux-gnu/libcuda.so.470.57.02"));
}

#[test]
fn an_nvswitch_system_without_fabric_manager_gets_802_and_the_install_to_fix_it() {
    let tree = healthy();
    tree.write("/proc/driver/nvidia-nvswitch/devices/0000:05:00.0", "");
    let (code, report) = doctor(&tree, &[]);
    assert_eq!(code, Some(1));
    let fm = findings_of(&report, "fabric_manager");
    assert_eq!(fm.len(), 1, "{report:#}");
    assert!(fm[0]["message"].as_str().unwrap().contains("(802)"));
    assert!(fm[0]["fix"]
        .as_str()
        .unwrap()
        .contains("apt install nvidia-fabricmanager-535=535.261.03-1"));
}

/// What the first real GPU host showed (a one-H100 VM, driver 580): the nvswitch module's
/// directory and control node exist with no switch behind them, and CUDA works.
#[test]
fn the_nvswitch_module_without_a_switch_is_no_fabric() {
    let tree = healthy();
    tree.write(
        "/proc/driver/nvidia-nvswitch/version",
        "NVRM version: 535.261.03\n",
    )
    .write("/dev/nvidia-nvswitchctl", "");
    let (_, report) = doctor(&tree, &[]);
    assert_eq!(
        findings_of(&report, "fabric_manager"),
        Vec::<serde_json::Value>::new()
    );
    // A switch's device node alone is a switch.
    tree.write("/dev/nvidia-nvswitch0", "");
    let (_, report) = doctor(&tree, &[]);
    assert_eq!(
        findings_of(&report, "fabric_manager").len(),
        1,
        "{report:#}"
    );
}

#[test]
fn a_fabric_manager_of_another_version_than_the_driver_is_named() {
    let tree = healthy();
    tree.write("/proc/driver/nvidia-nvswitch/devices/0000:05:00.0", "")
        .write("/usr/bin/nv-fabricmanager", "fabric manager")
        .write("/var/lib/dpkg/status", "Package: nvidia-fabricmanager-550\nStatus: install ok installed\nVersion: 550.54.15-1\n");
    let (_, report) = doctor(&tree, &[]);
    let fm = findings_of(&report, "fabric_manager");
    assert_eq!(fm.len(), 1, "{report:#}");
    let message = fm[0]["message"].as_str().unwrap();
    assert!(
        message.contains("550.54.15") && message.contains("535.261.03"),
        "{message}"
    );
}

#[test]
fn a_container_without_the_compute_capability_gets_no_libcuda() {
    let tree = Tree::new();
    tree.write("/.dockerenv", "");
    let env = [
        ("NVIDIA_VISIBLE_DEVICES", "all"),
        ("NVIDIA_DRIVER_CAPABILITIES", "utility"),
    ];
    let (code, report) = doctor(&tree, &env);
    assert_eq!(code, Some(1));
    let caps = findings_of(&report, "container_capabilities");
    assert_eq!(caps.len(), 1, "{report:#}");
    assert!(caps[0]["message"]
        .as_str()
        .unwrap()
        .contains("lacks compute"));
    assert!(caps[0]["fix"]
        .as_str()
        .unwrap()
        .starts_with("set NVIDIA_DRIVER_CAPABILITIES=compute,utility"));
    // Without compute the missing driver is an error still.
    assert_eq!(findings_of(&report, "no_driver")[0]["severity"], "error");
}

#[test]
fn a_container_with_no_visible_devices_is_named() {
    let tree = Tree::new();
    tree.write("/run/.containerenv", "");
    let env = [
        ("NVIDIA_VISIBLE_DEVICES", "void"),
        ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
    ];
    let (_, report) = doctor(&tree, &env);
    let caps = findings_of(&report, "container_capabilities");
    assert_eq!(caps.len(), 1, "{report:#}");
    assert!(caps[0]["message"].as_str().unwrap().contains("\"void\""));
}

#[test]
fn a_cdi_spec_of_the_driver_before_the_upgrade_is_named_with_its_regeneration() {
    let tree = healthy();
    tree.write(
        "/etc/cdi/nvidia.yaml",
        "cdiVersion: 0.5.0\ncontainerEdits:\n  mounts:\n  - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.530.30.02\n    hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.530.30.02\nkind: nvidia.com/gpu\n",
    );
    let (_, report) = doctor(&tree, &[]);
    let caps = findings_of(&report, "container_capabilities");
    assert_eq!(caps.len(), 1, "{report:#}");
    assert!(caps[0]["message"]
        .as_str()
        .unwrap()
        .contains("names driver 530.30.02"));
    assert_eq!(
        caps[0]["fix"],
        "regenerate it for the installed driver: `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`"
    );
}

#[test]
fn a_cuda_compat_libcuda_older_than_the_host_driver_must_not_be_used() {
    let tree = healthy();
    tree.fake_libcuda("/usr/local/cuda-12.2/compat", "525.147.05")
        .write("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
        .write(
            "/etc/ld.so.conf.d/000_cuda.conf",
            "/usr/local/cuda-12.2/compat\n",
        );
    let (code, report) = doctor(&tree, &[]);
    assert_eq!(code, Some(1));
    let compat = findings_of(&report, "cuda_compat");
    assert_eq!(compat.len(), 1, "{report:#}");
    let message = compat[0]["message"].as_str().unwrap();
    assert!(
        message.contains("525.147.05")
            && message.contains("535.261.03")
            && message.contains("(803)"),
        "{message}"
    );
    let evidence = strings(&compat[0]["evidence"]);
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("Forward Compatibility is applicable only")),
        "{evidence:?}"
    );
}

#[test]
fn a_cuda_compat_libcuda_on_a_geforce_gpu_is_unsupported() {
    let tree = healthy();
    tree.fake_libcuda("/usr/local/cuda-12.9/compat", "575.57.08")
        .write("/etc/ld.so.conf", "/usr/local/cuda-12.9/compat\n")
        .write(
            "/proc/driver/nvidia/gpus/0000:01:00.0/information",
            "Model: \t\t NVIDIA GeForce RTX 4090\nIRQ:   \t\t 185\nGPU UUID: \t GPU-5f2a3b9c-0000-0000-0000-000000000000\n",
        );
    let (_, report) = doctor(&tree, &[]);
    let compat = findings_of(&report, "cuda_compat");
    assert_eq!(compat.len(), 1, "{report:#}");
    let message = compat[0]["message"].as_str().unwrap();
    assert!(
        message.contains("NVIDIA GeForce RTX 4090") && message.contains("(804)"),
        "{message}"
    );
}

#[test]
fn a_check_run_records_the_kernel_module_beside_the_driver_library() {
    use stackbench::check::{check, CheckOptions, Selection};
    // The host: a 550.54.15 module loaded; the combination: CUDA 12.9's runtime with the 535
    // driver library of the fixtures (no GPU here: the checks fail, the record stays).
    let host_tree = Tree::new();
    host_tree.module(PROC_550, "550.54.15");
    let toolkit = Tree::new();
    std::fs::create_dir_all(toolkit.path("lib")).unwrap();
    std::fs::copy(real_cudart(), toolkit.path("lib/libcudart.so.12")).unwrap();
    let options = CheckOptions {
        selection: Selection {
            discover: stackbench::discover::Options {
                roots: vec![toolkit.root()],
                system: false,
            },
            driver_dir: Some(fixture(DRIVER_AMD64)),
            select: Vec::new(),
            config: Default::default(),
            target: None,
            devices: stackbench::devices::DeviceChoice::All,
            trust: stackbench::trust::Policy::strict(),
        },
        timeout: std::time::Duration::from_secs(60),
        worker: stackbench_bin(),
    };
    let host = stackbench::discover::Host {
        sysroot: host_tree.root(),
        ..stackbench::discover::Host::default()
    };
    let report = check(&options, &host).expect("a check run");
    assert!(!report.combinations.is_empty(), "{report:#?}");
    for combination in &report.combinations {
        let driver = combination.driver.as_ref().expect("a driver library");
        assert_eq!(driver.version.as_deref(), Some("535.261.03"), "{driver:?}");
        assert_eq!(
            driver.kernel_module.as_deref(),
            Some("550.54.15"),
            "{driver:?}"
        );
    }
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["combinations"][0]["driver"]["kernel_module"],
        "550.54.15"
    );
}
