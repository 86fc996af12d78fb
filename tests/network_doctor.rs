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
