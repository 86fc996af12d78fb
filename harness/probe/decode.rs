//! Pure decoding for the probe: version integers as people write them, status codes as names,
//! signals as names. No FFI here, so everything is unit-tested.

/// A CUDA version integer (`1000 * major + 10 * minor`, as `cudaRuntimeGetVersion`,
/// `cuDriverGetVersion` and `cudnnGetCudartVersion` give it): 12090 -> "12.9", 12020 -> "12.2".
/// A non-zero last digit is kept as a third component (12091 -> "12.9.1").
pub fn cuda_version(v: i64) -> String {
    let (major, minor, rest) = (v / 1000, (v % 1000) / 10, v % 10);
    if rest == 0 {
        format!("{major}.{minor}")
    } else {
        format!("{major}.{minor}.{rest}")
    }
}

/// A cuDNN version integer: cuDNN 9 and later use `10000 * major + 100 * minor + patch`
/// (92800 -> "9.28.0"), cuDNN 8 and earlier `1000 * major + 100 * minor + patch` (8906 -> "8.9.6").
pub fn cudnn_version(v: i64) -> String {
    if v >= 90000 {
        ten_thousands(v)
    } else {
        thousands(v)
    }
}

/// `NCCL_VERSION_CODE`: `10000 * major + 100 * minor + patch` since NCCL 2.9 (22809 ->
/// "2.28.9"), `1000 * major + 100 * minor + patch` before (2708 -> "2.7.8").
pub fn nccl_version(v: i64) -> String {
    if v >= 20900 {
        ten_thousands(v)
    } else {
        thousands(v)
    }
}

/// `10000 * major + 100 * minor + patch` (cuBLAS, cuBLASLt: 120901 -> "12.9.1").
pub fn ten_thousands(v: i64) -> String {
    format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100)
}

/// `1000 * major + 100 * minor + patch` (cuDNN 8, cuFFT, cuRAND: 10310 -> "10.3.10").
pub fn thousands(v: i64) -> String {
    format!("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100)
}

/// The value a `major.minor` pair gets in a report, CUDA-style (`nvrtcVersion` 12, 9 -> 12090).
pub fn major_minor_value(major: i64, minor: i64) -> i64 {
    major * 1000 + minor * 10
}

/// The value a `major.minor.patch` triple gets in a report (`cublasGetProperty` 12, 9, 1 -> 120901).
pub fn triple_value(major: i64, minor: i64, patch: i64) -> i64 {
    major * 10000 + minor * 100 + patch
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(12090, "12.9")]
    #[case(12020, "12.2")]
    #[case(11080, "11.8")]
    #[case(13000, "13.0")]
    #[case(10010, "10.1")]
    #[case(12091, "12.9.1")]
    fn cuda_versions(#[case] v: i64, #[case] text: &str) {
        assert_eq!(cuda_version(v), text);
    }

    #[rstest]
    #[case(8906, "8.9.6")]
    #[case(8902, "8.9.2")]
    #[case(7605, "7.6.5")]
    #[case(90100, "9.1.0")]
    #[case(91000, "9.10.0")]
    #[case(92800, "9.28.0")]
    #[case(100200, "10.2.0")]
    fn cudnn_versions(#[case] v: i64, #[case] text: &str) {
        assert_eq!(cudnn_version(v), text);
    }

    #[rstest]
    #[case(22809, "2.28.9")]
    #[case(21903, "2.19.3")]
    #[case(2708, "2.7.8")]
    fn nccl_versions(#[case] v: i64, #[case] text: &str) {
        assert_eq!(nccl_version(v), text);
    }

    #[rstest]
    #[case(120901, "12.9.1")]
    #[case(111103, "11.11.3")]
    fn cublas_versions(#[case] v: i64, #[case] text: &str) {
        assert_eq!(ten_thousands(v), text);
    }

    #[rstest]
    #[case(10310, "10.3.10")]
    #[case(11401, "11.4.1")]
    fn thousand_versions(#[case] v: i64, #[case] text: &str) {
        assert_eq!(thousands(v), text);
    }

    #[test]
    fn composed_values() {
        assert_eq!(major_minor_value(12, 9), 12090);
        assert_eq!(cuda_version(major_minor_value(11, 2)), "11.2");
        assert_eq!(triple_value(11, 11, 3), 111103);
    }
}
