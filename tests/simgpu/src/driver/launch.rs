//! `cuLaunchKernel` and running a launch: its parameters read as the driver reads them
//! (`kernelParams[i]` points to the i-th parameter's bytes, copied with the size the kernel
//! declares, when the launch is enqueued), the interpreter run against the device's memory, the
//! faults of the profile, and the duration on the model timeline.
//!
//! A kernel reaches the memory of its own device, pinned host memory, and that of every device
//! its context has enabled peer access to; any other address is illegal. Its time is the
//! longer of the roofline's and the time its bytes to and from peer memory take over the link
//! ([`crate::node::link_gbs`] with access enabled, divided by the pair's `slow_link` factor; the
//! slowest such link when it reached several peers). A kernel reaching the memory of a device
//! that `faults.corrupt_copy` pairs with its own leaves that memory with bits flipped.
//!
//! A launch identical to the last one on its device (same function, grid, block, shared memory
//! and parameter bytes) whose memory has not been written since that one ended is not run
//! again when running it is known to change nothing: the second such launch is run with the
//! bytes it touched hashed before and after, and if they came out the same, the following ones
//! reuse its counts. Every launch still takes its modelled time. So 256 identical vector adds
//! are interpreted twice, while a kernel that updates its own input runs every time.

use super::entry::{call, enter};
use super::errors::{CUresult, Code};
use super::queue::{Op, Shape};
use super::Inner;
use crate::clock::Peak;
use crate::node;
use crate::ptx::{self, Counts, Fault, Memory, Region};
use crate::state::Sim;
use std::cell::Cell;
use std::ffi::{c_uint, c_void};
use std::sync::Arc;

/// Static plus dynamic shared memory a block may have without opting in (48 KiB).
const SHARED_PER_BLOCK: usize = 48 * 1024;

/// What makes two launches the same.
#[derive(Clone, PartialEq)]
struct Key {
    function: u64,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    params: Vec<Vec<u8>>,
}

/// A launch waiting on its stream.
pub(super) struct Pending {
    key: Key,
    code: Arc<ptx::Module>,
    kernel: usize,
}

impl Pending {
    /// The kernel's name (its `.entry`).
    pub fn name(&self) -> &str {
        &self.code.kernels[self.kernel].name
    }

    /// The launch's shape, as CUPTI records it.
    pub fn shape(&self) -> Shape {
        Shape {
            grid: self.key.grid,
            block: self.key.block,
            static_shared: u32::try_from(self.code.kernels[self.kernel].shared_bytes)
                .unwrap_or(u32::MAX),
            dynamic_shared: self.key.shared,
        }
    }
}

/// An allocation a run touched: its address, id and generation after the run.
#[derive(Clone, Copy, PartialEq)]
struct Touch {
    base: u64,
    id: u64,
    generation: u64,
}

/// The last launch on a device, and what is known about running it again.
pub(super) struct Memo {
    key: Key,
    counts: Counts,
    /// Bytes per second of the slowest link to the peer memory it reached (infinite: none).
    link: f64,
    touched: Vec<Touch>,
    /// Whether running it again on the memory it left changes nothing: unknown until tried.
    idempotent: Option<bool>,
}

/// Device memory as the interpreter sees it: every allocation of the device and all pinned
/// memory, noting which ones it touches.
struct View {
    regions: Vec<Region>,
    touched: Vec<Cell<bool>>,
    /// The region found last (accesses come in runs).
    last: Cell<usize>,
}

impl Memory for View {
    fn region(&self, address: u64) -> Option<Region> {
        let holds = |r: &Region| address >= r.base && address - r.base < r.len as u64;
        let index = match self.regions.get(self.last.get()) {
            Some(r) if holds(r) => self.last.get(),
            _ => {
                let after = self.regions.partition_point(|r| r.base <= address);
                let index = after.checked_sub(1)?;
                if !holds(&self.regions[index]) {
                    return None;
                }
                self.last.set(index);
                index
            }
        };
        self.touched[index].set(true);
        Some(self.regions[index])
    }
}

/// The little-endian u64 or u32 a parameter holds.
fn u64_param(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

fn i32_param(bytes: &[u8]) -> Option<i32> {
    Some(i32::from_le_bytes(bytes.try_into().ok()?))
}

impl Inner {
    /// Runs `pending` on `gpu`: a fault of the profile, a reused run, or the interpreter;
    /// whether it completed.
    pub(super) fn execute(&mut self, sim: &Sim, gpu: usize, pending: Pending) -> bool {
        if pending.name() == self.profile.faults.launch_error {
            self.gpus[gpu].memo = None;
            self.gpus[gpu].clock.kernel(0, 0);
            self.fault(gpu, Code::ILLEGAL_ADDRESS);
            return false;
        }
        let memo = (self.gpus[gpu].memo.take())
            .filter(|m| m.key == pending.key && self.unchanged(&m.touched));
        let ran = match memo {
            Some(memo) if memo.idempotent == Some(true) => Ok((memo.counts, memo.link, Some(memo))),
            Some(memo) => {
                let before = memo
                    .idempotent
                    .is_none()
                    .then(|| self.digest(&memo.touched));
                self.interpret(sim, gpu, &pending)
                    .map(|(counts, link, touched)| {
                        let again = touched.map(|touched| {
                            let places =
                                |t: &[Touch]| t.iter().map(|t| (t.base, t.id)).collect::<Vec<_>>();
                            let idempotent = before.is_some_and(|before| {
                                places(&touched) == places(&memo.touched)
                                    && self.digest(&touched) == before
                            });
                            Memo {
                                key: pending.key.clone(),
                                counts,
                                link,
                                touched,
                                idempotent: Some(idempotent),
                            }
                        });
                        (counts, link, again)
                    })
            }
            None => self
                .interpret(sim, gpu, &pending)
                .map(|(counts, link, touched)| {
                    let first = touched.map(|touched| Memo {
                        key: pending.key.clone(),
                        counts,
                        link,
                        touched,
                        idempotent: None,
                    });
                    (counts, link, first)
                }),
        };
        match ran {
            Ok((counts, link, memo)) => {
                let bytes = counts.global_bytes_loaded + counts.global_bytes_stored;
                let over_link = counts.peer_bytes as f64 / link;
                (self.gpus[gpu].clock).kernel_over_link(bytes, counts.flops, Peak::Fp32, over_link);
                self.gpus[gpu].memo = memo;
                true
            }
            Err(fault) => {
                self.gpus[gpu].clock.kernel(0, 0);
                match fault {
                    Fault::IllegalAddress { .. } => self.fault(gpu, Code::ILLEGAL_ADDRESS),
                    Fault::Misaligned { .. } => self.fault(gpu, Code::MISALIGNED_ADDRESS),
                    Fault::Failed(_) => self.fault(gpu, Code::LAUNCH_FAILED),
                    Fault::InvalidLaunch(_) => self.gpus[gpu].deferred = Some(Code::INVALID_VALUE),
                }
                false
            }
        }
    }

    /// Runs `pending` through the interpreter; its counts, the rate of the slowest link to the
    /// peer memory it reached (bytes per second, infinite for none) and what it touched, or
    /// `None` for a run that cannot be reused (it touched pinned memory, which the host writes
    /// behind the driver's back).
    fn interpret(
        &mut self,
        sim: &Sim,
        gpu: usize,
        pending: &Pending,
    ) -> Result<(Counts, f64, Option<Vec<Touch>>), Fault> {
        let reaches =
            |on: Option<usize>| on.is_none_or(|on| on == gpu || self.peers.contains(&(gpu, on)));
        let allocs: Vec<_> = (self.memory.all())
            .filter(|a| reaches(a.gpu))
            .map(|a| {
                let peer = a.gpu.filter(|on| *on != gpu);
                let region = Region {
                    base: a.base,
                    len: a.len,
                    data: a.data(),
                    peer: peer.is_some(),
                };
                (a.gpu.is_none(), peer, region)
            })
            .collect();
        let view = View {
            regions: allocs.iter().map(|(_, _, r)| *r).collect(),
            touched: allocs.iter().map(|_| Cell::new(false)).collect(),
            last: Cell::new(0),
        };
        let launch = ptx::Launch {
            grid: pending.key.grid,
            block: pending.key.block,
            shared_bytes: pending.key.shared,
            params: &pending.key.params,
        };
        sim.count_interpreted();
        let result = ptx::run(&pending.code.kernels[pending.kernel], &launch, &view);
        let touched: Vec<(bool, Option<usize>, u64)> = (allocs.iter().zip(&view.touched))
            .filter(|(_, t)| t.get())
            .map(|((pinned, peer, region), _)| (*pinned, *peer, region.base))
            .collect();
        for (_, _, base) in &touched {
            self.memory.touch(*base);
        }
        let counts = result?;
        self.perturb(pending);
        self.corrupt_peer_stores(gpu, &touched);
        let profile = &self.profile;
        let link = (touched.iter().filter_map(|(_, peer, _)| *peer))
            .map(|on| {
                node::link_gbs(profile, gpu, on, true) * 1e9 / node::slow_link(profile, gpu, on)
            })
            .fold(f64::INFINITY, f64::min);
        if touched.iter().any(|(pinned, _, _)| *pinned) {
            return Ok((counts, link, None));
        }
        let touched = (touched.iter())
            .filter_map(|(_, _, base)| self.memory.find(*base, 1))
            .map(|a| Touch {
                base: a.base,
                id: a.id,
                generation: a.generation,
            })
            .collect();
        Ok((counts, link, Some(touched)))
    }

    /// `faults.corrupt_copy`: the peer memory a kernel on `gpu` reached, on a device it
    /// corrupts what it sends to, has bits flipped as a copy's bytes would
    /// ([`node::flip_bits`], from the allocation's start).
    fn corrupt_peer_stores(&mut self, gpu: usize, touched: &[(bool, Option<usize>, u64)]) {
        for (_, peer, base) in touched {
            let corrupted = peer.is_some_and(|on| node::corrupts(&self.profile, gpu, on));
            if let Some(alloc) = self.memory.find(*base, 1).filter(|_| corrupted) {
                // SAFETY: the allocation is live and holds `len` bytes; the kernel has ended.
                node::flip_bits(unsafe { std::slice::from_raw_parts_mut(alloc.data(), alloc.len) });
            }
        }
    }

    /// Whether every allocation in `touched` is still there, unwritten since.
    fn unchanged(&self, touched: &[Touch]) -> bool {
        touched.iter().all(|t| {
            (self.memory.by_id(t.base, t.id)).is_some_and(|a| a.generation == t.generation)
        })
    }

    /// A hash of the bytes of the allocations in `touched`.
    fn digest(&self, touched: &[Touch]) -> u64 {
        let mut hash = 0x243f_6a88_85a3_08d3_u64;
        for alloc in touched
            .iter()
            .filter_map(|t| self.memory.by_id(t.base, t.id))
        {
            // SAFETY: the allocation is live and holds `len` bytes; nothing writes it meanwhile
            // (it is not pinned, and the driver's lock is held).
            let bytes = unsafe { std::slice::from_raw_parts(alloc.data(), alloc.len) };
            let mut words = bytes.chunks_exact(8);
            for word in &mut words {
                let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
                hash = (hash ^ word)
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    .rotate_left(29);
            }
            for byte in words.remainder() {
                hash = (hash ^ u64::from(*byte)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            }
        }
        hash
    }

    /// `faults.wrong_results`: flips the top mantissa bit of the first, middle and last output
    /// element of a matching kernel (`vector_add`'s `c`, `matmul`'s `C`, both its third
    /// parameter), a relative error of a third to a half, far beyond any FP32 tolerance.
    fn perturb(&mut self, pending: &Pending) {
        let fault = self.profile.faults.wrong_results.as_str();
        let name = pending.name();
        if fault.is_empty() || !name.contains(fault) {
            return;
        }
        let params = &pending.key.params;
        let param = |i: usize| params.get(i).map(Vec::as_slice).unwrap_or_default();
        let elements = if name.contains("vector_add") {
            u64_param(param(3))
        } else if name.contains("matmul") {
            let m = i32_param(param(3)).and_then(|m| u64::try_from(m).ok());
            let n = i32_param(param(4)).and_then(|n| u64::try_from(n).ok());
            m.zip(n).map(|(m, n)| m * n)
        } else {
            None
        };
        let (Some(out), Some(count)) = (u64_param(param(2)), elements.filter(|c| *c > 0)) else {
            return;
        };
        let mut indices = vec![0, count / 2, count - 1];
        indices.dedup();
        for index in indices {
            let address = out + 4 * index;
            if let Some(alloc) = self.memory.write(address, 4) {
                // SAFETY: the four bytes lie within the live allocation.
                unsafe {
                    let element = alloc
                        .data()
                        .add((address - alloc.base) as usize)
                        .cast::<u32>();
                    element.write_unaligned(element.read_unaligned() ^ 0x0040_0000);
                }
            }
        }
    }
}

/// Checks a launch's shape against the device's limits (`CUDA_ERROR_INVALID_VALUE`).
fn check_shape(grid: [u32; 3], block: [u32; 3], shared: usize) -> Result<(), Code> {
    let threads = block.iter().map(|d| u64::from(*d)).product::<u64>();
    let fits = grid.iter().chain(&block).all(|d| *d > 0)
        && grid[0] <= i32::MAX as u32
        && grid[1] <= 65535
        && grid[2] <= 65535
        && block[0] <= 1024
        && block[1] <= 1024
        && block[2] <= 64
        && threads <= 1024
        && shared <= SHARED_PER_BLOCK;
    fits.then_some(()).ok_or(Code::INVALID_VALUE)
}

/// `cuLaunchKernel`: enqueues `f` over the grid on `stream`, its parameters copied now from
/// `kernel_params` (`extra` is not supported: `CUDA_ERROR_NOT_SUPPORTED`).
///
/// # Safety
/// `kernel_params` must be null or hold one pointer per kernel parameter, each valid for reads
/// of that parameter's size.
#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernel(
    f: *mut c_void,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_mem_bytes: c_uint,
    stream: *mut c_void,
    kernel_params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    call(|sim| {
        let mut inner = enter(sim)?;
        let gpu = inner.current()?;
        let function = (inner.functions.get(&(f as u64)))
            .filter(|function| function.gpu == gpu)
            .ok_or(Code::INVALID_HANDLE)?;
        if !kernel_params.is_null() && !extra.is_null() {
            return Err(Code::INVALID_VALUE);
        }
        if !extra.is_null() {
            return Err(Code::NOT_SUPPORTED);
        }
        let kernel = &function.code.kernels[function.kernel];
        let (grid, block) = ([grid_x, grid_y, grid_z], [block_x, block_y, block_z]);
        check_shape(grid, block, kernel.shared_bytes + shared_mem_bytes as usize)?;
        if !kernel.params.is_empty() && kernel_params.is_null() {
            return Err(Code::INVALID_VALUE);
        }
        let mut params = Vec::with_capacity(kernel.params.len());
        for (i, param) in kernel.params.iter().enumerate() {
            // SAFETY: one pointer per parameter by the caller's contract.
            let value = unsafe { *kernel_params.add(i) };
            if value.is_null() {
                return Err(Code::INVALID_VALUE);
            }
            // SAFETY: each pointer is valid for its parameter's size by the caller's contract.
            let bytes = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), param.size) };
            params.push(bytes.to_vec());
        }
        let pending = Pending {
            key: Key {
                function: f as u64,
                grid,
                block,
                shared: shared_mem_bytes,
                params,
            },
            code: Arc::clone(&function.code),
            kernel: function.kernel,
        };
        let (key, on) = inner.stream(stream, gpu)?;
        inner.streams.push(key, on, Op::Launch(Box::new(pending)));
        sim.count_launch();
        inner.advance(sim);
        Ok(())
    })
}
