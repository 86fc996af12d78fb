//! cuRAND's host API for pseudo-random generators: `curandCreateGenerator` (needs a current CUDA
//! context, else `CURAND_STATUS_INITIALIZATION_FAILED`), the seed, offset and ordering setters,
//! `curandSetStream`, `curandGenerate` and `curandGenerateUniform` on the generator's stream
//! (each call continues the sequence where the last one ended), `curandDestroyGenerator`, and
//! the version calls. Statuses are cuRAND's `curandStatus_t`; a generator is an opaque pointer
//! into a table, so an unknown one is `CURAND_STATUS_NOT_INITIALIZED`, never a dereference.

use super::{philox, uniform, xorwow};
use crate::clock::Peak;
use crate::driver::library::{self, Work};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// `curandStatus_t` as the C ABI returns it.
pub type Status = c_int;

/// `CURAND_STATUS_SUCCESS`.
pub const SUCCESS: Status = 0;
/// `CURAND_STATUS_NOT_INITIALIZED`: no such generator.
pub const NOT_INITIALIZED: Status = 101;
/// `CURAND_STATUS_TYPE_ERROR`.
pub const TYPE_ERROR: Status = 103;
/// `CURAND_STATUS_OUT_OF_RANGE`.
pub const OUT_OF_RANGE: Status = 104;
/// `CURAND_STATUS_LAUNCH_FAILURE`.
pub const LAUNCH_FAILURE: Status = 201;
/// `CURAND_STATUS_INITIALIZATION_FAILED`: no usable GPU or context.
pub const INITIALIZATION_FAILED: Status = 203;
/// `CURAND_STATUS_INTERNAL_ERROR`.
pub const INTERNAL_ERROR: Status = 999;

/// cuRAND 10.4.0's `CURAND_VERSION`: `major * 1000 + minor * 100 + patch`.
pub const VERSION: c_int = 10400;

/// The `curandRngType_t`s the simulator computes: `PSEUDO_DEFAULT` (100, XORWOW),
/// `PSEUDO_XORWOW` (101) and `PSEUDO_PHILOX4_32_10` (161).
const XORWOW_TYPES: [c_int; 2] = [100, 101];
const PHILOX: c_int = 161;

/// The `curandRngType_t`s a real cuRAND has and the simulator does not compute: refused by name
/// (`CURAND_STATUS_TYPE_ERROR` and a line on standard error), never replaced by another.
const NOT_SIMULATED: [(c_int, &str); 7] = [
    (121, "CURAND_RNG_PSEUDO_MRG32K3A"),
    (141, "CURAND_RNG_PSEUDO_MTGP32"),
    (142, "CURAND_RNG_PSEUDO_MT19937"),
    (201, "CURAND_RNG_QUASI_SOBOL32"),
    (202, "CURAND_RNG_QUASI_SCRAMBLED_SOBOL32"),
    (203, "CURAND_RNG_QUASI_SOBOL64"),
    (204, "CURAND_RNG_QUASI_SCRAMBLED_SOBOL64"),
];
/// The `curandOrdering_t`s of pseudo-random generators: `PSEUDO_BEST` (100) to
/// `PSEUDO_DYNAMIC` (104).
const ORDERINGS: std::ops::RangeInclusive<c_int> = 100..=104;
/// cuRAND's default seed.
const DEFAULT_SEED: u64 = 0;

/// One generator's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generator {
    /// `curandRngType_t`.
    pub rng_type: c_int,
    /// Philox's key.
    pub seed: u64,
    /// The position in the sequence the next generation starts at.
    pub offset: u64,
    /// `curandOrdering_t`.
    pub ordering: c_int,
    /// The stream its work goes on, as an address.
    pub stream: usize,
}

/// The live generators, by address, and the next address.
struct Table {
    generators: BTreeMap<usize, Generator>,
    next: usize,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    generators: BTreeMap::new(),
    next: 0xc7a0_0000_0000,
});

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs one exported function: its status, `CURAND_STATUS_INTERNAL_ERROR` if it panicked.
fn guarded(body: impl FnOnce() -> Result<(), Status>) -> Status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(status)) => status,
        Err(_) => INTERNAL_ERROR,
    }
}

/// Changes the generator at `raw` with `change`.
fn update(raw: *mut c_void, change: impl FnOnce(&mut Generator) -> Result<(), Status>) -> Status {
    guarded(|| {
        let mut table = table();
        let generator = table
            .generators
            .get_mut(&(raw as usize))
            .ok_or(NOT_INITIALIZED)?;
        change(generator)
    })
}

/// `curandCreateGenerator(curandGenerator_t *generator, curandRngType_t rng_type)`.
///
/// # Safety
/// `out` must be valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn curandCreateGenerator(out: *mut *mut c_void, rng_type: c_int) -> Status {
    guarded(|| {
        if out.is_null() {
            return Err(OUT_OF_RANGE);
        }
        if let Some((_, name)) = NOT_SIMULATED.iter().find(|(t, _)| *t == rng_type) {
            eprintln!(
                "stackbench simulated cuRAND: {name} ({rng_type}) is not simulated (XORWOW and \
                 PHILOX4_32_10 are); a real cuRAND has it"
            );
            return Err(TYPE_ERROR);
        }
        if !XORWOW_TYPES.contains(&rng_type) && rng_type != PHILOX {
            return Err(TYPE_ERROR);
        }
        library::current().map_err(|_| INITIALIZATION_FAILED)?;
        let mut table = table();
        let key = table.next;
        table.next += 0x100;
        table.generators.insert(
            key,
            Generator {
                rng_type,
                seed: DEFAULT_SEED,
                offset: 0,
                ordering: 100,
                stream: 0,
            },
        );
        // SAFETY: not null, valid for one pointer by the caller's contract.
        unsafe { out.write(key as *mut c_void) };
        Ok(())
    })
}

/// `curandDestroyGenerator(curandGenerator_t)`.
#[no_mangle]
pub extern "C" fn curandDestroyGenerator(raw: *mut c_void) -> Status {
    guarded(|| {
        table()
            .generators
            .remove(&(raw as usize))
            .map(drop)
            .ok_or(NOT_INITIALIZED)
    })
}

/// `curandSetPseudoRandomGeneratorSeed(generator, seed)`: also restarts the sequence.
#[no_mangle]
pub extern "C" fn curandSetPseudoRandomGeneratorSeed(raw: *mut c_void, seed: u64) -> Status {
    update(raw, |g| {
        g.seed = seed;
        g.offset = 0;
        Ok(())
    })
}

/// `curandSetGeneratorOffset(generator, offset)`.
#[no_mangle]
pub extern "C" fn curandSetGeneratorOffset(raw: *mut c_void, offset: u64) -> Status {
    update(raw, |g| {
        g.offset = offset;
        Ok(())
    })
}

/// `curandSetGeneratorOrdering(generator, order)`: kept (every ordering gives the same values
/// here); a value that is no pseudo-random ordering is `CURAND_STATUS_OUT_OF_RANGE`.
#[no_mangle]
pub extern "C" fn curandSetGeneratorOrdering(raw: *mut c_void, ordering: c_int) -> Status {
    update(raw, |g| {
        if !ORDERINGS.contains(&ordering) {
            return Err(OUT_OF_RANGE);
        }
        g.ordering = ordering;
        Ok(())
    })
}

/// `curandSetStream(generator, stream)`.
#[no_mangle]
pub extern "C" fn curandSetStream(raw: *mut c_void, stream: *mut c_void) -> Status {
    update(raw, |g| {
        g.stream = stream as usize;
        Ok(())
    })
}

/// Words `offset .. offset + count` of a generator's sequence under `seed`.
type Words = fn(u64, u64, usize) -> Vec<u32>;

/// Puts the generation of `count` words at `output` on the generator's stream, by its own
/// algorithm, each written by `encode`, and moves the generator past them; `kind` names the
/// work (`u32`, `uniform`).
fn generate(
    raw: *mut c_void,
    output: *mut c_void,
    count: usize,
    kind: &str,
    encode: fn(u32) -> [u8; 4],
) -> Status {
    guarded(|| {
        let generator = {
            let mut table = table();
            let g = table
                .generators
                .get_mut(&(raw as usize))
                .ok_or(NOT_INITIALIZED)?;
            let before = *g;
            g.offset = g.offset.wrapping_add(count as u64);
            before
        };
        let (name, words): (String, Words) = if generator.rng_type == PHILOX {
            (format!("generate_philox4_32_10_{kind}"), philox::words)
        } else {
            if generator.offset > xorwow::MAX_OFFSET {
                eprintln!(
                    "stackbench simulated cuRAND: XORWOW offset {} is beyond the simulator's {} \
                     (it steps there word by word)",
                    generator.offset,
                    xorwow::MAX_OFFSET
                );
                return Err(OUT_OF_RANGE);
            }
            (format!("generate_xorwow_{kind}"), |seed, offset, count| {
                xorwow::words(seed, offset, count).unwrap_or_default()
            })
        };
        let address = output as u64;
        let work = Work {
            name,
            bytes: 4 * count as u64,
            // Ten Philox rounds of two multiplications per four words (or XORWOW's shifts and
            // additions), and the conversion.
            flops: 6 * count as u64,
            peak: Peak::Fp32,
            body: Box::new(move |memory| {
                let bytes: Vec<u8> = words(generator.seed, generator.offset, count)
                    .into_iter()
                    .flat_map(encode)
                    .collect();
                memory.write(address, &bytes)
            }),
        };
        library::enqueue(generator.stream as *mut c_void, work).map_err(|_| LAUNCH_FAILURE)
    })
}

/// `curandGenerate(generator, unsigned int *outputPtr, size_t num)`: 32-bit words.
#[no_mangle]
pub extern "C" fn curandGenerate(raw: *mut c_void, output: *mut u32, num: usize) -> Status {
    generate(raw, output.cast(), num, "u32", u32::to_le_bytes)
}

/// `curandGenerateUniform(generator, float *outputPtr, size_t num)`: floats in (0, 1].
#[no_mangle]
pub extern "C" fn curandGenerateUniform(raw: *mut c_void, output: *mut f32, num: usize) -> Status {
    generate(raw, output.cast(), num, "uniform", |w| {
        uniform(w).to_le_bytes()
    })
}

/// `curandGetVersion(int *version)`.
///
/// # Safety
/// `version` must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn curandGetVersion(version: *mut c_int) -> Status {
    guarded(|| {
        if version.is_null() {
            return Err(OUT_OF_RANGE);
        }
        // SAFETY: not null, valid for one int by the caller's contract.
        unsafe { version.write(VERSION) };
        Ok(())
    })
}

/// `curandGetProperty(libraryPropertyType type, int *value)`: 10, 4, 0.
///
/// # Safety
/// `value` must be valid for writing one `int`.
#[no_mangle]
pub unsafe extern "C" fn curandGetProperty(kind: c_int, value: *mut c_int) -> Status {
    guarded(|| {
        let answer = match kind {
            0 => VERSION / 1000,
            1 => VERSION / 100 % 10,
            2 => VERSION % 100,
            _ => return Err(OUT_OF_RANGE),
        };
        if value.is_null() {
            return Err(OUT_OF_RANGE);
        }
        // SAFETY: not null, valid for one int by the caller's contract.
        unsafe { value.write(answer) };
        Ok(())
    })
}
