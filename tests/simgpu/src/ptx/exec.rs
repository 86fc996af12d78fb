//! Running a parsed kernel: blocks one after another; within a block, threads that are at the
//! same instruction run it together (one decoded instruction, a loop over their lanes), so a
//! block's threads are coroutines that share their program counter while they agree.
//!
//! Each thread keeps its own registers (a column of one flat `Vec<u64>`, register-major) and
//! its place in the program through the group it belongs to. A branch that splits a group
//! makes two; the group at the lowest instruction always runs next and groups that meet at an
//! instruction merge, so threads that diverge at a loop's exit run again together after it. A
//! group that reaches `bar.sync` waits until every thread the barrier counts has arrived (for a
//! barrier of the whole CTA, exited threads count as arrived, as the PTX ISA says of `exit`);
//! when no thread can run and no barrier can complete, the launch fails, where a GPU would hang.

mod arith;

use super::{Counts, Fault, Kernel, Launch, Memory, Region};
pub(super) use arith::{Cmp, CvtMode, FMode, FOp, Num, Rnd};

/// A register's index in a thread's register file.
pub(super) type Reg = u32;

/// Where generic addresses see shared memory (`cvta.shared`): far above any user-space host
/// address, so never a global allocation's.
pub(super) const SHARED_WINDOW: u64 = 0xffff_8000_0000_0000;

/// The most shared memory a block may have (static and dynamic), as on an H100.
const MAX_SHARED: u64 = 227 * 1024;

/// A kernel's body, decoded.
#[derive(Debug, Clone, Default)]
pub struct Program {
    pub(super) code: Vec<Instr>,
    /// Registers per thread: the declared ones, then constants and special registers.
    pub(super) regs: usize,
    /// Registers that hold an immediate operand, set once per launch.
    pub(super) consts: Vec<(Reg, u64)>,
    /// Registers that hold a special register (`%tid.x`).
    pub(super) specials: Vec<(Reg, Special)>,
    /// Each parameter's offset in the parameter space.
    pub(super) param_offsets: Vec<usize>,
    pub(super) param_bytes: usize,
    /// Where dynamic shared memory (`.extern .shared`) begins.
    pub(super) dynamic_shared: usize,
    pub(super) reqntid: Option<[u32; 3]>,
    pub(super) maxntid: Option<[u32; 3]>,
}

/// A special register a program reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
}

/// One decoded instruction.
#[derive(Debug, Clone)]
pub(super) struct Instr {
    pub op: Op,
    /// `@%p` (`false`) or `@!%p` (`true`).
    pub guard: Option<(Reg, bool)>,
    /// Floating-point operations per thread (an FMA counts two).
    pub flops: u8,
    /// The PTX line, for messages.
    pub line: u32,
}

/// A width, for operations that do not depend on signedness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum W {
    W16,
    W32,
    W64,
}

/// An integer type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum I {
    U16,
    U32,
    U64,
    S16,
    S32,
    S64,
}

/// A float type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fl {
    F32,
    F64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Un {
    Neg(I),
    Abs(I),
    Not(W),
    Cnot(W),
    Popc(W),
    Clz(W),
    Brev(W),
    NotPred,
    /// Reads the low bits of a width (`cvt.u64.u32`, `cvt.u32.u64`).
    Mask(W),
    /// Sign-extends from a width (`cvt.s64.s32`).
    Sext(W),
    FNeg(Fl),
    FAbs(Fl),
    Cvt(Num, Num, CvtMode),
    F(FOp, Fl, FMode),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bin {
    Add(W),
    Sub(W),
    MulLo(W),
    MulHi(I),
    MulWide(I),
    Div(I),
    Rem(I),
    Min(I),
    Max(I),
    Shl(W),
    Shr(I),
    And,
    Or,
    Xor,
    FAdd(Fl),
    FSub(Fl),
    FMul(Fl),
    FDiv(Fl),
    FMin(Fl),
    FMax(Fl),
    F(FOp, Fl, FMode),
    SetInt(Cmp, I),
    SetFloat(Cmp, Fl, bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ter {
    MadLo(W),
    MadHi(I),
    MadWide(I),
    Fma(Fl),
    F(FOp, Fl, FMode),
    /// `selp`: `c ? a : b`.
    Selp,
}

/// What `setp` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SetTy {
    Int(I),
    Float(Fl, bool),
}

/// How `setp.cmp.bop` combines its comparison with a predicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BoolOp {
    And,
    Or,
    Xor,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Space {
    Global,
    Shared,
    Param,
    /// No state space: shared memory through its window, global memory otherwise.
    Generic,
}

/// One element of a load or store: its bytes, and whether a load sign-extends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Elem {
    pub bytes: u8,
    pub signed: bool,
}

#[derive(Debug, Clone)]
pub(super) enum Op {
    Mov {
        d: Reg,
        a: Reg,
    },
    Un {
        k: Un,
        d: Reg,
        a: Reg,
    },
    Bin {
        k: Bin,
        d: Reg,
        a: Reg,
        b: Reg,
    },
    Ter {
        k: Ter,
        d: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    /// `setp` with two destinations or a combining predicate (the plain form is a [`Bin`]).
    Setp {
        cmp: Cmp,
        ty: SetTy,
        p: Reg,
        q: Option<Reg>,
        a: Reg,
        b: Reg,
        comb: Option<(BoolOp, Reg, bool)>,
    },
    Ld {
        space: Space,
        elem: Elem,
        n: u8,
        d: [Reg; 4],
        addr: Reg,
        off: u64,
    },
    St {
        space: Space,
        elem: Elem,
        n: u8,
        v: [Reg; 4],
        addr: Reg,
        off: u64,
    },
    /// `mov.b64 d, {a, b}`: element 0 in the low bits.
    Pack {
        d: Reg,
        parts: [Reg; 4],
        n: u8,
        bits: u8,
    },
    /// `mov.b64 {a, b}, s`.
    Unpack {
        d: [Reg; 4],
        n: u8,
        bits: u8,
        a: Reg,
    },
    /// `cvta.shared` (`to_generic`) or `cvta.to.shared`.
    CvtaShared {
        d: Reg,
        a: Reg,
        to_generic: bool,
    },
    Bra {
        target: usize,
    },
    /// `bar.sync`/`barrier.sync` (`wait`) or `bar.arrive`.
    Bar {
        id: Reg,
        count: Option<Reg>,
        wait: bool,
    },
    Exit,
    Trap,
    Nop,
}

impl Op {
    /// Instructions that move a thread's program counter other than to the next instruction.
    fn is_control(&self) -> bool {
        matches!(self, Op::Bra { .. } | Op::Exit | Op::Bar { .. } | Op::Trap)
    }
}

/// Threads of a block at one instruction.
#[derive(Debug)]
struct Group {
    pc: usize,
    /// Linear thread indices in the block.
    lanes: Vec<u32>,
}

/// A group stopped at a barrier.
#[derive(Debug)]
struct Waiter {
    group: Group,
    id: u32,
    count: Option<u32>,
}

/// Why a group stopped running.
enum Event {
    /// It reached another group's instruction or went past one: the scheduler picks again.
    Yield,
    /// A branch split it: the other part.
    Split(Group),
    /// All its threads exited.
    Exited,
    /// Its threads wait at a barrier; `rest` are the threads whose guard skipped it.
    Barrier {
        id: u32,
        count: Option<u32>,
        rest: Option<Group>,
    },
}

/// Everything the threads of a launch read and write.
struct State<'a> {
    /// Threads per block.
    n: usize,
    regs: Vec<u64>,
    shared: Vec<u8>,
    params: Vec<u8>,
    memory: &'a dyn Memory,
    /// The allocation the last global access found (never a peer's, whose accesses are
    /// counted one by one).
    cache: Region,
    counts: Counts,
}

pub fn run(kernel: &Kernel, launch: &Launch, memory: &dyn Memory) -> Result<Counts, Fault> {
    let program = &kernel.body;
    let n = check_launch(kernel, launch)?;
    let mut params = vec![0u8; program.param_bytes];
    for (i, bytes) in launch.params.iter().enumerate() {
        let at = program.param_offsets[i];
        params[at..at + bytes.len()].copy_from_slice(bytes);
    }
    let shared = program.dynamic_shared + launch.shared_bytes as usize;
    let mut cta = Cta {
        program,
        st: State {
            n,
            regs: vec![0; program.regs * n],
            shared: vec![0; shared],
            params,
            memory,
            cache: Region {
                base: 0,
                len: 0,
                data: std::ptr::null_mut(),
                peer: false,
            },
            counts: Counts::default(),
        },
        scratch: Vec::with_capacity(n),
        block: [0; 3],
        exited: 0,
        arrivals: [0; 16],
    };
    cta.init(launch);
    for z in 0..launch.grid[2] {
        for y in 0..launch.grid[1] {
            for x in 0..launch.grid[0] {
                cta.run_block([x, y, z])?;
            }
        }
    }
    Ok(cta.st.counts)
}

/// Checks a launch as `cuLaunchKernel` does; the block's thread count.
fn check_launch(kernel: &Kernel, launch: &Launch) -> Result<usize, Fault> {
    let invalid = |m: String| Err(Fault::InvalidLaunch(m));
    let [bx, by, bz] = launch.block;
    let [gx, gy, gz] = launch.grid;
    if launch.block.contains(&0) || launch.grid.contains(&0) {
        return invalid(format!(
            "a zero dimension: grid ({gx}, {gy}, {gz}), block ({bx}, {by}, {bz})"
        ));
    }
    let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
    if bx > 1024 || by > 1024 || bz > 64 || threads > 1024 {
        return invalid(format!(
            "block ({bx}, {by}, {bz}) is beyond the device's limits (x, y <= 1024, z <= 64, \
             1024 threads)"
        ));
    }
    if gx > i32::MAX as u32 || gy > 65_535 || gz > 65_535 {
        return invalid(format!(
            "grid ({gx}, {gy}, {gz}) is beyond the device's limits (x < 2^31, y, z <= 65535)"
        ));
    }
    let program = &kernel.body;
    if let Some(req) = program.reqntid {
        if req != launch.block {
            return invalid(format!(
                "kernel {} requires a block of {req:?} threads (.reqntid), launched with \
                 ({bx}, {by}, {bz})",
                kernel.name
            ));
        }
    }
    if let Some(max) = program.maxntid {
        let most = max.iter().map(|&d| u64::from(d)).product::<u64>();
        if threads > most {
            return invalid(format!(
                "kernel {} takes at most {most} threads a block (.maxntid), launched with \
                 {threads}",
                kernel.name
            ));
        }
    }
    if launch.params.len() != kernel.params.len() {
        return invalid(format!(
            "kernel {} takes {} parameters, given {}",
            kernel.name,
            kernel.params.len(),
            launch.params.len()
        ));
    }
    for (i, (given, param)) in launch.params.iter().zip(&kernel.params).enumerate() {
        if given.len() != param.size {
            return invalid(format!(
                "parameter {i} of kernel {} is {} bytes, given {}",
                kernel.name,
                param.size,
                given.len()
            ));
        }
    }
    let shared = program.dynamic_shared as u64 + u64::from(launch.shared_bytes);
    if shared > MAX_SHARED {
        return invalid(format!(
            "{shared} bytes of shared memory a block, beyond the device's {MAX_SHARED}"
        ));
    }
    Ok(threads as usize)
}

/// One block's threads, reused block after block.
struct Cta<'a> {
    program: &'a Program,
    st: State<'a>,
    /// The lanes a guard lets through.
    scratch: Vec<u32>,
    block: [u32; 3],
    exited: usize,
    /// `bar.arrive` arrivals not yet consumed, per barrier.
    arrivals: [u32; 16],
}

impl Cta<'_> {
    /// Sets the registers that stay the same for every block: constants, `%tid`, `%ntid`...
    fn init(&mut self, launch: &Launch) {
        let n = self.st.n;
        let [bx, by, _] = launch.block;
        for &(r, v) in &self.program.consts {
            self.st.regs[r as usize * n..(r as usize + 1) * n].fill(v);
        }
        for &(r, s) in &self.program.specials {
            let column = &mut self.st.regs[r as usize * n..(r as usize + 1) * n];
            for (l, v) in column.iter_mut().enumerate() {
                let l = l as u32;
                let tid = [l % bx, l / bx % by, l / (bx * by)];
                *v = u64::from(match s {
                    Special::Tid(d) => tid[d as usize],
                    Special::Ntid(d) => launch.block[d as usize],
                    Special::Nctaid(d) => launch.grid[d as usize],
                    Special::LaneId => l % 32,
                    Special::WarpId => l / 32,
                    Special::NWarpId => (n as u32).div_ceil(32),
                    Special::Ctaid(_) => 0,
                });
            }
        }
    }

    fn run_block(&mut self, block: [u32; 3]) -> Result<(), Fault> {
        let n = self.st.n;
        self.block = block;
        for &(r, s) in &self.program.specials {
            if let Special::Ctaid(d) = s {
                self.st.regs[r as usize * n..(r as usize + 1) * n]
                    .fill(u64::from(block[d as usize]));
            }
        }
        self.st.shared.fill(0);
        self.exited = 0;
        self.arrivals = [0; 16];
        let mut runnable = vec![Group {
            pc: 0,
            lanes: (0..n as u32).collect(),
        }];
        let mut waiting: Vec<Waiter> = Vec::new();
        loop {
            if runnable.is_empty() {
                if waiting.is_empty() {
                    return Ok(());
                }
                if !self.release(&mut waiting, &mut runnable) {
                    return Err(self.deadlock(&waiting));
                }
                continue;
            }
            let first = (0..runnable.len())
                .min_by_key(|&i| runnable[i].pc)
                .expect("a runnable group");
            let mut group = runnable.swap_remove(first);
            let mut merged = false;
            let mut i = 0;
            while i < runnable.len() {
                if runnable[i].pc == group.pc {
                    let other = runnable.swap_remove(i);
                    group.lanes.extend(other.lanes);
                    merged = true;
                } else {
                    i += 1;
                }
            }
            if merged {
                group.lanes.sort_unstable();
            }
            let stop = runnable.iter().map(|g| g.pc).min().unwrap_or(usize::MAX);
            match self.run_group(&mut group, stop)? {
                Event::Yield => runnable.push(group),
                Event::Split(other) => {
                    runnable.push(group);
                    runnable.push(other);
                }
                Event::Exited => {}
                Event::Barrier { id, count, rest } => {
                    waiting.push(Waiter { group, id, count });
                    runnable.extend(rest);
                }
            }
        }
    }

    /// Completes the barriers whose threads have all arrived; whether any did.
    fn release(&mut self, waiting: &mut Vec<Waiter>, runnable: &mut Vec<Group>) -> bool {
        let mut released = false;
        for id in 0..16u32 {
            let arrived: usize = waiting
                .iter()
                .filter(|w| w.id == id)
                .map(|w| w.group.lanes.len())
                .sum();
            if arrived == 0 {
                continue;
            }
            let count = waiting.iter().filter(|w| w.id == id).find_map(|w| w.count);
            let complete = match count {
                // Every thread of the CTA: the exited ones count as arrived.
                None => arrived + self.exited >= self.st.n,
                Some(count) => arrived + self.arrivals[id as usize] as usize >= count as usize,
            };
            if complete {
                self.arrivals[id as usize] = 0;
                let mut i = 0;
                while i < waiting.len() {
                    if waiting[i].id == id {
                        let mut group = waiting.swap_remove(i).group;
                        group.pc += 1;
                        runnable.push(group);
                    } else {
                        i += 1;
                    }
                }
                released = true;
            }
        }
        released
    }

    fn deadlock(&self, waiting: &[Waiter]) -> Fault {
        let [x, y, z] = self.block;
        let waits: Vec<String> = waiting
            .iter()
            .map(|w| {
                let count = w.count.map(|c| format!(", {c}")).unwrap_or_default();
                format!(
                    "{} at barrier {}{count} (PTX line {})",
                    w.group.lanes.len(),
                    w.id,
                    self.program.code[w.group.pc].line
                )
            })
            .collect();
        Fault::Failed(format!(
            "a barrier its threads never all reach: in block ({x}, {y}, {z}) of {} threads, \
             {} wait, {} exited",
            self.st.n,
            waits.join(", "),
            self.exited
        ))
    }

    /// Runs `group` until it leaves the instructions below `stop` (where other groups wait),
    /// splits, exits or reaches a barrier.
    fn run_group(&mut self, g: &mut Group, stop: usize) -> Result<Event, Fault> {
        let program = self.program;
        let n = self.st.n;
        loop {
            if g.pc >= stop {
                return Ok(Event::Yield);
            }
            let ins = &program.code[g.pc];
            self.st.counts.instructions += g.lanes.len() as u64;
            if ins.op.is_control() {
                if let Some(event) = self.control(g, ins)? {
                    return Ok(event);
                }
                continue;
            }
            let lanes: &[u32] = match ins.guard {
                None => &g.lanes,
                Some((p, negated)) => {
                    let column = &self.st.regs[p as usize * n..(p as usize + 1) * n];
                    self.scratch.clear();
                    self.scratch.extend(
                        g.lanes
                            .iter()
                            .copied()
                            .filter(|&l| (column[l as usize] != 0) != negated),
                    );
                    &self.scratch
                }
            };
            self.st.counts.flops += u64::from(ins.flops) * lanes.len() as u64;
            self.st.exec(&ins.op, lanes)?;
            g.pc += 1;
        }
    }

    /// A branch, exit or barrier: `Some` when the group stops.
    fn control(&mut self, g: &mut Group, ins: &Instr) -> Result<Option<Event>, Fault> {
        let n = self.st.n;
        // Splits the group's lanes by the guard: keeps those it lets through, returns the
        // others (none without a guard).
        let split = |regs: &[u64], lanes: &mut Vec<u32>| -> Option<Vec<u32>> {
            let (p, negated) = ins.guard?;
            let column = &regs[p as usize * n..(p as usize + 1) * n];
            let on = |l: u32| (column[l as usize] != 0) != negated;
            let through = lanes.iter().filter(|&&l| on(l)).count();
            if through == lanes.len() {
                return Some(Vec::new());
            }
            if through == 0 {
                return Some(std::mem::take(lanes));
            }
            let (kept, off): (Vec<u32>, Vec<u32>) = lanes.iter().partition(|&&l| on(l));
            *lanes = kept;
            Some(off)
        };
        match ins.op {
            Op::Bra { target } => {
                let Some(off) = split(&self.st.regs, &mut g.lanes) else {
                    g.pc = target;
                    return Ok(None);
                };
                if off.is_empty() {
                    g.pc = target;
                } else if g.lanes.is_empty() {
                    g.lanes = off;
                    g.pc += 1;
                } else {
                    let taken = std::mem::replace(&mut g.lanes, off);
                    g.pc += 1;
                    return Ok(Some(Event::Split(Group {
                        pc: target,
                        lanes: taken,
                    })));
                }
                Ok(None)
            }
            Op::Exit => {
                let off = split(&self.st.regs, &mut g.lanes).unwrap_or_default();
                self.exited += g.lanes.len();
                g.lanes = off;
                if g.lanes.is_empty() {
                    return Ok(Some(Event::Exited));
                }
                g.pc += 1;
                Ok(None)
            }
            Op::Bar { id, count, wait } => {
                let off = split(&self.st.regs, &mut g.lanes).unwrap_or_default();
                let rest = (!off.is_empty()).then(|| Group {
                    pc: g.pc + 1,
                    lanes: off,
                });
                if g.lanes.is_empty() {
                    g.lanes = rest.expect("the threads the guard skipped").lanes;
                    g.pc += 1;
                    return Ok(None);
                }
                let first = g.lanes[0] as usize;
                let uniform = |r: Reg| {
                    let column = &self.st.regs[r as usize * n..(r as usize + 1) * n];
                    let v = column[first] as u32;
                    g.lanes
                        .iter()
                        .all(|&l| column[l as usize] as u32 == v)
                        .then_some(v)
                };
                let line = ins.line;
                let id = match uniform(id) {
                    Some(id) if id < 16 => id,
                    _ => {
                        return Err(Fault::Failed(format!(
                            "the barrier at PTX line {line} is not one barrier 0..15 for all \
                             its threads"
                        )))
                    }
                };
                let count = match count {
                    None => None,
                    Some(r) => match uniform(r) {
                        Some(c) if c > 0 => Some(c),
                        _ => {
                            return Err(Fault::Failed(format!(
                                "the barrier at PTX line {line} has no one thread count"
                            )))
                        }
                    },
                };
                if wait {
                    return Ok(Some(Event::Barrier { id, count, rest }));
                }
                self.arrivals[id as usize] += g.lanes.len() as u32;
                if let Some(rest) = rest {
                    g.lanes.extend(rest.lanes);
                    g.lanes.sort_unstable();
                }
                g.pc += 1;
                Ok(None)
            }
            Op::Trap => Err(Fault::Failed(format!(
                "trap at PTX line {} in block ({}, {}, {})",
                ins.line, self.block[0], self.block[1], self.block[2]
            ))),
            _ => unreachable!("not a control instruction"),
        }
    }
}

/// `d = f(a)` for each lane.
#[inline(always)]
fn map1(r: &mut [u64], n: usize, lanes: &[u32], d: Reg, a: Reg, f: impl Fn(u64) -> u64) {
    let (d, a) = (d as usize * n, a as usize * n);
    if lanes.len() == n {
        for l in 0..n {
            r[d + l] = f(r[a + l]);
        }
    } else {
        for &l in lanes {
            let l = l as usize;
            r[d + l] = f(r[a + l]);
        }
    }
}

/// `d = f(a, b)` for each lane.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn map2(
    r: &mut [u64],
    n: usize,
    lanes: &[u32],
    d: Reg,
    a: Reg,
    b: Reg,
    f: impl Fn(u64, u64) -> u64,
) {
    let (d, a, b) = (d as usize * n, a as usize * n, b as usize * n);
    if lanes.len() == n {
        for l in 0..n {
            r[d + l] = f(r[a + l], r[b + l]);
        }
    } else {
        for &l in lanes {
            let l = l as usize;
            r[d + l] = f(r[a + l], r[b + l]);
        }
    }
}

/// `d = f(a, b, c)` for each lane.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn map3(
    r: &mut [u64],
    n: usize,
    lanes: &[u32],
    d: Reg,
    [a, b, c]: [Reg; 3],
    f: impl Fn(u64, u64, u64) -> u64,
) {
    let (d, a, b, c) = (
        d as usize * n,
        a as usize * n,
        b as usize * n,
        c as usize * n,
    );
    for &l in lanes {
        let l = l as usize;
        r[d + l] = f(r[a + l], r[b + l], r[c + l]);
    }
}

/// Runs `$body` with `$T` the Rust type of a width.
macro_rules! by_w {
    ($w:expr, $T:ident => $body:expr) => {
        match $w {
            W::W16 => {
                type $T = u16;
                $body
            }
            W::W32 => {
                type $T = u32;
                $body
            }
            W::W64 => {
                type $T = u64;
                $body
            }
        }
    };
}

/// Runs `$body` with `$T` the Rust type of an integer type.
macro_rules! by_i {
    ($i:expr, $T:ident => $body:expr) => {
        match $i {
            I::U16 => {
                type $T = u16;
                $body
            }
            I::U32 => {
                type $T = u32;
                $body
            }
            I::U64 => {
                type $T = u64;
                $body
            }
            I::S16 => {
                type $T = i16;
                $body
            }
            I::S32 => {
                type $T = i32;
                $body
            }
            I::S64 => {
                type $T = i64;
                $body
            }
        }
    };
}

/// Runs `$body` with `$T` the Rust type of a float type.
macro_rules! by_f {
    ($f:expr, $T:ident => $body:expr) => {
        match $f {
            Fl::F32 => {
                type $T = f32;
                $body
            }
            Fl::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

fn un(k: Un, r: &mut [u64], n: usize, lanes: &[u32], d: Reg, a: Reg) {
    use arith::*;
    match k {
        Un::Neg(i) => by_i!(i, T => map1(r, n, lanes, d, a, neg::<T>)),
        Un::Abs(i) => by_i!(i, T => map1(r, n, lanes, d, a, abs::<T>)),
        Un::Not(w) => by_w!(w, T => map1(r, n, lanes, d, a, not::<T>)),
        Un::Cnot(w) => by_w!(w, T => map1(r, n, lanes, d, a, cnot::<T>)),
        Un::Popc(w) => by_w!(w, T => map1(r, n, lanes, d, a, popc::<T>)),
        Un::Clz(w) => by_w!(w, T => map1(r, n, lanes, d, a, clz::<T>)),
        Un::Brev(w) => by_w!(w, T => map1(r, n, lanes, d, a, brev::<T>)),
        Un::NotPred => map1(r, n, lanes, d, a, |x| u64::from(x == 0)),
        Un::Mask(w) => by_w!(w, T => map1(r, n, lanes, d, a, mask::<T>)),
        Un::Sext(w) => match w {
            W::W16 => map1(r, n, lanes, d, a, sext::<i16>),
            W::W32 => map1(r, n, lanes, d, a, sext::<i32>),
            W::W64 => map1(r, n, lanes, d, a, sext::<i64>),
        },
        Un::FNeg(f) => by_f!(f, T => map1(r, n, lanes, d, a, fneg::<T>)),
        Un::FAbs(f) => by_f!(f, T => map1(r, n, lanes, d, a, fabs::<T>)),
        Un::Cvt(to, from, m) => map1(r, n, lanes, d, a, |x| cvt(to, from, m, x)),
        Un::F(op, f, m) => {
            by_f!(f, T => map1(r, n, lanes, d, a, |x| fgeneral::<T>(op, m, x, 0, 0)))
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn bin(k: Bin, r: &mut [u64], n: usize, lanes: &[u32], d: Reg, a: Reg, b: Reg) {
    use arith::*;
    match k {
        Bin::Add(w) => by_w!(w, T => map2(r, n, lanes, d, a, b, add::<T>)),
        Bin::Sub(w) => by_w!(w, T => map2(r, n, lanes, d, a, b, sub::<T>)),
        Bin::MulLo(w) => by_w!(w, T => map2(r, n, lanes, d, a, b, mul_lo::<T>)),
        Bin::MulHi(i) => by_i!(i, T => map2(r, n, lanes, d, a, b, mul_hi::<T>)),
        Bin::MulWide(i) => by_i!(i, T => map2(r, n, lanes, d, a, b, mul_wide::<T>)),
        Bin::Div(i) => by_i!(i, T => map2(r, n, lanes, d, a, b, div::<T>)),
        Bin::Rem(i) => by_i!(i, T => map2(r, n, lanes, d, a, b, rem::<T>)),
        Bin::Min(i) => by_i!(i, T => map2(r, n, lanes, d, a, b, min::<T>)),
        Bin::Max(i) => by_i!(i, T => map2(r, n, lanes, d, a, b, max::<T>)),
        Bin::Shl(w) => by_w!(w, T => map2(r, n, lanes, d, a, b, shl::<T>)),
        Bin::Shr(i) => by_i!(i, T => map2(r, n, lanes, d, a, b, shr::<T>)),
        Bin::And => map2(r, n, lanes, d, a, b, |x, y| x & y),
        Bin::Or => map2(r, n, lanes, d, a, b, |x, y| x | y),
        Bin::Xor => map2(r, n, lanes, d, a, b, |x, y| x ^ y),
        Bin::FAdd(f) => by_f!(f, T => map2(r, n, lanes, d, a, b, fadd::<T>)),
        Bin::FSub(f) => by_f!(f, T => map2(r, n, lanes, d, a, b, fsub::<T>)),
        Bin::FMul(f) => by_f!(f, T => map2(r, n, lanes, d, a, b, fmul::<T>)),
        Bin::FDiv(f) => by_f!(f, T => map2(r, n, lanes, d, a, b, fdiv::<T>)),
        Bin::FMin(f) => by_f!(f, T => map2(r, n, lanes, d, a, b, fmin::<T>)),
        Bin::FMax(f) => by_f!(f, T => map2(r, n, lanes, d, a, b, fmax::<T>)),
        Bin::F(op, f, m) => {
            by_f!(f, T => map2(r, n, lanes, d, a, b, |x, y| fgeneral::<T>(op, m, x, y, 0)))
        }
        Bin::SetInt(cmp, i) => {
            by_i!(i, T => map2(r, n, lanes, d, a, b, |x, y| u64::from(cmp_int::<T>(cmp, x, y))))
        }
        Bin::SetFloat(cmp, f, ftz) => by_f!(f, T => map2(r, n, lanes, d, a, b, |x, y| {
            u64::from(cmp_float::<T>(cmp, ftz, x, y))
        })),
    }
}

fn ter(k: Ter, r: &mut [u64], n: usize, lanes: &[u32], d: Reg, abc: [Reg; 3]) {
    use arith::*;
    match k {
        Ter::MadLo(w) => by_w!(w, T => map3(r, n, lanes, d, abc, mad_lo::<T>)),
        Ter::MadHi(i) => by_i!(i, T => map3(r, n, lanes, d, abc, mad_hi::<T>)),
        Ter::MadWide(i) => by_i!(i, T => map3(r, n, lanes, d, abc, mad_wide::<T>)),
        Ter::Fma(f) => by_f!(f, T => map3(r, n, lanes, d, abc, ffma::<T>)),
        Ter::F(op, f, m) => {
            by_f!(f, T => map3(r, n, lanes, d, abc, |x, y, z| fgeneral::<T>(op, m, x, y, z)))
        }
        Ter::Selp => map3(r, n, lanes, d, abc, |x, y, c| if c != 0 { x } else { y }),
    }
}

fn compare(cmp: Cmp, ty: SetTy, a: u64, b: u64) -> bool {
    use arith::*;
    match ty {
        SetTy::Int(i) => by_i!(i, T => cmp_int::<T>(cmp, a, b)),
        SetTy::Float(f, ftz) => by_f!(f, T => cmp_float::<T>(cmp, ftz, a, b)),
    }
}

/// Reads a little-endian element of `bytes` bytes at `p`.
#[inline(always)]
fn read_ptr(p: *const u8, elem: Elem) -> u64 {
    // SAFETY: `p` points into a `Region` with at least `elem.bytes` bytes left (checked by
    // `State::global`), whose `data` the `Memory` contract keeps valid and untouched by anything
    // else for the whole launch; the reads are unaligned-safe.
    let raw = unsafe {
        match elem.bytes {
            1 => u64::from(p.read()),
            2 => u64::from(u16::from_le(p.cast::<u16>().read_unaligned())),
            4 => u64::from(u32::from_le(p.cast::<u32>().read_unaligned())),
            _ => u64::from_le(p.cast::<u64>().read_unaligned()),
        }
    };
    extend(raw, elem)
}

/// Writes the low `elem.bytes` bytes of `v` at `p`, little-endian.
#[inline(always)]
fn write_ptr(p: *mut u8, elem: Elem, v: u64) {
    // SAFETY: as in `read_ptr`: `p` has `elem.bytes` bytes of a live `Region` behind it.
    unsafe {
        match elem.bytes {
            1 => p.write(v as u8),
            2 => p.cast::<u16>().write_unaligned((v as u16).to_le()),
            4 => p.cast::<u32>().write_unaligned((v as u32).to_le()),
            _ => p.cast::<u64>().write_unaligned(v.to_le()),
        }
    }
}

/// A loaded value as its register holds it: signed types sign-extended.
#[inline(always)]
fn extend(raw: u64, elem: Elem) -> u64 {
    if elem.signed && elem.bytes < 8 {
        let shift = 64 - 8 * u32::from(elem.bytes);
        (((raw << shift) as i64) >> shift) as u64
    } else {
        raw
    }
}

#[inline(always)]
fn read_slice(bytes: &[u8], at: usize, elem: Elem) -> u64 {
    let raw = match elem.bytes {
        1 => u64::from(bytes[at]),
        2 => u64::from(u16::from_le_bytes([bytes[at], bytes[at + 1]])),
        4 => u64::from(u32::from_le_bytes(
            bytes[at..at + 4].try_into().expect("4 bytes"),
        )),
        _ => u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes")),
    };
    extend(raw, elem)
}

#[inline(always)]
fn write_slice(bytes: &mut [u8], at: usize, elem: Elem, v: u64) {
    match elem.bytes {
        1 => bytes[at] = v as u8,
        2 => bytes[at..at + 2].copy_from_slice(&(v as u16).to_le_bytes()),
        4 => bytes[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes()),
        _ => bytes[at..at + 8].copy_from_slice(&v.to_le_bytes()),
    }
}

/// Where one thread's access goes.
enum Place {
    Global(*mut u8),
    Shared(usize),
    Param(usize),
}

impl State<'_> {
    fn exec(&mut self, op: &Op, lanes: &[u32]) -> Result<(), Fault> {
        let n = self.n;
        let r = &mut self.regs[..];
        match *op {
            Op::Mov { d, a } => map1(r, n, lanes, d, a, |x| x),
            Op::Un { k, d, a } => un(k, r, n, lanes, d, a),
            Op::Bin { k, d, a, b } => bin(k, r, n, lanes, d, a, b),
            Op::Ter { k, d, a, b, c } => ter(k, r, n, lanes, d, [a, b, c]),
            Op::Setp {
                cmp,
                ty,
                p,
                q,
                a,
                b,
                comb,
            } => {
                for &l in lanes {
                    let l = l as usize;
                    let t = compare(cmp, ty, r[a as usize * n + l], r[b as usize * n + l]);
                    let f = !t;
                    let (t, f) = match comb {
                        None => (t, f),
                        Some((bop, c, negated)) => {
                            let c = (r[c as usize * n + l] != 0) != negated;
                            match bop {
                                BoolOp::And => (t && c, f && c),
                                BoolOp::Or => (t || c, f || c),
                                BoolOp::Xor => (t ^ c, f ^ c),
                            }
                        }
                    };
                    r[p as usize * n + l] = u64::from(t);
                    if let Some(q) = q {
                        r[q as usize * n + l] = u64::from(f);
                    }
                }
            }
            Op::Pack {
                d,
                parts,
                n: k,
                bits,
            } => {
                let mask = if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                for &l in lanes {
                    let l = l as usize;
                    let mut v = 0;
                    for (i, &p) in parts[..k as usize].iter().enumerate() {
                        v |= (r[p as usize * n + l] & mask) << (i * bits as usize);
                    }
                    r[d as usize * n + l] = v;
                }
            }
            Op::Unpack { d, n: k, bits, a } => {
                let mask = if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                for &l in lanes {
                    let l = l as usize;
                    let v = r[a as usize * n + l];
                    for (i, &p) in d[..k as usize].iter().enumerate() {
                        r[p as usize * n + l] = (v >> (i * bits as usize)) & mask;
                    }
                }
            }
            Op::CvtaShared { d, a, to_generic } => {
                if to_generic {
                    map1(r, n, lanes, d, a, |x| x.wrapping_add(SHARED_WINDOW))
                } else {
                    map1(r, n, lanes, d, a, |x| x.wrapping_sub(SHARED_WINDOW))
                }
            }
            Op::Ld {
                space,
                elem,
                n: k,
                d,
                addr,
                off,
            } => return self.load(space, elem, &d[..k as usize], addr, off, lanes),
            Op::St {
                space,
                elem,
                n: k,
                v,
                addr,
                off,
            } => return self.store(space, elem, &v[..k as usize], addr, off, lanes),
            Op::Nop => {}
            Op::Bra { .. } | Op::Exit | Op::Bar { .. } | Op::Trap => {
                unreachable!("control instructions run in Cta::control")
            }
        }
        Ok(())
    }

    /// Where the access of `bytes` bytes at `address` in `space` goes, checked.
    #[inline(always)]
    fn place(&mut self, space: Space, address: u64, bytes: usize) -> Result<Place, Fault> {
        // Every access is of 1, 2, 4, 8, 16 or 32 bytes: a power of two.
        if address & (bytes as u64 - 1) != 0 {
            return Err(Fault::Misaligned { address, bytes });
        }
        let local = |len: usize| {
            if address < len as u64 && len as u64 - address >= bytes as u64 {
                Ok(address as usize)
            } else {
                Err(Fault::IllegalAddress { address, bytes })
            }
        };
        match space {
            Space::Global => self.global(address, bytes).map(Place::Global),
            Space::Shared => local(self.shared.len()).map(Place::Shared),
            Space::Param => local(self.params.len()).map(Place::Param),
            Space::Generic => {
                let shared = address.wrapping_sub(SHARED_WINDOW);
                if shared < 1 << 32 {
                    if shared < self.shared.len() as u64
                        && self.shared.len() as u64 - shared >= bytes as u64
                    {
                        Ok(Place::Shared(shared as usize))
                    } else {
                        Err(Fault::IllegalAddress { address, bytes })
                    }
                } else {
                    self.global(address, bytes).map(Place::Global)
                }
            }
        }
    }

    /// The host address of a global access, through the last allocation found or `Memory`.
    #[inline(always)]
    fn global(&mut self, address: u64, bytes: usize) -> Result<*mut u8, Fault> {
        let offset = address.wrapping_sub(self.cache.base);
        if offset < self.cache.len as u64 && self.cache.len as u64 - offset >= bytes as u64 {
            return Ok(self.cache.data.wrapping_add(offset as usize));
        }
        self.global_slow(address, bytes)
    }

    #[cold]
    fn global_slow(&mut self, address: u64, bytes: usize) -> Result<*mut u8, Fault> {
        match self.memory.region(address) {
            Some(region) => {
                let offset = address.wrapping_sub(region.base);
                if offset < region.len as u64 && region.len as u64 - offset >= bytes as u64 {
                    if region.peer {
                        self.counts.peer_bytes += bytes as u64;
                    } else {
                        self.cache = region;
                    }
                    Ok(region.data.wrapping_add(offset as usize))
                } else {
                    Err(Fault::IllegalAddress { address, bytes })
                }
            }
            None => Err(Fault::IllegalAddress { address, bytes }),
        }
    }

    fn load(
        &mut self,
        space: Space,
        elem: Elem,
        d: &[Reg],
        addr: Reg,
        off: u64,
        lanes: &[u32],
    ) -> Result<(), Fault> {
        let n = self.n;
        let bytes = elem.bytes as usize * d.len();
        if space == Space::Global && d.len() == 1 {
            // The common case, kept tight: one scalar from global memory per thread.
            let (dst, src) = (d[0] as usize * n, addr as usize * n);
            for &l in lanes {
                let l = l as usize;
                let address = self.regs[src + l].wrapping_add(off);
                if address & (bytes as u64 - 1) != 0 {
                    return Err(Fault::Misaligned { address, bytes });
                }
                let p = self.global(address, bytes)?;
                self.regs[dst + l] = read_ptr(p, elem);
            }
            self.counts.global_bytes_loaded += (bytes * lanes.len()) as u64;
            return Ok(());
        }
        let mut global = 0u64;
        for &l in lanes {
            let l = l as usize;
            let address = self.regs[addr as usize * n + l].wrapping_add(off);
            match self.place(space, address, bytes)? {
                Place::Global(p) => {
                    for (i, &r) in d.iter().enumerate() {
                        self.regs[r as usize * n + l] =
                            read_ptr(p.wrapping_add(i * elem.bytes as usize), elem);
                    }
                    global += bytes as u64;
                }
                Place::Shared(at) => {
                    for (i, &r) in d.iter().enumerate() {
                        self.regs[r as usize * n + l] =
                            read_slice(&self.shared, at + i * elem.bytes as usize, elem);
                    }
                }
                Place::Param(at) => {
                    for (i, &r) in d.iter().enumerate() {
                        self.regs[r as usize * n + l] =
                            read_slice(&self.params, at + i * elem.bytes as usize, elem);
                    }
                }
            }
        }
        self.counts.global_bytes_loaded += global;
        Ok(())
    }

    fn store(
        &mut self,
        space: Space,
        elem: Elem,
        v: &[Reg],
        addr: Reg,
        off: u64,
        lanes: &[u32],
    ) -> Result<(), Fault> {
        let n = self.n;
        let bytes = elem.bytes as usize * v.len();
        if space == Space::Global && v.len() == 1 {
            let (value, dst) = (v[0] as usize * n, addr as usize * n);
            for &l in lanes {
                let l = l as usize;
                let address = self.regs[dst + l].wrapping_add(off);
                if address & (bytes as u64 - 1) != 0 {
                    return Err(Fault::Misaligned { address, bytes });
                }
                let p = self.global(address, bytes)?;
                write_ptr(p, elem, self.regs[value + l]);
            }
            self.counts.global_bytes_stored += (bytes * lanes.len()) as u64;
            return Ok(());
        }
        let mut global = 0u64;
        for &l in lanes {
            let l = l as usize;
            let address = self.regs[addr as usize * n + l].wrapping_add(off);
            match self.place(space, address, bytes)? {
                Place::Global(p) => {
                    for (i, &r) in v.iter().enumerate() {
                        let value = self.regs[r as usize * n + l];
                        write_ptr(p.wrapping_add(i * elem.bytes as usize), elem, value);
                    }
                    global += bytes as u64;
                }
                Place::Shared(at) => {
                    for (i, &r) in v.iter().enumerate() {
                        let value = self.regs[r as usize * n + l];
                        write_slice(&mut self.shared, at + i * elem.bytes as usize, elem, value);
                    }
                }
                Place::Param(at) => {
                    for (i, &r) in v.iter().enumerate() {
                        let value = self.regs[r as usize * n + l];
                        write_slice(&mut self.params, at + i * elem.bytes as usize, elem, value);
                    }
                }
            }
        }
        self.counts.global_bytes_stored += global;
        Ok(())
    }
}
