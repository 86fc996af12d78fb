//! Groups and the meeting of ranks: `ncclGroupStart`/`ncclGroupEnd` (per thread, nested), and
//! how a collective waits for every rank of its communicator.
//!
//! A collective called outside a group is a group of one. At the end of the outermost group,
//! the thread's collectives join their ranks' queues; whenever every rank of a clique has one
//! waiting, the first of each is matched and launched, and the thread returns once all of its
//! own are. A rank that never calls leaves the others waiting forever, so one thread calling a
//! collective of a several-rank communicator outside a group hangs, as with NCCL.
//!
//! A collective of a communicator across processes (`ncclCommInitRank`) is matched by its
//! root instead ([`super::link`], [`super::root`]): the thread tells the root of each such call
//! of its group, then waits until the root has every rank's (at most its bound), and puts it on
//! the rank's stream: when the stream reaches it, its input is read and sent to the root; its
//! part runs once its output has come back, and writes it.
//!
//! Matched collectives must agree on function, data type, count, and operation (for
//! reductions) or root (for broadcasts); otherwise every rank's call fails with
//! `ncclInvalidArgument` and nothing runs. Real NCCL does not check this: it hangs, or reads
//! and writes past buffers. The simulator names the mistake instead, because a hang would
//! pass for a missing rank (a different bug) and corruption could go unnoticed.
//!
//! An argument error inside a group makes its `ncclGroupEnd` fail with that error, nothing of
//! the group launched, as NCCL's group error does.

use super::comm::{state, Clique, Comm, State, CHANNELS, MATCHED};
use super::debug::{self, TUNING};
use super::link::Link;
use super::reference::{self, Shape};
use super::types::Function;
use super::{model, NcclResult, INVALID_ARGUMENT, INVALID_USAGE, UNHANDLED_CUDA_ERROR};
use crate::driver::collective::{self, Collective, Rank};
use crate::driver::errors::Code;
use crate::driver::library::DeviceMemory;
use crate::node;
use crate::profile::Profile;
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, PoisonError};

/// One rank's call of a collective.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// The communicator's handle.
    pub comm: usize,
    pub shape: Shape,
    pub send: u64,
    pub recv: u64,
    /// The stream, as an address.
    pub stream: usize,
}

/// Every rank's output, computed once by the first rank's part to run (or the fault of reading
/// the inputs).
type Outputs = Result<Vec<Vec<u8>>, Code>;

/// A call waiting in its rank's queue, under the ticket its outcome is filed by.
#[derive(Debug, Clone, Copy)]
pub struct Queued {
    pub ticket: u64,
    pub call: Call,
}

/// The calling thread's group.
#[derive(Default)]
struct Group {
    depth: usize,
    calls: Vec<Call>,
    /// The first argument error of a call in the group.
    error: Option<NcclResult>,
}

thread_local! {
    static GROUP: RefCell<Group> = RefCell::new(Group::default());
}

/// Runs `call` (already checked), or keeps it for the group's end.
pub fn submit(call: Call) -> Result<(), NcclResult> {
    let grouped = GROUP.with_borrow_mut(|g| {
        if g.depth > 0 {
            g.calls.push(call);
        }
        g.depth > 0
    });
    if grouped {
        Ok(())
    } else {
        meet(vec![call])
    }
}

/// Whether the calling thread is inside a group.
pub fn grouped() -> bool {
    GROUP.with_borrow(|g| g.depth > 0)
}

/// Notes an argument error of a call: inside a group, the group's end answers it.
pub fn failed(code: NcclResult) -> NcclResult {
    GROUP.with_borrow_mut(|g| {
        if g.depth > 0 {
            g.error.get_or_insert(code);
        }
    });
    code
}

/// `ncclGroupStart()`.
#[no_mangle]
pub extern "C" fn ncclGroupStart() -> NcclResult {
    super::guarded(|| {
        GROUP.with_borrow_mut(|g| g.depth += 1);
        Ok(())
    })
}

/// `ncclGroupEnd()`: at the outermost level, runs the group's collectives (see the module's
/// doc).
#[no_mangle]
pub extern "C" fn ncclGroupEnd() -> NcclResult {
    super::guarded(|| {
        let ended = GROUP.with_borrow_mut(|g| {
            if g.depth == 0 {
                return Err(INVALID_USAGE);
            }
            g.depth -= 1;
            Ok((g.depth == 0).then(|| (std::mem::take(&mut g.calls), g.error.take())))
        });
        match ended {
            Err(code) => {
                debug::warn("group.cc:657", 0, "ncclGroupEnd: not in a group call.");
                Err(code)
            }
            Ok(None) => Ok(()),
            Ok(Some((_, Some(error)))) => Err(error),
            Ok(Some((calls, None))) => meet(calls),
        }
    })
}

/// A call of a communicator across processes, with what its launch needs.
struct Remote {
    call: Call,
    comm: Comm,
    link: Arc<Link>,
    profile: Profile,
    bus_gbs: f64,
}

/// Queues `calls` with their ranks, launches what every rank has reached, and waits until each
/// of `calls` is launched (forever if a rank in this process never comes); the first error
/// among them.
fn meet(calls: Vec<Call>) -> Result<(), NcclResult> {
    let mut state = state();
    let mut tickets = Vec::with_capacity(calls.len());
    let mut cliques = Vec::new();
    let mut remote = Vec::new();
    let comms: Vec<Comm> = (calls.iter())
        .map(|call| state.comm(call.comm as *mut c_void, call.shape.function.call()))
        .collect::<Result<_, _>>()?;
    for (call, comm) in calls.into_iter().zip(comms) {
        let clique = state.cliques.get(&comm.clique).ok_or(INVALID_ARGUMENT)?;
        if let Some(link) = &clique.link {
            remote.push(Remote {
                call,
                comm,
                link: link.clone(),
                profile: clique.profile.clone(),
                bus_gbs: clique.ring.bus_gbs,
            });
            continue;
        }
        state.last_ticket += 1;
        let ticket = state.last_ticket;
        let Some(clique) = state.cliques.get_mut(&comm.clique) else {
            return Err(INVALID_ARGUMENT);
        };
        clique.queues[comm.rank].push_back(Queued { ticket, call });
        tickets.push(ticket);
        if !cliques.contains(&comm.clique) {
            cliques.push(comm.clique);
        }
    }
    for clique in cliques {
        launch_matched(&mut state, clique);
    }
    MATCHED.notify_all();
    drop(state);
    let across = meet_remote(remote);
    let mut state = super::comm::state();
    while !tickets.iter().all(|t| state.outcomes.contains_key(t)) {
        state = MATCHED.wait(state).unwrap_or_else(PoisonError::into_inner);
    }
    let outcomes: Vec<_> = (tickets.iter())
        .filter_map(|t| state.outcomes.remove(t))
        .collect();
    across.and(outcomes.into_iter().collect())
}

/// Tells the roots of `calls` that their ranks have called them, then waits for each root's
/// answer and launches each call every rank made alike; the first error among them.
fn meet_remote(calls: Vec<Remote>) -> Result<(), NcclResult> {
    let mut first = Ok(());
    let begun: Vec<(Remote, u64)> = (calls.into_iter())
        .filter_map(|remote| match remote.link.begin(&remote.call.shape) {
            Ok(seq) => Some((remote, seq)),
            Err(code) => {
                first = first.and(Err(code));
                None
            }
        })
        .collect();
    for (remote, seq) in begun {
        let launched = (remote.link.accepted(seq)).and_then(|()| launch_remote(&remote, seq));
        first = first.and(launched);
    }
    first
}

/// Puts rank `remote`'s part of collective `seq` of its communicator on its stream: the send
/// of its input, then its part, which waits for its output from the root and writes it, with
/// the faults of this process's profile: `nccl_hang` (nothing is sent, the part never runs),
/// `wrong_results`, `corrupt_receive`.
fn launch_remote(remote: &Remote, seq: u64) -> Result<(), NcclResult> {
    let (shape, comm) = (remote.call.shape, remote.comm);
    let size = shape.datatype.size();
    if shape.nranks > 1 {
        tuning_line(&shape, comm.device);
    }
    let faults = &remote.profile.faults;
    let hang = faults.nccl_hang == shape.function.fault_name();
    let wrong = faults.wrong_results == shape.function.call();
    let receives = !(shape.function == Function::Broadcast && shape.root == comm.rank);
    let corrupt = faults.corrupt_receive && receives;
    let input = if shape.reads(comm.rank) {
        shape.input_elements() * size
    } else {
        0
    };
    let output = shape.output_elements() * size;
    let (send, link) = (remote.call.send, remote.link.clone());
    let post = move |memory: &mut DeviceMemory<'_>| {
        let bytes = if input == 0 {
            Vec::new()
        } else {
            memory.read(send, input)?
        };
        link.post(seq, bytes, output);
        Ok(())
    };
    let (recv, link) = (remote.call.recv, remote.link.clone());
    let body = move |memory: &mut DeviceMemory<'_>| match link.take(seq) {
        Some(mut bytes) => {
            if wrong {
                perturb(&mut bytes, size);
            }
            if corrupt {
                node::flip_bits(&mut bytes);
            }
            memory.write(recv, &bytes)
        }
        // The communicator failed: the part ends, its output unwritten.
        None => Ok(()),
    };
    let link = remote.link.clone();
    let rank = Rank {
        gpu: comm.device,
        stream: remote.call.stream as *mut c_void,
        arrive: comm.arrive,
        done: comm.done,
        send: Some(Box::new(post)),
        part: Collective {
            name: model::kernel(&shape),
            seconds: model::seconds(&shape, remote.bus_gbs),
            body: Box::new(body),
            gate: Some(Box::new(move || link.arrived(seq))),
        },
    };
    collective::enqueue(vec![rank], hang).map_err(|code| {
        debug::warn(
            "enqueue.cc:1470",
            comm.device,
            &format!("Cuda failure {}", code.0),
        );
        UNHANDLED_CUDA_ERROR
    })
}

/// NCCL's tuning line for a collective of several ranks, on device `device`.
fn tuning_line(shape: &Shape, device: usize) {
    let line = format!(
        "{}: {} Bytes -> Algo RING proto {} channel{{Lo..Hi}}={{0..{}}}",
        shape.function.name(),
        shape.count * shape.datatype.size(),
        model::protocol(shape),
        CHANNELS - 1
    );
    debug::info(TUNING, device, &line);
}

/// Launches, in order, every round of `clique`'s queues that all its ranks have reached.
fn launch_matched(state: &mut State, clique: u64) {
    loop {
        let Some(entry) = state.cliques.get_mut(&clique) else {
            return;
        };
        if entry.queues.iter().any(|q| q.is_empty()) {
            return;
        }
        let round: Vec<Queued> = (entry.queues.iter_mut())
            .filter_map(|q| q.pop_front())
            .collect();
        let comms: Vec<Comm> = (round.iter())
            .map(|q| state.comms.get(&q.call.comm).copied())
            .collect::<Option<_>>()
            .unwrap_or_default();
        let outcome = match state.cliques.get(&clique) {
            Some(entry) if comms.len() == round.len() => launch(entry, &comms, &round),
            _ => Err(INVALID_ARGUMENT),
        };
        for queued in round {
            state.outcomes.insert(queued.ticket, outcome);
        }
    }
}

/// What must agree between the ranks of one collective.
pub fn agreement(shape: &Shape) -> impl PartialEq + std::fmt::Debug {
    let op = shape.function.reduces().then_some(shape.op);
    let root = (shape.function == Function::Broadcast).then_some(shape.root);
    (shape.function, shape.datatype, shape.count, op, root)
}

/// Puts one matched collective (`round[r]`: rank `r`'s call) on every rank's stream.
fn launch(clique: &Clique, comms: &[Comm], round: &[Queued]) -> Result<(), NcclResult> {
    let shape = round[0].call.shape;
    if let Some(odd) = round
        .iter()
        .find(|q| agreement(&q.call.shape) != agreement(&shape))
    {
        let text = format!(
            "{}: the ranks disagree: rank 0 called (function, type, count, op, root) = {:?}, \
             another {:?}; NCCL would hang or corrupt memory",
            shape.function.call(),
            agreement(&shape),
            agreement(&odd.call.shape)
        );
        eprintln!("stackbench simulated NCCL: {text}");
        debug::warn("enqueue.cc:2560", clique.devices[0], &text);
        return Err(INVALID_ARGUMENT);
    }
    if clique.devices.len() > 1 {
        tuning_line(&shape, clique.devices[0]);
    }
    let faults = &clique.profile.faults;
    let hang = faults.nccl_hang == shape.function.fault_name();
    let wrong = faults.wrong_results == shape.function.call();
    // `faults.corrupt_copy`: a rank whose output holds data from a device that corrupts what
    // it sends to the rank's (every rank but a broadcast's root receives from the others).
    let corrupted: Vec<bool> = (comms.iter().enumerate())
        .map(|(r, comm)| {
            let receives = !(shape.function == Function::Broadcast && shape.root == r);
            receives
                && (clique.devices.iter())
                    .any(|&src| node::corrupts(&clique.profile, src, comm.device))
        })
        .collect();
    let inputs: Vec<(u64, usize)> = (round.iter().enumerate())
        .map(|(r, q)| {
            let len = if shape.reads(r) {
                shape.input_elements() * shape.datatype.size()
            } else {
                0
            };
            (q.call.send, len)
        })
        .collect();
    let result: Arc<Mutex<Option<Outputs>>> = Arc::default();
    let seconds = model::seconds(&shape, clique.ring.bus_gbs);
    let ranks = (round.iter().zip(comms).enumerate())
        .map(|(r, (q, comm))| {
            let (result, inputs, order, corrupted) = (
                result.clone(),
                inputs.clone(),
                clique.ring.order.clone(),
                corrupted.clone(),
            );
            let recv = q.call.recv;
            let body = move |memory: &mut DeviceMemory<'_>| {
                let mut result = result.lock().unwrap_or_else(PoisonError::into_inner);
                let outputs = result.get_or_insert_with(|| {
                    let read: Result<Vec<Vec<u8>>, Code> = (inputs.iter())
                        .map(|&(address, len)| {
                            if len == 0 {
                                Ok(Vec::new())
                            } else {
                                memory.read(address, len)
                            }
                        })
                        .collect();
                    read.map(|inputs| {
                        let mut outputs = reference::outputs(&shape, &inputs, &order);
                        if wrong {
                            outputs
                                .iter_mut()
                                .for_each(|o| perturb(o, shape.datatype.size()));
                        }
                        (outputs.iter_mut().zip(&corrupted))
                            .filter(|(_, corrupted)| **corrupted)
                            .for_each(|(o, _)| node::flip_bits(o));
                        outputs
                    })
                });
                match outputs {
                    Ok(outputs) => memory.write(recv, &outputs[r]),
                    Err(code) => Err(*code),
                }
            };
            Rank {
                gpu: comm.device,
                stream: q.call.stream as *mut c_void,
                arrive: comm.arrive,
                done: comm.done,
                send: None,
                part: Collective {
                    name: model::kernel(&shape),
                    seconds,
                    body: Box::new(body),
                    gate: None,
                },
            }
        })
        .collect();
    collective::enqueue(ranks, hang).map_err(|code| {
        debug::warn(
            "enqueue.cc:1470",
            clique.devices[0],
            &format!("Cuda failure {}", code.0),
        );
        UNHANDLED_CUDA_ERROR
    })
}

/// `faults.wrong_results`: flips the second-highest bit of the first, middle and last
/// elements of `output` (elements of `size` bytes, little-endian).
fn perturb(output: &mut [u8], size: usize) {
    let elements = output.len() / size;
    if elements == 0 {
        return;
    }
    let mut at = vec![0, elements / 2, elements - 1];
    at.dedup();
    for i in at {
        output[i * size + size - 1] ^= 0x40;
    }
}
