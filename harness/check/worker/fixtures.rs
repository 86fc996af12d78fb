//! The fixture toolkits (real NVIDIA libraries built by `ci/fetch-toolkits`), for the unit tests
//! that open one: `$STACKBENCH_TOOLKITS`, else `<repo>/.toolkits`. Missing fixtures fail the test.

use std::path::{Path, PathBuf};

/// The driver's libraries (libcuda, NVML) of Debian's 535 driver, amd64.
pub const DRIVER: &str = "driver-535/amd64/usr/lib/x86_64-linux-gnu/nvidia/current";

/// A file or directory of the fixture toolkits, which must exist.
pub fn fixture(relative: &str) -> PathBuf {
    let root = match std::env::var_os("STACKBENCH_TOOLKITS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join(".toolkits"),
    };
    let path = root.join(relative);
    assert!(
        path.exists(),
        "fixtures missing: run ci/fetch-toolkits ({} is not there)",
        path.display()
    );
    path
}
