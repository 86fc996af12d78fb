//! Small hand-written kernels, one feature each, against values worked out from the PTX ISA:
//! integer widths and signedness, float rounding and NaNs, conversions, predicates, vector
//! accesses, shared memory, special registers and the parameter space's layout.

mod ptx_common;

use ptx_common::*;
use stackbench_simgpu::ptx::{self, Counts, Fault, Launch, Module};

const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Runs `entry` (a kernel whose only parameter is `out`, a global pointer) over one block of
/// `threads`, with `out_bytes` zeroed bytes behind `out`; the bytes written.
fn run_out(body: &str, threads: [u32; 3], grid: [u32; 3], out_bytes: usize) -> Vec<u8> {
    let text = format!("{HEAD}.visible .entry t(.param .u64 out)\n{{\n{body}\n}}\n");
    let module = Module::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let kernel = module.kernel("t").unwrap();
    let mut mem = Mem::new();
    let out = mem.alloc(&vec![0; out_bytes]);
    let params = [u64_param(out)];
    let launch = Launch {
        grid,
        block: threads,
        shared_bytes: 0,
        params: &params,
    };
    ptx::run(kernel, &launch, &mem).unwrap_or_else(|f| panic!("{f:?}\n{text}"));
    mem.bytes(out).to_vec()
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn u64s(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

const REGS: &str = "
    .reg .pred %p<8>;
    .reg .b16 %rs<8>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<40>;
    .reg .f32 %f<20>;
    .reg .f64 %fd<8>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
";

#[test]
fn integer_operations_by_width_and_signedness() {
    let body = format!(
        "{REGS}
    mov.u32 %r1, -7;
    mov.u32 %r2, 2;
    div.s32 %r3, %r1, %r2;      st.global.u32 [%rd1], %r3;
    rem.s32 %r3, %r1, %r2;      st.global.u32 [%rd1+4], %r3;
    div.u32 %r3, %r1, %r2;      st.global.u32 [%rd1+8], %r3;
    shr.s32 %r3, %r1, 1;        st.global.u32 [%rd1+12], %r3;
    shr.u32 %r3, %r1, 28;       st.global.u32 [%rd1+16], %r3;
    shr.b32 %r3, %r1, 40;       st.global.u32 [%rd1+20], %r3;
    mul.hi.s32 %r3, %r1, %r2;   st.global.u32 [%rd1+24], %r3;
    mul.hi.u32 %r3, %r1, %r2;   st.global.u32 [%rd1+28], %r3;
    min.s32 %r3, %r1, %r2;      st.global.u32 [%rd1+32], %r3;
    min.u32 %r3, %r1, %r2;      st.global.u32 [%rd1+36], %r3;
    max.s32 %r3, %r1, %r2;      st.global.u32 [%rd1+40], %r3;
    abs.s32 %r3, %r1;           st.global.u32 [%rd1+44], %r3;
    neg.s32 %r3, %r2;           st.global.u32 [%rd1+48], %r3;
    not.b32 %r3, %r2;           st.global.u32 [%rd1+52], %r3;
    popc.b32 %r3, %r1;          st.global.u32 [%rd1+56], %r3;
    clz.b32 %r3, %r2;           st.global.u32 [%rd1+60], %r3;
    brev.b32 %r3, %r2;          st.global.u32 [%rd1+64], %r3;
    cnot.b32 %r3, %r2;          st.global.u32 [%rd1+68], %r3;
    and.b32 %r3, %r1, 0xff;     st.global.u32 [%rd1+72], %r3;
    or.b32 %r3, %r2, 0x100;     st.global.u32 [%rd1+76], %r3;
    xor.b32 %r3, %r1, -1;       st.global.u32 [%rd1+80], %r3;
    mad.lo.s32 %r3, %r1, %r2, 100; st.global.u32 [%rd1+84], %r3;
    sub.s32 %r3, %r2, %r1;      st.global.u32 [%rd1+88], %r3;
    mov.u16 %rs1, 0xffff;
    add.u16 %rs2, %rs1, 2;
    cvt.u32.u16 %r3, %rs2;      st.global.u32 [%rd1+92], %r3;
    cvt.s32.s16 %r3, %rs1;      st.global.u32 [%rd1+96], %r3;
    cvt.s8.s32 %r3, %r1;        st.global.u32 [%rd1+100], %r3;
    cvt.sat.u8.s32 %r3, %r1;    st.global.u32 [%rd1+104], %r3;
    cvt.u32.u64 %r3, 0x123456789; st.global.u32 [%rd1+108], %r3;
    setp.lt.s32 %p1, %r1, %r2;  selp.u32 %r3, 1, 0, %p1; st.global.u32 [%rd1+112], %r3;
    setp.lo.u32 %p1, %r1, %r2;  selp.u32 %r3, 1, 0, %p1; st.global.u32 [%rd1+116], %r3;
    setp.hs.u32 %p1, %r1, %r2;  selp.u32 %r3, 1, 0, %p1; st.global.u32 [%rd1+120], %r3;
    setp.ls.u32 %p1, %r2, 2;    selp.u32 %r3, 1, 0, %p1; st.global.u32 [%rd1+124], %r3;
    setp.hi.u32 %p1, %r2, 2;    selp.u32 %r3, 1, 0, %p1; st.global.u32 [%rd1+128], %r3;
    setp.ne.s32 %p2, %r2, 2;
    or.pred %p3, %p1, %p2;      selp.u32 %r3, 1, 0, %p3; st.global.u32 [%rd1+132], %r3;
    not.pred %p3, %p3;          selp.u32 %r3, 1, 0, %p3; st.global.u32 [%rd1+136], %r3;
    setp.eq.and.s32 %p4|%p5, %r2, 2, %p3;
    selp.u32 %r3, 1, 0, %p4;    st.global.u32 [%rd1+140], %r3;
    selp.u32 %r3, 1, 0, %p5;    st.global.u32 [%rd1+144], %r3;
    setp.eq.or.s32 %p4, %r2, 3, !%p3;
    selp.u32 %r3, 1, 0, %p4;    st.global.u32 [%rd1+148], %r3;
    mov.u32 %r3, 5;
    @%p3 mov.u32 %r3, 6;        st.global.u32 [%rd1+152], %r3;
    @!%p3 mov.u32 %r3, 7;       st.global.u32 [%rd1+156], %r3;
    mul.wide.s32 %rd2, %r1, %r2; st.global.u64 [%rd1+160], %rd2;
    mul.wide.u32 %rd2, %r1, %r2; st.global.u64 [%rd1+168], %rd2;
    cvt.s64.s32 %rd2, %r1;      st.global.u64 [%rd1+176], %rd2;
    cvt.u64.u32 %rd2, %r1;      st.global.u64 [%rd1+184], %rd2;
    mov.u64 %rd3, -1;
    mul.hi.u64 %rd2, %rd3, %rd3; st.global.u64 [%rd1+192], %rd2;
    mul.lo.s64 %rd2, %rd3, 3;   st.global.u64 [%rd1+200], %rd2;
    shl.b64 %rd2, %rd3, 63;     st.global.u64 [%rd1+208], %rd2;
    mad.wide.s32 %rd2, %r1, %r2, 1; st.global.u64 [%rd1+216], %rd2;
    rem.u64 %rd2, 100, 0;       st.global.u64 [%rd1+224], %rd2;
    div.u64 %rd2, 100, 0;       st.global.u64 [%rd1+232], %rd2;
    ret;"
    );
    let out = run_out(&body, [1, 1, 1], [1, 1, 1], 240);
    let w = u32s(&out[..160]);
    let m7 = -7i32 as u32;
    let expected: Vec<u32> = vec![
        -3i32 as u32,
        -1i32 as u32,
        m7 / 2,
        -4i32 as u32,
        m7 >> 28,
        0,
        u32::MAX, // the high word of -14
        1,        // the high word of 0xfffffff9 * 2
        m7,
        2,
        2,
        7,
        -2i32 as u32,
        !2u32,
        m7.count_ones(),
        30,
        0x4000_0000,
        0,
        m7 & 0xff,
        0x102,
        6,
        86,
        9,
        1,
        u32::MAX,
        // cvt.s8 sign-extends its byte to the register.
        -7i32 as u32,
        0,
        0x2345_6789,
        1,
        0,
        1,
        1,
        0,
        0,
        1,
        1,
        0,
        0,
        6,
        6,
    ];
    for (i, (got, want)) in w.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "result {i} (byte {})", 4 * i);
    }
    let d = u64s(&out[160..]);
    assert_eq!(
        d,
        vec![
            -14i64 as u64,
            u64::from(m7) * 2,
            -7i64 as u64,
            u64::from(m7),
            u64::MAX - 1,
            -3i64 as u64,
            1 << 63,
            -13i64 as u64,
            100,
            u64::MAX,
        ]
    );
}

#[test]
fn float_operations_round_and_compare_as_the_isa_says() {
    let body = format!(
        "{REGS}
    mov.f32 %f1, 0f3F800000;          // 1.0
    mov.f32 %f2, 0f33800000;          // 2^-24
    mov.f32 %f3, 0f7FC00000;          // NaN
    add.f32 %f4, %f1, %f2;            st.global.f32 [%rd1], %f4;
    add.rp.f32 %f4, %f1, %f2;         st.global.f32 [%rd1+4], %f4;
    add.rz.f32 %f4, %f1, 0f33C00000;  st.global.f32 [%rd1+8], %f4;
    sub.rm.f32 %f4, 0fBF800000, %f2;  st.global.f32 [%rd1+12], %f4;
    mul.rz.f32 %f4, 0f3FAAAAAB, 0f40400000; st.global.f32 [%rd1+16], %f4;
    mov.f32 %f5, 0f3F800001;          // 1 + 2^-23
    fma.rn.f32 %f4, %f5, %f5, 0fBF800000; st.global.f32 [%rd1+20], %f4;
    mul.rn.f32 %f6, %f5, %f5;
    add.rn.f32 %f4, %f6, 0fBF800000;  st.global.f32 [%rd1+24], %f4;
    min.f32 %f4, %f3, %f1;            st.global.f32 [%rd1+28], %f4;
    max.f32 %f4, %f1, %f3;            st.global.f32 [%rd1+32], %f4;
    add.f32 %f4, %f3, %f1;            st.global.f32 [%rd1+36], %f4;
    neg.f32 %f4, %f1;                 st.global.f32 [%rd1+40], %f4;
    abs.f32 %f4, 0fBF800000;          st.global.f32 [%rd1+44], %f4;
    div.rn.f32 %f4, %f1, 0f40400000;  st.global.f32 [%rd1+48], %f4;
    sqrt.rn.f32 %f4, 0f40000000;      st.global.f32 [%rd1+52], %f4;
    mul.ftz.f32 %f4, 0f00800000, 0f3F000000; st.global.f32 [%rd1+56], %f4;
    mul.f32 %f4, 0f00800000, 0f3F000000; st.global.f32 [%rd1+60], %f4;
    add.sat.f32 %f4, %f1, %f1;        st.global.f32 [%rd1+64], %f4;
    cvt.rni.s32.f32 %r1, 0f40200000;  st.global.u32 [%rd1+68], %r1;   // 2.5 -> 2
    cvt.rzi.s32.f32 %r1, 0fC0300000;  st.global.u32 [%rd1+72], %r1;   // -2.75 -> -2
    cvt.rmi.s32.f32 %r1, 0fC0300000;  st.global.u32 [%rd1+76], %r1;   // -> -3
    cvt.rpi.s32.f32 %r1, 0f40200000;  st.global.u32 [%rd1+80], %r1;   // -> 3
    cvt.rzi.u32.f32 %r1, 0fBF800000;  st.global.u32 [%rd1+84], %r1;   // -1 saturates to 0
    cvt.rzi.s32.f32 %r1, %f3;         st.global.u32 [%rd1+88], %r1;   // NaN -> 0
    cvt.rn.f32.s32 %f4, -3;           st.global.f32 [%rd1+92], %f4;
    cvt.rz.f32.u32 %f4, 16777219;     st.global.f32 [%rd1+96], %f4;
    cvt.rn.f32.u32 %f4, 16777219;     st.global.f32 [%rd1+100], %f4;
    cvt.f64.f32 %fd1, %f5;            st.global.f64 [%rd1+104], %fd1;
    div.rn.f64 %fd2, 0d3FF0000000000000, 0d4008000000000000;
    cvt.rn.f32.f64 %f4, %fd2;         st.global.f32 [%rd1+112], %f4;
    cvt.rz.f32.f64 %f4, %fd2;         st.global.f32 [%rd1+116], %f4;
    cvt.rni.f32.f32 %f4, 0f40200000;  st.global.f32 [%rd1+120], %f4;
    setp.lt.f32 %p1, %f3, %f1;        selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd1+124], %r1;
    setp.ltu.f32 %p1, %f3, %f1;       selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd1+128], %r1;
    setp.ne.f32 %p1, %f3, %f1;        selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd1+132], %r1;
    setp.neu.f32 %p1, %f3, %f1;       selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd1+136], %r1;
    setp.nan.f32 %p1, %f3, %f1;       selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd1+140], %r1;
    setp.num.f32 %p1, %f1, %f1;       selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd1+144], %r1;
    setp.ge.f32 %p1, %f1, %f1;        selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd1+148], %r1;
    setp.gtu.f32 %p1, %f1, %f1;       selp.u32 %r1, 1, 0, %p1; st.global.u32 [%rd1+152], %r1;
    selp.f32 %f4, %f1, %f2, %p1;      st.global.f32 [%rd1+156], %f4;
    mad.rn.f32 %f4, 1.5, 2.0, 0.25;   st.global.f32 [%rd1+160], %f4;
    fma.rn.f64 %fd3, 0d3FF0000000000000, 0d4000000000000000, 0d3FF0000000000000;
    st.global.f64 [%rd1+168], %fd3;
    ret;"
    );
    let out = run_out(&body, [1, 1, 1], [1, 1, 1], 176);
    let w = u32s(&out[..168]);
    let f = |x: f32| x.to_bits();
    let one_ulp = f32::EPSILON;
    let a = 1.0 + one_ulp;
    let expected: Vec<u32> = vec![
        f(1.0),                // ties to even
        f(1.0 + one_ulp),      // rounds up
        f(1.0),                // 1 + 1.5 * 2^-24 towards zero
        f(-1.0 - one_ulp),     // -1 - 2^-24 rounds down
        f(4.0),                // 4.0000003 towards zero is 4.0
        f(a.mul_add(a, -1.0)), // one rounding
        f(a * a - 1.0),        // two roundings
        f(1.0),
        f(1.0),
        0x7fff_ffff, // the canonical NaN
        f(-1.0),
        f(1.0),
        f(1.0 / 3.0),
        f(2f32.sqrt()),
        0,                          // flushed to zero
        f(f32::MIN_POSITIVE / 2.0), // kept subnormal
        f(1.0),                     // saturated
        2,
        -2i32 as u32,
        -3i32 as u32,
        3,
        0,
        0,
        f(-3.0),
        f(16_777_218.0),
        f(16_777_220.0),
        // 104 and 108: the f64 below
        0,
        0,
        f((1.0f64 / 3.0) as f32),
        0x3eaa_aaaa,
        f(2.0),
        0,
        1,
        0,
        1,
        1,
        1,
        1,
        0,
        f(2f32.powi(-24)),
        f(3.25),
    ];
    for (i, (got, want)) in w.iter().zip(&expected).enumerate() {
        if i == 26 || i == 27 {
            continue;
        }
        assert_eq!(got, want, "result {i} (byte {})", 4 * i);
    }
    let d = u64s(&out[104..112]);
    assert_eq!(d[0], f64::from(a).to_bits());
    assert_eq!(u64s(&out[168..176])[0], 3f64.to_bits());
}

#[test]
fn vector_accesses_and_packing() {
    let text = format!(
        "{HEAD}.visible .entry t(.param .u64 out, .param .u64 in)
{{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .f32 %f<8>;
    .reg .b16 %rs<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [in];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    ld.global.nc.v4.f32 {{%f1, %f2, %f3, %f4}}, [%rd2];
    st.global.v4.f32 [%rd1], {{%f4, %f3, %f2, %f1}};
    ld.global.v2.u32 {{%r1, %r2}}, [%rd2+16];
    mov.b64 %rd3, {{%r1, %r2}};
    st.global.u64 [%rd1+16], %rd3;
    mov.b64 {{%r3, %r4}}, %rd3;
    st.global.v2.u32 [%rd1+24], {{%r4, %r3}};
    mov.b32 {{%rs1, %rs2}}, %r1;
    st.global.u16 [%rd1+32], %rs2;
    st.global.u16 [%rd1+34], %rs1;
    ld.global.s8 %r5, [%rd2+16];
    st.global.u32 [%rd1+36], %r5;
    ld.global.u8 %r5, [%rd2+16];
    st.global.u32 [%rd1+40], %r5;
    st.global.v2.f32 [%rd1+48], {{%f1, 0f40000000}};
    st.global.b8 [%rd1+56], %r1;
    ret;
}}
"
    );
    let module = Module::parse(&text).unwrap();
    let kernel = module.kernel("t").unwrap();
    let mut mem = Mem::new();
    let out = mem.alloc(&[0; 64]);
    let mut input: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    input.extend(0x1122_33f4u32.to_le_bytes());
    input.extend(0x5566_7788u32.to_le_bytes());
    let inp = mem.alloc(&input);
    let params = [u64_param(out), u64_param(inp)];
    let launch = Launch {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_bytes: 0,
        params: &params,
    };
    let counts = ptx::run(kernel, &launch, &mem).unwrap();
    let b = mem.bytes(out);
    let f: Vec<f32> = b[..16]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(f, vec![4.0, 3.0, 2.0, 1.0]);
    assert_eq!(u64s(&b[16..24])[0], 0x5566_7788_1122_33f4);
    assert_eq!(u32s(&b[24..32]), vec![0x5566_7788, 0x1122_33f4]);
    assert_eq!(&b[32..36], &[0x22, 0x11, 0xf4, 0x33]);
    assert_eq!(u32s(&b[36..44]), vec![0xffff_fff4, 0xf4]);
    assert_eq!(&b[48..56], &[0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]);
    assert_eq!(b[56], 0xf4);
    assert_eq!(counts.global_bytes_loaded, 16 + 8 + 1 + 1);
    assert_eq!(
        counts.global_bytes_stored,
        16 + 8 + 8 + 2 + 2 + 4 + 4 + 8 + 1
    );
}

#[test]
fn special_registers_in_three_dimensions() {
    // Each thread writes its global linear index, %laneid and %warpid at that index.
    let body = "
    .reg .b32 %r<24>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;   mov.u32 %r2, %tid.y;   mov.u32 %r3, %tid.z;
    mov.u32 %r4, %ntid.x;  mov.u32 %r5, %ntid.y;  mov.u32 %r6, %ntid.z;
    mov.u32 %r7, %ctaid.x; mov.u32 %r8, %ctaid.y; mov.u32 %r9, %ctaid.z;
    mov.u32 %r10, %nctaid.x; mov.u32 %r11, %nctaid.y;
    mad.lo.s32 %r12, %r3, %r5, %r2;
    mad.lo.s32 %r12, %r12, %r4, %r1;        // linear thread index
    mul.lo.s32 %r13, %r4, %r5;
    mul.lo.s32 %r13, %r13, %r6;             // threads a block
    mad.lo.s32 %r14, %r9, %r11, %r8;
    mad.lo.s32 %r14, %r14, %r10, %r7;       // linear block index
    mad.lo.s32 %r15, %r14, %r13, %r12;      // global index
    mul.wide.u32 %rd2, %r15, 12;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r15;
    mov.u32 %r16, %laneid;
    st.global.u32 [%rd3+4], %r16;
    mov.u32 %r17, %warpid;
    st.global.u32 [%rd3+8], %r17;
    ret;";
    let (block, grid) = ([5, 4, 3], [3, 2, 2]);
    let threads = 60;
    let total = threads * 12;
    let out = u32s(&run_out(body, block, grid, total as usize * 12));
    for g in 0..total {
        let local = g % threads;
        assert_eq!(out[3 * g as usize], g);
        assert_eq!(out[3 * g as usize + 1], local % 32);
        assert_eq!(out[3 * g as usize + 2], local / 32);
    }
}

#[test]
fn parameters_are_laid_out_at_their_alignment() {
    let text = format!(
        "{HEAD}.visible .entry t(.param .u32 a, .param .u64 out, .param .align 8 .b8 s[12], \
         .param .f32 f, .param .u16 h, .param .u64 .ptr .align 16 q)
{{
    .reg .b32 %r<8>;
    .reg .b16 %rs<2>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [a];
    st.global.u32 [%rd1], %r1;
    ld.param.u32 %r2, [s+8];
    st.global.u32 [%rd1+4], %r2;
    ld.param.u64 %rd2, [s];
    st.global.u64 [%rd1+8], %rd2;
    ld.param.f32 %r3, [f];
    st.global.u32 [%rd1+16], %r3;
    ld.param.u16 %rs1, [h];
    st.global.u16 [%rd1+20], %rs1;
    ld.param.u64 %rd3, [q];
    st.global.u64 [%rd1+24], %rd3;
    mov.u64 %rd4, s;
    ld.param.u32 %r4, [%rd4+4];
    st.global.u32 [%rd1+32], %r4;
    ret;
}}
"
    );
    let module = Module::parse(&text).unwrap();
    let kernel = module.kernel("t").unwrap();
    let sizes: Vec<(usize, usize)> = kernel.params.iter().map(|p| (p.size, p.align)).collect();
    assert_eq!(sizes, vec![(4, 4), (8, 8), (12, 8), (4, 4), (2, 2), (8, 8)]);
    let mut mem = Mem::new();
    let out = mem.alloc(&[0; 40]);
    let s: Vec<u8> = (1..=12).collect();
    let params = [
        i32_param(-5),
        u64_param(out),
        s.clone(),
        2.5f32.to_le_bytes().to_vec(),
        0xbeefu16.to_le_bytes().to_vec(),
        u64_param(0x1234_5678_9abc),
    ];
    let launch = Launch {
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_bytes: 0,
        params: &params,
    };
    ptx::run(kernel, &launch, &mem).unwrap();
    let b = mem.bytes(out);
    assert_eq!(
        u32s(&b[..8]),
        vec![-5i32 as u32, u32::from_le_bytes([9, 10, 11, 12])]
    );
    assert_eq!(&b[8..16], &s[..8]);
    assert_eq!(u32s(&b[16..20]), vec![2.5f32.to_bits()]);
    assert_eq!(&b[20..22], &[0xef, 0xbe]);
    assert_eq!(u64s(&b[24..32]), vec![0x1234_5678_9abc]);
    assert_eq!(u32s(&b[32..36]), vec![u32::from_le_bytes([5, 6, 7, 8])]);

    // A parameter of the wrong size, or a missing one, is refused as the driver refuses it.
    for bad in [
        vec![
            i32_param(1),
            u64_param(out),
            s.clone(),
            vec![0; 4],
            vec![0; 2],
        ],
        vec![
            u64_param(1),
            u64_param(out),
            s.clone(),
            vec![0; 4],
            vec![0; 2],
            u64_param(0),
        ],
        vec![
            i32_param(1),
            u64_param(out),
            vec![0; 8],
            vec![0; 4],
            vec![0; 2],
            u64_param(0),
        ],
    ] {
        let launch = Launch {
            params: &bad,
            ..launch.clone()
        };
        assert!(
            matches!(
                ptx::run(kernel, &launch, &mem),
                Err(Fault::InvalidLaunch(_))
            ),
            "{bad:?}"
        );
    }
}

/// Runs a one-parameter kernel over one block; its counts or fault.
fn run_block(body: &str, threads: u32, shared_bytes: u32) -> (Vec<u8>, Result<Counts, Fault>) {
    let text = format!("{HEAD}.visible .entry t(.param .u64 out)\n{{\n{body}\n}}\n");
    let module = Module::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let kernel = module.kernel("t").unwrap();
    let mut mem = Mem::new();
    let out = mem.alloc(&vec![0; 4 * threads as usize]);
    let params = [u64_param(out)];
    let launch = Launch {
        grid: [1, 1, 1],
        block: [threads, 1, 1],
        shared_bytes,
        params: &params,
    };
    let result = ptx::run(kernel, &launch, &mem);
    (mem.bytes(out).to_vec(), result)
}

/// The shared-memory exchange each barrier test makes: thread `t` writes `t + 1000` to
/// `buf[t]`, waits, then reads `buf[(t + 1) % n]` and stores it to `out[t]`.
const EXCHANGE_HEAD: &str = "
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .shared .align 4 .b8 buf[4096];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ntid.x;
    add.s32 %r3, %r1, 1000;
    mov.u64 %rd2, buf;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.shared.u32 [%rd4], %r3;
";

const EXCHANGE_TAIL: &str = "
    add.s32 %r4, %r1, 1;
    rem.u32 %r4, %r4, %r2;
    mul.wide.u32 %rd5, %r4, 4;
    add.s64 %rd6, %rd2, %rd5;
    ld.shared.u32 %r5, [%rd6];
    add.s64 %rd7, %rd1, %rd3;
    st.global.u32 [%rd7], %r5;
    ret;
";

#[test]
fn bar_sync_orders_shared_memory_between_threads() {
    for threads in [1, 32, 100, 256, 1024] {
        let body = format!("{EXCHANGE_HEAD}    bar.sync 0;\n{EXCHANGE_TAIL}");
        let (out, r) = run_block(&body, threads, 0);
        r.unwrap();
        let got = u32s(&out);
        for t in 0..threads {
            assert_eq!(
                got[t as usize],
                (t + 1) % threads + 1000,
                "{threads} threads, thread {t}"
            );
        }
    }
}

#[test]
fn bar_sync_at_different_instructions_is_one_barrier() {
    // Odd threads wait at one `bar.sync 0`, even ones at another: barrier 0 counts threads.
    let body = format!(
        "{EXCHANGE_HEAD}
    and.b32 %r6, %r1, 1;
    setp.eq.s32 %p1, %r6, 0;
    @%p1 bra EVEN;
    barrier.sync 0;
    bra.uni JOIN;
EVEN:
    bar.sync 0;
JOIN:
{EXCHANGE_TAIL}"
    );
    let (out, r) = run_block(&body, 96, 0);
    r.unwrap();
    let got = u32s(&out);
    for t in 0..96u32 {
        assert_eq!(got[t as usize], (t + 1) % 96 + 1000);
    }
}

#[test]
fn exited_threads_count_as_arrived_at_a_whole_cta_barrier() {
    // Threads 16.. return before the barrier; the others must not wait for them (PTX ISA,
    // `exit`): they read the slots threads 0..16 wrote.
    let body = format!(
        "{EXCHANGE_HEAD}
    setp.ge.u32 %p1, %r1, 16;
    @%p1 ret;
    mov.u32 %r2, 16;
    bar.sync 0;
{EXCHANGE_TAIL}"
    );
    let (out, r) = run_block(&body, 64, 0);
    let counts = r.unwrap();
    let got = u32s(&out);
    for t in 0..16u32 {
        assert_eq!(got[t as usize], (t + 1) % 16 + 1000);
    }
    assert!(got[16..].iter().all(|&v| v == 0));
    assert!(counts.instructions > 0);
}

#[test]
fn a_barrier_some_threads_never_reach_fails_the_launch() {
    // Half the threads wait at barrier 0, the other half at barrier 1: each waits for all.
    let body = format!(
        "{EXCHANGE_HEAD}
    setp.lt.u32 %p1, %r1, 32;
    @%p1 bra LOW;
    bar.sync 1;
    bra.uni JOIN;
LOW:
    bar.sync 0;
JOIN:
{EXCHANGE_TAIL}"
    );
    let (_, r) = run_block(&body, 64, 0);
    match r {
        Err(Fault::Failed(message)) => {
            assert!(message.contains("barrier"), "{message}");
            assert!(message.contains("32 at barrier 0"), "{message}");
            assert!(message.contains("32 at barrier 1"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A barrier with a thread count counts only threads that arrive: exited ones do not.
    let body = format!(
        "{EXCHANGE_HEAD}
    setp.ge.u32 %p1, %r1, 32;
    @%p1 ret;
    bar.sync 0, 64;
{EXCHANGE_TAIL}"
    );
    let (_, r) = run_block(&body, 64, 0);
    assert!(matches!(r, Err(Fault::Failed(_))), "{r:?}");
    // ... and completes once that many have.
    let body = format!(
        "{EXCHANGE_HEAD}
    setp.ge.u32 %p1, %r1, 32;
    @%p1 bra SKIP;
    bar.sync 0, 32;
SKIP:
{EXCHANGE_TAIL}"
    );
    let (_, r) = run_block(&body, 64, 0);
    r.unwrap();
}

#[test]
fn shared_memory_through_generic_addresses_and_dynamic_shared() {
    let body = "
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .shared .align 8 .b8 fixed[24];
    .extern .shared .align 16 .b8 dyn[];
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u64 %rd2, dyn;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    add.s32 %r2, %r1, 7;
    st.shared.u32 [%rd4], %r2;
    bar.sync 0;
    cvta.shared.u64 %rd5, %rd4;
    ld.u32 %r3, [%rd5];
    cvta.to.shared.u64 %rd6, %rd5;
    ld.shared.u32 %r4, [%rd6];
    add.s32 %r3, %r3, %r4;
    mov.u64 %rd7, fixed;
    st.shared.u64 [%rd7+16], %rd2;
    add.s64 %rd1, %rd1, %rd3;
    st.u32 [%rd1], %r3;
    ret;";
    let (out, r) = run_block(body, 8, 32);
    r.unwrap();
    assert_eq!(
        u32s(&out),
        (0..8).map(|t| 2 * (t + 7)).collect::<Vec<u32>>()
    );
    // Beyond the dynamic shared memory the launch gave: an illegal address.
    let (_, r) = run_block(body, 8, 16);
    assert!(matches!(r, Err(Fault::IllegalAddress { .. })), "{r:?}");
}

#[test]
fn trap_fails_the_launch() {
    let (_, r) = run_block("trap;", 1, 0);
    match r {
        Err(Fault::Failed(message)) => assert!(message.contains("trap"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn what_the_interpreter_cannot_run_is_a_parse_error_naming_it() {
    let module = |body: &str| {
        Module::parse(&format!(
            "{HEAD}.visible .entry t(.param .u64 out)\n{{\n.reg .b32 %r<4>;\n{body}\n}}\n"
        ))
    };
    for (body, says) in [
        (
            "shfl.sync.idx.b32 %r1, %r2, 0, 31, -1;",
            "shfl.sync.idx.b32",
        ),
        ("add.cc.u32 %r1, %r2, %r3;", ".cc"),
        ("add.u32 %r1, %r2, %r9;", "%r9"),
        ("bra NOWHERE;", "NOWHERE"),
        ("mov.u32 %r1, %clock;", "%clock"),
        ("ld.local.u32 %r1, [%r2];", ".local"),
        ("atom.global.add.u32 %r1, [%r2], 1;", "atom.global.add.u32"),
        ("add.u32 %r1, %r2;", "3 operands"),
    ] {
        let e = module(body).expect_err(body);
        assert!(e.message.contains(says), "{body}: {e}");
        assert_eq!(e.line, 7, "{body}: {e}");
    }
    let e = Module::parse(&format!("{HEAD}.func f() {{ ret; }}")).unwrap_err();
    assert!(e.message.contains(".func"), "{e}");
}
