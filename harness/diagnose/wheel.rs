//! The NVIDIA wheels of a pip environment, read from their `*.dist-info`: each one's name,
//! version and `RECORD`, so that a rule can say which wheel ships a file and name it in a fix.

use crate::discover::metadata::{name_and_version, nvidia_dist_infos, read_record};
use crate::hostfs;
use std::path::Path;

/// One installed wheel.
#[derive(Debug, Clone, PartialEq)]
pub struct Wheel {
    /// The distribution name (`nvidia-cudnn-cu12`).
    pub name: String,
    pub version: String,
    /// The text of its `RECORD`: one `file,hash,size` line per file it installed.
    pub record: String,
}

/// The NVIDIA wheels of `site_packages` whose METADATA names them and whose RECORD is readable.
pub fn wheels(site_packages: &Path) -> Vec<Wheel> {
    nvidia_dist_infos(site_packages)
        .into_iter()
        .filter_map(|dist_info| {
            let metadata =
                hostfs::read_to_string(&dist_info.join("METADATA"), hostfs::TEXT).ok()?;
            let (name, version) = name_and_version(&metadata)?;
            let record = read_record(&dist_info.join("RECORD")).ok()?;
            Some(Wheel {
                name,
                version,
                record,
            })
        })
        .collect()
}

/// The wheel among `wheels` whose RECORD lists a file named `file` (`libcudnn_adv_infer.so.8`),
/// with that file's path relative to the site-packages.
pub fn shipping<'w>(wheels: &'w [Wheel], file: &str) -> Option<(&'w Wheel, &'w str)> {
    wheels.iter().find_map(|w| {
        w.files()
            .find(|f| f.rsplit('/').next() == Some(file))
            .map(|f| (w, f))
    })
}

impl Wheel {
    /// The paths its RECORD lists, relative to the site-packages.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.record.lines().filter_map(|l| l.split(',').next())
    }

    /// The CUDA major it is built for: its name's `-cuNN` suffix, else (CUDA 13 wheels dropped
    /// the suffix) the `nvidia/cuNN/` directory its files are in.
    pub fn cuda_major(&self) -> Option<u32> {
        let suffix = self.name.rsplit_once("-cu").map(|(_, major)| major);
        suffix.and_then(|m| m.parse().ok()).or_else(|| {
            self.files()
                .find_map(|f| f.strip_prefix("nvidia/cu")?.split_once('/')?.0.parse().ok())
        })
    }

    /// The fix that puts back what it installed, leaving every other package as it is.
    pub fn reinstall(&self, site_packages: &Path) -> String {
        format!(
            "pip install --force-reinstall --no-deps {}=={}   (into the environment of {})",
            self.name,
            self.version,
            site_packages.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn wheel(name: &str, files: &[&str]) -> Wheel {
        Wheel {
            name: name.into(),
            version: "1.0".into(),
            record: files.iter().map(|f| format!("{f},sha256=x,1\n")).collect(),
        }
    }

    #[rstest]
    #[case("nvidia-cudnn-cu12", "nvidia/cudnn/lib/libcudnn.so.9", Some(12))]
    #[case("nvidia-cublas-cu11", "nvidia/cublas/lib/libcublas.so.11", Some(11))]
    #[case("nvidia-cublas", "nvidia/cu13/lib/libcublas.so.13", Some(13))]
    #[case("nvidia-nccl", "nvidia/nccl/lib/libnccl.so.2", None)]
    fn the_cuda_major_is_the_name_suffix_else_the_cu_directory(
        #[case] name: &str,
        #[case] file: &str,
        #[case] major: Option<u32>,
    ) {
        assert_eq!(wheel(name, &[file]).cuda_major(), major);
    }

    #[test]
    fn the_wheel_shipping_a_file_is_found_by_its_file_name() {
        let wheels = [
            wheel("nvidia-cublas-cu11", &["nvidia/cublas/lib/libcublas.so.11"]),
            wheel(
                "nvidia-cudnn-cu12",
                &[
                    "nvidia/cudnn/lib/libcudnn.so.8",
                    "nvidia/cudnn/lib/libcudnn_ops_infer.so.8",
                ],
            ),
        ];
        let (w, file) = shipping(&wheels, "libcudnn_ops_infer.so.8").expect("shipped");
        assert_eq!(
            (w.name.as_str(), file),
            (
                "nvidia-cudnn-cu12",
                "nvidia/cudnn/lib/libcudnn_ops_infer.so.8"
            )
        );
        assert!(shipping(&wheels, "libcublas.so.12").is_none());
        assert!(shipping(&wheels, "ops_infer.so.8").is_none());
    }
}
