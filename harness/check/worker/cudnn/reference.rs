//! The convolution the cuDNN check runs, on the CPU: its shape arithmetic (cuDNN's
//! `cudnnGetConvolution2dForwardOutputDim` formula) and an f64 reference of the forward pass
//! (cross-correlation, NCHW input, KCRS filter, zero padding), to verify the GPU's answer.

/// A 2-D convolution: `n x c x h x w` input, `k x c x r x s` filter, the same padding, stride
/// and dilation in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub k: usize,
    pub r: usize,
    pub s: usize,
    pub pad: usize,
    pub stride: usize,
    pub dilation: usize,
}

/// One output extent: `1 + (input + 2 pad - ((filter - 1) dilation + 1)) / stride`, or `None`
/// when the dilated filter does not fit the padded input (or a parameter is zero).
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
    /// The input's dimensions, `[n, c, h, w]`.
    pub fn input(&self) -> [usize; 4] {
        [self.n, self.c, self.h, self.w]
    }

    /// The filter's dimensions, `[k, c, r, s]`.
    pub fn filter(&self) -> [usize; 4] {
        [self.k, self.c, self.r, self.s]
    }

    /// The output's dimensions, `[n, k, p, q]`, if the filter fits.
    pub fn output(&self) -> Option<[usize; 4]> {
        let p = extent(self.h, self.r, self.pad, self.stride, self.dilation)?;
        let q = extent(self.w, self.s, self.pad, self.stride, self.dilation)?;
        Some([self.n, self.k, p, q])
    }

    /// `1x3x8x8 * 4x3x3x3`, for reasons.
    pub fn describe(&self) -> String {
        format!("{} * {}", dims(self.input()), dims(self.filter()))
    }
}

/// Dimensions as people write them: `1x4x8x8`.
pub fn dims(d: [usize; 4]) -> String {
    d.map(|x| x.to_string()).join("x")
}

/// The forward pass in f64: `y[n][k][p][q] = sum over c, r, s of
/// x[n][c][p stride - pad + r dilation][q stride - pad + s dilation] * w[k][c][r][s]`, taking
/// padding as zeros. `x` and `w` are dense NCHW and KCRS; the result is dense NKPQ (empty when
/// the filter does not fit).
pub fn forward(g: &Geometry, x: &[f64], w: &[f64]) -> Vec<f64> {
    let Some([_, _, p_len, q_len]) = g.output() else {
        return Vec::new();
    };
    assert_eq!(x.len(), g.input().iter().product::<usize>(), "input size");
    assert_eq!(w.len(), g.filter().iter().product::<usize>(), "filter size");
    // The input coordinate a filter tap reads, or None in the padding.
    let at = |out: usize, tap: usize, len: usize| {
        (out * g.stride + tap * g.dilation)
            .checked_sub(g.pad)
            .filter(|&i| i < len)
    };
    let mut y = Vec::with_capacity(g.n * g.k * p_len * q_len);
    for n in 0..g.n {
        for k in 0..g.k {
            for p in 0..p_len {
                for q in 0..q_len {
                    let mut sum = 0.0;
                    for c in 0..g.c {
                        for r in 0..g.r {
                            let Some(i) = at(p, r, g.h) else { continue };
                            for s in 0..g.s {
                                let Some(j) = at(q, s, g.w) else { continue };
                                let xv = x[((n * g.c + c) * g.h + i) * g.w + j];
                                let wv = w[((k * g.c + c) * g.r + r) * g.s + s];
                                sum += xv * wv;
                            }
                        }
                    }
                    y.push(sum);
                }
            }
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rstest::rstest;

    fn geometry(
        input: [usize; 4],
        filter: [usize; 4],
        pad: usize,
        stride: usize,
        dilation: usize,
    ) -> Geometry {
        assert_eq!(input[1], filter[1]);
        Geometry {
            n: input[0],
            c: input[1],
            h: input[2],
            w: input[3],
            k: filter[0],
            r: filter[2],
            s: filter[3],
            pad,
            stride,
            dilation,
        }
    }

    #[rstest]
    #[case::same_padding(8, 3, 1, 1, 1, Some(8))]
    #[case::valid(8, 3, 0, 1, 1, Some(6))]
    #[case::stride_2(8, 3, 1, 2, 1, Some(4))]
    #[case::stride_rounds_down(7, 3, 0, 2, 1, Some(3))]
    #[case::dilation_2(8, 3, 0, 1, 2, Some(4))]
    #[case::dilated_with_padding(8, 3, 2, 1, 2, Some(8))]
    #[case::filter_as_large_as_input(5, 5, 0, 1, 1, Some(1))]
    #[case::filter_too_large(3, 5, 0, 1, 1, None)]
    #[case::padding_makes_it_fit(3, 5, 1, 1, 1, Some(1))]
    #[case::zero_stride(8, 3, 1, 0, 1, None)]
    #[case::zero_dilation(8, 3, 1, 1, 0, None)]
    fn output_extents(
        #[case] input: usize,
        #[case] filter: usize,
        #[case] pad: usize,
        #[case] stride: usize,
        #[case] dilation: usize,
        #[case] want: Option<usize>,
    ) {
        assert_eq!(extent(input, filter, pad, stride, dilation), want);
    }

    #[test]
    fn the_checks_shape() {
        let g = geometry([1, 3, 8, 8], [4, 3, 3, 3], 1, 1, 1);
        assert_eq!(g.output(), Some([1, 4, 8, 8]));
        assert_eq!(g.describe(), "1x3x8x8 * 4x3x3x3");
        assert_eq!(dims([1, 4, 8, 8]), "1x4x8x8");
    }

    #[test]
    fn a_two_by_two_filter_without_padding() {
        // x = 1 2 3 / 4 5 6 / 7 8 9, w = 1 0 / 0 -1: each output is x[i][j] - x[i+1][j+1].
        let g = geometry([1, 1, 3, 3], [1, 1, 2, 2], 0, 1, 1);
        let x: Vec<f64> = (1..=9).map(f64::from).collect();
        let y = forward(&g, &x, &[1.0, 0.0, 0.0, -1.0]);
        assert_eq!(y, vec![-4.0, -4.0, -4.0, -4.0]);
    }

    #[test]
    fn cross_correlation_does_not_flip_the_filter() {
        // w = 1 2 / 3 4 over x = 1 2 / 3 4: 1 + 4 + 9 + 16 (a convolution would give 20).
        let g = geometry([1, 1, 2, 2], [1, 1, 2, 2], 0, 1, 1);
        assert_eq!(
            forward(&g, &[1.0, 2.0, 3.0, 4.0], &[1.0, 2.0, 3.0, 4.0]),
            vec![30.0]
        );
    }

    #[test]
    fn padding_counts_as_zeros() {
        // A 3x3 box filter over a 3x3 image of ones with padding 1: how many of the nine taps
        // land inside the image.
        let g = geometry([1, 1, 3, 3], [1, 1, 3, 3], 1, 1, 1);
        let y = forward(&g, &[1.0; 9], &[1.0; 9]);
        assert_eq!(y, vec![4.0, 6.0, 4.0, 6.0, 9.0, 6.0, 4.0, 6.0, 4.0]);
    }

    #[test]
    fn stride_and_dilation() {
        // 5x5 input numbered 0..25; a 2x2 filter of ones dilated by 2 spans 3 and reads
        // (i, j), (i, j+2), (i+2, j), (i+2, j+2); stride 2 places it at i, j in {0, 2}.
        let g = geometry([1, 1, 5, 5], [1, 1, 2, 2], 0, 2, 2);
        let x: Vec<f64> = (0..25).map(f64::from).collect();
        let y = forward(&g, &x, &[1.0; 4]);
        // At (0, 0): 0 + 2 + 10 + 12; (0, 2): 2 + 4 + 12 + 14; (2, 0): 10 + 12 + 20 + 22;
        // (2, 2): 12 + 14 + 22 + 24.
        assert_eq!(y, vec![24.0, 32.0, 64.0, 72.0]);
    }

    #[test]
    fn channels_sum_and_filters_and_batches_are_separate() {
        // Two channels, two filters, two images, 1x1 filters: y[n][k] = sum_c x[n][c] w[k][c].
        let g = geometry([2, 2, 1, 1], [2, 2, 1, 1], 0, 1, 1);
        let x = [1.0, 2.0, 3.0, 4.0]; // image 0: (1, 2), image 1: (3, 4)
        let w = [10.0, 100.0, -1.0, 1.0]; // filter 0: (10, 100), filter 1: (-1, 1)
        assert_eq!(forward(&g, &x, &w), vec![210.0, 1.0, 430.0, 1.0]);
    }

    #[test]
    fn a_filter_that_does_not_fit_gives_nothing() {
        let g = geometry([1, 1, 2, 2], [1, 1, 3, 3], 0, 1, 1);
        assert!(forward(&g, &[0.0; 4], &[0.0; 9]).is_empty());
    }

    proptest! {
        #[test]
        fn a_centred_unit_filter_copies_each_channel(
            h in 1usize..6, w in 1usize..6, c in 1usize..4, seed in any::<u64>()
        ) {
            // A 3x3 filter that is 1 at its centre for channel `k` and 0 elsewhere, with
            // padding 1, reproduces channel `k` of the input.
            let g = geometry([1, c, h, w], [c, c, 3, 3], 1, 1, 1);
            let x: Vec<f64> = crate::kernels::random_f32(c * h * w, seed).into_iter().map(f64::from).collect();
            let mut filter = vec![0.0; c * c * 9];
            for k in 0..c {
                filter[(k * c + k) * 9 + 4] = 1.0;
            }
            prop_assert_eq!(g.output(), Some([1, c, h, w]));
            prop_assert_eq!(forward(&g, &x, &filter), x);
        }

        #[test]
        fn the_output_has_the_size_the_shape_arithmetic_says(
            h in 1usize..10, w in 1usize..10, r in 1usize..4, s in 1usize..4,
            pad in 0usize..3, stride in 1usize..3, dilation in 1usize..3,
        ) {
            let g = geometry([1, 1, h, w], [2, 1, r, s], pad, stride, dilation);
            let y = forward(&g, &vec![1.0; h * w], &vec![1.0; 2 * r * s]);
            let want = g.output().map_or(0, |d| d.iter().product());
            prop_assert_eq!(y.len(), want);
        }
    }
}
