//! One NCCL communicator per GPU of the node, made together by `ncclCommInitAll` in this one
//! process (how a single-process framework or nccl-tests' `-g` mode runs; the README says why
//! not one process per GPU), each with its stream and buffers; every collective goes in one
//! `ncclGroupStart`/`ncclGroupEnd`, as NCCL requires when one thread drives several GPUs.

use super::api::{Comm, Nccl, FLOAT32, SUM};
use super::collective::{input, Collective, Shape};
use crate::node::copies::{DeviceBuffer, Event, Node};
use crate::node::worker::call;
use cudarc::driver::sys;
use std::ffi::{c_int, c_void};

/// A rank's buffers and the events that time its part of a collective.
pub(super) struct Rank {
    pub(super) device: u32,
    send: DeviceBuffer,
    recv: DeviceBuffer,
    pub(super) start: Event,
    pub(super) end: Event,
}

impl Rank {
    /// Buffers of `capacity` bytes and a pair of events on GPU `device` of `node`.
    pub(super) fn open(node: &Node, device: u32, capacity: usize) -> Result<Rank, String> {
        Ok(Rank {
            device,
            send: DeviceBuffer::new(node, device, capacity)?,
            recv: DeviceBuffer::new(node, device, capacity)?,
            start: Event::new_on(node, device)?,
            end: Event::new_on(node, device)?,
        })
    }

    /// Writes rank `r`'s [`input`] of `shape` into the send buffer, and all ones into the
    /// receive buffer: a NaN in every float, so output NCCL never wrote cannot verify.
    pub(super) fn load(&self, node: &Node, r: usize, shape: Shape) -> Result<(), String> {
        let data: Vec<f32> = (0..shape.send).map(|i| input(r, i)).collect();
        node.stream(self.device)?;
        // SAFETY: `send` holds at least shape.bytes bytes (checked against the capacity);
        // `data` lives across the copy.
        call("cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(self.send.ptr(), data.as_ptr().cast(), shape.send * 4)
        })?;
        // SAFETY: as above, for `recv`.
        call("cuMemsetD8", unsafe {
            sys::cuMemsetD8_v2(self.recv.ptr(), 0xff, shape.recv * 4)
        })
    }

    /// Waits for the rank's stream, and checks every element of its output against `expected`
    /// (rank `r`'s answer), bit for bit.
    pub(super) fn check(&self, node: &Node, r: usize, expected: &[f32]) -> Result<(), String> {
        let stream = node.stream(self.device)?;
        // SAFETY: a stream of the current context.
        call("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(stream)
        })?;
        let mut out = vec![0f32; expected.len()];
        // SAFETY: `out` has room for expected.len() floats; `recv` holds that many.
        call("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), self.recv.ptr(), out.len() * 4)
        })?;
        let wrong: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].to_bits() != expected[i].to_bits())
            .collect();
        match wrong.first() {
            None => Ok(()),
            Some(&first) => Err(format!(
                "GPU {} (rank {r}): {} of {} elements wrong; element {first} is {}, the host \
                 computes {}",
                self.device,
                wrong.len(),
                out.len(),
                out[first],
                expected[first]
            )),
        }
    }

    /// Puts `collective` of `shape` for this rank on `stream` through `comm`.
    pub(super) fn launch(
        &self,
        nccl: &Nccl,
        comm: Comm,
        stream: sys::CUstream,
        collective: Collective,
        shape: Shape,
    ) -> Result<(), String> {
        let send = self.send.ptr() as usize as *const c_void;
        let recv = self.recv.ptr() as usize as *mut c_void;
        // SAFETY: buffers of this rank's GPU holding the shape's counts (checked against the
        // capacity), its communicator and a stream of its context.
        let result = unsafe {
            match collective {
                Collective::AllReduce => {
                    (nccl.all_reduce)(send, recv, shape.send, FLOAT32, SUM, comm, stream)
                }
                Collective::ReduceScatter => {
                    (nccl.reduce_scatter)(send, recv, shape.recv, FLOAT32, SUM, comm, stream)
                }
                Collective::AllGather => {
                    (nccl.all_gather)(send, recv, shape.send, FLOAT32, comm, stream)
                }
                Collective::Broadcast => {
                    (nccl.broadcast)(send, recv, shape.send, FLOAT32, 0, comm, stream)
                }
            }
        };
        nccl.check(&format!("nccl{}", collective.nccl_name()), result)
    }
}

/// The shape of `collective` at `bytes` over `ranks` ranks, or why it does not fit buffers of
/// `capacity` bytes.
pub(super) fn fit(
    collective: Collective,
    bytes: usize,
    ranks: usize,
    capacity: usize,
) -> Result<Shape, String> {
    let shape = collective.shape(bytes, ranks);
    if shape.bytes > capacity {
        return Err(format!(
            "{} B does not fit the {capacity} B buffers",
            shape.bytes
        ));
    }
    Ok(shape)
}

/// The communicators of the selected GPUs, in rank order (rank `r` is `devices[r]`).
pub struct Clique {
    nccl: Nccl,
    comms: Vec<Comm>,
    /// Declared before `node`: buffers and events are freed before the contexts are released.
    ranks: Vec<Rank>,
    node: Node,
    /// Bytes of each rank's send and receive buffer.
    capacity: usize,
}

/// How a verified collective came out.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    pub shape: Shape,
    /// Elements checked, over every rank.
    pub elements: usize,
}

impl Clique {
    /// Opens every GPU of `devices`, buffers of `capacity` bytes on each, and their
    /// communicators.
    pub fn open(nccl: Nccl, devices: &[u32], capacity: usize) -> Result<Clique, String> {
        let node = Node::open(devices, false)?;
        let ranks = (devices.iter())
            .map(|&device| Rank::open(&node, device, capacity))
            .collect::<Result<Vec<_>, String>>()?;
        let list: Vec<c_int> = devices.iter().map(|&d| d as c_int).collect();
        let mut comms: Vec<Comm> = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: `comms` has room for one communicator per listed device.
        let result =
            unsafe { (nccl.comm_init_all)(comms.as_mut_ptr(), list.len() as c_int, list.as_ptr()) };
        nccl.check("ncclCommInitAll", result)?;
        Ok(Clique {
            nccl,
            comms,
            ranks,
            node,
            capacity,
        })
    }

    /// The shape of `collective` at `bytes` on these GPUs, or why it does not fit the buffers.
    pub fn shape(&self, collective: Collective, bytes: usize) -> Result<Shape, String> {
        fit(collective, bytes, self.ranks.len(), self.capacity)
    }

    /// Runs `collective` once on every rank, each rank's input [`input`], and checks every
    /// element of every rank's output against the host's answer, bit for bit.
    pub fn verify(&self, collective: Collective, bytes: usize) -> Result<Verified, String> {
        let shape = self.shape(collective, bytes)?;
        let ranks = self.ranks.len();
        for (r, rank) in self.ranks.iter().enumerate() {
            rank.load(&self.node, r, shape)?;
        }
        self.launch(collective, shape)?;
        // All-reduce and broadcast give every rank the same answer: computed once.
        let same_for_all = matches!(collective, Collective::AllReduce | Collective::Broadcast);
        let mut expected = Vec::new();
        for (r, rank) in self.ranks.iter().enumerate() {
            if r == 0 || !same_for_all {
                expected = (0..shape.recv)
                    .map(|i| collective.expected(shape, ranks, r, i))
                    .collect();
            }
            rank.check(&self.node, r, &expected)?;
        }
        Ok(Verified {
            shape,
            elements: shape.recv * ranks,
        })
    }

    /// Times one `collective` at `bytes`: CUDA events recorded on every rank's stream before
    /// and after it; the slowest rank's time, ns (the collective ends when its last rank does).
    pub fn time(&self, collective: Collective, bytes: usize) -> Result<f64, String> {
        self.time_runs(collective, bytes, 1)
    }

    /// Times `runs` of `collective` at `bytes` back to back (nccl-tests' `-n`), between one
    /// pair of events on every rank's stream: the slowest rank's time for all of them, ns.
    pub fn time_runs(
        &self,
        collective: Collective,
        bytes: usize,
        runs: u64,
    ) -> Result<f64, String> {
        let shape = self.shape(collective, bytes)?;
        for rank in &self.ranks {
            rank.start.record(self.node.stream(rank.device)?)?;
        }
        for _ in 0..runs {
            self.launch(collective, shape)?;
        }
        for rank in &self.ranks {
            rank.end.record(self.node.stream(rank.device)?)?;
        }
        let mut slowest = 0f64;
        for rank in &self.ranks {
            slowest = slowest.max(rank.start.until(&rank.end)?);
        }
        Ok(slowest * 1e6)
    }

    /// Puts `collective` on every rank's stream in one group. The group is always closed, so a
    /// failed call leaves NCCL usable.
    fn launch(&self, collective: Collective, shape: Shape) -> Result<(), String> {
        let nccl = &self.nccl;
        // SAFETY: takes nothing.
        nccl.check("ncclGroupStart", unsafe { (nccl.group_start)() })?;
        let mut outcome = Ok(());
        for (rank, &comm) in self.ranks.iter().zip(&self.comms) {
            let stream = match self.node.stream(rank.device) {
                Ok(stream) => stream,
                Err(e) => {
                    outcome = outcome.and(Err(e));
                    continue;
                }
            };
            let result = rank.launch(nccl, comm, stream, collective, shape);
            outcome = outcome.and(result);
        }
        // SAFETY: closes the group opened above.
        let closed = nccl.check("ncclGroupEnd", unsafe { (nccl.group_end)() });
        outcome.and(closed)
    }
}

impl Drop for Clique {
    fn drop(&mut self) {
        for &comm in &self.comms {
            // SAFETY: a communicator ncclCommInitAll made, destroyed once.
            unsafe { (self.nccl.comm_destroy)(comm) };
        }
    }
}
