//! The GPU kernels stackbench compiles with NVRTC, kept in one place so that `check` verifies
//! exactly what the benchmarks time: their CUDA C sources, how to launch them, and their CPU
//! references (in f64).

/// A kernel compiled at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    /// `c[i] = a[i] + b[i]` over f32.
    VectorAdd,
    /// `C = A * B`, f32, row-major, 16 x 16 tiles in shared memory.
    TiledMatmul,
}

/// Threads per block of the vector add.
pub const VECTOR_ADD_BLOCK: u32 = 256;

/// The side of the matmul's square tile (and of its thread block).
pub const MATMUL_TILE: u32 = 16;

const VECTOR_ADD_SOURCE: &str = r#"
extern "C" __global__ void vector_add(const float *__restrict__ a,
                                      const float *__restrict__ b,
                                      float *__restrict__ c,
                                      unsigned long long n)
{
    unsigned long long stride = (unsigned long long)blockDim.x * gridDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        c[i] = a[i] + b[i];
    }
}
"#;

const TILED_MATMUL_SOURCE: &str = r#"
#define TILE 16
// C (m x n) = A (m x k) * B (k x n), all row-major f32.
extern "C" __global__ void matmul_tiled(const float *__restrict__ a,
                                        const float *__restrict__ b,
                                        float *__restrict__ c,
                                        int m, int n, int k)
{
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < k; t += TILE) {
        int ak = t + threadIdx.x;
        int bk = t + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = (row < m && ak < k) ? a[(long long)row * k + ak] : 0.0f;
        bs[threadIdx.y][threadIdx.x] = (bk < k && col < n) ? b[(long long)bk * n + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int i = 0; i < TILE; ++i) {
            sum += as[threadIdx.y][i] * bs[i][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        c[(long long)row * n + col] = sum;
    }
}
"#;

impl Kernel {
    /// Every kernel.
    pub const ALL: [Kernel; 2] = [Kernel::VectorAdd, Kernel::TiledMatmul];

    /// The CUDA C source.
    pub fn source(self) -> &'static str {
        match self {
            Kernel::VectorAdd => VECTOR_ADD_SOURCE,
            Kernel::TiledMatmul => TILED_MATMUL_SOURCE,
        }
    }

    /// The `extern "C"` function's name.
    pub fn function(self) -> &'static str {
        match self {
            Kernel::VectorAdd => "vector_add",
            Kernel::TiledMatmul => "matmul_tiled",
        }
    }

    /// The program's file name, as NVRTC's messages show it.
    pub fn file_name(self) -> &'static str {
        match self {
            Kernel::VectorAdd => "vector_add.cu",
            Kernel::TiledMatmul => "matmul_tiled.cu",
        }
    }
}

/// Grid and block of a launch, `(x, y, z)` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
}

/// The launch of the vector add over `n` elements: enough blocks to cover them, at most 65535
/// (the grid-stride loop does the rest).
pub fn vector_add_shape(n: usize) -> LaunchShape {
    let blocks = n.div_ceil(VECTOR_ADD_BLOCK as usize).clamp(1, 65_535) as u32;
    LaunchShape {
        grid: (blocks, 1, 1),
        block: (VECTOR_ADD_BLOCK, 1, 1),
    }
}

/// The launch of the tiled matmul for an `m x n` result: one block per tile.
pub fn matmul_shape(m: usize, n: usize) -> LaunchShape {
    let tiles = |len: usize| len.div_ceil(MATMUL_TILE as usize).max(1) as u32;
    LaunchShape {
        grid: (tiles(n), tiles(m), 1),
        block: (MATMUL_TILE, MATMUL_TILE, 1),
    }
}

/// The CPU reference of the vector add, in f64.
pub fn vector_add_reference(a: &[f32], b: &[f32]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) + f64::from(*y))
        .collect()
}

/// The CPU reference of `C = A * B`, row-major, `A` `m x k`, `B` `k x n`, accumulated in f64.
/// The inputs are anything that widens to f64 exactly (f32, or f16/bf16 already widened).
pub fn matmul_reference(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    assert_eq!(a.len(), m * k, "A is m x k");
    assert_eq!(b.len(), k * n, "B is k x n");
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p];
            for (j, out) in c[i * n..(i + 1) * n].iter_mut().enumerate() {
                *out += x * b[p * n + j];
            }
        }
    }
    c
}

/// Deterministic pseudo-random numbers in `[-1, 1)`, never all zero: inputs for verification
/// and timing (zeros run measurably faster on tensor cores). SplitMix64, seeded.
pub fn random_f32(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            // The top 24 bits: exactly representable in f32.
            ((z >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_numbers_are_in_range_repeatable_and_not_zero() {
        let a = random_f32(10_000, 7);
        assert_eq!(a, random_f32(10_000, 7));
        assert_ne!(a, random_f32(10_000, 8));
        assert!(a.iter().all(|x| (-1.0..1.0).contains(x)));
        let mean = a.iter().map(|x| f64::from(*x)).sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert!(a.iter().filter(|x| **x == 0.0).count() < 5);
    }

    #[test]
    fn matmul_reference_multiplies() {
        // [1 2 3; 4 5 6] * [7 8; 9 10; 11 12] = [58 64; 139 154]
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [7.0, 8.0, 9.0, 10.0, 11.0, 12.0];
        assert_eq!(
            matmul_reference(&a, &b, 2, 2, 3),
            [58.0, 64.0, 139.0, 154.0]
        );
        assert_eq!(
            vector_add_reference(&[1.5, -2.0], &[0.25, 2.0]),
            [1.75, 0.0]
        );
    }

    #[test]
    fn launch_shapes_cover_the_problem() {
        assert_eq!(vector_add_shape(1).grid, (1, 1, 1));
        assert_eq!(vector_add_shape(257).grid, (2, 1, 1));
        assert_eq!(vector_add_shape(1 << 30).grid, (65_535, 1, 1));
        let shape = matmul_shape(100, 33);
        assert_eq!(shape.grid, (3, 7, 1));
        assert_eq!(shape.block, (16, 16, 1));
    }

    #[test]
    fn sources_define_their_functions() {
        for kernel in Kernel::ALL {
            assert!(kernel.source().contains(&format!(
                "extern \"C\" __global__ void {}(",
                kernel.function()
            )));
        }
    }
}
