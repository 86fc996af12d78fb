//! The NCCL checks: one communicator per selected GPU (`ncclCommInitAll`), each collective
//! verified bit for bit on every GPU at every size from 8 B to [`nccl::largest`], and NCCL's
//! own account of the transport of every ring edge and the algorithm of each collective.

use super::driver;
use super::outcome::{Checked, Outcome};
use super::session::Session;
use crate::check::protocol::Component;
use crate::nccl::{self, api::Nccl, clique::Clique, collective, log::DebugLog};
use collective::Collective;
use serde_json::json;

/// The communicators an `nccl.init` made, and the sizes the collectives run at.
struct Opened {
    clique: Clique,
    devices: Vec<u32>,
    sizes: Vec<usize>,
}

/// `nccl.init`.
pub fn init(s: &mut Session) -> Checked {
    let library = s.library(Component::Nccl).map_err(Outcome::fail)?;
    let nccl = Nccl::bind(library).map_err(Outcome::fail)?;
    let devices = s.request.gpus();
    let simulated = s.driver.as_ref().is_some_and(driver::is_simulated);
    let sizes = collective::sizes(nccl::largest(simulated), nccl::STEP);
    let capacity = Collective::ALL
        .iter()
        .flat_map(|c| sizes.iter().map(|&b| c.shape(b, devices.len()).bytes))
        .max()
        .unwrap_or(0);
    let clique = Clique::open(nccl, &devices, capacity).map_err(Outcome::fail)?;
    let outcome = Outcome::pass(format!(
        "ncclCommInitAll made {} communicator(s), on GPU(s) {}",
        devices.len(),
        list(&devices)
    ))
    .detail("devices", json!(devices))
    .detail("buffer_bytes", capacity);
    s.keep(Opened {
        clique,
        devices,
        sizes,
    });
    Ok(outcome)
}

/// `nccl.all_reduce`, `nccl.all_gather`, `nccl.reduce_scatter`, `nccl.broadcast`.
pub fn verify(s: &mut Session, collective: Collective) -> Checked {
    let opened = s
        .kept::<Opened>()
        .ok_or_else(|| Outcome::fail("no communicators: nccl.init did not pass in this worker"))?;
    let mut elements = 0;
    let mut sizes = Vec::new();
    for &bytes in &opened.sizes {
        let verified = opened.clique.verify(collective, bytes).map_err(|e| {
            let shape = opened.clique.shape(collective, bytes);
            Outcome::fail(format!(
                "at {}: {e}",
                size(shape.map_or(bytes, |s| s.bytes))
            ))
        })?;
        elements += verified.elements;
        sizes.push(verified.shape.bytes);
    }
    Ok(Outcome::pass(format!(
        "FP32 results match the host bit for bit on {} GPU(s) at {} sizes, {} to {}",
        opened.devices.len(),
        sizes.len(),
        size(sizes.first().copied().unwrap_or(0)),
        size(sizes.last().copied().unwrap_or(0)),
    ))
    .detail("sizes_bytes", json!(sizes))
    .detail("elements", elements))
}

/// `nccl.transport`: passes when NCCL named a peer-to-peer transport for every ring edge;
/// warns at a fallback to host memory or a network (the parent holds that against the node's
/// topology: `nccl_transport_fallback`).
pub fn transport(s: &mut Session) -> Checked {
    let devices = s
        .kept::<Opened>()
        .map(|o| o.devices.clone())
        .ok_or_else(|| Outcome::fail("no communicators: nccl.init did not pass in this worker"))?;
    let log = s
        .kept::<DebugLog>()
        .ok_or_else(|| Outcome::fail("the worker could not set up NCCL's debug log"))?;
    let seen = log.read().map_err(Outcome::fail)?;
    let algorithms: Vec<String> = seen
        .choices
        .iter()
        .map(|c| format!("{}/{}", c.algorithm, c.protocol))
        .fold(Vec::new(), |mut all, a| {
            if !all.contains(&a) {
                all.push(a);
            }
            all
        });
    let fallbacks: Vec<String> = seen
        .edges
        .iter()
        .filter(|e| e.transport.is_fallback())
        .map(|e| {
            format!(
                "GPU {} -> GPU {} via {}",
                gpu(&devices, e.from_rank),
                gpu(&devices, e.to_rank),
                e.via
            )
        })
        .collect();
    let outcome = if devices.len() < 2 {
        Outcome::pass("one GPU: NCCL moves nothing between GPUs")
    } else if seen.edges.is_empty() {
        Outcome::warn("NCCL's INFO lines named no ring edge: its transports are unknown")
    } else if !fallbacks.is_empty() {
        Outcome::warn(format!(
            "NCCL falls back to host memory or a network on {} of {} ring edge(s): {}",
            fallbacks.len(),
            seen.edges.len(),
            fallbacks.join(", ")
        ))
    } else {
        let mut via: Vec<&str> = seen.edges.iter().map(|e| e.via.as_str()).collect();
        via.sort_unstable();
        via.dedup();
        Outcome::pass(format!(
            "every one of {} ring edge(s) via {}; algorithms {}",
            seen.edges.len(),
            via.join(", "),
            if algorithms.is_empty() {
                "not printed".to_owned()
            } else {
                algorithms.join(", ")
            }
        ))
    };
    Ok(outcome
        .detail("devices", json!(devices))
        .detail("nccl_log", json!(seen)))
}

/// Rank `rank`'s GPU.
fn gpu(devices: &[u32], rank: u32) -> String {
    devices
        .get(rank as usize)
        .map_or_else(|| format!("(rank {rank})"), u32::to_string)
}

fn list(devices: &[u32]) -> String {
    devices
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `8 B`, `32 KiB`, `1 GiB`.
fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}
