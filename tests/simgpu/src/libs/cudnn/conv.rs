//! The convolution forward pass on the CPU, computed another way than stackbench's own
//! reference (a direct loop over NCHW/KCRS): each image is unfolded into a matrix of its
//! receptive fields (im2col) and multiplied by the filters laid out as a matrix, in double
//! precision, rounded once. Input `x` NCHW, filter `w` KCRS, output `y` NKPQ, zero padding;
//! `CUDNN_CROSS_CORRELATION` reads the filter as it is, `CUDNN_CONVOLUTION` flips it in both
//! spatial directions. The output size is found by counting the window positions that fit, the
//! rule cuDNN's `cudnnGetConvolution2dForwardOutputDim` documents, not by its closed form.

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

/// How many windows fit along one axis: the positions `0, stride, 2 stride, ...` at which a
/// filter of `filter` taps, `dilation` apart, lies wholly inside the input padded by `pad` on
/// each side; `None` when none does (or a parameter is zero).
pub fn windows(
    input: usize,
    filter: usize,
    pad: usize,
    stride: usize,
    dilation: usize,
) -> Option<usize> {
    if input == 0 || filter == 0 || stride == 0 || dilation == 0 {
        return None;
    }
    let last_tap = (filter - 1) * dilation;
    let padded = input + 2 * pad;
    let count = (0..padded)
        .step_by(stride)
        .take_while(|start| start + last_tap < padded)
        .count();
    (count > 0).then_some(count)
}

impl Geometry {
    /// `[n, k, p, q]`, or `None` when the channels differ or the filter does not fit.
    pub fn output(&self) -> Option<[usize; 4]> {
        let [n, c, h, w] = self.input;
        let [k, fc, r, s] = self.filter;
        if c != fc {
            return None;
        }
        let p = windows(h, r, self.pad[0], self.stride[0], self.dilation[0])?;
        let q = windows(w, s, self.pad[1], self.stride[1], self.dilation[1])?;
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
/// fit or the buffers are not the shapes' sizes. Per image, `Y[K, PQ] = W[K, CRS] x cols[CRS,
/// PQ]`, where column `(p, q)` of `cols` holds the padded input under window `(p, q)`.
pub fn forward(g: &Geometry, x: &[f32], w: &[f32]) -> Vec<f32> {
    let Some([images, k_len, p_len, q_len]) = g.output() else {
        return Vec::new();
    };
    if x.len() != g.input.iter().product::<usize>() || w.len() != g.filter.iter().product::<usize>()
    {
        return Vec::new();
    }
    let filters = filter_matrix(g, w);
    let rows = filters.len() / k_len.max(1);
    let columns = p_len * q_len;
    let image_len = x.len() / images.max(1);
    let mut y = Vec::with_capacity(images * k_len * columns);
    for image in x.chunks(image_len.max(1)).take(images) {
        let cols = im2col(g, image, [p_len, q_len]);
        let mut out = vec![0f64; k_len * columns];
        // SAFETY: `filters` is k_len x rows, `cols` rows x columns and `out` k_len x columns,
        // all row-major with the strides given.
        unsafe {
            matrixmultiply::dgemm(
                k_len,
                rows,
                columns,
                1.0,
                filters.as_ptr(),
                rows as isize,
                1,
                cols.as_ptr(),
                columns as isize,
                1,
                0.0,
                out.as_mut_ptr(),
                columns as isize,
                1,
            );
        }
        y.extend(out.into_iter().map(|v| v as f32));
    }
    y
}

/// The filters as a `K x CRS` matrix, each row one filter's taps in (c, r, s) order, flipped in
/// both spatial directions for `CUDNN_CONVOLUTION`.
fn filter_matrix(g: &Geometry, w: &[f32]) -> Vec<f64> {
    let [k_len, c_len, r_len, s_len] = g.filter;
    let mut out = Vec::with_capacity(w.len());
    for k in 0..k_len {
        for c in 0..c_len {
            for r in 0..r_len {
                for s in 0..s_len {
                    let (r, s) = match g.mode {
                        Mode::CrossCorrelation => (r, s),
                        Mode::Convolution => (r_len - 1 - r, s_len - 1 - s),
                    };
                    out.push(f64::from(w[((k * c_len + c) * r_len + r) * s_len + s]));
                }
            }
        }
    }
    out
}

/// One image's receptive fields as a `CRS x PQ` matrix: row `(c, r, s)`, column `(p, q)` holds
/// the padded input at row `p u + r dil_h - pad_h`, column `q v + s dil_w - pad_w` (0 in the
/// padding).
fn im2col(g: &Geometry, image: &[f32], [p_len, q_len]: [usize; 2]) -> Vec<f64> {
    let [_, c_len, height, width] = g.input;
    let [_, _, r_len, s_len] = g.filter;
    // The padded image, so every window reads inside it.
    let (ph, pw) = (height + 2 * g.pad[0], width + 2 * g.pad[1]);
    let mut padded = vec![0f64; c_len * ph * pw];
    for c in 0..c_len {
        for row in 0..height {
            for col in 0..width {
                padded[(c * ph + row + g.pad[0]) * pw + col + g.pad[1]] =
                    f64::from(image[(c * height + row) * width + col]);
            }
        }
    }
    let mut cols = Vec::with_capacity(c_len * r_len * s_len * p_len * q_len);
    for c in 0..c_len {
        for r in 0..r_len {
            for s in 0..s_len {
                for p in 0..p_len {
                    let row = p * g.stride[0] + r * g.dilation[0];
                    for q in 0..q_len {
                        let col = q * g.stride[1] + s * g.dilation[1];
                        cols.push(padded[(c * ph + row) * pw + col]);
                    }
                }
            }
        }
    }
    cols
}
