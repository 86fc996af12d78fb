//! NCCL between nodes. NCCL opens its network at run time: a plugin (`NCCL_NET_PLUGIN`, else
//! `libnccl-net.so`), else its own InfiniBand transport through rdma-core (`libibverbs.so.1`,
//! which reads `/etc/libibverbs.d/*.driver` and loads each provider as
//! `<its directory>/libibverbs/lib<name>-rdmav<ABI>.so`, the ABI the one `libibverbs.so.1` defines
//! as `IBVERBS_PRIVATE_<ABI>`), else sockets. A missing piece is no error to NCCL: it falls back
//! to `NET/Socket`, an order of magnitude slower, and says so only at `NCCL_DEBUG=INFO`.
//!
//! Judged for every NCCL of an image read with `--sysroot` (it is made to run across nodes
//! elsewhere), and on this machine when it has RDMA devices (`/sys/class/infiniband`): a host
//! without any uses sockets between nodes whatever is installed.

use super::finding::{Cause, Finding, Severity};
use super::{display_name, requester, Context};
use crate::model::{Installation, Layout, Library};
use crate::resolve;
use std::path::Path;

/// The provider configuration directory rdma-core reads.
const DRIVERS: &str = "/etc/libibverbs.d";
/// The packages that bring rdma-core's library and its providers, by distribution.
pub const PACKAGES: &str = "Debian and Ubuntu: `apt-get install libibverbs1 ibverbs-providers`; \
                        RHEL and Rocky: `dnf install libibverbs`";
/// What each finding's consequence says.
pub const SOCKETS: &str =
    "NCCL will use sockets between nodes (NET/Socket), an order of magnitude \
                       slower than InfiniBand or RoCE";

pub fn check(ctx: &Context) -> Vec<Finding> {
    let Some(host) = ctx.host else {
        return Vec::new();
    };
    if !ctx.sysroot && host.entries("/sys/class/infiniband").is_empty() {
        return Vec::new();
    }
    nccls(ctx)
        .filter_map(|(installation, nccl)| judge(ctx, host, installation, nccl))
        .collect()
}

/// Each installation's NCCL (the first, where it has several).
fn nccls<'a>(ctx: &'a Context) -> impl Iterator<Item = (&'a Installation, &'a Library)> {
    (ctx.scan.installations.iter())
        .filter(|i| i.layout != Layout::Driver)
        .filter_map(|i| Some((i, i.libraries.iter().find(|l| l.name == "nccl")?)))
}

/// Why `nccl` of `installation` would use sockets between nodes, if it would.
fn judge(
    ctx: &Context,
    host: &crate::discover::Host,
    installation: &Installation,
    nccl: &Library,
) -> Option<Finding> {
    let finding = |message: String, evidence: Vec<String>, fix: String| {
        Finding::new(Severity::Warning, Cause::NcclNetFallback, message, fix)
            .library(display_name(nccl), nccl.path.clone())
            .installation(installation.root.clone())
            .evidence(evidence)
    };
    let name = display_name(nccl);
    if let Some(plugin) = host.env.get("NCCL_NET_PLUGIN").filter(|p| !p.is_empty()) {
        let file = plugin_file(plugin);
        let resolution = resolve::resolve(&file, &requester(nccl), ctx.search);
        return resolution.found.is_none().then(|| {
            finding(
                format!("{name} cannot open the network plugin NCCL_NET_PLUGIN={plugin} names: {SOCKETS}"),
                tried(&resolution),
                format!("install the plugin ({file}) where {name}'s loader finds it, or unset NCCL_NET_PLUGIN to use NCCL's own InfiniBand transport"),
            )
        });
    }
    // A plugin NCCL finds by its default name carries the traffic: rdma-core is its business.
    let default = resolve::resolve("libnccl-net.so", &requester(nccl), ctx.search);
    if default.found.is_some() {
        return None;
    }
    let verbs = resolve::resolve("libibverbs.so.1", &requester(nccl), ctx.search);
    let Some(library) = verbs.found.clone() else {
        let mut evidence = vec![format!(
            "{name} opens libibverbs.so.1 (rdma-core) at run time for its InfiniBand transport"
        )];
        evidence.extend(tried(&verbs));
        return Some(finding(
            format!("{name} finds no libibverbs.so.1 (rdma-core): {SOCKETS}"),
            evidence,
            format!("install rdma-core's library and providers in this environment ({PACKAGES}); set NCCL_NET=IB to make a missing InfiniBand an error rather than a slow fallback"),
        ));
    };
    let abi = ctx.version_defs_of(&library).and_then(|defs| {
        defs.iter()
            .find_map(|d| d.strip_prefix("IBVERBS_PRIVATE_").map(str::to_owned))
    });
    let configured = configured_drivers(host);
    let mut evidence = vec![format!(
        "{}: libibverbs.so.1{}",
        library.display(),
        abi.as_ref().map_or_else(String::new, |a| format!(
            ", provider ABI {a} (IBVERBS_PRIVATE_{a})"
        ))
    )];
    if configured.is_empty() {
        evidence.push(format!("{DRIVERS}: no *.driver file names a provider"));
        return Some(finding(
            format!("{name} finds libibverbs.so.1 but no RDMA provider is configured: {SOCKETS}"),
            evidence,
            format!("install the providers of the same rdma-core ({PACKAGES}): they bring {DRIVERS}/*.driver and libibverbs/lib<name>-rdmav<ABI>.so"),
        ));
    }
    let dir = library.parent()?.join("libibverbs");
    let present = host.entries(&dir);
    let loadable = |p: &std::path::PathBuf| {
        provider_of(p).is_some_and(|(n, a)| configured.contains(&n) && Some(&a) == abi.as_ref())
    };
    if present.iter().any(loadable) {
        return None;
    }
    evidence.push(format!("{DRIVERS} names {}", configured.join(", ")));
    let other: Vec<String> = (present.iter())
        .filter_map(|p| provider_of(p).filter(|(n, _)| configured.contains(n)))
        .map(|(n, a)| format!("lib{n}-rdmav{a}.so"))
        .collect();
    evidence.push(match other.is_empty() {
        true => format!("{}: none of their provider libraries", dir.display()),
        false => format!(
            "{}: {} (built for another rdma-core's provider ABI)",
            dir.display(),
            other.join(", ")
        ),
    });
    Some(finding(
        format!("{name} finds libibverbs.so.1 but none of the RDMA providers it is configured for loads with it: {SOCKETS}"),
        evidence,
        format!("install the ibverbs-providers of the same rdma-core release as libibverbs.so.1 ({PACKAGES})"),
    ))
}

/// The file a `NCCL_NET_PLUGIN` value names: a file name as given, else NCCL's own expansion
/// (`ofi` is `libnccl-net-ofi.so`).
fn plugin_file(value: &str) -> String {
    if value.contains(".so") || value.contains('/') {
        value.to_owned()
    } else {
        format!("libnccl-net-{value}.so")
    }
}

/// The providers `/etc/libibverbs.d/*.driver` name (`driver mlx5`), sorted.
fn configured_drivers(host: &crate::discover::Host) -> Vec<String> {
    let mut names: Vec<String> = (host.entries(DRIVERS).iter())
        .filter(|p| p.extension().is_some_and(|e| e == "driver"))
        .filter_map(|p| host.read(p))
        .flat_map(|bytes| {
            String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|line| line.trim().strip_prefix("driver "))
                .map(|name| name.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A provider library's name and ABI: `libmlx5-rdmav34.so` is `("mlx5", "34")`.
fn provider_of(path: &Path) -> Option<(String, String)> {
    let file = path.file_name()?.to_str()?;
    let (name, abi) = file
        .strip_prefix("lib")?
        .strip_suffix(".so")?
        .rsplit_once("-rdmav")?;
    Some((name.to_owned(), abi.to_owned()))
}

/// The places the loader tried, at most eight, as evidence.
fn tried(resolution: &resolve::Resolution) -> Vec<String> {
    let mut lines: Vec<String> = (resolution.attempts.iter())
        .take(8)
        .map(|a| format!("tried {}", a.describe()))
        .collect();
    if resolution.attempts.is_empty() {
        lines.push(format!(
            "{}: not in the loader's search (ld.so.cache, default directories)",
            resolution.name
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_files_read_as_name_and_abi() {
        assert_eq!(
            provider_of(Path::new("/usr/lib/libibverbs/libmlx5-rdmav34.so")),
            Some(("mlx5".into(), "34".into()))
        );
        assert_eq!(
            provider_of(Path::new("libvmw_pvrdma-rdmav25.so")),
            Some(("vmw_pvrdma".into(), "25".into()))
        );
        assert_eq!(provider_of(Path::new("libmlx5.so.1")), None);
        assert_eq!(plugin_file("ofi"), "libnccl-net-ofi.so");
        assert_eq!(
            plugin_file("/opt/aws-ofi-nccl/lib/libnccl-net.so"),
            "/opt/aws-ofi-nccl/lib/libnccl-net.so"
        );
    }

    #[test]
    fn drivers_are_the_names_the_driver_files_give() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("etc/libibverbs.d");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mlx5.driver"), "driver mlx5\n").unwrap();
        std::fs::write(dir.join("rxe.driver"), "# soft RoCE\ndriver rxe\n").unwrap();
        std::fs::write(dir.join("README"), "driver ignored\n").unwrap();
        let host = crate::discover::Host::below(root.path().to_path_buf());
        assert_eq!(configured_drivers(&host), ["mlx5", "rxe"]);
    }
}
