//! The simulated cuDNN, cuFFT and cuRAND through their exported functions, each test on a host
//! of its own: the direct convolution against hand-computed values (non-square, padded, strided,
//! both modes) and through `cudnnConvolutionForward` on a stream with alpha and beta; a C2C
//! forward then inverse transform giving `n x`; uniform floats in (0, 1] averaging a half; the
//! versions; and the statuses each library gives for bad arguments, no context and no memory.

mod driver_support;

use driver_support::{alloc, context, download, host, ok, stream, upload, QUIET};
use stackbench_simgpu::driver::*;
use stackbench_simgpu::libs::cudnn::conv::{self, Geometry, Mode};
use stackbench_simgpu::libs::cudnn::status::{
    cudnnGetErrorString, cudnnGetLastErrorString, Status,
};
use stackbench_simgpu::libs::cudnn::{descriptors::*, forward::*, handle::*};
use stackbench_simgpu::libs::cufft::{exec::*, plan::*};
use stackbench_simgpu::libs::curand::generator::{
    curandCreateGenerator, curandDestroyGenerator, curandGenerate, curandGenerateUniform,
    curandGetProperty, curandGetVersion, curandSetGeneratorOffset, curandSetGeneratorOrdering,
    curandSetPseudoRandomGeneratorSeed, curandSetStream,
};
use std::ffi::{c_int, c_void, CStr};
use std::ptr::null_mut;

/// The hand-worked case: x (3x4) = 1..12 row by row, w (2x3) = [1 0 -1; 2 1 0], padding 1 row
/// and no columns, stride 2 rows and 1 column, so P = 1 + (3 + 2 - 2) / 2 = 2 and
/// Q = 1 + (4 - 3) / 1 = 2.
fn hand_case(mode: Mode) -> Geometry {
    Geometry {
        input: [1, 1, 3, 4],
        filter: [1, 1, 2, 3],
        pad: [1, 0],
        stride: [2, 1],
        dilation: [1, 1],
        mode,
    }
}

const HAND_X: [f32; 12] = [1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12.];
const HAND_W: [f32; 6] = [1., 0., -1., 2., 1., 0.];

#[test]
fn the_convolution_agrees_with_a_hand_computed_non_square_padded_strided_case() {
    let g = hand_case(Mode::CrossCorrelation);
    assert_eq!(g.output(), Some([1, 1, 2, 2]));
    // Output row 0 reads input rows -1 (padding) and 0: only filter row 1, (2 1 0), over row 0:
    // 2+2 = 4 and 4+3 = 7. Output row 1 reads rows 1 and 2: (1 0 -1) over (5 6 7) is -2,
    // (2 1 0) over (9 10 11) is 28, so 26; one column on, -2 + 31 = 29.
    assert_eq!(conv::forward(&g, &HAND_X, &HAND_W), vec![4., 7., 26., 29.]);
    // CUDNN_CONVOLUTION flips the filter: rows (0 1 2) and (-1 0 1). Row 0: (-1 0 1) over
    // (1 2 3) is 2, over (2 3 4) is 2; row 1: 6+14 + (-9+11) = 22, 7+16 + (-10+12) = 25.
    let flipped = hand_case(Mode::Convolution);
    assert_eq!(
        conv::forward(&flipped, &HAND_X, &HAND_W),
        vec![2., 2., 22., 25.]
    );
    assert_eq!(g.flops(), 2 * 4 * 6);
}

/// The simulator counts the windows that fit; cuDNN documents the closed form for
/// `cudnnGetConvolution2dForwardOutputDim`: `1 + (in + 2 pad - ((filter - 1) dil + 1)) / stride`.
#[test]
fn the_counted_output_size_is_the_one_cudnn_documents() {
    for input in 1..12 {
        for filter in 1..6 {
            for pad in 0..3 {
                for stride in 1..4 {
                    for dilation in 1..3 {
                        let (padded, span) = (input + 2 * pad, (filter - 1) * dilation + 1);
                        let documented = (padded >= span).then(|| 1 + (padded - span) / stride);
                        assert_eq!(
                            conv::windows(input, filter, pad, stride, dilation),
                            documented,
                            "in {input}, filter {filter}, pad {pad}, stride {stride}, dilation {dilation}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn channels_sum_while_filters_and_images_stay_apart_and_dilation_spreads_the_taps() {
    // Two images of two channels (1x1), two 1x1 filters: y[n][k] = sum_c x[n][c] w[k][c].
    let g = Geometry {
        input: [2, 2, 1, 1],
        filter: [2, 2, 1, 1],
        pad: [0, 0],
        stride: [1, 1],
        dilation: [1, 1],
        mode: Mode::CrossCorrelation,
    };
    let y = conv::forward(&g, &[1., 2., 3., 4.], &[10., 100., -1., 1.]);
    assert_eq!(y, vec![210., 1., 430., 1.]);
    // A 1x2 filter of ones dilated by 3 columns over 1x5 = 0..5: x[j] + x[j+3].
    let g = Geometry {
        input: [1, 1, 1, 5],
        filter: [1, 1, 1, 2],
        pad: [0, 0],
        stride: [1, 1],
        dilation: [1, 3],
        mode: Mode::CrossCorrelation,
    };
    assert_eq!(
        conv::forward(&g, &[0., 1., 2., 3., 4.], &[1., 1.]),
        vec![3., 5.]
    );
    // The same down the rows: a 2x1 filter dilated by 3 rows over 5x1.
    let rows = Geometry {
        input: [1, 1, 5, 1],
        filter: [1, 1, 2, 1],
        dilation: [3, 1],
        ..g
    };
    assert_eq!(
        conv::forward(&rows, &[0., 1., 2., 3., 4.], &[1., 1.]),
        vec![3., 5.]
    );
    // Channels that differ, or a filter that does not fit, give nothing.
    let mismatch = Geometry {
        filter: [1, 2, 1, 2],
        ..g
    };
    assert_eq!(mismatch.output(), None);
}

/// Asserts a cuDNN call succeeded, with its last error if not.
#[track_caller]
fn dnn(status: Status) {
    assert_eq!(status, 0, "{}", last_error());
}

/// The thread's last cuDNN error text.
fn last_error() -> String {
    let mut text = [0 as std::ffi::c_char; 512];
    // SAFETY: the buffer holds 512 bytes.
    unsafe { cudnnGetLastErrorString(text.as_mut_ptr(), text.len()) };
    // SAFETY: NUL-terminated within the buffer.
    unsafe { CStr::from_ptr(text.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Creates a descriptor with `create`.
fn descriptor(create: unsafe extern "C" fn(*mut *mut c_void) -> Status) -> *mut c_void {
    let mut desc = null_mut();
    // SAFETY: a valid out-pointer.
    dnn(unsafe { create(&mut desc) });
    desc
}

/// A handle, its tensor, filter and convolution descriptors for the hand case.
struct Dnn {
    handle: *mut c_void,
    x: *mut c_void,
    w: *mut c_void,
    conv: *mut c_void,
    y: *mut c_void,
}

fn hand_descriptors(mode: c_int) -> Dnn {
    let mut handle = null_mut();
    // SAFETY: a valid out-pointer.
    dnn(unsafe { cudnnCreate(&mut handle) });
    let x = descriptor(cudnnCreateTensorDescriptor);
    dnn(cudnnSetTensor4dDescriptor(x, 0, DATA_FLOAT, 1, 1, 3, 4));
    let w = descriptor(cudnnCreateFilterDescriptor);
    dnn(cudnnSetFilter4dDescriptor(w, DATA_FLOAT, 0, 1, 1, 2, 3));
    let conv = descriptor(cudnnCreateConvolutionDescriptor);
    dnn(cudnnSetConvolution2dDescriptor(
        conv, 1, 0, 2, 1, 1, 1, mode, DATA_FLOAT,
    ));
    let mut d = [0 as c_int; 4];
    let [n, c, h, wd] = &mut d;
    // SAFETY: four distinct ints.
    dnn(unsafe { cudnnGetConvolution2dForwardOutputDim(conv, x, w, n, c, h, wd) });
    assert_eq!(d, [1, 1, 2, 2]);
    let y = descriptor(cudnnCreateTensorDescriptor);
    dnn(cudnnSetTensor4dDescriptor(y, 0, DATA_FLOAT, 1, 1, 2, 2));
    Dnn {
        handle,
        x,
        w,
        conv,
        y,
    }
}

#[test]
fn cudnn_convolution_forward_on_a_stream_scales_by_alpha_and_beta() {
    context(QUIET);
    let d = hand_descriptors(1);
    let s = stream();
    dnn(cudnnSetStream(d.handle, s));
    let mut bytes = usize::MAX;
    // SAFETY: a valid out-pointer.
    dnn(unsafe {
        cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, 0, &mut bytes)
    });
    assert_eq!(bytes, 0);
    let (x, w, y) = (upload(&HAND_X), upload(&HAND_W), upload(&[10.0; 4]));
    let (alpha, beta) = (2.0f32, 0.5f32);
    // SAFETY: live descriptors, device buffers of their sizes, float factors.
    dnn(unsafe {
        cudnnConvolutionForward(
            d.handle,
            (&alpha as *const f32).cast(),
            d.x,
            x as *const c_void,
            d.w,
            w as *const c_void,
            d.conv,
            0,
            null_mut(),
            0,
            (&beta as *const f32).cast(),
            d.y,
            y as *mut c_void,
        )
    });
    ok(cuStreamSynchronize(s));
    // 2 (4 7 26 29) + 0.5 x 10.
    assert_eq!(download(y, 4), vec![13., 19., 57., 63.]);
    dnn(cudnnDestroy(d.handle));
}

#[test]
fn cudnn_refuses_mismatched_shapes_other_data_and_other_algorithms() {
    context(QUIET);
    let d = hand_descriptors(0);
    let mut bytes = 0usize;
    // A filter of two channels over a one-channel input.
    let wide = descriptor(cudnnCreateFilterDescriptor);
    dnn(cudnnSetFilter4dDescriptor(wide, DATA_FLOAT, 0, 1, 2, 2, 3));
    // SAFETY: valid out-pointers throughout.
    let status = unsafe {
        cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, wide, d.conv, d.y, 0, &mut bytes)
    };
    assert_eq!(status, 2000);
    let text = last_error();
    assert!(
        text.starts_with(
            "cudnnGetConvolutionForwardWorkspaceSize: the input has 1 channels, the filter 2"
        ),
        "{text}"
    );
    assert!(text.ends_with("(CUDNN_STATUS_BAD_PARAM)"), "{text}");
    // An output descriptor of the wrong shape.
    dnn(cudnnSetTensor4dDescriptor(d.y, 0, DATA_FLOAT, 1, 1, 2, 3));
    // SAFETY: as above.
    assert_eq!(
        unsafe {
            cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, 0, &mut bytes)
        },
        2000
    );
    dnn(cudnnSetTensor4dDescriptor(d.y, 0, DATA_FLOAT, 1, 1, 2, 2));
    // Another algorithm, and one that does not exist.
    // SAFETY: as above.
    assert_eq!(
        unsafe {
            cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, 6, &mut bytes)
        },
        3000
    );
    // SAFETY: as above.
    assert_eq!(
        unsafe {
            cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, 8, &mut bytes)
        },
        2000
    );
    // Half-precision data is set, then refused when run.
    dnn(cudnnSetTensor4dDescriptor(d.x, 0, 2, 1, 1, 3, 4));
    let one = 1.0f32;
    let (x, w, y) = (upload(&HAND_X), upload(&HAND_W), alloc(16));
    // SAFETY: live descriptors and buffers; float factors.
    let status = unsafe {
        cudnnConvolutionForward(
            d.handle,
            (&one as *const f32).cast(),
            d.x,
            x as *const c_void,
            d.w,
            w as *const c_void,
            d.conv,
            0,
            null_mut(),
            0,
            (&one as *const f32).cast(),
            d.y,
            y as *mut c_void,
        )
    };
    assert_eq!(status, 3000);
    // A destroyed descriptor, and one of another kind, are not descriptors.
    dnn(cudnnDestroyFilterDescriptor(wide));
    assert_eq!(cudnnDestroyFilterDescriptor(wide), 2000);
    assert_eq!(cudnnDestroyFilterDescriptor(d.x), 2000);
    assert_eq!(
        cudnnSetTensor4dDescriptor(d.w, 0, DATA_FLOAT, 1, 1, 1, 1),
        2000
    );
    assert_eq!(
        cudnnSetTensor4dDescriptor(d.x, 0, DATA_FLOAT, 0, 1, 1, 1),
        2000
    );
    // SAFETY: a static string.
    let name = unsafe { CStr::from_ptr(cudnnGetErrorString(3000)) };
    assert_eq!(name.to_str(), Ok("CUDNN_STATUS_NOT_SUPPORTED"));
}

#[test]
fn each_library_answers_its_version() {
    assert_eq!(cudnnGetVersion(), 91300);
    assert_eq!(cudnnGetCudartVersion(), 13000);
    let mut parts = [0 as c_int; 3];
    for (kind, part) in parts.iter_mut().enumerate() {
        // SAFETY: a valid out-pointer.
        dnn(unsafe { cudnnGetProperty(kind as c_int, part) });
    }
    assert_eq!(parts, [9, 13, 0]);
    let mut version = 0;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { cufftGetVersion(&mut version) }, 0);
    assert_eq!(version, 12000);
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { curandGetVersion(&mut version) }, 0);
    assert_eq!(version, 10400);
    for (kind, want) in [(0, 10), (1, 4), (2, 0)] {
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { curandGetProperty(kind, &mut version) }, 0);
        assert_eq!(version, want);
    }
}

#[test]
fn without_a_current_context_each_library_fails_to_start() {
    host(QUIET);
    ok(cuInit(0));
    let mut handle = null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { cudnnCreate(&mut handle) }, 1001);
    assert!(last_error().contains("(CUDNN_STATUS_NOT_INITIALIZED)"));
    let mut plan = 0;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { cufftPlan1d(&mut plan, 64, 0x29, 1) }, 7);
    let mut generator = null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { curandCreateGenerator(&mut generator, 100) }, 203);
}

#[test]
fn past_out_of_memory_above_mib_handles_and_plans_cannot_allocate() {
    context(&format!("{QUIET}\n[faults]\nout_of_memory_above_mib = 1\n"));
    // All but 100 bytes of the one MiB allowed.
    alloc((1 << 20) - 100);
    let mut handle = null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { cudnnCreate(&mut handle) }, 4004);
    assert!(last_error().contains("CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"));
    let mut plan = 0;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { cufftPlan1d(&mut plan, 64, 0x29, 1) }, 2);
}

/// A plan through `make`, which must succeed.
fn planned(make: impl FnOnce(*mut c_int) -> c_int) -> c_int {
    let mut plan = -1;
    assert_eq!(make(&mut plan), 0);
    plan
}

/// Complex test data: `(sin(i), cos(3 i))`.
fn signal(len: usize) -> Vec<f32> {
    (0..len)
        .flat_map(|i| [(i as f32).sin(), (3.0 * i as f32).cos()])
        .collect()
}

#[test]
fn a_c2c_forward_then_inverse_transform_returns_n_times_the_input() {
    context(QUIET);
    let s = stream();
    // Three batches of 48 points (not a power of two), and one 6 x 10 transform.
    // SAFETY: valid out-pointers.
    let batched = planned(|p| unsafe { cufftPlan1d(p, 48, 0x29, 3) });
    // SAFETY: as above.
    let square = planned(|p| unsafe { cufftPlan2d(p, 6, 10, 0x29) });
    for (plan, points, batch) in [(batched, 48, 3), (square, 60, 1)] {
        assert_eq!(cufftSetStream(plan, s), 0);
        let x = signal(points * batch);
        let data = upload(&x);
        let spectrum = alloc(x.len() * 4);
        let (input, output) = (data as *mut c_void, spectrum as *mut c_void);
        assert_eq!(cufftExecC2C(plan, input, output, -1), 0);
        // In place, back.
        assert_eq!(cufftExecC2C(plan, output, output, 1), 0);
        ok(cuStreamSynchronize(s));
        let back = download(spectrum, x.len());
        for (i, (got, want)) in back.iter().zip(&x).enumerate() {
            let want = want * points as f32;
            assert!(
                (got - want).abs() < 1e-3 * points as f32,
                "plan {plan} element {i}: {got} != {want}"
            );
        }
        assert_eq!(cufftDestroy(plan), 0);
    }
}

#[test]
fn a_c2c_forward_transform_uses_the_negative_exponent() {
    context(QUIET);
    // SAFETY: a valid out-pointer.
    let plan = planned(|p| unsafe { cufftPlan1d(p, 4, 0x29, 1) });
    // x = delta(n - 1): X[k] = e^(-2 pi i k / 4) = 1, -i, -1, i.
    let data = upload(&[0., 0., 1., 0., 0., 0., 0., 0.]);
    let out = alloc(32);
    assert_eq!(
        cufftExecC2C(plan, data as *mut c_void, out as *mut c_void, -1),
        0
    );
    ok(cuCtxSynchronize());
    let got = download(out, 8);
    let want = [1., 0., 0., -1., -1., 0., 0., 1.];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-6, "{got:?}");
    }
}

#[test]
fn cufft_refuses_unknown_plans_real_types_bad_sizes_and_directions() {
    context(QUIET);
    let mut plan = 0;
    // SAFETY: valid out-pointers throughout.
    assert_eq!(unsafe { cufftPlan1d(&mut plan, 64, 0x2a, 1) }, 16);
    // SAFETY: as above.
    assert_eq!(unsafe { cufftPlan1d(&mut plan, 64, 0x12, 1) }, 3);
    // SAFETY: as above.
    assert_eq!(unsafe { cufftPlan1d(&mut plan, 0, 0x29, 1) }, 8);
    // SAFETY: as above.
    let plan = planned(|p| unsafe { cufftPlan1d(p, 8, 0x29, 1) });
    let data = alloc(64) as *mut c_void;
    assert_eq!(cufftExecC2C(plan, data, data, 0), 4);
    assert_eq!(cufftExecZ2Z(plan, data, data, -1), 3);
    assert_eq!(cufftDestroy(plan), 0);
    assert_eq!(cufftDestroy(plan), 1);
    assert_eq!(cufftExecC2C(plan, data, data, -1), 1);
}

/// A seeded default generator.
fn generator(seed: u64) -> *mut c_void {
    let mut g = null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { curandCreateGenerator(&mut g, 100) }, 0);
    assert_eq!(curandSetPseudoRandomGeneratorSeed(g, seed), 0);
    g
}

#[test]
fn uniform_values_lie_in_zero_to_one_and_average_a_half() {
    context(QUIET);
    let g = generator(1234);
    let s = stream();
    assert_eq!(curandSetStream(g, s), 0);
    let n = 1 << 18;
    let out = alloc(4 * n);
    assert_eq!(curandGenerateUniform(g, out as *mut f32, n), 0);
    ok(cuStreamSynchronize(s));
    let values = download(out, n);
    assert!(values.iter().all(|&v| v > 0.0 && v <= 1.0));
    let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
    // The standard error of the mean is sqrt(1/12 / n), about 5.6e-4.
    assert!((mean - 0.5).abs() < 3e-3, "mean {mean}");
    let distinct: std::collections::BTreeSet<u32> = values.iter().map(|v| v.to_bits()).collect();
    assert!(distinct.len() > n * 9 / 10, "{} distinct", distinct.len());
    assert_eq!(curandDestroyGenerator(g), 0);
    assert_eq!(curandDestroyGenerator(g), 101);
}

#[test]
fn generations_continue_the_sequence_and_a_seed_restarts_it() {
    context(QUIET);
    let g = generator(7);
    let out = alloc(4 * 200);
    assert_eq!(curandGenerateUniform(g, out as *mut f32, 200), 0);
    ok(cuCtxSynchronize());
    let whole = download(out, 200);
    assert_eq!(curandSetPseudoRandomGeneratorSeed(g, 7), 0);
    assert_eq!(curandGenerateUniform(g, out as *mut f32, 90), 0);
    assert_eq!(curandGenerateUniform(g, (out + 4 * 90) as *mut f32, 110), 0);
    ok(cuCtxSynchronize());
    assert_eq!(download(out, 200), whole);
    // An offset starts the sequence there; another seed gives other values.
    assert_eq!(curandSetGeneratorOffset(g, 50), 0);
    assert_eq!(curandGenerateUniform(g, out as *mut f32, 10), 0);
    ok(cuCtxSynchronize());
    assert_eq!(download(out, 10), whole[50..60]);
    let other = generator(8);
    assert_eq!(curandGenerateUniform(other, out as *mut f32, 200), 0);
    ok(cuCtxSynchronize());
    assert_ne!(download(out, 200), whole);
}

/// The first four 32-bit words of a generator of `rng_type` seeded with `seed`.
fn first_words(rng_type: c_int, seed: u64) -> Vec<u32> {
    let mut g = null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { curandCreateGenerator(&mut g, rng_type) }, 0);
    assert_eq!(curandSetPseudoRandomGeneratorSeed(g, seed), 0);
    let out = alloc(16);
    assert_eq!(curandGenerate(g, out as *mut u32, 4), 0);
    ok(cuCtxSynchronize());
    assert_eq!(curandDestroyGenerator(g), 0);
    download(out, 4).iter().map(|v| v.to_bits()).collect()
}

/// Each generator type computes its own algorithm: the default and XORWOW give XORWOW's words
/// (`curand_init`'s seeding, computed apart in Python), Philox gives Random123's known answer
/// for a zero counter and key.
#[test]
fn the_default_generator_is_xorwow_and_philox_is_philox() {
    context(QUIET);
    let xorwow = [0x253d_5e15, 0x6f55_8604, 0xdee6_daf2, 0x7485_b394];
    assert_eq!(first_words(100, 1234), xorwow);
    assert_eq!(first_words(101, 1234), xorwow);
    assert_eq!(
        first_words(161, 0),
        [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
    );
}

#[test]
fn curand_refuses_what_it_does_not_simulate_bad_orderings_and_unknown_generators() {
    context(QUIET);
    let mut g = null_mut();
    // MRG32k3a, MTGP32 and MT19937 are real cuRAND types the simulator does not compute.
    for rng_type in [121, 141, 142] {
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { curandCreateGenerator(&mut g, rng_type) }, 103);
    }
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { curandCreateGenerator(&mut g, 201) }, 103);
    // SAFETY: as above.
    assert_eq!(unsafe { curandCreateGenerator(&mut g, 7) }, 103);
    let g = generator(1);
    assert_eq!(curandSetGeneratorOrdering(g, 101), 0);
    assert_eq!(curandSetGeneratorOrdering(g, 201), 104);
    let bogus = 0x1234 as *mut c_void;
    assert_eq!(curandGenerateUniform(bogus, null_mut(), 4), 101);
    assert_eq!(curandSetStream(bogus, null_mut()), 101);
}
