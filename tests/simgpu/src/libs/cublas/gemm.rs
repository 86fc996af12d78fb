//! The GEMM that cuBLAS's and cuBLASLt's calls come down to, `D = alpha op(A) op(B) + beta C`
//! in column-major storage, taken literally from the arguments: `op(A)` is `m x k` (stored
//! `m x k`, or `k x m` when transposed) with leading dimension `lda`, `op(B)` is `k x n` with
//! `ldb`, `C` and `D` are `m x n` with `ldc` and `ldd`. Arguments are validated as cuBLAS
//! validates them, and the product is computed by an independent CPU reference
//! (`matrixmultiply`'s `sgemm` with explicit row and column strides, FP32 accumulation) on
//! inputs widened exactly from their format, or rounded to TF32, FP16 or BF16 first where the
//! compute type says so.
//!
//! cuBLASLt's FP8 matmul adds per-tensor scales, each an f32 in device memory read when the
//! work runs: `D = d_scale (alpha a_scale b_scale op(A) op(B) + beta c_scale C)`, the factors
//! multiplied in FP32, `d_scale` only for an FP8 `D`, and `max |D|` before it written out
//! where asked ([`Scales`]).
//!
//! The work goes on a stream through [`crate::driver::library`], timed at `2 m n k` operations
//! at its precision's peak. A GEMM identical to the last one, on inputs and an output no one
//! has written since, is not recomputed (bench repeats one GEMM hundreds of times).

use super::status::Status;
use super::types::{Element, Rounding};
use crate::clock::Peak;
use crate::driver::errors::Code;
use crate::driver::library::{self, DeviceMemory, Work};
use crate::trace::{self, Value};
use std::ffi::c_void;
use std::sync::{Mutex, PoisonError};

/// One matrix operand: where it is, its format and leading dimension (in elements).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Operand {
    pub address: u64,
    pub element: Element,
    pub ld: usize,
}

/// The device addresses of an FP8 matmul's scales (each one f32; 0, a scale of 1) and of the
/// f32 that receives `max |D|` before `D`'s scale (0: not computed). All 0 outside FP8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scales {
    pub a: u64,
    pub b: u64,
    pub c: u64,
    /// Applies to an FP8 `D` only.
    pub d: u64,
    pub amax_d: u64,
}

impl Scales {
    /// The addresses given (not 0).
    pub fn given(&self) -> impl Iterator<Item = u64> {
        [self.a, self.b, self.c, self.d, self.amax_d]
            .into_iter()
            .filter(|&p| p != 0)
    }
}

/// A validated GEMM.
#[derive(Debug, Clone, PartialEq)]
pub struct Gemm {
    /// `op(A)` is `Aᵀ`.
    pub transa: bool,
    /// `op(B)` is `Bᵀ`.
    pub transb: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: f32,
    pub beta: f32,
    pub a: Operand,
    pub b: Operand,
    pub c: Operand,
    /// The output (cuBLAS's is `C`).
    pub d: Operand,
    /// How FP32 inputs are rounded before they are multiplied.
    pub rounding: Rounding,
    pub scales: Scales,
}

/// The dimensions `(m, n, k)` of a GEMM with leading dimensions `lda`, `ldb`, `ldc`, checked as
/// cuBLAS checks them: no negative dimension, `lda >= max(1, rows of A as stored)` (`m`, or
/// `k` when transposed), `ldb >= max(1, k or n)`, `ldc >= max(1, m)`; else
/// `CUBLAS_STATUS_INVALID_VALUE`.
#[allow(clippy::too_many_arguments)]
pub fn dimensions(
    transa: bool,
    transb: bool,
    m: i64,
    n: i64,
    k: i64,
    lda: i64,
    ldb: i64,
    ldc: i64,
) -> Result<(usize, usize, usize), Status> {
    let size = |v: i64| usize::try_from(v).map_err(|_| Status::INVALID_VALUE);
    let (m, n, k) = (size(m)?, size(n)?, size(k)?);
    let rows_a = if transa { k } else { m };
    let rows_b = if transb { n } else { k };
    let fits = |ld: i64, rows: usize| size(ld).is_ok_and(|ld| ld >= rows.max(1));
    if !fits(lda, rows_a) || !fits(ldb, rows_b) || !fits(ldc, m) {
        return Err(Status::INVALID_VALUE);
    }
    Ok((m, n, k))
}

/// Elements from the first to the last of a column-major `rows x cols` matrix with leading
/// dimension `ld`.
pub fn span(rows: usize, cols: usize, ld: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        ld * (cols - 1) + rows
    }
}

/// The `m x n` product `op(A) op(B)` times `alpha`, column-major with leading dimension `m`,
/// of column-major `a` (leading dimension `lda`) and `b` (`ldb`); `None` when a slice is
/// shorter than its matrix.
#[allow(clippy::too_many_arguments)]
pub fn product(
    transa: bool,
    transb: bool,
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    b: &[f32],
    ldb: usize,
) -> Option<Vec<f32>> {
    let (rows_a, cols_a) = if transa { (k, m) } else { (m, k) };
    let (rows_b, cols_b) = if transb { (n, k) } else { (k, n) };
    if a.len() < span(rows_a, cols_a, lda) || b.len() < span(rows_b, cols_b, ldb) {
        return None;
    }
    let mut c = vec![0.0f32; m * n];
    if m == 0 || n == 0 || k == 0 {
        return Some(c);
    }
    // op(A)[i, p]: A[i + p lda], or A[p + i lda] transposed; op(B)[p, j] likewise.
    let (rsa, csa) = if transa { (lda, 1) } else { (1, lda) };
    let (rsb, csb) = if transb { (ldb, 1) } else { (1, ldb) };
    let stride = |s: usize| isize::try_from(s).ok();
    let (rsa, csa, rsb, csb, csc) = (
        stride(rsa)?,
        stride(csa)?,
        stride(rsb)?,
        stride(csb)?,
        stride(m)?,
    );
    // SAFETY: every index the strides reach is below the spans checked above (row i < m and
    // column p < k of op(A) reach at most (m - 1) + (k - 1) lda, or the transposed), and `c`
    // holds m x n elements with column stride m.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.as_ptr(),
            rsa,
            csa,
            b.as_ptr(),
            rsb,
            csb,
            0.0,
            c.as_mut_ptr(),
            1,
            csc,
        );
    }
    Some(c)
}

/// The output elements `wrong_results = "gemm"` perturbs: the first, middle and last.
pub fn perturbed(elements: usize) -> Vec<usize> {
    let mut at = vec![0, elements / 2, elements.saturating_sub(1)];
    at.dedup();
    at
}

/// A perturbed element: off by half its magnitude plus a half, far beyond any tolerance.
pub fn perturb(value: f32) -> f32 {
    value + 0.5 * (value.abs() + 1.0)
}

impl Gemm {
    /// `(rows, cols)` of A as stored.
    fn stored_a(&self) -> (usize, usize) {
        if self.transa {
            (self.k, self.m)
        } else {
            (self.m, self.k)
        }
    }

    /// `(rows, cols)` of B as stored.
    fn stored_b(&self) -> (usize, usize) {
        if self.transb {
            (self.n, self.k)
        } else {
            (self.k, self.n)
        }
    }

    /// The peak it runs at: its inputs' format, or the format FP32 inputs are rounded to.
    pub fn peak(&self) -> Peak {
        match (self.a.element, self.rounding) {
            (Element::F16, _) | (Element::F32, Rounding::F16) => Peak::Fp16,
            (Element::Bf16, _) | (Element::F32, Rounding::Bf16) => Peak::Bf16,
            (Element::F32, Rounding::Tf32) => Peak::Tf32,
            (Element::F32, Rounding::None) => Peak::Fp32,
            (Element::E4m3, _) => Peak::Fp8,
        }
    }

    /// Bytes of device memory read and written.
    fn bytes(&self) -> u64 {
        let (m, n, k) = (self.m as u64, self.n as u64, self.k as u64);
        let size = |o: &Operand| o.element.size() as u64;
        let c = if self.beta != 0.0 {
            m * n * size(&self.c)
        } else {
            0
        };
        m * k * size(&self.a) + k * n * size(&self.b) + m * n * size(&self.d) + c
    }

    /// The kernel's name, as the profiler would list it.
    fn kernel(&self) -> String {
        let op = |t: bool| if t { 't' } else { 'n' };
        format!(
            "simgpu_gemm_{}_{}_{}{}",
            self.a.element.name().to_lowercase(),
            self.d.element.name().to_lowercase(),
            op(self.transa),
            op(self.transb)
        )
    }

    /// Reads operand `o`'s `rows x cols` matrix, widened to f32 and rounded by `rounding`,
    /// column by column at its leading dimension (what lies between columns comes too), never
    /// holding more than a column's bytes.
    fn load(
        memory: &DeviceMemory<'_>,
        o: &Operand,
        (rows, cols): (usize, usize),
        rounding: Rounding,
    ) -> Result<Vec<f32>, Code> {
        let size = o.element.size();
        let mut out = Vec::with_capacity(span(rows, cols, o.ld));
        for j in 0..cols {
            let len = if j + 1 == cols { rows } else { o.ld };
            let address = o.address + (j * o.ld * size) as u64;
            let column = o.element.decode(&memory.read(address, len * size)?);
            out.extend(column.into_iter().map(|x| rounding.apply(x)));
        }
        Ok(out)
    }

    /// The f32 scale at device address `address`; 1 at 0.
    fn scale(memory: &DeviceMemory<'_>, address: u64) -> Result<f32, Code> {
        if address == 0 {
            return Ok(1.0);
        }
        let b = memory.read(address, 4)?;
        Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Computes `D` from device memory into device memory; with `wrong` (the fault), a few of
    /// its elements perturbed.
    fn run(&self, memory: &mut DeviceMemory<'_>, wrong: bool) -> Result<(), Code> {
        let (m, n) = (self.m, self.n);
        let s = &self.scales;
        let alpha = self.alpha * Gemm::scale(memory, s.a)? * Gemm::scale(memory, s.b)?;
        let beta = self.beta * Gemm::scale(memory, s.c)?;
        let d_scale = Gemm::scale(memory, s.d)?;
        let a = Gemm::load(memory, &self.a, self.stored_a(), self.rounding)?;
        let b = Gemm::load(memory, &self.b, self.stored_b(), self.rounding)?;
        let mut d = product(
            self.transa,
            self.transb,
            m,
            n,
            self.k,
            alpha,
            &a,
            self.a.ld,
            &b,
            self.b.ld,
        )
        .ok_or(Code::ILLEGAL_ADDRESS)?;
        drop((a, b));
        if self.beta != 0.0 {
            // C as stored: beta scales it whatever the compute type rounds.
            let c = Gemm::load(memory, &self.c, (m, n), Rounding::None)?;
            for j in 0..n {
                for i in 0..m {
                    d[i + j * m] += beta * c[i + j * self.c.ld];
                }
            }
        }
        if wrong {
            for at in perturbed(m * n) {
                d[at] = perturb(d[at]);
            }
        }
        if s.amax_d != 0 {
            let amax = d.iter().fold(0.0f32, |max, x| max.max(x.abs()));
            memory.write(s.amax_d, &amax.to_le_bytes())?;
        }
        if self.d.element == Element::E4m3 {
            d.iter_mut().for_each(|x| *x *= d_scale);
        }
        // Column by column: what lies between D's columns stays as it was.
        let size = self.d.element.size();
        let mut column = vec![0u8; m * size];
        for j in 0..n {
            for (i, out) in column.chunks_exact_mut(size).enumerate() {
                self.d.element.encode_into(d[i + j * m], out);
            }
            memory.write(self.d.address + (j * self.d.ld * size) as u64, &column)?;
        }
        Ok(())
    }

    /// The states of A, B, D and the scales now, if each lies in device memory.
    fn states(&self, memory: &DeviceMemory<'_>) -> Option<Vec<(u64, u64)>> {
        let state = |o: &Operand, (rows, cols): (usize, usize)| {
            memory.state(o.address, span(rows, cols, o.ld) * o.element.size())
        };
        let mut states = vec![
            state(&self.a, self.stored_a())?,
            state(&self.b, self.stored_b())?,
            state(&self.d, (self.m, self.n))?,
        ];
        for address in self.scales.given() {
            states.push(memory.state(address, 4)?);
        }
        Some(states)
    }
}

/// The last GEMM computed and the states of its inputs and output just after.
struct Memo {
    /// The simulated host it ran on (tests give each thread one).
    host: usize,
    gemm: Gemm,
    wrong: bool,
    states: Vec<(u64, u64)>,
}

/// The last GEMM of this process.
static MEMO: Mutex<Option<Memo>> = Mutex::new(None);

/// The body of a GEMM's work: recomputes unless the last GEMM was this one on memory unchanged
/// since (with `beta = 0`, where `C` is not read).
fn body(gemm: Gemm, memory: &mut DeviceMemory<'_>) -> Result<(), Code> {
    let wrong = memory.faults().wrong_results == "gemm";
    let host = std::ptr::from_ref(crate::state::sim()) as usize;
    let mut memo = MEMO.lock().unwrap_or_else(PoisonError::into_inner);
    let states = gemm.states(memory);
    let same = memo.as_ref().is_some_and(|last| {
        gemm.beta == 0.0
            && last.host == host
            && last.gemm == gemm
            && last.wrong == wrong
            && Some(&last.states) == states.as_ref()
    });
    if same {
        return Ok(());
    }
    *memo = None;
    gemm.run(memory, wrong)?;
    if let Some(states) = gemm.states(memory) {
        *memo = Some(Memo {
            host,
            gemm,
            wrong,
            states,
        });
    }
    Ok(())
}

/// Puts `gemm` on `stream`; an empty output is no work at all, as cuBLAS returns at once.
pub fn submit(stream: *mut c_void, gemm: Gemm) -> Result<(), Status> {
    if gemm.m == 0 || gemm.n == 0 {
        return Ok(());
    }
    let work = Work {
        name: gemm.kernel(),
        bytes: gemm.bytes(),
        flops: 2 * (gemm.m * gemm.n * gemm.k) as u64,
        peak: gemm.peak(),
        body: Box::new(move |memory| body(gemm, memory)),
    };
    library::enqueue(stream, work).map_err(Status::from_driver)
}

/// Records a GEMM call in the trace: `library`'s `call` with its arguments as given and what
/// it answered.
pub fn record(library: &str, call: &str, fields: Vec<(&str, Value)>, outcome: Result<(), Status>) {
    let mut fields = fields;
    let status = match outcome {
        Ok(()) => Status::SUCCESS,
        Err(status) => status,
    };
    fields.push(("status", status.name().into()));
    trace::record(library, call, &fields);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_dimensions_below_the_stored_rows_are_invalid() {
        assert_eq!(dimensions(false, false, 3, 4, 5, 3, 5, 3), Ok((3, 4, 5)));
        // Transposed A is stored k x m: lda must cover k.
        assert_eq!(
            dimensions(true, false, 3, 4, 5, 3, 5, 3),
            Err(Status::INVALID_VALUE)
        );
        assert_eq!(
            dimensions(false, true, 3, 4, 5, 3, 3, 3),
            Err(Status::INVALID_VALUE)
        );
        assert_eq!(
            dimensions(false, false, 3, 4, 5, 3, 5, 2),
            Err(Status::INVALID_VALUE)
        );
        assert_eq!(
            dimensions(false, false, -1, 4, 5, 3, 5, 3),
            Err(Status::INVALID_VALUE)
        );
        // Empty matrices still need leading dimensions of at least 1.
        assert_eq!(
            dimensions(false, false, 0, 0, 0, 0, 1, 1),
            Err(Status::INVALID_VALUE)
        );
        assert_eq!(dimensions(false, false, 0, 0, 0, 1, 1, 1), Ok((0, 0, 0)));
    }

    #[test]
    fn a_short_operand_is_refused_not_read_past() {
        assert!(product(false, false, 2, 2, 2, 1.0, &[1.0; 3], 2, &[1.0; 4], 2).is_none());
        assert_eq!(
            product(false, false, 1, 1, 1, 2.0, &[3.0], 1, &[4.0], 1),
            Some(vec![24.0])
        );
    }
}
