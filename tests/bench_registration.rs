//! What criterion's benchmarks register on a host: a combination whose libraries cannot all
//! load is left out with its reason, and the benchmark run goes on (it ended in a panic, and
//! `ci/test` with it, on a host with a venv whose cudart could not find a dependency).

#[path = "../benches/support/mod.rs"]
mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// Builds `lib/<file>` needing `libstackbench_gone.so`, which is then removed.
fn library_missing_a_dependency(lib: &Path, file: &str) {
    let cc = |args: &[&str]| {
        let status = Command::new("cc")
            .current_dir(lib)
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "cc {args:?}");
    };
    std::fs::write(
        lib.join("gone.c"),
        "int stackbench_gone(void) { return 1; }\n",
    )
    .unwrap();
    cc(&["-shared", "-fPIC", "-o", "libstackbench_gone.so", "gone.c"]);
    let source = "int stackbench_gone(void);\nint cublasGetVersion_v2(void *h, int *v) { *v = 120000 + stackbench_gone(); return 0; }\n";
    std::fs::write(lib.join("cublas.c"), source).unwrap();
    let soname = format!("-Wl,-soname,{file}");
    cc(&[
        "-shared",
        "-fPIC",
        "-o",
        file,
        &soname,
        "cublas.c",
        "-L.",
        "-lstackbench_gone",
    ]);
    std::fs::remove_file(lib.join("libstackbench_gone.so")).unwrap();
}

#[test]
fn a_combination_that_cannot_load_is_left_out_of_the_load_benchmark_with_its_reason() {
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let lib = root.path().join("lib");
    std::fs::create_dir(&lib).unwrap();
    std::fs::copy(support::common::real_cudart(), lib.join("libcudart.so.12")).unwrap();
    library_missing_a_dependency(&lib, "libcublas.so.12");
    let driver = support::common::fixture(support::common::DRIVER_AMD64);
    let targets = support::targets_below("test", vec![root.path().to_path_buf()], driver);
    assert_eq!(targets.len(), 1, "the planted combination is found");
    let why = support::load_once(&targets[0]).unwrap_err();
    assert!(why.contains("cublas"), "{why}");
    assert!(support::loadable("test", targets).is_empty());
}
