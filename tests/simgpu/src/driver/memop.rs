//! Copies and memsets as they run on a stream: bytes moved within host memory, the allocations
//! written moving on a generation, and the model timeline moved on by their modelled time: on
//! the SMs for a copy within a device (or with pinned memory) and a memset, on a copy engine
//! for a copy between the host and the device (`[node] pcie_gbs`) and between two devices (at
//! the rate [`crate::node`] gives, by peer access enabled from the device of the stream to the
//! other one). A copy between two devices that `faults.corrupt_copy` pairs arrives with bits
//! flipped ([`crate::node::flip_bits`]).
//!
//! A copy or memset identical to the last one of its kind on its device, whose allocations have
//! not been written since, would write what is already there, so it is not done again (it is
//! still timed): the bench copies a 1 GiB buffer hundreds of times per sample.

use super::errors::Code;
use super::queue::Source;
use super::Inner;
use crate::clock::Direction;
use crate::node;

/// The last copy and the last memset of a device, with the allocations they left as they were.
#[derive(Default)]
pub(super) struct Memops {
    copy: Option<Done>,
    memset: Option<Done>,
}

/// An operation (`(dst, src or value, bytes)`) and the `(id, generation)` of the allocations it
/// read and wrote, after it ran.
#[derive(Clone, Copy, PartialEq)]
struct Done {
    op: (u64, u64, usize),
    at: [(u64, u64); 2],
}

impl Inner {
    /// The `(id, generation)` of device memory (not pinned, which the host writes unseen) holding
    /// `[address, address + bytes)`.
    fn state(&self, address: u64, bytes: usize) -> Option<(u64, u64)> {
        let alloc = self.memory.find(address, bytes)?;
        alloc.gpu.is_some().then_some((alloc.id, alloc.generation))
    }

    /// Copies `bytes` from `src` to `dst` (device or pinned memory) on `gpu`, its stream ready
    /// at `ready`; when it ends.
    pub(super) fn copy(
        &mut self,
        gpu: usize,
        ready: f64,
        dst: u64,
        src: &Source,
        bytes: usize,
        pcie: bool,
    ) -> Result<f64, Code> {
        let from = match src {
            Source::Staged(data) => data.as_ptr(),
            Source::Device(address) => {
                let alloc = (self.memory.find(*address, bytes)).ok_or(Code::ILLEGAL_ADDRESS)?;
                // SAFETY: the range lies within the live allocation.
                unsafe { alloc.data().add((address - alloc.base) as usize) }
            }
        };
        // A device-to-device copy between ranges that do not overlap can be known done.
        let known = match src {
            Source::Device(address) if address.abs_diff(dst) >= bytes as u64 => {
                let op = (dst, *address, bytes);
                (self.state(*address, bytes).zip(self.state(dst, bytes)))
                    .map(|(read, written)| (op, [read, written]))
            }
            _ => None,
        };
        let redo = known.map(|(op, at)| Done { op, at });
        if redo.is_none() || self.gpus[gpu].memops.copy != redo {
            let alloc = self.memory.write(dst, bytes).ok_or(Code::ILLEGAL_ADDRESS)?;
            // SAFETY: both ranges lie within live allocations (or the staged bytes) for
            // `bytes`; they may overlap, hence `copy`.
            let to = unsafe { alloc.data().add((dst - alloc.base) as usize) };
            // SAFETY: as above.
            unsafe { std::ptr::copy(from, to, bytes) };
            if let Source::Device(address) = src {
                let on = |at: u64| self.memory.find(at, bytes).and_then(|a| a.gpu);
                if (on(*address).zip(on(dst)))
                    .is_some_and(|(a, b)| node::corrupts(&self.profile, a, b))
                {
                    // SAFETY: the `bytes` just written, within the live allocation.
                    node::flip_bits(unsafe { std::slice::from_raw_parts_mut(to, bytes) });
                }
            }
            let after = known.and_then(|(op, _)| {
                let at = [self.state(op.1, bytes)?, self.state(dst, bytes)?];
                Some(Done { op, at })
            });
            self.gpus[gpu].memops.copy = after;
        }
        let on = |address: u64| self.memory.find(address, bytes).and_then(|a| a.gpu);
        let peers = match src {
            Source::Device(address) => on(*address).zip(on(dst)).filter(|(a, b)| a != b),
            Source::Staged(_) => None,
        };
        let pcie_rate = self.profile.node.pcie_gbs * 1e9;
        let clock = &mut self.gpus[gpu].clock;
        if pcie {
            let direction = match on(dst) {
                Some(_) => Direction::In,
                None => Direction::Out,
            };
            let slow = clock.slow();
            return Ok(clock.transfer(direction, ready, bytes, pcie_rate, slow));
        }
        let Some((from, to)) = peers else {
            clock.wait_until(ready);
            clock.copy(bytes);
            return Ok(clock.now());
        };
        let (direction, other) = if to == gpu {
            (Direction::In, from)
        } else {
            (Direction::Out, if from == gpu { to } else { gpu })
        };
        let enabled = self.peers.contains(&(gpu, other));
        let profile = &self.profile;
        let rate =
            node::link_gbs(profile, from, to, enabled) * 1e9 / node::slow_link(profile, from, to);
        let slow = node::slow_device(profile, from).max(node::slow_device(profile, to));
        Ok((self.gpus[gpu].clock).transfer(direction, ready, bytes, rate, slow))
    }

    /// Sets `bytes` at `dst` (device or pinned memory) to `value` on `gpu`.
    pub(super) fn memset(
        &mut self,
        gpu: usize,
        dst: u64,
        value: u8,
        bytes: usize,
    ) -> Result<(), Code> {
        let op = (dst, u64::from(value), bytes);
        let redo = self.state(dst, bytes).map(|at| Done { op, at: [at, at] });
        if redo.is_none() || self.gpus[gpu].memops.memset != redo {
            let alloc = self.memory.write(dst, bytes).ok_or(Code::ILLEGAL_ADDRESS)?;
            // SAFETY: the range lies within the live allocation.
            unsafe {
                std::ptr::write_bytes(alloc.data().add((dst - alloc.base) as usize), value, bytes)
            };
            let after = self.state(dst, bytes).map(|at| Done { op, at: [at, at] });
            self.gpus[gpu].memops.memset = after;
        }
        self.gpus[gpu].clock.memset(bytes);
        Ok(())
    }
}
