//! NCCL in the stack: the collectives every multi-GPU job goes through, run on every selected
//! GPU of the node with the combination's own `libnccl.so.2` ([`clique`]), verified against the
//! host ([`collective`]), timed as nccl-tests times them (bus bandwidth = algorithm bandwidth x
//! the collective's bus factor), and NCCL's own account of the transport it chose for each
//! pair of GPUs ([`log`]), held against the node's topology ([`findings`]).

pub mod api;
pub mod clique;
pub mod collective;
pub mod findings;
pub mod log;
pub mod member;

/// The largest size the checks verify: 1 GiB a GPU on a real node (enough to fill NVLink and
/// show a slow link); 1 MiB on the simulator, whose NCCL computes on the host.
pub fn largest(simulated: bool) -> usize {
    if simulated {
        1 << 20
    } else {
        1 << 30
    }
}

/// Each size verified is this many times the last (8 B, 512 B, 32 KiB, 2 MiB, 128 MiB, 1 GiB).
pub const STEP: usize = 64;
