//! The convolution forward pass as cuDNN documents it, on the CPU: input `x` NCHW, filter `w`
//! KCRS, output `y` NKPQ with `P = 1 + (H + 2 pad_h - ((R - 1) dil_h + 1)) / u` (and so for Q),
//! zero padding; `CUDNN_CROSS_CORRELATION` reads the filter as it is, `CUDNN_CONVOLUTION` flips
//! it in both spatial directions. Sums are kept in f64 and rounded once.

/// `cudnnConvolutionMode_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `CUDNN_CONVOLUTION` (0): the filter flipped.
    Convolution,
    /// `CUDNN_CROSS_CORRELATION` (1): the filter as it is.
    CrossCorrelation,
}

/// One 2-D convolution's shapes and parameters; pairs are (height, width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// `[n, c, h, w]`.
    pub input: [usize; 4],
    /// `[k, c, r, s]`.
    pub filter: [usize; 4],
    /// Zero rows and columns added on each side.
    pub pad: [usize; 2],
    /// Rows and columns between neighbouring outputs' windows (`u`, `v`).
    pub stride: [usize; 2],
    /// Rows and columns between neighbouring filter taps.
    pub dilation: [usize; 2],
    /// Whether the filter is flipped.
    pub mode: Mode,
}

/// One output extent, or `None` when the dilated filter does not fit the padded input.
pub fn extent(
    input: usize,
    filter: usize,
    pad: usize,
    stride: usize,
    dilation: usize,
) -> Option<usize> {
    if input == 0 || filter == 0 || stride == 0 || dilation == 0 {
        return None;
    }
    let span = (filter - 1) * dilation + 1;
    let padded = input + 2 * pad;
    (padded >= span).then(|| (padded - span) / stride + 1)
}

impl Geometry {
    /// `[n, k, p, q]`, or `None` when the channels differ or the filter does not fit.
    pub fn output(&self) -> Option<[usize; 4]> {
        let [n, c, h, w] = self.input;
        let [k, fc, r, s] = self.filter;
        if c != fc {
            return None;
        }
        let p = extent(h, r, self.pad[0], self.stride[0], self.dilation[0])?;
        let q = extent(w, s, self.pad[1], self.stride[1], self.dilation[1])?;
        Some([n, k, p, q])
    }

    /// Multiply-adds times two: `2 N K P Q C R S`.
    pub fn flops(&self) -> u64 {
        let [_, c, _, _] = self.input;
        let [_, _, r, s] = self.filter;
        let out: usize = self.output().map_or(0, |d| d.iter().product());
        2 * (out * c * r * s) as u64
    }
}

/// The forward pass of dense NCHW `x` and KCRS `w`: dense NKPQ, empty when the shapes do not
/// fit or the buffers are not the shapes' sizes.
pub fn forward(g: &Geometry, x: &[f32], w: &[f32]) -> Vec<f32> {
    let Some([n_len, k_len, p_len, q_len]) = g.output() else {
        return Vec::new();
    };
    let [_, c_len, h, wd] = g.input;
    let [_, _, r_len, s_len] = g.filter;
    if x.len() != g.input.iter().product::<usize>() || w.len() != g.filter.iter().product::<usize>()
    {
        return Vec::new();
    }
    // The input coordinate tap `tap` of output `out` reads, or None in the padding.
    let at = |out: usize, tap: usize, axis: usize, len: usize| {
        (out * g.stride[axis] + tap * g.dilation[axis])
            .checked_sub(g.pad[axis])
            .filter(|&i| i < len)
    };
    let flip = |tap: usize, len: usize| match g.mode {
        Mode::CrossCorrelation => tap,
        Mode::Convolution => len - 1 - tap,
    };
    let mut y = Vec::with_capacity(n_len * k_len * p_len * q_len);
    for n in 0..n_len {
        for k in 0..k_len {
            for p in 0..p_len {
                for q in 0..q_len {
                    let mut sum = 0.0f64;
                    for c in 0..c_len {
                        for r in 0..r_len {
                            let Some(i) = at(p, r, 0, h) else { continue };
                            for s in 0..s_len {
                                let Some(j) = at(q, s, 1, wd) else { continue };
                                let xv = x[((n * c_len + c) * h + i) * wd + j];
                                let (fr, fs) = (flip(r, r_len), flip(s, s_len));
                                let wv = w[((k * c_len + c) * r_len + fr) * s_len + fs];
                                sum += f64::from(xv) * f64::from(wv);
                            }
                        }
                    }
                    y.push(sum as f32);
                }
            }
        }
    }
    y
}
