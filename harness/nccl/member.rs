//! One rank of a communicator that spans processes (and nodes): this process's one GPU, made
//! a member by `ncclCommInitRank` with the unique id rank 0's `ncclGetUniqueId` made. Each rank
//! verifies its own output against the host's answer for its rank of the whole job; NCCL itself
//! keeps the ranks in step.

use super::api::{Comm, Nccl, UniqueId};
use super::clique::{fit, Rank, Verified};
use super::collective::{Collective, Shape};
use crate::node::copies::Node;
use std::ffi::c_int;

/// This process's rank of a job-wide communicator.
pub struct Member {
    nccl: Nccl,
    comm: Comm,
    /// Declared before `node`: buffers and events are freed before the context is released.
    rank: Rank,
    node: Node,
    capacity: usize,
    /// Its rank, and the job's count of ranks.
    index: usize,
    size: usize,
}

/// A fresh unique id from `nccl`: the address of the bootstrap root it starts in this process,
/// which must live until every rank has joined.
pub fn unique_id(nccl: &Nccl) -> Result<UniqueId, String> {
    let get = nccl
        .get_unique_id
        .ok_or("libnccl does not export ncclGetUniqueId")?;
    let mut id = UniqueId { internal: [0; 128] };
    // SAFETY: `id` is a writable ncclUniqueId.
    nccl.check("ncclGetUniqueId", unsafe { get(&mut id) })?;
    Ok(id)
}

impl Member {
    /// Opens GPU `device` with buffers of `capacity` bytes, and joins rank `index` of `size`
    /// to the communicator of `id`; returns once every rank has (as `ncclCommInitRank` does).
    pub fn join(
        nccl: Nccl,
        device: u32,
        capacity: usize,
        id: UniqueId,
        (index, size): (usize, usize),
    ) -> Result<Member, String> {
        let init = nccl
            .comm_init_rank
            .ok_or("libnccl does not export ncclCommInitRank")?;
        let node = Node::open(&[device], false)?;
        let rank = Rank::open(&node, device, capacity)?;
        let (nranks, me) = (
            c_int::try_from(size).map_err(|e| e.to_string())?,
            c_int::try_from(index).map_err(|e| e.to_string())?,
        );
        // ncclCommInitRank takes the calling thread's current device.
        node.stream(device)?;
        let mut comm: Comm = std::ptr::null_mut();
        // SAFETY: a writable communicator, the job's size and this rank, and an id from
        // ncclGetUniqueId passed by value as nccl.h declares.
        let result = unsafe { init(&mut comm, nranks, id, me) };
        nccl.check("ncclCommInitRank", result)?;
        Ok(Member {
            nccl,
            comm,
            rank,
            node,
            capacity,
            index,
            size,
        })
    }

    /// The shape of `collective` at `bytes` over the job's ranks, or why it does not fit.
    pub fn shape(&self, collective: Collective, bytes: usize) -> Result<Shape, String> {
        fit(collective, bytes, self.size, self.capacity)
    }

    /// Runs `collective` once with this rank's input, and checks every element of its output
    /// against the host's answer for this rank, bit for bit.
    pub fn verify(&self, collective: Collective, bytes: usize) -> Result<Verified, String> {
        let shape = self.shape(collective, bytes)?;
        self.rank.load(&self.node, self.index, shape)?;
        self.launch(collective, shape)?;
        let expected: Vec<f32> = (0..shape.recv)
            .map(|i| collective.expected(shape, self.size, self.index, i))
            .collect();
        self.rank.check(&self.node, self.index, &expected)?;
        Ok(Verified {
            shape,
            elements: shape.recv,
        })
    }

    /// Times `runs` of `collective` at `bytes` back to back between one pair of events on this
    /// rank's stream, ns.
    pub fn time_runs(
        &self,
        collective: Collective,
        bytes: usize,
        runs: u64,
    ) -> Result<f64, String> {
        let shape = self.shape(collective, bytes)?;
        self.rank
            .start
            .record(self.node.stream(self.rank.device)?)?;
        for _ in 0..runs {
            self.launch(collective, shape)?;
        }
        self.rank.end.record(self.node.stream(self.rank.device)?)?;
        Ok(self.rank.start.until(&self.rank.end)? * 1e6)
    }

    fn launch(&self, collective: Collective, shape: Shape) -> Result<(), String> {
        let stream = self.node.stream(self.rank.device)?;
        self.rank
            .launch(&self.nccl, self.comm, stream, collective, shape)
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        // SAFETY: the communicator ncclCommInitRank made, destroyed once.
        unsafe { (self.nccl.comm_destroy)(self.comm) };
    }
}
