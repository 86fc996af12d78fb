//! Launches a GPU refuses or that fault, with the real NVRTC output: the fault the driver
//! would report, never a panic or a silent wrong answer.

mod ptx_common;

use ptx_common::*;
use stackbench_simgpu::ptx::{self, Fault, Launch};

fn vector_add_launch<'a>(params: &'a [Vec<u8>], blocks: u32, threads: u32) -> Launch<'a> {
    Launch {
        grid: [blocks, 1, 1],
        block: [threads, 1, 1],
        shared_bytes: 0,
        params,
    }
}

#[test]
fn a_pointer_outside_every_allocation_is_an_illegal_address() {
    for (name, module) in modules("vector_add") {
        let kernel = module.kernel("vector_add").unwrap();
        let mut mem = Mem::new();
        let a = mem.alloc_f32(&values(100, 1));
        let b = mem.alloc_f32(&values(100, 2));
        // Between two allocations and below the first one: nothing is there.
        for c in [b + 8192, BASE - 4096, 0] {
            let params = [u64_param(a), u64_param(b), u64_param(c), u64_param(100)];
            let r = ptx::run(kernel, &vector_add_launch(&params, 1, 256), &mem);
            assert_eq!(
                r,
                Err(Fault::IllegalAddress {
                    address: c,
                    bytes: 4
                }),
                "{name}"
            );
        }
    }
}

#[test]
fn reading_past_an_allocations_end_is_an_illegal_address() {
    for (name, module) in modules("vector_add") {
        let kernel = module.kernel("vector_add").unwrap();
        let mut mem = Mem::new();
        let a = mem.alloc_f32(&values(100, 1));
        let b = mem.alloc_f32(&values(100, 2));
        let c = mem.alloc_f32(&[0.0; 110]);
        let params = [u64_param(a), u64_param(b), u64_param(c), u64_param(110)];
        let r = ptx::run(kernel, &vector_add_launch(&params, 1, 256), &mem);
        // Which input the PTX reads first differs between NVRTCs; the element is the 101st.
        match r {
            Err(Fault::IllegalAddress { address, bytes: 4 }) => {
                assert!(
                    address == a + 400 || address == b + 400,
                    "{name}: {address:#x}"
                )
            }
            other => panic!("{name}: {other:?}"),
        }
        // The output one element short: the store faults.
        let a = mem.alloc_f32(&values(100, 1));
        let b = mem.alloc_f32(&values(100, 2));
        let c = mem.alloc_f32(&[0.0; 99]);
        let params = [u64_param(a), u64_param(b), u64_param(c), u64_param(100)];
        let r = ptx::run(kernel, &vector_add_launch(&params, 1, 256), &mem);
        assert_eq!(
            r,
            Err(Fault::IllegalAddress {
                address: c + 396,
                bytes: 4
            }),
            "{name}"
        );
    }
}

#[test]
fn a_misaligned_pointer_is_a_misaligned_address() {
    for (name, module) in modules("vector_add") {
        let kernel = module.kernel("vector_add").unwrap();
        let mut mem = Mem::new();
        let a = mem.alloc_f32(&values(100, 1));
        let b = mem.alloc_f32(&values(100, 2));
        let c = mem.alloc_f32(&[0.0; 101]);
        let params = [u64_param(a), u64_param(b), u64_param(c + 2), u64_param(100)];
        let r = ptx::run(kernel, &vector_add_launch(&params, 1, 128), &mem);
        assert_eq!(
            r,
            Err(Fault::Misaligned {
                address: c + 2,
                bytes: 4
            }),
            "{name}"
        );
    }
}

#[test]
fn matmul_with_a_null_matrix_is_an_illegal_address() {
    for (name, module) in modules("matmul_tiled") {
        let kernel = module.kernel("matmul_tiled").unwrap();
        let mut mem = Mem::new();
        let b = mem.alloc_f32(&values(32 * 32, 1));
        let c = mem.alloc_f32(&[0.0; 32 * 32]);
        let params = [
            u64_param(0),
            u64_param(b),
            u64_param(c),
            i32_param(32),
            i32_param(32),
            i32_param(32),
        ];
        let launch = Launch {
            grid: [2, 2, 1],
            block: [16, 16, 1],
            shared_bytes: 0,
            params: &params,
        };
        assert_eq!(
            ptx::run(kernel, &launch, &mem),
            Err(Fault::IllegalAddress {
                address: 0,
                bytes: 4
            }),
            "{name}"
        );
    }
}

#[test]
fn launches_beyond_the_hardware_limits_are_invalid() {
    for (name, module) in modules("vector_add") {
        let kernel = module.kernel("vector_add").unwrap();
        let mut mem = Mem::new();
        let a = mem.alloc_f32(&values(16, 1));
        let params = [u64_param(a), u64_param(a), u64_param(a), u64_param(16)];
        for (grid, block) in [
            ([1, 1, 1], [1025, 1, 1]),
            ([1, 1, 1], [32, 32, 2]),
            ([1, 1, 1], [1, 1, 65]),
            ([1, 1, 1], [0, 1, 1]),
            ([0, 1, 1], [256, 1, 1]),
            ([1, 65_536, 1], [256, 1, 1]),
            ([1 << 31, 1, 1], [256, 1, 1]),
        ] {
            let launch = Launch {
                grid,
                block,
                shared_bytes: 0,
                params: &params,
            };
            assert!(
                matches!(
                    ptx::run(kernel, &launch, &mem),
                    Err(Fault::InvalidLaunch(_))
                ),
                "{name}: grid {grid:?}, block {block:?}"
            );
        }
        // The size parameter passed as 32 bits where the kernel declares 64.
        let params = [u64_param(a), u64_param(a), u64_param(a), i32_param(16)];
        match ptx::run(kernel, &vector_add_launch(&params, 1, 256), &mem) {
            Err(Fault::InvalidLaunch(message)) => {
                assert!(message.contains("parameter 3"), "{name}: {message}")
            }
            other => panic!("{name}: {other:?}"),
        }
        let params = [u64_param(a), u64_param(a), u64_param(a)];
        assert!(matches!(
            ptx::run(kernel, &vector_add_launch(&params, 1, 256), &mem),
            Err(Fault::InvalidLaunch(_))
        ));
        // Shared memory beyond the device's.
        let params = [u64_param(a), u64_param(a), u64_param(a), u64_param(16)];
        let launch = Launch {
            shared_bytes: 300 * 1024,
            ..vector_add_launch(&params, 1, 256)
        };
        assert!(matches!(
            ptx::run(kernel, &launch, &mem),
            Err(Fault::InvalidLaunch(_))
        ));
        // The largest block is fine.
        ptx::run(kernel, &vector_add_launch(&params, 1, 1024), &mem).unwrap();
    }
}
