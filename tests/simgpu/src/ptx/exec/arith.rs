//! What each PTX operation computes, one thread's values at a time, on registers held as raw
//! `u64` bits: integers of every width and signedness, IEEE f32/f64 arithmetic as the GPU
//! rounds it (NaN results are the GPU's canonical NaN), comparisons and conversions.
//!
//! A register holds a value of width W in its low W bits; every operation reads only the bits
//! its type names and writes its result zero-extended from its width.

/// An integer type of an instruction (`.u32`, `.s64`, ...; `.bN` reads as unsigned).
pub(in crate::ptx) trait Int: Copy + Ord {
    const BITS: u32;
    const SIGNED: bool;
    fn get(bits: u64) -> Self;
    fn put(self) -> u64;
    fn wide(self) -> i128;
    fn from_wide(v: i128) -> Self;
    fn wrapping_add(self, o: Self) -> Self;
    fn wrapping_sub(self, o: Self) -> Self;
    fn wrapping_mul(self, o: Self) -> Self;
    fn wrapping_div(self, o: Self) -> Self;
    fn wrapping_rem(self, o: Self) -> Self;
    fn wrapping_neg(self) -> Self;
    fn zero() -> Self;
}

macro_rules! int_impl {
    ($t:ty, $u:ty, $signed:expr) => {
        impl Int for $t {
            const BITS: u32 = <$t>::BITS;
            const SIGNED: bool = $signed;
            #[inline(always)]
            fn get(bits: u64) -> Self {
                bits as $t
            }
            #[inline(always)]
            fn put(self) -> u64 {
                self as $u as u64
            }
            #[inline(always)]
            fn wide(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn from_wide(v: i128) -> Self {
                v as $t
            }
            #[inline(always)]
            fn wrapping_add(self, o: Self) -> Self {
                <$t>::wrapping_add(self, o)
            }
            #[inline(always)]
            fn wrapping_sub(self, o: Self) -> Self {
                <$t>::wrapping_sub(self, o)
            }
            #[inline(always)]
            fn wrapping_mul(self, o: Self) -> Self {
                <$t>::wrapping_mul(self, o)
            }
            #[inline(always)]
            fn wrapping_div(self, o: Self) -> Self {
                <$t>::wrapping_div(self, o)
            }
            #[inline(always)]
            fn wrapping_rem(self, o: Self) -> Self {
                <$t>::wrapping_rem(self, o)
            }
            #[inline(always)]
            fn wrapping_neg(self) -> Self {
                <$t>::wrapping_neg(self)
            }
            #[inline(always)]
            fn zero() -> Self {
                0
            }
        }
    };
}

int_impl!(u8, u8, false);
int_impl!(u16, u16, false);
int_impl!(u32, u32, false);
int_impl!(u64, u64, false);
int_impl!(i8, u8, true);
int_impl!(i16, u16, true);
int_impl!(i32, u32, true);
int_impl!(i64, u64, true);

#[inline(always)]
pub(in crate::ptx) fn add<T: Int>(a: u64, b: u64) -> u64 {
    T::get(a).wrapping_add(T::get(b)).put()
}

#[inline(always)]
pub(in crate::ptx) fn sub<T: Int>(a: u64, b: u64) -> u64 {
    T::get(a).wrapping_sub(T::get(b)).put()
}

#[inline(always)]
pub(in crate::ptx) fn mul_lo<T: Int>(a: u64, b: u64) -> u64 {
    T::get(a).wrapping_mul(T::get(b)).put()
}

/// The upper half of the double-width product.
#[inline(always)]
pub(in crate::ptx) fn mul_hi<T: Int>(a: u64, b: u64) -> u64 {
    let p = T::get(a).wide().wrapping_mul(T::get(b).wide());
    let hi = if T::SIGNED {
        p >> T::BITS
    } else {
        ((p as u128) >> T::BITS) as i128
    };
    T::from_wide(hi).put()
}

/// The whole double-width product (`.wide`: 16- and 32-bit sources only).
#[inline(always)]
pub(in crate::ptx) fn mul_wide<T: Int>(a: u64, b: u64) -> u64 {
    let p = T::get(a).wide().wrapping_mul(T::get(b).wide()) as u64;
    if T::BITS == 32 {
        p
    } else {
        p & ((1u64 << (2 * T::BITS)) - 1)
    }
}

#[inline(always)]
pub(in crate::ptx) fn mad_lo<T: Int>(a: u64, b: u64, c: u64) -> u64 {
    T::get(a)
        .wrapping_mul(T::get(b))
        .wrapping_add(T::get(c))
        .put()
}

#[inline(always)]
pub(in crate::ptx) fn mad_hi<T: Int>(a: u64, b: u64, c: u64) -> u64 {
    add::<T>(mul_hi::<T>(a, b), c)
}

#[inline(always)]
pub(in crate::ptx) fn mad_wide<T: Int>(a: u64, b: u64, c: u64) -> u64 {
    let p = mul_wide::<T>(a, b);
    if T::BITS == 32 {
        p.wrapping_add(c)
    } else {
        p.wrapping_add(c) & ((1u64 << (2 * T::BITS)) - 1)
    }
}

/// Integer division; the PTX ISA leaves division by zero unspecified, and the GPU answers all
/// ones, as here. Signed `MIN / -1` wraps.
#[inline(always)]
pub(in crate::ptx) fn div<T: Int>(a: u64, b: u64) -> u64 {
    let (x, y) = (T::get(a), T::get(b));
    if y == T::zero() {
        T::from_wide(-1).put()
    } else {
        x.wrapping_div(y).put()
    }
}

/// Integer remainder; by zero it is the dividend (unspecified by the ISA).
#[inline(always)]
pub(in crate::ptx) fn rem<T: Int>(a: u64, b: u64) -> u64 {
    let (x, y) = (T::get(a), T::get(b));
    if y == T::zero() {
        x.put()
    } else {
        x.wrapping_rem(y).put()
    }
}

#[inline(always)]
pub(in crate::ptx) fn min<T: Int>(a: u64, b: u64) -> u64 {
    T::get(a).min(T::get(b)).put()
}

#[inline(always)]
pub(in crate::ptx) fn max<T: Int>(a: u64, b: u64) -> u64 {
    T::get(a).max(T::get(b)).put()
}

#[inline(always)]
pub(in crate::ptx) fn neg<T: Int>(a: u64) -> u64 {
    T::get(a).wrapping_neg().put()
}

#[inline(always)]
pub(in crate::ptx) fn abs<T: Int>(a: u64) -> u64 {
    let x = T::get(a);
    if x < T::zero() {
        x.wrapping_neg().put()
    } else {
        x.put()
    }
}

/// `shl`: shift amounts beyond the width give zero (the amount is an unsigned 32-bit value).
#[inline(always)]
pub(in crate::ptx) fn shl<T: Int>(a: u64, b: u64) -> u64 {
    let s = b as u32;
    if s >= T::BITS {
        0
    } else {
        T::get(a.wrapping_shl(s)).put()
    }
}

/// `shr`: logical for `.u`/`.b`, arithmetic for `.s`; amounts beyond the width clamp.
#[inline(always)]
pub(in crate::ptx) fn shr<T: Int>(a: u64, b: u64) -> u64 {
    let s = (b as u32).min(T::BITS - 1 + u32::from(!T::SIGNED));
    if s >= T::BITS {
        return 0;
    }
    T::from_wide(T::get(a).wide() >> s).put()
}

#[inline(always)]
pub(in crate::ptx) fn mask<T: Int>(v: u64) -> u64 {
    T::get(v).put()
}

#[inline(always)]
pub(in crate::ptx) fn not<T: Int>(a: u64) -> u64 {
    T::get(!a).put()
}

#[inline(always)]
pub(in crate::ptx) fn cnot<T: Int>(a: u64) -> u64 {
    u64::from(T::get(a) == T::zero())
}

#[inline(always)]
pub(in crate::ptx) fn popc<T: Int>(a: u64) -> u64 {
    u64::from(T::get(a).put().count_ones())
}

#[inline(always)]
pub(in crate::ptx) fn clz<T: Int>(a: u64) -> u64 {
    u64::from(T::get(a).put().leading_zeros() - (64 - T::BITS))
}

#[inline(always)]
pub(in crate::ptx) fn brev<T: Int>(a: u64) -> u64 {
    T::get(a).put().reverse_bits() >> (64 - T::BITS)
}

/// Sign-extends the low `T::BITS` bits (`cvt.s64.s32`), as two's complement.
#[inline(always)]
pub(in crate::ptx) fn sext<T: Int>(a: u64) -> u64 {
    T::get(a).wide() as u64
}

/// A comparison operator of `setp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::ptx) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

impl Cmp {
    pub(in crate::ptx) fn parse(s: &str) -> Option<Cmp> {
        Some(match s {
            "eq" => Cmp::Eq,
            "ne" => Cmp::Ne,
            "lt" => Cmp::Lt,
            "le" => Cmp::Le,
            "gt" => Cmp::Gt,
            "ge" => Cmp::Ge,
            "lo" => Cmp::Lo,
            "ls" => Cmp::Ls,
            "hi" => Cmp::Hi,
            "hs" => Cmp::Hs,
            "equ" => Cmp::Equ,
            "neu" => Cmp::Neu,
            "ltu" => Cmp::Ltu,
            "leu" => Cmp::Leu,
            "gtu" => Cmp::Gtu,
            "geu" => Cmp::Geu,
            "num" => Cmp::Num,
            "nan" => Cmp::Nan,
            _ => return None,
        })
    }

    /// Whether the operator applies to integers (`lo`..`hs` compare unsigned).
    pub(in crate::ptx) fn for_int(self) -> bool {
        matches!(
            self,
            Cmp::Eq
                | Cmp::Ne
                | Cmp::Lt
                | Cmp::Le
                | Cmp::Gt
                | Cmp::Ge
                | Cmp::Lo
                | Cmp::Ls
                | Cmp::Hi
                | Cmp::Hs
        )
    }

    pub(in crate::ptx) fn for_float(self) -> bool {
        !matches!(self, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs)
    }
}

/// An integer comparison; `lo`/`ls`/`hi`/`hs` compare the bits as unsigned.
#[inline(always)]
pub(in crate::ptx) fn cmp_int<T: Int>(cmp: Cmp, a: u64, b: u64) -> bool {
    let (x, y) = (T::get(a), T::get(b));
    let (ux, uy) = (T::get(a).put(), T::get(b).put());
    match cmp {
        Cmp::Eq => x == y,
        Cmp::Ne => x != y,
        Cmp::Lt => x < y,
        Cmp::Le => x <= y,
        Cmp::Gt => x > y,
        Cmp::Ge => x >= y,
        Cmp::Lo => ux < uy,
        Cmp::Ls => ux <= uy,
        Cmp::Hi => ux > uy,
        Cmp::Hs => ux >= uy,
        // Rejected when the instruction is decoded.
        _ => false,
    }
}

/// A float comparison: the plain operators are ordered (false when either is NaN), the `u`
/// ones unordered (true when either is NaN).
#[inline(always)]
pub(in crate::ptx) fn cmp_float<F: Float>(cmp: Cmp, ftz: bool, a: u64, b: u64) -> bool {
    let (mut x, mut y) = (F::get(a), F::get(b));
    if ftz {
        x = x.flush();
        y = y.flush();
    }
    let nan = x.is_nan() || y.is_nan();
    match cmp {
        Cmp::Eq => x == y,
        Cmp::Ne => !nan && x != y,
        Cmp::Lt => x < y,
        Cmp::Le => x <= y,
        Cmp::Gt => x > y,
        Cmp::Ge => x >= y,
        Cmp::Equ => nan || x == y,
        Cmp::Neu => nan || x != y,
        Cmp::Ltu => nan || x < y,
        Cmp::Leu => nan || x <= y,
        Cmp::Gtu => nan || x > y,
        Cmp::Geu => nan || x >= y,
        Cmp::Num => !nan,
        Cmp::Nan => nan,
        // Rejected when the instruction is decoded.
        _ => false,
    }
}

/// A floating-point rounding mode (`.rn` `.rz` `.rm` `.rp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::ptx) enum Rnd {
    Rn,
    Rz,
    Rm,
    Rp,
}

/// An IEEE binary float type (`.f32`, `.f64`).
pub(in crate::ptx) trait Float:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
{
    /// The NaN the GPU's arithmetic produces.
    const CANONICAL_NAN: u64;
    const SIGN: u64;
    const MAX: Self;
    const ZERO: Self;
    const ONE: Self;
    fn get(bits: u64) -> Self;
    fn put(self) -> u64;
    fn is_nan(self) -> bool;
    fn is_infinite(self) -> bool;
    fn is_subnormal(self) -> bool;
    fn mul_add(self, b: Self, c: Self) -> Self;
    fn sqrt(self) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64_rn(v: f64) -> Self;
    fn from_i128_rn(v: i128) -> Self;
    /// Whether `.ftz` applies to this type (f32 only).
    const FTZ: bool;

    #[inline(always)]
    fn canon(self) -> u64 {
        if self.is_nan() {
            Self::CANONICAL_NAN
        } else {
            self.put()
        }
    }

    /// `.ftz`: a subnormal becomes a zero of its sign.
    #[inline(always)]
    fn flush(self) -> Self {
        if Self::FTZ && self.is_subnormal() {
            Self::get(self.put() & Self::SIGN)
        } else {
            self
        }
    }

    /// The next representable value towards +infinity (finite, non-NaN inputs).
    fn next_up(self) -> Self {
        let b = self.put();
        let mag = b & !Self::SIGN;
        if mag == 0 {
            return Self::get(1);
        }
        if b & Self::SIGN == 0 {
            Self::get(b + 1)
        } else {
            Self::get(b - 1)
        }
    }

    fn next_down(self) -> Self {
        -((-self).next_up())
    }
}

impl Float for f32 {
    const CANONICAL_NAN: u64 = 0x7fff_ffff;
    const SIGN: u64 = 0x8000_0000;
    const MAX: Self = f32::MAX;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const FTZ: bool = true;
    #[inline(always)]
    fn get(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        u64::from(self.to_bits())
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    #[inline(always)]
    fn is_infinite(self) -> bool {
        f32::is_infinite(self)
    }
    #[inline(always)]
    fn is_subnormal(self) -> bool {
        f32::is_subnormal(self)
    }
    #[inline(always)]
    fn mul_add(self, b: Self, c: Self) -> Self {
        f32::mul_add(self, b, c)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn from_f64_rn(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn from_i128_rn(v: i128) -> Self {
        v as f32
    }
}

impl Float for f64 {
    const CANONICAL_NAN: u64 = 0x7fff_ffff_ffff_ffff;
    const SIGN: u64 = 0x8000_0000_0000_0000;
    const MAX: Self = f64::MAX;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const FTZ: bool = false;
    #[inline(always)]
    fn get(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    #[inline(always)]
    fn put(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    #[inline(always)]
    fn is_infinite(self) -> bool {
        f64::is_infinite(self)
    }
    #[inline(always)]
    fn is_subnormal(self) -> bool {
        f64::is_subnormal(self)
    }
    #[inline(always)]
    fn mul_add(self, b: Self, c: Self) -> Self {
        f64::mul_add(self, b, c)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64_rn(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn from_i128_rn(v: i128) -> Self {
        v as f64
    }
}

#[inline(always)]
pub(in crate::ptx) fn fadd<F: Float>(a: u64, b: u64) -> u64 {
    (F::get(a) + F::get(b)).canon()
}

#[inline(always)]
pub(in crate::ptx) fn fsub<F: Float>(a: u64, b: u64) -> u64 {
    (F::get(a) - F::get(b)).canon()
}

#[inline(always)]
pub(in crate::ptx) fn fmul<F: Float>(a: u64, b: u64) -> u64 {
    (F::get(a) * F::get(b)).canon()
}

#[inline(always)]
pub(in crate::ptx) fn fdiv<F: Float>(a: u64, b: u64) -> u64 {
    (F::get(a) / F::get(b)).canon()
}

/// `fma.rn`: one rounding of `a * b + c`.
#[inline(always)]
pub(in crate::ptx) fn ffma<F: Float>(a: u64, b: u64, c: u64) -> u64 {
    F::get(a).mul_add(F::get(b), F::get(c)).canon()
}

/// `min.f`: a NaN operand gives the other; `-0.0` is below `+0.0`.
#[inline(always)]
pub(in crate::ptx) fn fmin<F: Float>(a: u64, b: u64) -> u64 {
    let (x, y) = (F::get(a), F::get(b));
    match (x.is_nan(), y.is_nan()) {
        (true, true) => F::CANONICAL_NAN,
        (true, false) => b,
        (false, true) => a,
        _ if x == y => F::get(a | b).put(),
        _ if x < y => a,
        _ => b,
    }
}

#[inline(always)]
pub(in crate::ptx) fn fmax<F: Float>(a: u64, b: u64) -> u64 {
    let (x, y) = (F::get(a), F::get(b));
    match (x.is_nan(), y.is_nan()) {
        (true, true) => F::CANONICAL_NAN,
        (true, false) => b,
        (false, true) => a,
        _ if x == y => F::get(a & b).put(),
        _ if x > y => a,
        _ => b,
    }
}

#[inline(always)]
pub(in crate::ptx) fn fneg<F: Float>(a: u64) -> u64 {
    F::get(a).put() ^ F::SIGN
}

#[inline(always)]
pub(in crate::ptx) fn fabs<F: Float>(a: u64) -> u64 {
    F::get(a).put() & !F::SIGN
}

/// What a float operation does beyond its plain round-to-nearest form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::ptx) struct FMode {
    pub rnd: Rnd,
    pub ftz: bool,
    pub sat: bool,
}

/// A float operation with modifiers (the slow path: rounding other than `.rn`, `.ftz`, `.sat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::ptx) enum FOp {
    Add,
    Sub,
    Mul,
    Div,
    Fma,
    Min,
    Max,
    Neg,
    Abs,
    Sqrt,
    Rcp,
    Rsqrt,
    Ex2,
    Lg2,
    Sin,
    Cos,
    Tanh,
}

/// Rounds towards `rnd` the exact result whose round-to-nearest value is `s`: `above` is
/// `Some(true)` when the exact value is above `s`, `Some(false)` below, `None` when `s` is exact.
/// `overflowed`: the exact value is finite although `s` is infinite.
fn directed<F: Float>(s: F, above: Option<bool>, overflowed: bool, rnd: Rnd) -> F {
    if rnd == Rnd::Rn || s.is_nan() {
        return s;
    }
    if overflowed {
        // The directed modes stop at the largest finite value unless they round away from
        // zero in the overflow's direction.
        let positive = s > F::ZERO;
        return match (rnd, positive) {
            (Rnd::Rz, true) | (Rnd::Rm, true) => F::MAX,
            (Rnd::Rz, false) | (Rnd::Rp, false) => -F::MAX,
            _ => s,
        };
    }
    match (rnd, above) {
        (Rnd::Rp, Some(true)) => s.next_up(),
        (Rnd::Rm, Some(false)) => s.next_down(),
        (Rnd::Rz, Some(true)) if s < F::ZERO => s.next_up(),
        (Rnd::Rz, Some(false)) if s > F::ZERO => s.next_down(),
        _ => s,
    }
}

fn sign_of<F: Float>(err: F) -> Option<bool> {
    if err > F::ZERO {
        Some(true)
    } else if err < F::ZERO {
        Some(false)
    } else {
        None
    }
}

/// A float operation with its modifiers, for one thread.
pub(in crate::ptx) fn fgeneral<F: Float>(op: FOp, m: FMode, a: u64, b: u64, c: u64) -> u64 {
    let inp = |v: u64| {
        let x = F::get(v);
        if m.ftz {
            x.flush()
        } else {
            x
        }
    };
    let (x, y, z) = (inp(a), inp(b), inp(c));
    let r: F = match op {
        FOp::Add | FOp::Sub => {
            let y = if op == FOp::Sub { -y } else { y };
            let s = x + y;
            // TwoSum: the exact error of the rounded sum.
            let bb = s - x;
            let err = (x - (s - bb)) + (y - bb);
            let overflowed = s.is_infinite() && !x.is_infinite() && !y.is_infinite();
            directed(s, sign_of(err), overflowed, m.rnd)
        }
        FOp::Mul => {
            let s = x * y;
            // The product's exact error, by one fused rounding.
            let err = x.mul_add(y, -s);
            let overflowed = s.is_infinite() && !x.is_infinite() && !y.is_infinite();
            directed(s, sign_of(err), overflowed, m.rnd)
        }
        FOp::Div => x / y,
        FOp::Fma => x.mul_add(y, z),
        FOp::Min => F::get(fmin::<F>(x.put(), y.put())),
        FOp::Max => F::get(fmax::<F>(x.put(), y.put())),
        FOp::Neg => return fneg::<F>(x.put()),
        FOp::Abs => return fabs::<F>(x.put()),
        FOp::Sqrt => x.sqrt(),
        FOp::Rcp => F::ONE / x,
        FOp::Rsqrt => F::ONE / x.sqrt(),
        FOp::Ex2 => F::from_f64_rn(x.to_f64().exp2()),
        FOp::Lg2 => F::from_f64_rn(x.to_f64().log2()),
        FOp::Sin => F::from_f64_rn(x.to_f64().sin()),
        FOp::Cos => F::from_f64_rn(x.to_f64().cos()),
        FOp::Tanh => F::from_f64_rn(x.to_f64().tanh()),
    };
    let mut r = if m.ftz { r.flush() } else { r };
    if m.sat {
        r = if r.is_nan() || r < F::ZERO {
            F::ZERO
        } else if r > F::ONE {
            F::ONE
        } else {
            r
        };
    }
    r.canon()
}

/// A type a `cvt` converts from or to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::ptx) enum Num {
    U(u32),
    S(u32),
    F32,
    F64,
}

/// How `cvt` rounds: to an integral value (`.rni` ...) or to the destination float (`.rn` ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::ptx) struct CvtMode {
    pub int_rnd: Option<Rnd>,
    pub rnd: Option<Rnd>,
    pub ftz: bool,
    pub sat: bool,
}

fn int_range(t: Num) -> (i128, i128) {
    match t {
        Num::U(bits) => (0, (1i128 << bits) - 1),
        Num::S(bits) => (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
        _ => unreachable!("an integer type"),
    }
}

fn read_int(t: Num, v: u64) -> i128 {
    match t {
        Num::U(64) => i128::from(v),
        Num::U(bits) => i128::from(v & ((1u64 << bits) - 1)),
        Num::S(bits) => i128::from(((v << (64 - bits)) as i64) >> (64 - bits)),
        _ => unreachable!("an integer type"),
    }
}

/// An integer result of type `t`, written as its register holds it: 8-bit values extended to
/// the register by their signedness (`cvt.s8` writes a sign-extended byte), others masked.
fn write_int(t: Num, v: i128) -> u64 {
    match t {
        Num::U(8) => (v as u8) as u64,
        Num::S(8) => (v as i8) as i64 as u64,
        Num::U(64) | Num::S(64) => v as u64,
        Num::U(bits) | Num::S(bits) => (v as u64) & ((1u64 << bits) - 1),
        _ => unreachable!("an integer type"),
    }
}

fn round_integral(x: f64, rnd: Rnd) -> f64 {
    match rnd {
        Rnd::Rn => x.round_ties_even(),
        Rnd::Rz => x.trunc(),
        Rnd::Rm => x.floor(),
        Rnd::Rp => x.ceil(),
    }
}

fn int_to_float<F: Float>(v: i128, rnd: Rnd) -> F {
    let r = F::from_i128_rn(v);
    // The rounded value is an integer of at most 2^64 in magnitude: compare exactly.
    let back = r.to_f64() as i128;
    directed(r, (back != v).then_some(back < v), false, rnd)
}

fn sat01<F: Float>(r: F) -> F {
    if r.is_nan() || r < F::ZERO {
        F::ZERO
    } else if r > F::ONE {
        F::ONE
    } else {
        r
    }
}

fn float_to<F: Float>(x: F, to: Num, m: CvtMode) -> u64 {
    let x = if m.ftz { x.flush() } else { x };
    match to {
        Num::U(_) | Num::S(_) => {
            // Float to integer saturates to the destination's range; NaN gives zero.
            if x.is_nan() {
                return 0;
            }
            let r = round_integral(x.to_f64(), m.int_rnd.unwrap_or(Rnd::Rz));
            let (lo, hi) = int_range(to);
            let v = if r <= lo as f64 {
                lo
            } else if r >= hi as f64 {
                hi
            } else {
                r as i128
            };
            write_int(to, v)
        }
        Num::F32 => {
            let v = x.to_f64();
            let r = match m.int_rnd {
                // An integral value of an f32 is an f32.
                Some(rnd) => round_integral(v, rnd) as f32,
                None => {
                    let r = v as f32;
                    let above = if v.is_nan() || f64::from(r) == v {
                        None
                    } else {
                        Some(f64::from(r) < v)
                    };
                    let overflowed = r.is_infinite() && !v.is_infinite();
                    directed(r, above, overflowed, m.rnd.unwrap_or(Rnd::Rn))
                }
            };
            let r = if m.ftz { r.flush() } else { r };
            let r = if m.sat { sat01(r) } else { r };
            r.canon()
        }
        Num::F64 => {
            let v = x.to_f64();
            let r = match m.int_rnd {
                Some(rnd) => round_integral(v, rnd),
                None => v,
            };
            let r = if m.sat { sat01(r) } else { r };
            r.canon()
        }
    }
}

/// `cvt.dtype.atype` for one thread.
pub(in crate::ptx) fn cvt(to: Num, from: Num, m: CvtMode, a: u64) -> u64 {
    match from {
        Num::U(_) | Num::S(_) => {
            let v = read_int(from, a);
            match to {
                Num::U(_) | Num::S(_) => {
                    let v = if m.sat {
                        let (lo, hi) = int_range(to);
                        v.clamp(lo, hi)
                    } else {
                        v
                    };
                    write_int(to, v)
                }
                Num::F32 => {
                    let r: f32 = int_to_float(v, m.rnd.unwrap_or(Rnd::Rn));
                    if m.sat {
                        sat01(r).put()
                    } else {
                        r.put()
                    }
                }
                Num::F64 => {
                    let r: f64 = int_to_float(v, m.rnd.unwrap_or(Rnd::Rn));
                    if m.sat {
                        sat01(r).put()
                    } else {
                        r.put()
                    }
                }
            }
        }
        Num::F32 => float_to(f32::get(a), to, m),
        Num::F64 => float_to(f64::get(a), to, m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_widths_and_signs() {
        assert_eq!(add::<u32>(0xffff_ffff, 1), 0);
        assert_eq!(mul_wide::<u32>(0xffff_ffff, 2), 0x1_ffff_fffe);
        assert_eq!(mul_wide::<i32>((-3i32) as u32 as u64, 5), (-15i64) as u64);
        assert_eq!(mul_wide::<u16>(0xffff, 0xffff), 0xfffe_0001);
        assert_eq!(mul_hi::<u64>(u64::MAX, u64::MAX), u64::MAX - 1);
        assert_eq!(mul_hi::<i64>((-1i64) as u64, 2), u64::MAX);
        assert_eq!(mul_hi::<i32>((-1i32) as u32 as u64, 2), 0xffff_ffff);
        assert_eq!(div::<u32>(7, 0), 0xffff_ffff);
        assert_eq!(
            div::<i32>(i32::MIN as u32 as u64, (-1i32) as u32 as u64),
            0x8000_0000
        );
        assert_eq!(rem::<i32>((-7i32) as u32 as u64, 2), (-1i32) as u32 as u64);
        assert_eq!(min::<i32>((-1i32) as u32 as u64, 1), 0xffff_ffff);
        assert_eq!(min::<u32>((-1i32) as u32 as u64, 1), 1);
        assert_eq!(shr::<i32>(0x8000_0000, 40), 0xffff_ffff);
        assert_eq!(shr::<u32>(0x8000_0000, 40), 0);
        assert_eq!(shr::<u32>(0x8000_0000, 31), 1);
        assert_eq!(shl::<u32>(1, 32), 0);
        assert_eq!(shl::<u64>(1, 63), 1 << 63);
        assert_eq!(sext::<i32>(0xffff_fffe), (-2i64) as u64);
        assert_eq!(clz::<u32>(1), 31);
        assert_eq!(brev::<u32>(1), 0x8000_0000);
        assert_eq!(popc::<u64>(u64::MAX), 64);
        assert!(cmp_int::<u32>(Cmp::Hi, 0xffff_ffff, 1));
        assert!(cmp_int::<i32>(Cmp::Lt, 0xffff_ffff, 1));
        assert!(cmp_int::<i32>(Cmp::Hi, 0xffff_ffff, 1));
    }

    #[test]
    fn floats_round_like_the_gpu() {
        let f = |x: f32| u64::from(x.to_bits());
        assert_eq!(fadd::<f32>(f(1.0), f(2.0)), f(3.0));
        assert_eq!(
            fadd::<f32>(f(f32::INFINITY), f(f32::NEG_INFINITY)),
            0x7fff_ffff
        );
        assert_eq!(fmin::<f32>(f(f32::NAN), f(2.0)), f(2.0));
        assert_eq!(fmin::<f32>(f(0.0), f(-0.0)), f(-0.0));
        assert_eq!(fmax::<f32>(f(0.0), f(-0.0)), f(0.0));
        // One rounding: (1 + 2^-23)^2 - 1 keeps the 2^-46 term that two roundings lose.
        let a = 1.0 + f32::EPSILON;
        assert_eq!(
            ffma::<f32>(f(a), f(a), f(-1.0)),
            f(2.0 * f32::EPSILON + f32::EPSILON * f32::EPSILON)
        );
        let m = |rnd| FMode {
            rnd,
            ftz: false,
            sat: false,
        };
        let third = fgeneral::<f32>(FOp::Add, m(Rnd::Rz), f(1.0), f(f32::EPSILON / 4.0), 0);
        assert_eq!(third, f(1.0));
        let up = fgeneral::<f32>(FOp::Add, m(Rnd::Rp), f(1.0), f(f32::EPSILON / 4.0), 0);
        assert_eq!(up, f(1.0 + f32::EPSILON));
        let down = fgeneral::<f32>(FOp::Add, m(Rnd::Rm), f(-1.0), f(-f32::EPSILON / 4.0), 0);
        assert_eq!(down, f(-1.0 - f32::EPSILON));
        let over = fgeneral::<f32>(FOp::Mul, m(Rnd::Rz), f(f32::MAX), f(2.0), 0);
        assert_eq!(over, f(f32::MAX));
        let ftz = FMode {
            rnd: Rnd::Rn,
            ftz: true,
            sat: false,
        };
        assert_eq!(fgeneral::<f32>(FOp::Add, ftz, f(1e-40), f(0.0), 0), f(0.0));
    }

    #[test]
    fn conversions() {
        let plain = CvtMode {
            int_rnd: None,
            rnd: None,
            ftz: false,
            sat: false,
        };
        assert_eq!(
            cvt(Num::U(64), Num::U(32), plain, 0xdead_ffff_ffff),
            0xffff_ffff
        );
        assert_eq!(cvt(Num::S(64), Num::S(32), plain, 0xffff_ffff), u64::MAX);
        assert_eq!(cvt(Num::U(32), Num::U(64), plain, 0x1_0000_0002), 2);
        assert_eq!(
            cvt(Num::S(8), Num::S(32), plain, 0x180),
            0xffff_ffff_ffff_ff80
        );
        let sat = CvtMode { sat: true, ..plain };
        assert_eq!(cvt(Num::S(8), Num::S(32), sat, 0x180), 127);
        let rzi = CvtMode {
            int_rnd: Some(Rnd::Rz),
            ..plain
        };
        let rni = CvtMode {
            int_rnd: Some(Rnd::Rn),
            ..plain
        };
        let f = |x: f32| u64::from(x.to_bits());
        assert_eq!(
            cvt(Num::S(32), Num::F32, rzi, f(-2.7)),
            (-2i32) as u32 as u64
        );
        assert_eq!(cvt(Num::S(32), Num::F32, rni, f(2.5)), 2);
        assert_eq!(cvt(Num::U(32), Num::F32, rni, f(-5.0)), 0);
        assert_eq!(cvt(Num::U(32), Num::F32, rni, f(1e20)), 0xffff_ffff);
        assert_eq!(cvt(Num::S(32), Num::F32, rni, f(f32::NAN)), 0);
        let rn = CvtMode {
            rnd: Some(Rnd::Rn),
            ..plain
        };
        let rz = CvtMode {
            rnd: Some(Rnd::Rz),
            ..plain
        };
        assert_eq!(cvt(Num::F32, Num::U(32), rn, 16_777_217), f(16_777_216.0));
        assert_eq!(cvt(Num::F32, Num::U(32), rz, 16_777_219), f(16_777_218.0));
        assert_eq!(
            cvt(Num::F32, Num::U(64), rz, u64::MAX),
            f(18_446_742_974_197_923_840.0)
        );
        let third = (1.0f64 / 3.0).to_bits();
        assert_eq!(cvt(Num::F32, Num::F64, rn, third), f(1.0 / 3.0));
        assert_eq!(cvt(Num::F32, Num::F64, rz, third), 0x3eaa_aaaa);
        assert_eq!(cvt(Num::F32, Num::F64, rn, third), 0x3eaa_aaab);
        let big = 1e300f64.to_bits();
        assert_eq!(cvt(Num::F32, Num::F64, rz, big), f(f32::MAX));
        assert_eq!(cvt(Num::F32, Num::F64, rn, big), f(f32::INFINITY));
        let inf = f64::INFINITY.to_bits();
        assert_eq!(cvt(Num::F32, Num::F64, rz, inf), f(f32::INFINITY));
        assert_eq!(
            cvt(Num::F64, Num::F32, plain, f(0.1)),
            f64::from(0.1f32).to_bits()
        );
    }
}
