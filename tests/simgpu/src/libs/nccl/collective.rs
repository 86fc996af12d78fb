//! The collectives' entry points, their arguments checked as NCCL's `ArgsCheck` checks them
//! (a communicator, a root in range, a data type, a built-in reduction; and, across processes,
//! a size the simulator's wire carries), then run or kept for the group's end
//! ([`super::group`]). A count of 0 is discarded, as NCCL discards it. Buffers
//! are not checked here, as NCCL does not check them by default: an address outside every
//! allocation faults the rank's context when its part runs (`CUDA_ERROR_ILLEGAL_ADDRESS`).

use super::comm::state;
use super::debug;
use super::group::{self, Call};
use super::reference::Shape;
use super::types::{DataType, Function, RedOp, Refused};
use super::wire::MAX_PAYLOAD;
use super::{guarded, NcclResult, INVALID_ARGUMENT};
use std::ffi::{c_int, c_void};

/// The arguments of one collective call as the C ABI gives them.
struct Args {
    function: Function,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: c_int,
    op: c_int,
    root: c_int,
    comm: *mut c_void,
    stream: *mut c_void,
}

/// Checks `args` and runs the collective or keeps it for the group's end.
fn call(args: Args) -> NcclResult {
    guarded(|| {
        check(&args)
            .map_err(group::failed)?
            .map_or(Ok(()), group::submit)
    })
}

/// The call to make of `args`, `None` for a count of 0; NCCL's answer to a bad argument.
fn check(args: &Args) -> Result<Option<Call>, NcclResult> {
    let name = args.function.name();
    let (comm, nranks, remote) = {
        let state = state();
        let comm = state.comm(args.comm, args.function.call())?;
        let clique = state.cliques.get(&comm.clique);
        let nranks = clique.map_or(0, |c| c.devices.len());
        (comm, nranks, clique.is_some_and(|c| c.link.is_some()))
    };
    let refuse = |text: String| {
        debug::warn("misc/argcheck.cc:47", comm.device, &text);
        INVALID_ARGUMENT
    };
    let root = usize::try_from(args.root)
        .ok()
        .filter(|r| *r < nranks)
        .ok_or_else(|| {
            let last = nranks as c_int - 1;
            refuse(format!(
                "{name} : invalid root {} (root should be in the 0..{last} range)",
                args.root
            ))
        })?;
    let datatype = DataType::from_raw(args.datatype).map_err(|refused| match refused {
        Refused::NotSimulated(type_name) => {
            let text = format!(
                "{type_name} ({}) is not simulated (ncclInt8 to ncclBfloat16 are); a real \
                 NCCL 2.28 has it",
                args.datatype
            );
            eprintln!("stackbench simulated NCCL: {name}: {text}");
            refuse(format!("{name} : {text}"))
        }
        Refused::Invalid => refuse(format!("{name} : invalid type {}", args.datatype)),
    })?;
    let op = if args.function.reduces() {
        RedOp::from_raw(args.op).ok_or_else(|| {
            refuse(if args.op < 0 {
                format!("{name} : invalid reduction operation {}", args.op)
            } else {
                format!(
                    "{name} : reduction operation {} unknown to this communicator",
                    args.op
                )
            })
        })?
    } else {
        RedOp::Sum
    };
    if args.count == 0 {
        return Ok(None);
    }
    let shape = Shape {
        function: args.function,
        datatype,
        op,
        count: args.count,
        nranks,
        root,
    };
    let largest = shape.input_elements().max(shape.output_elements());
    if remote && largest.saturating_mul(datatype.size()) > MAX_PAYLOAD {
        let text = format!(
            "{} elements of {} bytes to or from one rank is more than the simulator carries \
             between processes ({MAX_PAYLOAD} bytes); a real NCCL 2.28 carries it",
            largest,
            datatype.size()
        );
        eprintln!("stackbench simulated NCCL: {name}: {text}");
        return Err(refuse(format!("{name} : {text}")));
    }
    Ok(Some(Call {
        comm: args.comm as usize,
        shape,
        send: args.send as u64,
        recv: args.recv as u64,
        stream: args.stream as usize,
    }))
}

/// `ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream)`: every rank's
/// `recvbuff` gets the reduction of every rank's `sendbuff` (`count` elements).
#[no_mangle]
pub extern "C" fn ncclAllReduce(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    count: usize,
    datatype: c_int,
    op: c_int,
    comm: *mut c_void,
    stream: *mut c_void,
) -> NcclResult {
    call(Args {
        function: Function::AllReduce,
        send: sendbuff,
        recv: recvbuff,
        count,
        datatype,
        op,
        root: 0,
        comm,
        stream,
    })
}

/// `ncclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, stream)`: every rank's
/// `recvbuff` gets the root's `sendbuff` (`count` elements).
#[no_mangle]
pub extern "C" fn ncclBroadcast(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    count: usize,
    datatype: c_int,
    root: c_int,
    comm: *mut c_void,
    stream: *mut c_void,
) -> NcclResult {
    call(Args {
        function: Function::Broadcast,
        send: sendbuff,
        recv: recvbuff,
        count,
        datatype,
        op: 0,
        root,
        comm,
        stream,
    })
}

/// `ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream)`: rank `r`'s
/// `recvbuff` gets the reduction of block `r` (`recvcount` elements) of every rank's
/// `sendbuff`.
#[no_mangle]
pub extern "C" fn ncclReduceScatter(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    recvcount: usize,
    datatype: c_int,
    op: c_int,
    comm: *mut c_void,
    stream: *mut c_void,
) -> NcclResult {
    call(Args {
        function: Function::ReduceScatter,
        send: sendbuff,
        recv: recvbuff,
        count: recvcount,
        datatype,
        op,
        root: 0,
        comm,
        stream,
    })
}

/// `ncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream)`: every rank's
/// `recvbuff` gets every rank's `sendbuff` (`sendcount` elements each), in rank order.
#[no_mangle]
pub extern "C" fn ncclAllGather(
    sendbuff: *const c_void,
    recvbuff: *mut c_void,
    sendcount: usize,
    datatype: c_int,
    comm: *mut c_void,
    stream: *mut c_void,
) -> NcclResult {
    call(Args {
        function: Function::AllGather,
        send: sendbuff,
        recv: recvbuff,
        count: sendcount,
        datatype,
        op: 0,
        root: 0,
        comm,
        stream,
    })
}
