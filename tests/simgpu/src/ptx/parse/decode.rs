//! One kernel body's names (registers, constants, special registers, variables, labels) and
//! the decoding of each instruction into its typed, resolved form.

use std::collections::HashMap;

use super::super::exec::{
    Bin, BoolOp, Cmp, CvtMode, Elem, FMode, FOp, Fl, Instr, Num, Op, Reg, Rnd, SetTy, Space,
    Special, Ter, Un, I, W,
};
use super::super::PtxError;
use super::{err, Labels, Lit, Opnd};

/// The state space of a variable a body names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SymSpace {
    Param,
    Shared,
}

/// A kernel body as it is decoded.
#[derive(Debug)]
pub(super) struct Body {
    kernel: String,
    names: HashMap<String, Reg>,
    scopes: Vec<HashMap<String, Reg>>,
    pub next_reg: Reg,
    pub consts: HashMap<u64, Reg>,
    pub specials: HashMap<Special, Reg>,
    /// Parameters and shared variables: their space and address in it.
    pub symbols: HashMap<String, (SymSpace, u64)>,
    /// Registers standing for a variable's address, set once the variables are laid out.
    symbol_regs: HashMap<String, (Reg, usize)>,
    pub code: Vec<Instr>,
    labels: Labels,
    sink: Option<Reg>,
}

/// A body once decoded.
pub(super) struct Finished {
    pub code: Vec<Instr>,
    pub regs: usize,
    pub consts: Vec<(Reg, u64)>,
    pub specials: Vec<(Reg, Special)>,
}

/// An instruction type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Pred,
    B(u32),
    U(u32),
    S(u32),
    F(u32),
    Bf16,
}

fn ty(s: &str) -> Option<Ty> {
    Some(match s {
        "pred" => Ty::Pred,
        "b8" => Ty::B(8),
        "b16" => Ty::B(16),
        "b32" => Ty::B(32),
        "b64" => Ty::B(64),
        "u8" => Ty::U(8),
        "u16" => Ty::U(16),
        "u32" => Ty::U(32),
        "u64" => Ty::U(64),
        "s8" => Ty::S(8),
        "s16" => Ty::S(16),
        "s32" => Ty::S(32),
        "s64" => Ty::S(64),
        "f16" => Ty::F(16),
        "f32" => Ty::F(32),
        "f64" => Ty::F(64),
        "bf16" => Ty::Bf16,
        _ => return None,
    })
}

impl Ty {
    fn bits(self) -> u32 {
        match self {
            Ty::Pred => 1,
            Ty::B(b) | Ty::U(b) | Ty::S(b) | Ty::F(b) => b,
            Ty::Bf16 => 16,
        }
    }

    fn w(self) -> Option<W> {
        match self {
            Ty::B(b) | Ty::U(b) | Ty::S(b) => match b {
                16 => Some(W::W16),
                32 => Some(W::W32),
                64 => Some(W::W64),
                _ => None,
            },
            _ => None,
        }
    }

    fn i(self) -> Option<I> {
        Some(match self {
            Ty::B(16) | Ty::U(16) => I::U16,
            Ty::B(32) | Ty::U(32) => I::U32,
            Ty::B(64) | Ty::U(64) => I::U64,
            Ty::S(16) => I::S16,
            Ty::S(32) => I::S32,
            Ty::S(64) => I::S64,
            _ => return None,
        })
    }

    fn fl(self) -> Option<Fl> {
        match self {
            Ty::F(32) => Some(Fl::F32),
            Ty::F(64) => Some(Fl::F64),
            _ => None,
        }
    }

    fn num(self) -> Option<Num> {
        Some(match self {
            Ty::B(b) | Ty::U(b) if b >= 8 => Num::U(b),
            Ty::S(b) => Num::S(b),
            Ty::F(32) => Num::F32,
            Ty::F(64) => Num::F64,
            _ => return None,
        })
    }
}

/// An opcode's modifiers, consumed as the decoder understands them; any left over is an error.
struct Mods<'a> {
    opcode: &'a str,
    items: Vec<&'a str>,
    types: Vec<Ty>,
    line: usize,
}

impl<'a> Mods<'a> {
    fn take(&mut self, m: &str) -> bool {
        match self.items.iter().position(|&x| x == m) {
            Some(i) => {
                self.items.remove(i);
                true
            }
            None => false,
        }
    }

    fn take_where(&mut self, f: impl Fn(&str) -> bool) -> Option<&'a str> {
        let i = self.items.iter().position(|x| f(x))?;
        Some(self.items.remove(i))
    }

    fn ty1(&mut self) -> Result<Ty, PtxError> {
        match self.types[..] {
            [t] => {
                self.types.clear();
                Ok(t)
            }
            _ => err(
                self.line,
                format!("`{}` needs exactly one type", self.opcode),
            ),
        }
    }

    /// `.rn` `.rz` `.rm` `.rp`.
    fn rnd(&mut self) -> Option<Rnd> {
        Some(
            match self.take_where(|m| matches!(m, "rn" | "rz" | "rm" | "rp"))? {
                "rn" => Rnd::Rn,
                "rz" => Rnd::Rz,
                "rm" => Rnd::Rm,
                _ => Rnd::Rp,
            },
        )
    }

    /// `.rni` `.rzi` `.rmi` `.rpi`.
    fn int_rnd(&mut self) -> Option<Rnd> {
        Some(
            match self.take_where(|m| matches!(m, "rni" | "rzi" | "rmi" | "rpi"))? {
                "rni" => Rnd::Rn,
                "rzi" => Rnd::Rz,
                "rmi" => Rnd::Rm,
                _ => Rnd::Rp,
            },
        )
    }

    fn done(&self) -> Result<(), PtxError> {
        if let Some(m) = self.items.first() {
            return err(
                self.line,
                format!("unsupported modifier .{m} in `{}`", self.opcode),
            );
        }
        if !self.types.is_empty() {
            return err(self.line, format!("unexpected type in `{}`", self.opcode));
        }
        Ok(())
    }

    fn unsupported<T>(&self, what: &str) -> Result<T, PtxError> {
        err(
            self.line,
            format!("`{}`: {what} is not supported", self.opcode),
        )
    }
}

/// The special register `%tid.x` and its kind.
fn special(name: &str) -> Option<Special> {
    let dim = |d: &str| match d {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, d)) = name.split_once('.') {
        let d = dim(d)?;
        return Some(match base {
            "%tid" => Special::Tid(d),
            "%ntid" => Special::Ntid(d),
            "%ctaid" => Special::Ctaid(d),
            "%nctaid" => Special::Nctaid(d),
            _ => return None,
        });
    }
    Some(match name {
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%nwarpid" => Special::NWarpId,
        _ => return None,
    })
}

fn imm_bits(l: Lit, t: Ty, line: usize) -> Result<u64, PtxError> {
    Ok(match (l, t) {
        (Lit::Int(v), Ty::F(32)) => u64::from((v as f32).to_bits()),
        (Lit::Int(v), Ty::F(64)) => (v as f64).to_bits(),
        (Lit::Int(v), Ty::Pred) => u64::from(v != 0),
        (Lit::Int(v), _) => v as u64,
        (Lit::F32(b), Ty::F(64)) => f64::from(f32::from_bits(b)).to_bits(),
        (Lit::F32(b), _) => u64::from(b),
        (Lit::F64(b), Ty::F(32)) => u64::from((f64::from_bits(b) as f32).to_bits()),
        (Lit::F64(b), _) => b,
        (Lit::Dec(x), Ty::F(32)) => u64::from((x as f32).to_bits()),
        (Lit::Dec(x), Ty::F(64)) => x.to_bits(),
        (Lit::Dec(x), _) => return err(line, format!("{x} is not an integer")),
    })
}

fn arity(ops: &[Opnd], n: std::ops::RangeInclusive<usize>, m: &Mods) -> Result<(), PtxError> {
    if n.contains(&ops.len()) {
        Ok(())
    } else {
        err(
            m.line,
            format!(
                "`{}` takes {} operands, given {}",
                m.opcode,
                if n.start() == n.end() {
                    n.start().to_string()
                } else {
                    format!("{} to {}", n.start(), n.end())
                },
                ops.len()
            ),
        )
    }
}

/// A scalar operand or a vector's items.
fn list<'x>(o: &Opnd<'x>) -> Vec<Opnd<'x>> {
    match o {
        Opnd::Vec(items) => items.clone(),
        o => vec![o.clone()],
    }
}

impl Body {
    pub fn new(kernel: &str) -> Body {
        Body {
            kernel: kernel.to_string(),
            names: HashMap::new(),
            scopes: Vec::new(),
            next_reg: 0,
            consts: HashMap::new(),
            specials: HashMap::new(),
            symbols: HashMap::new(),
            symbol_regs: HashMap::new(),
            code: Vec::new(),
            labels: Labels::default(),
            sink: None,
        }
    }

    fn alloc(&mut self) -> Reg {
        let r = self.next_reg;
        self.next_reg += 1;
        r
    }

    pub fn declare(&mut self, name: &str, line: usize) -> Result<(), PtxError> {
        if !name.starts_with('%')
            && !name
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        {
            return err(line, format!("`{name}` is not a register name"));
        }
        let r = self.alloc();
        self.names.insert(name.to_string(), r);
        Ok(())
    }

    /// A `{` inside the body: declarations in it end with its `}`.
    pub fn open_scope(&mut self) {
        self.scopes.push(self.names.clone());
    }

    pub fn close_scope(&mut self) {
        if let Some(names) = self.scopes.pop() {
            self.names = names;
        }
    }

    pub fn label(&mut self, name: &str, line: usize) -> Result<(), PtxError> {
        if self
            .labels
            .at
            .insert(name.to_string(), self.code.len())
            .is_some()
        {
            return err(line, format!("label {name} is defined twice"));
        }
        Ok(())
    }

    /// A guard's predicate register.
    pub fn pred(&self, name: &str, line: usize) -> Result<Reg, PtxError> {
        match self.names.get(name) {
            Some(&r) => Ok(r),
            None => err(line, format!("unknown predicate {name}")),
        }
    }

    fn constant(&mut self, v: u64) -> Reg {
        if let Some(&r) = self.consts.get(&v) {
            return r;
        }
        let r = self.alloc();
        self.consts.insert(v, r);
        r
    }

    fn symbol(&mut self, name: &str, line: usize) -> Reg {
        if let Some(&(r, _)) = self.symbol_regs.get(name) {
            return r;
        }
        let r = self.alloc();
        self.symbol_regs.insert(name.to_string(), (r, line));
        r
    }

    /// A source operand's register: a register, special register, variable address or constant.
    fn src(&mut self, o: &Opnd, t: Ty, line: usize) -> Result<Reg, PtxError> {
        match *o {
            Opnd::Name(n) => {
                if let Some(&r) = self.names.get(n) {
                    return Ok(r);
                }
                if let Some(s) = special(n) {
                    if let Some(&r) = self.specials.get(&s) {
                        return Ok(r);
                    }
                    let r = self.alloc();
                    self.specials.insert(s, r);
                    return Ok(r);
                }
                if n.starts_with('%') {
                    return err(line, format!("unknown register {n}"));
                }
                Ok(self.symbol(n, line))
            }
            Opnd::Imm(l) => {
                let v = imm_bits(l, t, line)?;
                Ok(self.constant(v))
            }
            _ => err(
                line,
                format!("expected a register or a number, found {o:?}"),
            ),
        }
    }

    fn dst(&mut self, o: &Opnd, line: usize) -> Result<Reg, PtxError> {
        match *o {
            Opnd::Name(n) => match self.names.get(n) {
                Some(&r) => Ok(r),
                None => err(line, format!("unknown destination register {n}")),
            },
            Opnd::Sink => Ok(match self.sink {
                Some(r) => r,
                None => {
                    let r = self.alloc();
                    self.sink = Some(r);
                    r
                }
            }),
            _ => err(
                line,
                format!("expected a destination register, found {o:?}"),
            ),
        }
    }

    fn pred_src(&mut self, o: &Opnd, line: usize) -> Result<(Reg, bool), PtxError> {
        match *o {
            Opnd::Name(_) | Opnd::Imm(_) => Ok((self.src(o, Ty::Pred, line)?, false)),
            Opnd::Not(n) => Ok((self.pred(n, line)?, true)),
            _ => err(line, format!("expected a predicate, found {o:?}")),
        }
    }

    /// An address operand: its base register (a variable's address or zero when it has none)
    /// and offset.
    fn addr(&mut self, o: &Opnd, line: usize) -> Result<(Reg, u64), PtxError> {
        match *o {
            Opnd::Addr(Some(base), off) => {
                Ok((self.src(&Opnd::Name(base), Ty::U(64), line)?, off as u64))
            }
            Opnd::Addr(None, off) => Ok((self.constant(0), off as u64)),
            _ => err(line, format!("expected an address `[...]`, found {o:?}")),
        }
    }

    /// Resolves branch targets and variable addresses.
    pub fn finish(&mut self) -> Result<Finished, PtxError> {
        // Control reaching the end of the body exits, as `ret` does.
        let end = self.code.last().map(|i| i.line).unwrap_or(0);
        self.code.push(Instr {
            op: Op::Exit,
            guard: None,
            flops: 0,
            line: end,
        });
        super::resolve(&mut self.code, &self.labels)?;
        let mut consts: Vec<(Reg, u64)> = self.consts.iter().map(|(&v, &r)| (r, v)).collect();
        for (name, &(r, line)) in &self.symbol_regs {
            match self.symbols.get(name) {
                Some(&(_, address)) => consts.push((r, address)),
                None => {
                    return err(
                        line,
                        format!("unknown register or variable {name} in {}", self.kernel),
                    )
                }
            }
        }
        consts.sort_unstable();
        let mut specials: Vec<(Reg, Special)> =
            self.specials.iter().map(|(&s, &r)| (r, s)).collect();
        specials.sort_unstable_by_key(|&(r, _)| r);
        Ok(Finished {
            code: std::mem::take(&mut self.code),
            regs: self.next_reg as usize,
            consts,
            specials,
        })
    }

    /// Decodes one instruction: its operation and floating-point operations per thread.
    pub fn decode(
        &mut self,
        opcode: &str,
        ops: &[Opnd],
        line: usize,
    ) -> Result<(Op, u8), PtxError> {
        let mut parts = opcode.split('.');
        let mnemonic = parts.next().unwrap_or_default();
        let mut m = Mods {
            opcode,
            items: Vec::new(),
            types: Vec::new(),
            line,
        };
        for p in parts {
            match ty(p) {
                Some(t) => m.types.push(t),
                None => m.items.push(p),
            }
        }
        let decoded = self.decode_op(mnemonic, &mut m, ops)?;
        m.done()?;
        Ok(decoded)
    }

    fn float_mode(m: &mut Mods, allow_directed: bool) -> Result<FMode, PtxError> {
        let rnd = m.rnd().unwrap_or(Rnd::Rn);
        if rnd != Rnd::Rn && !allow_directed {
            return m.unsupported("a rounding mode other than .rn");
        }
        Ok(FMode {
            rnd,
            ftz: m.take("ftz"),
            sat: m.take("sat"),
        })
    }

    fn decode_op(&mut self, mn: &str, m: &mut Mods, ops: &[Opnd]) -> Result<(Op, u8), PtxError> {
        let line = m.line;
        let plain = |f: FMode| f.rnd == Rnd::Rn && !f.ftz && !f.sat;
        match mn {
            "mov" => {
                let t = m.ty1()?;
                arity(ops, 2..=2, m)?;
                match (&ops[0], &ops[1]) {
                    (Opnd::Vec(ds), a) => {
                        let (n, bits) = Self::parts(ds.len(), t, m)?;
                        let mut d = [0; 4];
                        for (slot, o) in d.iter_mut().zip(ds) {
                            *slot = self.dst(o, line)?;
                        }
                        let a = self.src(a, t, line)?;
                        Ok((Op::Unpack { d, n, bits, a }, 0))
                    }
                    (d, Opnd::Vec(ps)) => {
                        let (n, bits) = Self::parts(ps.len(), t, m)?;
                        let mut parts = [0; 4];
                        for (slot, o) in parts.iter_mut().zip(ps) {
                            *slot = self.src(o, Ty::B(u32::from(bits)), line)?;
                        }
                        let d = self.dst(d, line)?;
                        Ok((Op::Pack { d, parts, n, bits }, 0))
                    }
                    (d, a) => {
                        let a = self.src(a, t, line)?;
                        let d = self.dst(d, line)?;
                        Ok((Op::Mov { d, a }, 0))
                    }
                }
            }
            "add" | "sub" => {
                let t = m.ty1()?;
                let (op, fop) = if mn == "add" {
                    (Bin::Add as fn(W) -> Bin, FOp::Add)
                } else {
                    (Bin::Sub as fn(W) -> Bin, FOp::Sub)
                };
                if let Some(fl) = t.fl() {
                    let f = Self::float_mode(m, true)?;
                    let k = match (plain(f), fop) {
                        (true, FOp::Add) => Bin::FAdd(fl),
                        (true, _) => Bin::FSub(fl),
                        (false, _) => Bin::F(fop, fl, f),
                    };
                    return self.bin(k, t, ops, m, 1);
                }
                match t.w() {
                    Some(w) => self.bin(op(w), t, ops, m, 0),
                    None => m.unsupported("this type"),
                }
            }
            "mul" => {
                let t = m.ty1()?;
                if let Some(fl) = t.fl() {
                    let f = Self::float_mode(m, true)?;
                    let k = if plain(f) {
                        Bin::FMul(fl)
                    } else {
                        Bin::F(FOp::Mul, fl, f)
                    };
                    return self.bin(k, t, ops, m, 1);
                }
                let (Some(w), Some(i)) = (t.w(), t.i()) else {
                    return m.unsupported("this type");
                };
                if m.take("lo") {
                    self.bin(Bin::MulLo(w), t, ops, m, 0)
                } else if m.take("hi") {
                    self.bin(Bin::MulHi(i), t, ops, m, 0)
                } else if m.take("wide") {
                    if w == W::W64 {
                        return m.unsupported(".wide of 64-bit values");
                    }
                    self.bin(Bin::MulWide(i), t, ops, m, 0)
                } else {
                    m.unsupported("an integer mul without .lo, .hi or .wide")
                }
            }
            "mad" | "fma" => {
                let t = m.ty1()?;
                if let Some(fl) = t.fl() {
                    let f = Self::float_mode(m, false)?;
                    let k = if plain(f) {
                        Ter::Fma(fl)
                    } else {
                        Ter::F(FOp::Fma, fl, f)
                    };
                    return self.ter(k, [t, t, t], ops, m, 2);
                }
                if mn == "fma" {
                    return m.unsupported("this type");
                }
                let (Some(w), Some(i)) = (t.w(), t.i()) else {
                    return m.unsupported("this type");
                };
                if m.take("lo") {
                    self.ter(Ter::MadLo(w), [t, t, t], ops, m, 0)
                } else if m.take("hi") {
                    self.ter(Ter::MadHi(i), [t, t, t], ops, m, 0)
                } else if m.take("wide") {
                    if w == W::W64 {
                        return m.unsupported(".wide of 64-bit values");
                    }
                    let wide = match t {
                        Ty::S(b) => Ty::S(2 * b),
                        _ => Ty::U(2 * t.bits()),
                    };
                    self.ter(Ter::MadWide(i), [t, t, wide], ops, m, 0)
                } else {
                    m.unsupported("an integer mad without .lo, .hi or .wide")
                }
            }
            "div" => {
                let t = m.ty1()?;
                if let Some(fl) = t.fl() {
                    // `.approx` and `.full` are computed as exactly rounded quotients.
                    m.take("approx");
                    m.take("full");
                    let f = Self::float_mode(m, false)?;
                    let k = if plain(f) {
                        Bin::FDiv(fl)
                    } else {
                        Bin::F(FOp::Div, fl, f)
                    };
                    return self.bin(k, t, ops, m, 1);
                }
                match t.i() {
                    Some(i) => self.bin(Bin::Div(i), t, ops, m, 0),
                    None => m.unsupported("this type"),
                }
            }
            "rem" => {
                let t = m.ty1()?;
                match t.i() {
                    Some(i) => self.bin(Bin::Rem(i), t, ops, m, 0),
                    None => m.unsupported("this type"),
                }
            }
            "min" | "max" => {
                let t = m.ty1()?;
                let is_min = mn == "min";
                if let Some(fl) = t.fl() {
                    let ftz = m.take("ftz");
                    let k = match (ftz, is_min) {
                        (false, true) => Bin::FMin(fl),
                        (false, false) => Bin::FMax(fl),
                        (true, _) => Bin::F(
                            if is_min { FOp::Min } else { FOp::Max },
                            fl,
                            FMode {
                                rnd: Rnd::Rn,
                                ftz,
                                sat: false,
                            },
                        ),
                    };
                    return self.bin(k, t, ops, m, 0);
                }
                match t.i() {
                    Some(i) if is_min => self.bin(Bin::Min(i), t, ops, m, 0),
                    Some(i) => self.bin(Bin::Max(i), t, ops, m, 0),
                    None => m.unsupported("this type"),
                }
            }
            "neg" | "abs" => {
                let t = m.ty1()?;
                let is_neg = mn == "neg";
                if let Some(fl) = t.fl() {
                    let ftz = m.take("ftz");
                    let k = match (ftz, is_neg) {
                        (false, true) => Un::FNeg(fl),
                        (false, false) => Un::FAbs(fl),
                        (true, _) => Un::F(
                            if is_neg { FOp::Neg } else { FOp::Abs },
                            fl,
                            FMode {
                                rnd: Rnd::Rn,
                                ftz,
                                sat: false,
                            },
                        ),
                    };
                    return self.un(k, t, ops, m, 0);
                }
                match t.i() {
                    Some(i) if is_neg => self.un(Un::Neg(i), t, ops, m, 0),
                    Some(i) => self.un(Un::Abs(i), t, ops, m, 0),
                    None => m.unsupported("this type"),
                }
            }
            "not" | "cnot" | "popc" | "clz" | "brev" => {
                let t = m.ty1()?;
                if t == Ty::Pred && mn == "not" {
                    return self.un(Un::NotPred, t, ops, m, 0);
                }
                let Some(w) = t.w().filter(|_| matches!(t, Ty::B(_))) else {
                    return m.unsupported("this type");
                };
                let k = match mn {
                    "not" => Un::Not(w),
                    "cnot" => Un::Cnot(w),
                    _ if w == W::W16 => return m.unsupported("this type"),
                    "popc" => Un::Popc(w),
                    "clz" => Un::Clz(w),
                    _ => Un::Brev(w),
                };
                self.un(k, t, ops, m, 0)
            }
            "and" | "or" | "xor" => {
                let t = m.ty1()?;
                if !matches!(t, Ty::Pred | Ty::B(16 | 32 | 64)) {
                    return m.unsupported("this type");
                }
                let k = match mn {
                    "and" => Bin::And,
                    "or" => Bin::Or,
                    _ => Bin::Xor,
                };
                self.bin(k, t, ops, m, 0)
            }
            "shl" | "shr" => {
                let t = m.ty1()?;
                let k = match (mn, t.w(), t.i()) {
                    ("shl", Some(w), _) if matches!(t, Ty::B(_)) => Bin::Shl(w),
                    ("shr", _, Some(i)) => Bin::Shr(i),
                    _ => return m.unsupported("this type"),
                };
                arity(ops, 3..=3, m)?;
                let a = self.src(&ops[1], t, line)?;
                let b = self.src(&ops[2], Ty::U(32), line)?;
                let d = self.dst(&ops[0], line)?;
                Ok((Op::Bin { k, d, a, b }, 0))
            }
            "setp" => self.setp(m, ops),
            "selp" => {
                let t = m.ty1()?;
                if t == Ty::Pred || t.bits() < 16 {
                    return m.unsupported("this type");
                }
                self.ter(Ter::Selp, [t, t, Ty::Pred], ops, m, 0)
            }
            "cvt" => self.cvt(m, ops),
            "cvta" => {
                let to = m.take("to");
                let space = m
                    .take_where(|s| matches!(s, "global" | "shared" | "local" | "const" | "param"));
                let t = m.ty1()?;
                if !matches!(t, Ty::U(64) | Ty::B(64)) {
                    return m.unsupported("an address that is not 64-bit");
                }
                arity(ops, 2..=2, m)?;
                let a = self.src(&ops[1], t, line)?;
                let d = self.dst(&ops[0], line)?;
                match space {
                    // Generic addresses of global memory are its addresses.
                    Some("global") => Ok((Op::Mov { d, a }, 0)),
                    Some("shared") => Ok((
                        Op::CvtaShared {
                            d,
                            a,
                            to_generic: !to,
                        },
                        0,
                    )),
                    Some(s) => m.unsupported(&format!("the .{s} state space")),
                    None => m.unsupported("cvta without a state space"),
                }
            }
            "ld" | "st" | "ldu" => self.memory(mn, m, ops),
            "bra" => {
                m.take("uni");
                arity(ops, 1..=1, m)?;
                let Opnd::Name(label) = ops[0] else {
                    return err(line, "bra needs a label");
                };
                self.labels
                    .fixups
                    .push((self.code.len(), label.to_string(), line));
                Ok((Op::Bra { target: 0 }, 0))
            }
            "bar" | "barrier" => {
                m.take("cta");
                if m.take("warp") {
                    // `bar.warp.sync`: a warp's threads already run in step here.
                    m.take("sync");
                    arity(ops, 1..=1, m)?;
                    return Ok((Op::Nop, 0));
                }
                m.take("aligned");
                let wait = if m.take("sync") {
                    true
                } else if m.take("arrive") {
                    false
                } else {
                    return m.unsupported("this barrier operation");
                };
                m.take("aligned");
                arity(ops, if wait { 1..=2 } else { 2..=2 }, m)?;
                let id = self.src(&ops[0], Ty::U(32), line)?;
                let count = match ops.get(1) {
                    Some(o) => Some(self.src(o, Ty::U(32), line)?),
                    None => None,
                };
                Ok((Op::Bar { id, count, wait }, 0))
            }
            "ret" | "exit" => {
                m.take("uni");
                arity(ops, 0..=0, m)?;
                Ok((Op::Exit, 0))
            }
            "trap" => {
                arity(ops, 0..=0, m)?;
                Ok((Op::Trap, 0))
            }
            "membar" | "fence" => {
                // Memory is sequentially consistent here: every fence holds.
                m.items.clear();
                Ok((Op::Nop, 0))
            }
            "rcp" | "sqrt" | "rsqrt" | "ex2" | "lg2" | "sin" | "cos" | "tanh" => {
                let t = m.ty1()?;
                let Some(fl) = t.fl() else {
                    return m.unsupported("this type");
                };
                // `.approx` results are computed exactly rounded (the GPU's differ in ulps).
                m.take("approx");
                m.take("full");
                let f = Self::float_mode(m, false)?;
                let op = match mn {
                    "rcp" => FOp::Rcp,
                    "sqrt" => FOp::Sqrt,
                    "rsqrt" => FOp::Rsqrt,
                    "ex2" => FOp::Ex2,
                    "lg2" => FOp::Lg2,
                    "sin" => FOp::Sin,
                    "cos" => FOp::Cos,
                    _ => FOp::Tanh,
                };
                self.un(Un::F(op, fl, f), t, ops, m, 1)
            }
            _ => err(line, format!("unsupported instruction `{}`", m.opcode)),
        }
    }

    fn parts(n: usize, t: Ty, m: &Mods) -> Result<(u8, u8), PtxError> {
        let bits = t.bits() as usize / n.max(1);
        if !matches!(n, 2 | 4) || bits < 8 {
            return m.unsupported(&format!("a vector of {n}"));
        }
        Ok((n as u8, bits as u8))
    }

    fn un(
        &mut self,
        k: Un,
        t: Ty,
        ops: &[Opnd],
        m: &Mods,
        flops: u8,
    ) -> Result<(Op, u8), PtxError> {
        arity(ops, 2..=2, m)?;
        let a = self.src(&ops[1], t, m.line)?;
        let d = self.dst(&ops[0], m.line)?;
        Ok((Op::Un { k, d, a }, flops))
    }

    fn bin(
        &mut self,
        k: Bin,
        t: Ty,
        ops: &[Opnd],
        m: &Mods,
        flops: u8,
    ) -> Result<(Op, u8), PtxError> {
        arity(ops, 3..=3, m)?;
        let a = self.src(&ops[1], t, m.line)?;
        let b = self.src(&ops[2], t, m.line)?;
        let d = self.dst(&ops[0], m.line)?;
        Ok((Op::Bin { k, d, a, b }, flops))
    }

    fn ter(
        &mut self,
        k: Ter,
        [ta, tb, tc]: [Ty; 3],
        ops: &[Opnd],
        m: &Mods,
        flops: u8,
    ) -> Result<(Op, u8), PtxError> {
        arity(ops, 4..=4, m)?;
        let a = self.src(&ops[1], ta, m.line)?;
        let b = self.src(&ops[2], tb, m.line)?;
        let c = if tc == Ty::Pred {
            match self.pred_src(&ops[3], m.line)? {
                (r, false) => r,
                (_, true) => return m.unsupported("a negated predicate operand"),
            }
        } else {
            self.src(&ops[3], tc, m.line)?
        };
        let d = self.dst(&ops[0], m.line)?;
        Ok((Op::Ter { k, d, a, b, c }, flops))
    }

    fn setp(&mut self, m: &mut Mods, ops: &[Opnd]) -> Result<(Op, u8), PtxError> {
        let line = m.line;
        let Some(cmp) = m
            .take_where(|s| Cmp::parse(s).is_some())
            .and_then(Cmp::parse)
        else {
            return m.unsupported("setp without a comparison");
        };
        let bop = m
            .take_where(|s| matches!(s, "and" | "or" | "xor"))
            .map(|s| match s {
                "and" => BoolOp::And,
                "or" => BoolOp::Or,
                _ => BoolOp::Xor,
            });
        let ftz = m.take("ftz");
        let t = m.ty1()?;
        let ty = match (t.fl(), t.i()) {
            (Some(fl), _) if cmp.for_float() => SetTy::Float(fl, ftz),
            (None, Some(i)) if cmp.for_int() && !ftz => SetTy::Int(i),
            _ => return m.unsupported(&format!("this comparison of {t:?}")),
        };
        arity(ops, if bop.is_some() { 4..=4 } else { 3..=3 }, m)?;
        let a = self.src(&ops[1], t, line)?;
        let b = self.src(&ops[2], t, line)?;
        let comb = match bop {
            Some(bop) => {
                let (c, negated) = self.pred_src(&ops[3], line)?;
                Some((bop, c, negated))
            }
            None => None,
        };
        let (p, q) = match ops[0] {
            Opnd::Pair(p, q) => (
                self.dst(&Opnd::Name(p), line)?,
                Some(self.dst(&Opnd::Name(q), line)?),
            ),
            ref o => (self.dst(o, line)?, None),
        };
        if q.is_none() && comb.is_none() {
            let k = match ty {
                SetTy::Int(i) => Bin::SetInt(cmp, i),
                SetTy::Float(fl, ftz) => Bin::SetFloat(cmp, fl, ftz),
            };
            return Ok((Op::Bin { k, d: p, a, b }, 0));
        }
        Ok((
            Op::Setp {
                cmp,
                ty,
                p,
                q,
                a,
                b,
                comb,
            },
            0,
        ))
    }

    fn cvt(&mut self, m: &mut Mods, ops: &[Opnd]) -> Result<(Op, u8), PtxError> {
        let line = m.line;
        let [to_t, from_t] = m.types[..] else {
            return err(line, format!("`{}` needs two types", m.opcode));
        };
        m.types.clear();
        let (Some(to), Some(from)) = (to_t.num(), from_t.num()) else {
            return m.unsupported("this conversion's type");
        };
        let mode = CvtMode {
            int_rnd: m.int_rnd(),
            rnd: m.rnd(),
            ftz: m.take("ftz"),
            sat: m.take("sat"),
        };
        let is_int = |n: Num| matches!(n, Num::U(_) | Num::S(_));
        if mode.int_rnd.is_some() && mode.rnd.is_some() {
            return m.unsupported("two rounding modes");
        }
        if is_int(to) && !is_int(from) && mode.int_rnd.is_none() {
            return err(
                line,
                format!(
                    "`{}`: a float-to-integer cvt needs .rni, .rzi, .rmi or .rpi",
                    m.opcode
                ),
            );
        }
        if mode.int_rnd.is_some() && !(is_int(to) || to == from) {
            return m.unsupported("an integer rounding of this conversion");
        }
        arity(ops, 2..=2, m)?;
        let a = self.src(&ops[1], from_t, line)?;
        let d = self.dst(&ops[0], line)?;
        let simple = mode.int_rnd.is_none() && mode.rnd.is_none() && !mode.ftz && !mode.sat;
        let k = match (to, from) {
            (Num::U(64) | Num::S(64), Num::U(32)) if simple => Un::Mask(W::W32),
            (Num::U(64) | Num::S(64), Num::S(32)) if simple => Un::Sext(W::W32),
            (Num::U(32) | Num::S(32), Num::U(64) | Num::S(64)) if simple => Un::Mask(W::W32),
            (Num::U(a) | Num::S(a), Num::U(b) | Num::S(b)) if simple && a == b && a >= 16 => {
                Un::Mask(if a == 16 {
                    W::W16
                } else if a == 32 {
                    W::W32
                } else {
                    W::W64
                })
            }
            _ => Un::Cvt(to, from, mode),
        };
        Ok((Op::Un { k, d, a }, 0))
    }

    fn memory(&mut self, mn: &str, m: &mut Mods, ops: &[Opnd]) -> Result<(Op, u8), PtxError> {
        let line = m.line;
        // Ordering, scope, cache and eviction qualifiers change nothing here.
        while m
            .take_where(|s| {
                matches!(
                    s,
                    "weak"
                        | "volatile"
                        | "relaxed"
                        | "acquire"
                        | "release"
                        | "mmio"
                        | "cta"
                        | "cluster"
                        | "gpu"
                        | "sys"
                        | "ca"
                        | "cg"
                        | "cs"
                        | "lu"
                        | "cv"
                        | "nc"
                        | "wb"
                        | "wt"
                        | "unified"
                ) || s.starts_with("L1::")
                    || s.starts_with("L2::")
                    || s.starts_with("level::")
            })
            .is_some()
        {}
        let space = match m.take_where(|s| {
            matches!(
                s,
                "global"
                    | "shared"
                    | "shared::cta"
                    | "param"
                    | "param::entry"
                    | "local"
                    | "const"
                    | "shared::cluster"
            )
        }) {
            None => Space::Generic,
            Some("global") => Space::Global,
            Some("shared" | "shared::cta") => Space::Shared,
            Some("param" | "param::entry") => Space::Param,
            Some(s) => return m.unsupported(&format!("the .{s} state space")),
        };
        let n: u8 = if m.take("v2") {
            2
        } else if m.take("v4") {
            4
        } else {
            1
        };
        let t = m.ty1()?;
        if matches!(t, Ty::Pred | Ty::Bf16 | Ty::F(16)) {
            return m.unsupported("this type");
        }
        let elem = Elem {
            bytes: (t.bits() / 8) as u8,
            signed: matches!(t, Ty::S(_)),
        };
        arity(ops, 2..=2, m)?;
        if mn == "st" {
            if space == Space::Param {
                return m.unsupported("st.param (device function calls)");
            }
            let (addr, off) = self.addr(&ops[0], line)?;
            let values = list(&ops[1]);
            if values.len() != n as usize {
                return err(
                    line,
                    format!("`{}` stores {n} values, given {}", m.opcode, values.len()),
                );
            }
            let mut v = [0; 4];
            for (slot, o) in v.iter_mut().zip(&values) {
                *slot = self.src(o, t, line)?;
            }
            return Ok((
                Op::St {
                    space,
                    elem,
                    n,
                    v,
                    addr,
                    off,
                },
                0,
            ));
        }
        let (addr, off) = self.addr(&ops[1], line)?;
        let dests = list(&ops[0]);
        if dests.len() != n as usize {
            return err(
                line,
                format!("`{}` loads {n} values, given {}", m.opcode, dests.len()),
            );
        }
        let mut d = [0; 4];
        for (slot, o) in d.iter_mut().zip(&dests) {
            *slot = self.dst(o, line)?;
        }
        Ok((
            Op::Ld {
                space,
                elem,
                n,
                d,
                addr,
                off,
            },
            0,
        ))
    }
}
