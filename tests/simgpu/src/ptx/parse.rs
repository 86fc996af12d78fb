//! Parsing PTX text into kernels whose bodies are decoded once, here: every register, constant
//! and special register resolved to an index, every operation to its typed form, every label
//! to an instruction. What the interpreter cannot run is an error naming it, never skipped.

mod decode;
mod lex;

use std::collections::HashMap;

use super::exec::{Instr, Op, Program, Reg};
use super::{Kernel, Module, Param, PtxError};
use lex::{Tok, Token};

pub fn module(text: &str) -> Result<Module, PtxError> {
    let tokens = lex::lex(text)?;
    Parser {
        t: &tokens,
        pos: 0,
        shared: Vec::new(),
    }
    .module()
}

/// A `.shared` variable of the module, for every kernel.
#[derive(Debug, Clone)]
struct SharedVar {
    name: String,
    align: usize,
    /// `None` for `.extern .shared` (dynamic shared memory).
    size: Option<usize>,
}

struct Parser<'t, 'a> {
    t: &'t [Token<'a>],
    pos: usize,
    shared: Vec<SharedVar>,
}

pub(super) fn err<T>(line: usize, message: impl Into<String>) -> Result<T, PtxError> {
    Err(PtxError {
        line,
        message: message.into(),
    })
}

/// The bytes of a scalar type named in a declaration (`.b32`, `.f64`, `.pred`).
fn type_bytes(ty: &str) -> Option<usize> {
    Some(match ty {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".pred" => 1,
        _ => return None,
    })
}

fn parse_usize(s: &str, line: usize) -> Result<usize, PtxError> {
    let v = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        usize::from_str_radix(hex.trim_end_matches('U'), 16)
    } else {
        s.trim_end_matches('U').parse()
    };
    v.or_else(|_| err(line, format!("`{s}` is not a count")))
}

impl<'a> Parser<'_, 'a> {
    fn line(&self) -> usize {
        self.t
            .get(self.pos)
            .or(self.t.last())
            .map(|t| t.line)
            .unwrap_or(1)
    }

    fn peek(&self) -> Option<Tok<'a>> {
        self.t.get(self.pos).map(|t| t.tok)
    }

    fn next(&mut self) -> Result<Token<'a>, PtxError> {
        let t = self.t.get(self.pos).copied();
        self.pos += 1;
        t.ok_or_else(|| PtxError {
            line: self.t.last().map(|t| t.line).unwrap_or(1),
            message: "the text ends early".into(),
        })
    }

    fn expect(&mut self, c: char) -> Result<(), PtxError> {
        let t = self.next()?;
        if t.tok == Tok::P(c) {
            Ok(())
        } else {
            err(t.line, format!("expected `{c}`, found {}", show(t.tok)))
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(Tok::P(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn word(&mut self) -> Result<(&'a str, usize), PtxError> {
        let t = self.next()?;
        match t.tok {
            Tok::Word(w) => Ok((w, t.line)),
            other => err(t.line, format!("expected a name, found {}", show(other))),
        }
    }

    fn num(&mut self) -> Result<(&'a str, usize), PtxError> {
        let t = self.next()?;
        match t.tok {
            Tok::Num(n) => Ok((n, t.line)),
            other => err(t.line, format!("expected a number, found {}", show(other))),
        }
    }

    /// Skips the rest of a directive's line (`.loc`, `.file`: they end with the line).
    fn skip_line(&mut self, line: usize) {
        while self.t.get(self.pos).is_some_and(|t| t.line == line) {
            self.pos += 1;
        }
    }

    fn skip_past(&mut self, c: char) -> Result<(), PtxError> {
        while self.next()?.tok != Tok::P(c) {}
        Ok(())
    }

    /// Skips a `{ ... }` block, nested ones included.
    fn skip_block(&mut self) -> Result<(), PtxError> {
        self.expect('{')?;
        let mut depth = 1;
        while depth > 0 {
            match self.next()?.tok {
                Tok::P('{') => depth += 1,
                Tok::P('}') => depth -= 1,
                _ => {}
            }
        }
        Ok(())
    }

    fn module(mut self) -> Result<Module, PtxError> {
        let mut version = None;
        let mut target = None;
        let mut kernels = Vec::new();
        let mut external = false;
        while let Some(tok) = self.peek() {
            let line = self.line();
            self.pos += 1;
            match tok {
                Tok::Word(".version") => {
                    let (v, line) = self.num()?;
                    let parsed = v
                        .split_once('.')
                        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
                    match parsed {
                        Some(v) => version = Some(v),
                        None => return err(line, format!("`.version {v}` is not MAJOR.MINOR")),
                    }
                }
                Tok::Word(".target") => {
                    let (t, _) = self.word()?;
                    target = Some(t.to_string());
                    while self.eat(',') {
                        self.word()?;
                    }
                }
                Tok::Word(".address_size") => {
                    let (n, line) = self.num()?;
                    if n != "64" {
                        return err(line, format!(".address_size {n}: only 64-bit is supported"));
                    }
                }
                Tok::Word(".visible") | Tok::Word(".weak") | Tok::Word(".common") => {
                    external = false;
                    continue;
                }
                Tok::Word(".extern") => {
                    external = true;
                    continue;
                }
                Tok::Word(".entry") => kernels.push(self.entry()?),
                Tok::Word(".func") if external => self.skip_past(';')?,
                Tok::Word(".func") => {
                    return err(line, "device functions (.func) are not supported")
                }
                Tok::Word(".shared") => {
                    let var = self.shared_decl(external)?;
                    self.shared.push(var);
                }
                Tok::Word(w @ (".global" | ".const" | ".local" | ".tex" | ".surfref")) => {
                    return err(
                        line,
                        format!("module-scope {w} variables are not supported"),
                    )
                }
                Tok::Word(".file") => self.skip_line(line),
                Tok::Word(".section") => {
                    self.word()?;
                    self.skip_block()?;
                }
                Tok::Word(".pragma") => self.skip_past(';')?,
                other => return err(line, format!("unexpected {} in the module", show(other))),
            }
            external = false;
        }
        let Some(version) = version else {
            return err(1, "no .version directive");
        };
        let Some(target) = target else {
            return err(1, "no .target directive");
        };
        Ok(Module {
            version,
            target,
            kernels,
        })
    }

    /// `.shared [.align N] .type name[[N]...];` after `.shared`.
    fn shared_decl(&mut self, external: bool) -> Result<SharedVar, PtxError> {
        let mut align = None;
        let mut elem = None;
        let (name, line) = loop {
            let (w, line) = self.word()?;
            match w {
                ".align" => align = Some(parse_usize(self.num()?.0, line)?),
                ".v2" | ".v4" => return err(line, "vector .shared variables are not supported"),
                w if w.starts_with('.') => match type_bytes(w) {
                    Some(b) => elem = Some(b),
                    None => {
                        return err(line, format!("unsupported type {w} of a .shared variable"))
                    }
                },
                w => break (w, line),
            }
        };
        let Some(elem) = elem else {
            return err(line, format!(".shared variable {name} has no type"));
        };
        let mut size = Some(elem);
        while self.eat('[') {
            if self.eat(']') {
                size = None;
                continue;
            }
            let (n, line) = self.num()?;
            let n = parse_usize(n, line)?;
            size = size.map(|s| s * n);
            self.expect(']')?;
        }
        if self.peek() == Some(Tok::P('=')) {
            return err(line, format!(".shared variable {name} has an initializer"));
        }
        self.expect(';')?;
        if external != size.is_none() {
            return err(
                line,
                format!(".shared variable {name}: only `.extern` ones may be unsized"),
            );
        }
        Ok(SharedVar {
            name: name.to_string(),
            align: align.unwrap_or(elem).max(1),
            size,
        })
    }

    fn entry(&mut self) -> Result<Kernel, PtxError> {
        let (name, _) = self.word()?;
        let mut params = Vec::new();
        let mut param_names = Vec::new();
        if self.eat('(') && !self.eat(')') {
            loop {
                let (p, pname) = self.param()?;
                params.push(p);
                param_names.push(pname);
                if self.eat(')') {
                    break;
                }
                self.expect(',')?;
            }
        }
        let mut reqntid = None;
        let mut maxntid = None;
        loop {
            let line = self.line();
            match self.peek() {
                Some(Tok::Word(w @ (".maxntid" | ".reqntid"))) => {
                    self.pos += 1;
                    let mut dims = [1u32; 3];
                    for (i, d) in dims.iter_mut().enumerate() {
                        if i > 0 && !self.eat(',') {
                            break;
                        }
                        let (n, line) = self.num()?;
                        *d = parse_usize(n, line)? as u32;
                    }
                    if w == ".maxntid" {
                        maxntid = Some(dims);
                    } else {
                        reqntid = Some(dims);
                    }
                }
                Some(Tok::Word(
                    ".minnctapersm" | ".maxnctapersm" | ".maxnreg" | ".reqnctapercluster"
                    | ".maxclusterrank",
                )) => {
                    self.pos += 1;
                    self.num()?;
                    while self.eat(',') {
                        self.num()?;
                    }
                }
                Some(Tok::Word(".noreturn" | ".explicitcluster")) => self.pos += 1,
                Some(Tok::Word(".pragma")) => self.skip_past(';')?,
                Some(Tok::P('{')) => break,
                Some(other) => {
                    return err(
                        line,
                        format!("unexpected {} before {name}'s body", show(other)),
                    )
                }
                None => return err(line, format!("{name} has no body")),
            }
        }
        self.expect('{')?;
        // The parameter space: each parameter at its alignment, in order.
        let mut offsets = Vec::new();
        let mut at = 0usize;
        for p in &params {
            at = at.next_multiple_of(p.align);
            offsets.push(at);
            at += p.size;
        }
        let mut body = decode::Body::new(name);
        for (pname, &off) in param_names.iter().zip(&offsets) {
            body.symbols
                .insert(pname.clone(), (decode::SymSpace::Param, off as u64));
        }
        // Static shared memory: the module's variables, then the kernel's, each aligned.
        let mut shared = self.shared.clone();
        self.body(&mut body, &mut shared)?;
        let mut size = 0usize;
        let mut dynamic = Vec::new();
        for var in &shared {
            match var.size {
                Some(bytes) => {
                    size = size.next_multiple_of(var.align);
                    body.symbols
                        .insert(var.name.clone(), (decode::SymSpace::Shared, size as u64));
                    size += bytes;
                }
                None => dynamic.push(var),
            }
        }
        let shared_bytes = size;
        for var in dynamic {
            size = size.next_multiple_of(var.align);
            body.symbols
                .insert(var.name.clone(), (decode::SymSpace::Shared, size as u64));
        }
        let done = body.finish()?;
        let program = Program {
            code: done.code,
            regs: done.regs,
            consts: done.consts,
            specials: done.specials,
            param_offsets: offsets,
            param_bytes: at,
            dynamic_shared: size.next_multiple_of(16),
            reqntid,
            maxntid,
        };
        Ok(Kernel {
            name: name.to_string(),
            params,
            shared_bytes,
            body: program,
        })
    }

    /// `.param [.align N] .type [.ptr [.space] [.align N]] name[[N]]`.
    fn param(&mut self) -> Result<(Param, String), PtxError> {
        let (w, line) = self.word()?;
        if w != ".param" {
            return err(line, format!("expected .param, found {w}"));
        }
        let mut align = None;
        let mut elem = None;
        let mut pointer = false;
        let name = loop {
            let (w, line) = self.word()?;
            match w {
                ".align" => {
                    let n = parse_usize(self.num()?.0, line)?;
                    // After `.ptr`, `.align` is the pointee's alignment, not the parameter's.
                    if !pointer {
                        align = Some(n);
                    }
                }
                ".ptr" => pointer = true,
                ".global" | ".shared" | ".const" | ".local" if pointer => {}
                w if w.starts_with('.') => match type_bytes(w) {
                    Some(b) if w != ".pred" => elem = Some(b),
                    _ => return err(line, format!("unsupported parameter type {w}")),
                },
                w => break w,
            }
        };
        let Some(elem) = elem else {
            return err(line, format!("parameter {name} has no type"));
        };
        let mut size = elem;
        if self.eat('[') {
            let (n, line) = self.num()?;
            size *= parse_usize(n, line)?;
            self.expect(']')?;
        }
        Ok((
            Param {
                size,
                align: align.unwrap_or(elem).max(1),
            },
            name.to_string(),
        ))
    }

    /// A kernel's body after its `{`, up to its `}`.
    fn body(
        &mut self,
        body: &mut decode::Body,
        shared: &mut Vec<SharedVar>,
    ) -> Result<(), PtxError> {
        let mut depth = 0;
        loop {
            let t = self.next()?;
            let line = t.line;
            match t.tok {
                Tok::P('}') if depth == 0 => return Ok(()),
                Tok::P('}') => {
                    depth -= 1;
                    body.close_scope();
                }
                Tok::P('{') => {
                    depth += 1;
                    body.open_scope();
                }
                Tok::Word(".reg") => self.reg_decl(body)?,
                Tok::Word(".shared") => shared.push(self.shared_decl(false)?),
                Tok::Word(".extern") => {
                    let (w, line) = self.word()?;
                    if w != ".shared" {
                        return err(line, format!(".extern {w} in a kernel is not supported"));
                    }
                    shared.push(self.shared_decl(true)?);
                }
                Tok::Word(w @ (".local" | ".param" | ".const" | ".global")) => {
                    return err(line, format!("{w} variables in a kernel are not supported"))
                }
                Tok::Word(".pragma") => self.skip_past(';')?,
                Tok::Word(".loc" | ".file") => self.skip_line(line),
                Tok::Word(w) if self.peek() == Some(Tok::P(':')) => {
                    self.pos += 1;
                    body.label(w, line)?;
                }
                Tok::P('@') => {
                    let negated = self.eat('!');
                    let (p, line) = self.word()?;
                    let guard = body.pred(p, line)?;
                    let (opcode, line) = self.word()?;
                    self.instruction(body, opcode, line, Some((guard, negated)))?;
                }
                Tok::Word(opcode) if !opcode.starts_with('.') => {
                    self.instruction(body, opcode, line, None)?
                }
                other => return err(line, format!("unexpected {} in a kernel", show(other))),
            }
        }
    }

    /// `.reg .type %r<N>;` or `.reg .type %a, %b;` after `.reg`.
    fn reg_decl(&mut self, body: &mut decode::Body) -> Result<(), PtxError> {
        let (ty, line) = self.word()?;
        if type_bytes(ty).is_none() {
            return err(line, format!("unsupported register type {ty}"));
        }
        loop {
            let (name, line) = self.word()?;
            if self.eat('<') {
                let (n, line) = self.num()?;
                let n = parse_usize(n, line)?;
                self.expect('>')?;
                for i in 0..n {
                    body.declare(&format!("{name}{i}"), line)?;
                }
            } else {
                body.declare(name, line)?;
            }
            if self.eat(';') {
                return Ok(());
            }
            self.expect(',')?;
        }
    }

    /// An instruction's operands up to its `;`, decoded.
    fn instruction(
        &mut self,
        body: &mut decode::Body,
        opcode: &str,
        line: usize,
        guard: Option<(Reg, bool)>,
    ) -> Result<(), PtxError> {
        let start = self.pos;
        while self.next()?.tok != Tok::P(';') {}
        let operands = operands(&self.t[start..self.pos - 1], line)?;
        let (op, flops) = body.decode(opcode, &operands, line)?;
        body.code.push(Instr {
            op,
            guard,
            flops,
            line: line as u32,
        });
        Ok(())
    }
}

fn show(t: Tok) -> String {
    match t {
        Tok::Word(w) | Tok::Num(w) => format!("`{w}`"),
        Tok::Str(s) => format!("\"{s}\""),
        Tok::P(c) => format!("`{c}`"),
    }
}

/// A literal operand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Lit {
    Int(i128),
    /// `0fXXXXXXXX`.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX`.
    F64(u64),
    Dec(f64),
}

/// An instruction operand, before it is resolved.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Opnd<'a> {
    Name(&'a str),
    /// `!%p`.
    Not(&'a str),
    Imm(Lit),
    /// `[base+offset]`; a base may be a register or a variable, or absent.
    Addr(Option<&'a str>, i64),
    Vec(Vec<Opnd<'a>>),
    /// `%p|%q`.
    Pair(&'a str, &'a str),
    /// `_`.
    Sink,
}

fn literal(s: &str, negative: bool, line: usize) -> Result<Lit, PtxError> {
    let bad = || PtxError {
        line,
        message: format!("`{s}` is not a number"),
    };
    let lower = s.to_ascii_lowercase();
    let lit = if let Some(h) = lower.strip_prefix("0f") {
        if h.len() != 8 {
            return Err(bad());
        }
        let bits = u32::from_str_radix(h, 16).map_err(|_| bad())?;
        Lit::F32(if negative { bits ^ 0x8000_0000 } else { bits })
    } else if let Some(h) = lower.strip_prefix("0d") {
        if h.len() != 16 {
            return Err(bad());
        }
        let bits = u64::from_str_radix(h, 16).map_err(|_| bad())?;
        Lit::F64(if negative { bits ^ (1 << 63) } else { bits })
    } else if lower.contains('.') || (lower.contains('e') && !lower.starts_with("0x")) {
        let v: f64 = lower.parse().map_err(|_| bad())?;
        Lit::Dec(if negative { -v } else { v })
    } else {
        let digits = lower.trim_end_matches('u');
        let v = if let Some(h) = digits.strip_prefix("0x") {
            u64::from_str_radix(h, 16)
        } else if let Some(b) = digits.strip_prefix("0b") {
            u64::from_str_radix(b, 2)
        } else if digits.len() > 1 && digits.starts_with('0') {
            u64::from_str_radix(&digits[1..], 8)
        } else {
            digits.parse()
        };
        let v = i128::from(v.map_err(|_| bad())?);
        Lit::Int(if negative { -v } else { v })
    };
    Ok(lit)
}

/// Splits an instruction's operand tokens at their top-level commas and reads each.
fn operands<'a>(t: &[Token<'a>], line: usize) -> Result<Vec<Opnd<'a>>, PtxError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let (op, next) = operand(t, i, line)?;
        out.push(op);
        i = next;
        if i < t.len() {
            if t[i].tok != Tok::P(',') {
                return err(
                    line,
                    format!("unexpected {} in the operands", show(t[i].tok)),
                );
            }
            i += 1;
            if i == t.len() {
                return err(line, "an operand is missing after `,`");
            }
        }
    }
    Ok(out)
}

fn operand<'a>(t: &[Token<'a>], i: usize, line: usize) -> Result<(Opnd<'a>, usize), PtxError> {
    let at = |k: usize| t.get(k).map(|x| x.tok);
    match at(i) {
        Some(Tok::Word("_")) => Ok((Opnd::Sink, i + 1)),
        Some(Tok::Word(w)) => {
            if at(i + 1) == Some(Tok::P('|')) {
                if let Some(Tok::Word(q)) = at(i + 2) {
                    return Ok((Opnd::Pair(w, q), i + 3));
                }
                return err(line, format!("`{w}|` needs a second predicate"));
            }
            Ok((Opnd::Name(w), i + 1))
        }
        Some(Tok::P('!')) => match at(i + 1) {
            Some(Tok::Word(w)) => Ok((Opnd::Not(w), i + 2)),
            _ => err(line, "`!` needs a predicate"),
        },
        Some(Tok::P('-')) => match at(i + 1) {
            Some(Tok::Num(n)) => Ok((Opnd::Imm(literal(n, true, line)?), i + 2)),
            _ => err(line, "`-` needs a number"),
        },
        Some(Tok::Num(n)) => Ok((Opnd::Imm(literal(n, false, line)?), i + 1)),
        Some(Tok::P('[')) => {
            let mut k = i + 1;
            let mut base = None;
            let mut off: i64 = 0;
            match at(k) {
                Some(Tok::Word(w)) => {
                    base = Some(w);
                    k += 1;
                }
                Some(Tok::Num(n)) => {
                    off = lit_int(literal(n, false, line)?, line)?;
                    k += 1;
                }
                _ => return err(line, "an address needs a register, a variable or a number"),
            }
            while let Some(Tok::P(sign @ ('+' | '-'))) = at(k) {
                k += 1;
                let mut negative = sign == '-';
                if at(k) == Some(Tok::P('-')) {
                    negative = !negative;
                    k += 1;
                }
                match at(k) {
                    Some(Tok::Num(n)) => {
                        off = off.wrapping_add(lit_int(literal(n, negative, line)?, line)?);
                        k += 1;
                    }
                    _ => return err(line, "an address offset must be a number"),
                }
            }
            if at(k) != Some(Tok::P(']')) {
                return err(line, "an address must end with `]`");
            }
            Ok((Opnd::Addr(base, off), k + 1))
        }
        Some(Tok::P('{')) => {
            let mut items = Vec::new();
            let mut k = i + 1;
            loop {
                let (item, next) = operand(t, k, line)?;
                items.push(item);
                k = next;
                match at(k) {
                    Some(Tok::P(',')) => k += 1,
                    Some(Tok::P('}')) => return Ok((Opnd::Vec(items), k + 1)),
                    _ => return err(line, "a vector operand must end with `}`"),
                }
            }
        }
        Some(other) => err(line, format!("unexpected {} as an operand", show(other))),
        None => err(line, "an operand is missing"),
    }
}

fn lit_int(l: Lit, line: usize) -> Result<i64, PtxError> {
    match l {
        Lit::Int(v) => Ok(v as i64),
        _ => err(line, "an address offset must be an integer"),
    }
}

/// Labels and branch targets.
#[derive(Debug, Default)]
pub(super) struct Labels {
    pub at: HashMap<String, usize>,
    pub fixups: Vec<(usize, String, usize)>,
}

/// Fixes up branch targets once every label is known.
pub(super) fn resolve(code: &mut [Instr], labels: &Labels) -> Result<(), PtxError> {
    for (at, label, line) in &labels.fixups {
        let Some(&target) = labels.at.get(label) else {
            return err(*line, format!("branch to an unknown label {label}"));
        };
        code[*at].op = Op::Bra { target };
    }
    Ok(())
}
