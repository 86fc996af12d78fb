//! `doctor --sysroot` on an image made to run NCCL across nodes (issue 53's first Done-when):
//! without rdma-core, NCCL would use sockets between nodes, and doctor names the fallback and the
//! packages to install; with Debian's real rdma-core (`ci/fetch-rdma-core`) and its providers,
//! nothing; with providers of another rdma-core's ABI, or none configured, the fallback again,
//! each with its evidence.

// Tests read the files they make and the checkout's own: std's readers are theirs (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use common::image::{nccl_image, IMAGE_ENV};
use common::*;
use serde_json::Value;
use std::path::Path;

/// `doctor --sysroot` on the image, with the image's environment and `extra`, as JSON.
fn doctor(root: &Path, extra: &[(&str, &str)]) -> Value {
    let home = tempfile::tempdir().unwrap();
    let output = isolated_stackbench(home.path())
        .envs(IMAGE_ENV.iter().copied())
        .envs(extra.iter().copied())
        .args(["doctor", "--sysroot"])
        .arg(root)
        .args(["--format", "json"])
        .output()
        .expect("run stackbench");
    stdout_json(&output)
}

/// The image's `nccl_net_fallback` findings.
fn fallbacks(report: &Value) -> Vec<Value> {
    findings_of(report, "nccl_net_fallback")
}

/// The one fallback's message, fix and evidence in one text.
fn only(report: &Value) -> String {
    let found = fallbacks(report);
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["library"], "libnccl.so.2");
    format!("{}\n{}\n{}", f["message"], f["fix"], f["evidence"])
}

#[test]
fn an_image_with_nccl_and_no_rdma_core_falls_back_to_sockets_between_nodes() {
    let image = nccl_image(false);
    let text = only(&doctor(image.path(), &[]));
    assert!(
        text.contains("finds no libibverbs.so.1 (rdma-core)"),
        "{text}"
    );
    assert!(
        text.contains("NCCL will use sockets between nodes"),
        "{text}"
    );
    assert!(
        text.contains("apt-get install libibverbs1 ibverbs-providers"),
        "{text}"
    );
    assert!(text.contains("NCCL_NET=IB"), "{text}");
}

#[test]
fn an_image_with_debian_s_rdma_core_and_its_providers_has_no_fallback() {
    let image = nccl_image(true);
    let report = doctor(image.path(), &[]);
    assert_eq!(fallbacks(&report), Vec::<Value>::new());
}

#[test]
fn providers_of_another_rdma_core_or_none_configured_still_fall_back() {
    let image = nccl_image(true);
    let providers = image.path().join("usr/lib/x86_64-linux-gnu/libibverbs");
    for entry in std::fs::read_dir(&providers).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let older = providers.join(name.replace("-rdmav34.so", "-rdmav25.so"));
        std::fs::rename(&path, older).unwrap();
    }
    let text = only(&doctor(image.path(), &[]));
    assert!(text.contains("none of the RDMA providers"), "{text}");
    assert!(text.contains("provider ABI 34"), "{text}");
    assert!(text.contains("libmlx5-rdmav25.so"), "{text}");

    std::fs::remove_dir_all(image.path().join("etc/libibverbs.d")).unwrap();
    let text = only(&doctor(image.path(), &[]));
    assert!(text.contains("no RDMA provider is configured"), "{text}");
}

#[test]
fn a_network_plugin_nccl_cannot_open_is_named() {
    let image = nccl_image(true);
    let text = only(&doctor(image.path(), &[("NCCL_NET_PLUGIN", "ofi")]));
    assert!(text.contains("NCCL_NET_PLUGIN=ofi"), "{text}");
    assert!(text.contains("libnccl-net-ofi.so"), "{text}");
}

/// Writes `text` to `rel` under `root`, its directories made.
fn put(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A support bundle's kernel view laid into the image: two HCAs (mlx5_0's port down), two
/// interfaces, the proprietary NVIDIA module on Linux 6.1 and no nvidia_peermem.
fn with_rdma_devices(root: &Path) {
    for (device, state, phys) in [
        ("mlx5_0", "1: DOWN", "3: Disabled"),
        ("mlx5_1", "4: ACTIVE", "5: LinkUp"),
    ] {
        let port = format!("sys/class/infiniband/{device}/ports/1");
        put(root, &format!("{port}/state"), state);
        put(root, &format!("{port}/phys_state"), phys);
        put(root, &format!("{port}/rate"), "400 Gb/sec (4X NDR)");
        put(root, &format!("{port}/link_layer"), "InfiniBand");
    }
    // mlx5_1 behind a translating IOMMU; mlx5_0 in passthrough.
    put(
        root,
        "sys/class/infiniband/mlx5_0/device/iommu_group/type",
        "identity\n",
    );
    put(
        root,
        "sys/class/infiniband/mlx5_1/device/iommu_group/type",
        "DMA-FQ\n",
    );
    for interface in ["lo", "eth0"] {
        std::fs::create_dir_all(root.join("sys/class/net").join(interface)).unwrap();
    }
    put(
        root,
        "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Thu Jan 16 2025\n",
    );
    put(root, "proc/sys/kernel/osrelease", "6.1.0-28-amd64\n");
}

/// The findings of `cause`, one text each: message, fix and evidence.
fn texts(report: &Value, cause: &str) -> Vec<String> {
    (findings_of(report, cause).iter())
        .map(|f| {
            format!(
                "{} {}\n{}\n{}",
                f["severity"], f["message"], f["fix"], f["evidence"]
            )
        })
        .collect()
}

#[test]
fn rdma_devices_a_port_down_gdr_the_iommu_and_nccl_s_device_settings_are_judged_from_sysfs() {
    let image = nccl_image(true);
    with_rdma_devices(image.path());
    let report = doctor(image.path(), &[]);
    let down = texts(&report, "rdma_port_down");
    assert_eq!(down.len(), 1, "{down:?}");
    assert!(
        down[0]
            .starts_with("\"warning\" \"1 of 2 RDMA port(s) not active (mlx5_0 port 1: 1: DOWN)"),
        "{down:?}"
    );
    assert!(
        down[0].contains("mlx5_1 port 1: state 4: ACTIVE"),
        "{down:?}"
    );
    let gdr = texts(&report, "gdr_disabled");
    assert_eq!(gdr.len(), 1, "{gdr:?}");
    assert!(gdr[0].contains("modprobe nvidia_peermem"), "{gdr:?}");
    assert!(texts(&report, "nccl_interface_missing").is_empty());
    assert!(fallbacks(&report).is_empty(), "{:?}", fallbacks(&report));
    let iommu = texts(&report, "iommu_translated");
    assert_eq!(iommu.len(), 1, "{iommu:?}");
    assert!(
        iommu[0].contains("1 RDMA device(s)")
            && iommu[0]
                .contains("mlx5_1: /sys/class/infiniband/mlx5_1/device/iommu_group/type is DMA-FQ"),
        "{iommu:?}"
    );
    assert!(iommu[0].contains("iommu=pt"), "{iommu:?}");

    // NCCL's settings naming what is not there.
    let report = doctor(
        image.path(),
        &[("NCCL_IB_HCA", "=mlx5_9"), ("NCCL_SOCKET_IFNAME", "ib")],
    );
    let hca = texts(&report, "nccl_net_fallback");
    assert_eq!(hca.len(), 1, "{hca:?}");
    assert!(
        hca[0].contains(
            "NCCL_IB_HCA==mlx5_9 selects none of this host's RDMA devices (mlx5_0, mlx5_1)"
        ),
        "{hca:?}"
    );
    let interface = texts(&report, "nccl_interface_missing");
    assert_eq!(interface.len(), 1, "{interface:?}");
    assert!(interface[0].contains("(eth0, lo)"), "{interface:?}");
    let fine = doctor(
        image.path(),
        &[("NCCL_IB_HCA", "mlx5_1:1"), ("NCCL_SOCKET_IFNAME", "^lo")],
    );
    assert!(texts(&fine, "nccl_net_fallback").is_empty());
    assert!(texts(&fine, "nccl_interface_missing").is_empty());

    // Both ports up, nvidia_peermem loaded, the IOMMU in passthrough: nothing.
    put(
        image.path(),
        "sys/class/infiniband/mlx5_1/device/iommu_group/type",
        "identity\n",
    );
    put(
        image.path(),
        "sys/class/infiniband/mlx5_0/ports/1/state",
        "4: ACTIVE",
    );
    std::fs::create_dir_all(image.path().join("sys/module/nvidia_peermem")).unwrap();
    let clean = doctor(image.path(), &[]);
    for cause in [
        "rdma_port_down",
        "gdr_disabled",
        "nccl_net_fallback",
        "iommu_translated",
    ] {
        assert!(
            texts(&clean, cause).is_empty(),
            "{cause}: {:?}",
            texts(&clean, cause)
        );
    }
}

/// 4 KiB of a bridge's config space whose one extended capability, at 0x100, is ACS with
/// `control` (the ACS control register, offset 6).
fn bridge_config(control: u16) -> Vec<u8> {
    let mut bytes = vec![0u8; 4096];
    bytes[0x100..0x104].copy_from_slice(&0x000d_u32.to_le_bytes());
    bytes[0x106..0x108].copy_from_slice(&control.to_le_bytes());
    bytes
}

#[test]
fn acs_redirecting_on_a_bridge_between_a_gpu_and_its_hca_is_named() {
    let image = nccl_image(true);
    let root = image.path();
    // One switch (upstream port 01:00.0) under root port 00:01.0; the GPU below its downstream
    // port 02:08.0, the HCA below 02:10.0; sysfs's links to both, relative as the kernel's are.
    let switch = "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
    let gpu = format!("{switch}/0000:02:08.0/0000:03:00.0");
    let hca = format!("{switch}/0000:02:10.0/0000:04:00.0");
    put(root, &format!("{gpu}/vendor"), "0x10de\n");
    put(root, &format!("{gpu}/class"), "0x030200\n");
    put(root, &format!("{hca}/vendor"), "0x15b3\n");
    put(
        root,
        "sys/class/infiniband/mlx5_0/ports/1/state",
        "4: ACTIVE",
    );
    let write_config = |bridge: &str, control: u16| {
        let path = root.join(format!("{switch}/{bridge}config"));
        std::fs::write(path, bridge_config(control)).unwrap();
    };
    write_config("../", 0);
    write_config("", 0);
    write_config("0000:02:08.0/", 0x001d);
    write_config("0000:02:10.0/", 0);
    std::fs::create_dir_all(root.join("sys/bus/pci/devices")).unwrap();
    std::os::unix::fs::symlink(
        format!("../../../../{gpu}"),
        root.join("sys/bus/pci/devices/0000:03:00.0"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        format!("../../../../{hca}"),
        root.join("sys/class/infiniband/mlx5_0/device"),
    )
    .unwrap();

    let found = texts(&doctor(root, &[]), "acs_redirect");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("on 0000:02:08.0 (ACSCtl 0x001d) between GPU 0000:03:00.0 and its nearest HCA mlx5_0 (0000:04:00.0)"),
        "{found:?}"
    );
    assert!(found[0].contains("ECAP_ACS+0x6.w=0000"), "{found:?}");

    // ACS on, but not redirecting (source validation alone): nothing.
    write_config("0000:02:08.0/", 0x0001);
    assert_eq!(
        texts(&doctor(root, &[]), "acs_redirect"),
        Vec::<String>::new()
    );
}
