//! What the interpreter's tests share: the committed NVRTC output, a device memory of plain
//! host buffers, and launches of the two kernels as stackbench makes them.
#![allow(dead_code)]

use std::path::PathBuf;

use stackbench_simgpu::ptx::{self, Counts, Fault, Kernel, Launch, Memory, Module, Region};

/// Where the first allocation is; each next one follows a gap, so an access between two is
/// outside every allocation.
pub const BASE: u64 = 0x7f00_0000_0000;

pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Every committed PTX file: (file name, text).
pub fn ptx_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(data_dir())
        .expect("tests/data")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("PTX text");
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect();
    files.sort();
    files
}

/// The committed PTX of one kernel from every NVRTC, parsed.
pub fn modules(kernel: &str) -> Vec<(String, Module)> {
    let found: Vec<(String, Module)> = ptx_files()
        .into_iter()
        .filter(|(name, _)| name.starts_with(&format!("{kernel}.")))
        .map(|(name, text)| {
            let module = Module::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, module)
        })
        .collect();
    assert!(found.len() >= 3, "PTX of {kernel} from each fixture NVRTC");
    found
}

/// Device memory: host buffers at made-up device addresses.
#[derive(Default)]
pub struct Mem {
    buffers: Vec<(u64, Box<[u8]>, *mut u8)>,
    next: u64,
}

impl Mem {
    pub fn new() -> Mem {
        Mem {
            buffers: Vec::new(),
            next: BASE,
        }
    }

    /// A new allocation holding `bytes`; its device address.
    pub fn alloc(&mut self, bytes: &[u8]) -> u64 {
        let mut b: Box<[u8]> = bytes.into();
        let data = b.as_mut_ptr();
        let address = self.next;
        self.next += (bytes.len() as u64).next_multiple_of(4096) + 4096;
        self.buffers.push((address, b, data));
        address
    }

    pub fn alloc_f32(&mut self, v: &[f32]) -> u64 {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.alloc(&bytes)
    }

    pub fn bytes(&self, address: u64) -> &[u8] {
        &self
            .buffers
            .iter()
            .find(|(a, _, _)| *a == address)
            .expect("an allocation")
            .1
    }

    pub fn f32s(&self, address: u64) -> Vec<f32> {
        self.bytes(address)
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }
}

impl Memory for Mem {
    fn region(&self, address: u64) -> Option<Region> {
        self.buffers
            .iter()
            .find(|(base, b, _)| address >= *base && address - *base < b.len() as u64)
            .map(|&(base, ref b, data)| Region {
                base,
                len: b.len(),
                data,
                peer: false,
            })
    }
}

pub fn u64_param(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

pub fn i32_param(v: i32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

/// Deterministic values in [-1, 1) with full mantissas.
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Runs `vector_add` over `a + b` with `blocks` blocks of `threads`; the result and counts.
pub fn vector_add(
    kernel: &Kernel,
    a: &[f32],
    b: &[f32],
    blocks: u32,
    threads: u32,
) -> (Vec<f32>, Result<Counts, Fault>) {
    let mut mem = Mem::new();
    let pa = mem.alloc_f32(a);
    let pb = mem.alloc_f32(b);
    let pc = mem.alloc_f32(&vec![f32::NAN; a.len()]);
    let params = [
        u64_param(pa),
        u64_param(pb),
        u64_param(pc),
        u64_param(a.len() as u64),
    ];
    let launch = Launch {
        grid: [blocks, 1, 1],
        block: [threads, 1, 1],
        shared_bytes: 0,
        params: &params,
    };
    let counts = ptx::run(kernel, &launch, &mem);
    (mem.f32s(pc), counts)
}

/// Runs `matmul_tiled` for an `m x k` by `k x n` product, one 16 x 16 block per tile.
pub fn matmul(
    kernel: &Kernel,
    a: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    k: usize,
) -> (Vec<f32>, Result<Counts, Fault>) {
    let mut mem = Mem::new();
    let pa = mem.alloc_f32(a);
    let pb = mem.alloc_f32(b);
    let pc = mem.alloc_f32(&vec![f32::NAN; m * n]);
    let params = [
        u64_param(pa),
        u64_param(pb),
        u64_param(pc),
        i32_param(m as i32),
        i32_param(n as i32),
        i32_param(k as i32),
    ];
    let launch = Launch {
        grid: [n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1],
        block: [16, 16, 1],
        shared_bytes: 0,
        params: &params,
    };
    let counts = ptx::run(kernel, &launch, &mem);
    (mem.f32s(pc), counts)
}
