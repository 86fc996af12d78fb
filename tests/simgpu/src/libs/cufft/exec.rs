//! `cufftExecC2C` and `cufftExecZ2Z`: the transform put on the plan's stream; when its turn
//! comes it gathers each batch element from the input layout, transforms it along every axis
//! with `rustfft` (forward `e^-2πi jk/n`, inverse `e^+2πi jk/n`, neither normalised, as cuFFT
//! documents), and scatters it into the output layout (in place when the pointers are equal).

use super::plan::{self, Kind, Plan};
use super::status::{self, guarded, Result};
use crate::clock::Peak;
use crate::driver::errors::Code;
use crate::driver::library::{self, DeviceMemory, Work};
use rustfft::num_complex::Complex;
use rustfft::{FftNum, FftPlanner};
use std::ffi::{c_int, c_void};

/// `CUFFT_FORWARD`.
const FORWARD: c_int = -1;
/// `CUFFT_INVERSE`.
const INVERSE: c_int = 1;

/// The transform of one batch element, dense row-major over dimensions `n`, in place.
pub fn transform<T: FftNum>(data: &mut [Complex<T>], n: &[usize], inverse: bool) {
    let mut planner = FftPlanner::new();
    let total: usize = n.iter().product();
    for (axis, &len) in n.iter().enumerate() {
        let fft = if inverse {
            planner.plan_fft_inverse(len)
        } else {
            planner.plan_fft_forward(len)
        };
        let pitch: usize = n[axis + 1..].iter().product();
        let mut line = vec![Complex::new(T::zero(), T::zero()); len];
        for outer in 0..total / (len * pitch) {
            for inner in 0..pitch {
                let at = |i: usize| (outer * len + i) * pitch + inner;
                for (i, slot) in line.iter_mut().enumerate() {
                    *slot = data[at(i)];
                }
                fft.process(&mut line);
                for (i, value) in line.iter().enumerate() {
                    data[at(i)] = *value;
                }
            }
        }
    }
}

/// Complex numbers from little-endian bytes and back, for both precisions.
trait Element: FftNum {
    const BYTES: usize;
    fn read(bytes: &[u8]) -> Self;
    fn write(self, out: &mut Vec<u8>);
}

impl Element for f32 {
    const BYTES: usize = 4;
    fn read(bytes: &[u8]) -> f32 {
        f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }
    fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl Element for f64 {
    const BYTES: usize = 8;
    fn read(bytes: &[u8]) -> f64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[..8]);
        f64::from_le_bytes(b)
    }
    fn write(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

/// Complex elements from bytes.
fn complexes<T: Element>(bytes: &[u8]) -> Vec<Complex<T>> {
    bytes
        .chunks_exact(2 * T::BYTES)
        .map(|c| Complex::new(T::read(c), T::read(&c[T::BYTES..])))
        .collect()
}

/// The whole computation on device memory.
fn run<T: Element>(
    plan: &Plan,
    input: u64,
    output: u64,
    inverse: bool,
    memory: &mut DeviceMemory<'_>,
) -> std::result::Result<(), Code> {
    let element = 2 * T::BYTES;
    let ins: Vec<Vec<usize>> = (0..plan.batch)
        .map(|b| plan.input.offsets(&plan.n, b))
        .collect();
    let outs: Vec<Vec<usize>> = (0..plan.batch)
        .map(|b| plan.output.offsets(&plan.n, b))
        .collect();
    let span = |all: &[Vec<usize>]| 1 + all.iter().flatten().copied().max().unwrap_or(0);
    let source = complexes::<T>(&memory.read(input, span(&ins) * element)?);
    let mut target = complexes::<T>(&memory.read(output, span(&outs) * element)?);
    for (read, write) in ins.iter().zip(&outs) {
        let mut data: Vec<Complex<T>> = read.iter().map(|&o| source[o]).collect();
        transform(&mut data, &plan.n, inverse);
        for (&o, value) in write.iter().zip(data) {
            target[o] = value;
        }
    }
    let mut bytes = Vec::with_capacity(target.len() * element);
    for value in target {
        value.re.write(&mut bytes);
        value.im.write(&mut bytes);
    }
    memory.write(output, &bytes)
}

/// Puts one execution of plan `handle` of `kind` on its stream.
fn exec(
    handle: c_int,
    kind: Kind,
    input: *mut c_void,
    output: *mut c_void,
    direction: c_int,
) -> Result {
    guarded(|| {
        let plan = plan::get(handle)?;
        if plan.kind != kind {
            return Err(status::INVALID_TYPE);
        }
        let inverse = match direction {
            FORWARD => false,
            INVERSE => true,
            _ => return Err(status::INVALID_VALUE),
        };
        if input.is_null() || output.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let points: usize = plan.n.iter().product();
        let batch = plan.batch;
        // About 5 n log2 n operations per transform of n points.
        let flops = 5.0 * (points * batch) as f64 * (points as f64).log2().max(1.0);
        let (input, output) = (input as u64, output as u64);
        let stream = plan.stream as *mut c_void;
        let (name, body): (&str, library::Body) = match kind {
            Kind::C2C => (
                "regular_fft_c2c",
                Box::new(move |m| run::<f32>(&plan, input, output, inverse, m)),
            ),
            Kind::Z2Z => (
                "regular_fft_z2z",
                Box::new(move |m| run::<f64>(&plan, input, output, inverse, m)),
            ),
        };
        let work = Work {
            name: name.to_owned(),
            bytes: 2 * (points * batch * kind.element_bytes()) as u64,
            flops: flops as u64,
            peak: Peak::Fp32,
            body,
        };
        library::enqueue(stream, work).map_err(|_| status::EXEC_FAILED)
    })
}

/// `cufftExecC2C(plan, idata, odata, direction)`.
#[no_mangle]
pub extern "C" fn cufftExecC2C(
    plan: c_int,
    input: *mut c_void,
    output: *mut c_void,
    direction: c_int,
) -> Result {
    exec(plan, Kind::C2C, input, output, direction)
}

/// `cufftExecZ2Z(plan, idata, odata, direction)`.
#[no_mangle]
pub extern "C" fn cufftExecZ2Z(
    plan: c_int,
    input: *mut c_void,
    output: *mut c_void,
    direction: c_int,
) -> Result {
    exec(plan, Kind::Z2Z, input, output, direction)
}
