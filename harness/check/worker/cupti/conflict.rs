//! Whether a CUPTI error is another profiler's doing (Nsight injected through
//! `CUDA_INJECTION64_PATH`, DCGM profiling) or missing profiling privileges, not the library's
//! fault: the cause in words and what to do about it.

use super::sys;

/// What decides whether a CUPTI error is another profiler's doing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Environment {
    /// `CUDA_INJECTION64_PATH`: a tool (Nsight Systems, Nsight Compute) injected into the process.
    pub injection: Option<String>,
    /// `RmProfilingAdminOnly` of `/proc/driver/nvidia/params` (`NVreg_RestrictProfilingToAdminUsers`).
    pub admin_only: Option<bool>,
}

impl Environment {
    /// This process's environment and the loaded driver's parameters.
    pub fn read() -> Environment {
        Environment {
            injection: std::env::var("CUDA_INJECTION64_PATH")
                .ok()
                .filter(|p| !p.is_empty()),
            admin_only: crate::hostfs::read_to_string(
                std::path::Path::new("/proc/driver/nvidia/params"),
                crate::hostfs::TEXT,
            )
            .ok()
            .and_then(|params| admin_only(&params)),
        }
    }
}

/// `RmProfilingAdminOnly: 1` in the driver's parameters.
fn admin_only(params: &str) -> Option<bool> {
    params.lines().find_map(|line| {
        let value = line.strip_prefix("RmProfilingAdminOnly:")?.trim();
        value.parse::<u32>().ok().map(|v| v != 0)
    })
}

/// Why CUPTI refused, when it is not the library's fault, and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub cause: String,
    pub fix: &'static str,
}

/// The conflict behind `code`, if it is one: another profiler holds CUPTI or the profiling
/// hardware, or the process may not profile. Anything else is the library's failure.
pub fn conflict(code: sys::Status, env: &Environment) -> Option<Conflict> {
    let held = |what: &str| match &env.injection {
        Some(path) => {
            format!("another profiler holds {what} (CUDA_INJECTION64_PATH={path} is set)")
        }
        None => format!(
            "another profiler holds {what} (Nsight Systems, Nsight Compute or another CUPTI \
             client in this process)"
        ),
    };
    Some(match code {
        sys::MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => Conflict {
            cause: held("CUPTI"),
            fix: "run the check outside the profiler",
        },
        sys::HARDWARE_BUSY => Conflict {
            cause: match &env.injection {
                Some(_) => held("the GPU's profiling hardware"),
                None => "another profiler holds the GPU's profiling hardware (DCGM profiling \
                         metrics, or Nsight Compute in another process)"
                    .to_owned(),
            },
            fix: "pause it (dcgmi profile --pause) or wait for it to finish, then rerun",
        },
        sys::INSUFFICIENT_PRIVILEGES => Conflict {
            cause: match env.admin_only {
                Some(true) => "profiling needs privileges: NVreg_RestrictProfilingToAdminUsers \
                               (RmProfilingAdminOnly: 1 in /proc/driver/nvidia/params)"
                    .to_owned(),
                _ => "profiling needs privileges: NVreg_RestrictProfilingToAdminUsers".to_owned(),
            },
            fix: "run as root, or load the nvidia module with \
                  NVreg_RestrictProfilingToAdminUsers=0",
        },
        sys::VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES => Conflict {
            cause: "profiling needs privileges: the hypervisor does not allow profiling on this \
                    virtual GPU"
                .to_owned(),
            fix: "enable profiling for the vGPU in the hypervisor's settings",
        },
        _ => return None,
    })
}

/// Environments shared with the check's own tests.
#[cfg(test)]
pub mod tests {
    use super::*;
    use rstest::rstest;

    /// Where Nsight Systems' injection library lives in the tests.
    const NSYS: &str = "/opt/nsys/target-linux-x64/libToolsInjection64.so";

    /// A process Nsight Systems was injected into.
    pub fn injected() -> Environment {
        Environment {
            injection: Some(NSYS.to_owned()),
            admin_only: None,
        }
    }

    #[rstest]
    #[case::held_by_nsys(
        39,
        injected(),
        "another profiler holds CUPTI (CUDA_INJECTION64_PATH=/opt/nsys/target-linux-x64/\
         libToolsInjection64.so is set)"
    )]
    #[case::held(
        39,
        Environment::default(),
        "another profiler holds CUPTI (Nsight Systems, Nsight Compute or another CUPTI client \
         in this process)"
    )]
    #[case::busy(
        26,
        Environment::default(),
        "another profiler holds the GPU's profiling hardware (DCGM profiling metrics, or Nsight \
         Compute in another process)"
    )]
    #[case::busy_under_nsys(
        26,
        injected(),
        "another profiler holds the GPU's profiling hardware (CUDA_INJECTION64_PATH=/opt/nsys/\
         target-linux-x64/libToolsInjection64.so is set)"
    )]
    #[case::privileges(
        35,
        Environment::default(),
        "profiling needs privileges: NVreg_RestrictProfilingToAdminUsers"
    )]
    #[case::privileges_admin_only(
        35,
        Environment { injection: None, admin_only: Some(true) },
        "profiling needs privileges: NVreg_RestrictProfilingToAdminUsers (RmProfilingAdminOnly: \
         1 in /proc/driver/nvidia/params)"
    )]
    #[case::vgpu(
        40,
        Environment::default(),
        "profiling needs privileges: the hypervisor does not allow profiling on this virtual GPU"
    )]
    fn conflicts_are_warnings_that_name_the_cause(
        #[case] code: sys::Status,
        #[case] env: Environment,
        #[case] cause: &str,
    ) {
        assert_eq!(
            conflict(code, &env).map(|c| c.cause).as_deref(),
            Some(cause)
        );
    }

    #[rstest]
    fn other_errors_are_failures(
        #[values(1, 3, 7, 8, 11, 12, 15, 21, 27, 43, 46, 47, 999, 1000, -1)] code: sys::Status,
    ) {
        assert_eq!(conflict(code, &injected()), None);
    }

    #[test]
    fn reads_the_profiling_restriction_from_the_driver_parameters() {
        let params = "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\nRmMsg: \"\"\n";
        assert_eq!(admin_only(params), Some(true));
        assert_eq!(admin_only("RmProfilingAdminOnly: 0\n"), Some(false));
        assert_eq!(admin_only("EnableMSI: 1\n"), None);
    }
}
