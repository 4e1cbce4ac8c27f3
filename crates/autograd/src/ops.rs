//! Fused training operations with their backward passes, for the CPU: linear layer, LayerNorm,
//! scaled and masked softmax, erf-GELU.
//!
//! Why: candle 0.11.1 has fused CPU kernels for LayerNorm and softmax but registers them
//! without a backward pass, so training composed them from primitive operations, each a pass
//! over memory with a fresh allocation, and each again in the backward graph (plus candle's
//! zero-then-add gradient accumulation). A 3-D `candle_nn::Linear` also multiplies by a weight
//! broadcast over the batch, whose backward makes one weight-sized gradient per sequence and
//! sums them. Measured in BENCHMARKS.md ("Judge training"), these made a training step several
//! times slower than PyTorch's. Here each operation is one node of the graph with a one-pass
//! backward, and the products run on scorekit's AVX-512 kernels (`native::gemm`) where the CPU
//! has them.
//!
//! Each function falls back to the composed candle operations (same formulas) off the CPU (CUDA,
//! Metal) and for dtypes other than f32 / f64, so GPU training keeps candle's kernels.

use candle_core::{
    backend::BackendStorage, bail, CpuStorage, CustomOp1, CustomOp2, CustomOp3, DType, Layout,
    Result, Shape, Storage, Tensor, WithDType, D,
};
use rayon::prelude::*;

/// Rows handed to one rayon task by the row-wise kernels.
const ROWS_PER_TASK: usize = 32;

/// Whether the fused CPU path handles `t`.
fn fused(t: &Tensor) -> bool {
    t.device().is_cpu() && matches!(t.dtype(), DType::F32 | DType::F64)
}

/// The contiguous elements of a CPU storage as a slice of `T`.
pub(crate) fn slice<'a, T: WithDType>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [T]> {
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&s.as_slice::<T>()?[a..b]),
        None => bail!("fused op: non-contiguous input"),
    }
}

/// Run `f` on the elements of tensor `t` (made contiguous), on the CPU.
pub fn with_slice<T: WithDType, R>(t: &Tensor, f: impl FnOnce(&[T]) -> Result<R>) -> Result<R> {
    let t = t.contiguous()?;
    let (s, l) = t.storage_and_layout();
    match &*s {
        Storage::Cpu(c) => f(slice::<T>(c, l)?),
        _ => bail!("fused op: tensor not on the CPU"),
    }
}

/// The float types of the fused kernels, with the erf candle's GELU uses.
pub(super) trait Real: WithDType + Send + Sync + super::simd::Vectorised {
    /// The error function, as candle computes it.
    fn erf(x: Self) -> Self;
}

impl Real for f32 {
    fn erf(x: f32) -> f32 {
        candle_core::cpu::erf::erf_f32(x)
    }
}

impl Real for f64 {
    fn erf(x: f64) -> f64 {
        candle_core::cpu::erf::erf_f64(x)
    }
}

/// Dispatch a generic kernel on the storage's dtype (f32 or f64).
macro_rules! by_dtype {
    ($s:expr, $f:ident ( $($arg:expr),* )) => {
        match $s.dtype() {
            DType::F32 => $f::<f32>($($arg),*),
            DType::F64 => $f::<f64>($($arg),*),
            d => bail!("fused op: dtype {d:?}"),
        }
    };
}

// ---------------------------------------------------------------- LayerNorm

/// LayerNorm over the last dimension: `(x − mean) / sqrt(var + eps) · gamma + beta`, with the
/// biased variance, as `torch.nn.LayerNorm`.
pub fn layer_norm(x: &Tensor, gamma: &Tensor, beta: &Tensor, eps: f64) -> Result<Tensor> {
    if !fused(x) {
        let h = x.dim(D::Minus1)? as f64;
        let centred = x.broadcast_sub(&(x.sum_keepdim(D::Minus1)? / h)?)?;
        let var = (centred.sqr()?.sum_keepdim(D::Minus1)? / h)?;
        let normed = centred.broadcast_div(&(var + eps)?.sqrt()?)?;
        return normed.broadcast_mul(gamma)?.broadcast_add(beta);
    }
    x.contiguous()?.apply_op3(gamma, beta, LayerNormOp { eps })
}

struct LayerNormOp {
    eps: f64,
}

/// Mean and 1 / sqrt(var + eps) of one row, accumulated in f64.
fn row_stats<T: Real>(row: &[T], eps: f64) -> (f64, f64) {
    let n = row.len() as f64;
    let mean = row.iter().map(|v| v.to_f64()).sum::<f64>() / n;
    let var = row
        .iter()
        .map(|v| {
            let d = v.to_f64() - mean;
            d * d
        })
        .sum::<f64>()
        / n;
    (mean, 1.0 / (var + eps).sqrt())
}

fn ln_fwd<T: Real>(
    s1: &CpuStorage,
    l1: &Layout,
    s2: &CpuStorage,
    l2: &Layout,
    s3: &CpuStorage,
    l3: &Layout,
    eps: f64,
) -> Result<(CpuStorage, Shape)> {
    let (x, g, b) = (
        slice::<T>(s1, l1)?,
        slice::<T>(s2, l2)?,
        slice::<T>(s3, l3)?,
    );
    let h = g.len();
    if h == 0 || x.len() % h != 0 || b.len() != h {
        bail!("layer_norm: widths {} / {} / {}", x.len(), h, b.len());
    }
    let y = ln_rows(x, g, b, eps);
    Ok((T::to_cpu_storage_owned(y), l1.shape().clone()))
}

/// LayerNorm of every row of `x` (rows as wide as `g` and `b`).
pub(super) fn ln_rows<T: Real>(x: &[T], g: &[T], b: &[T], eps: f64) -> Vec<T> {
    let h = g.len();
    let mut y = vec![T::from_f64(0.0); x.len()];
    y.par_chunks_mut(h * ROWS_PER_TASK)
        .zip(x.par_chunks(h * ROWS_PER_TASK))
        .for_each(|(yc, xc)| {
            for (yr, xr) in yc.chunks_mut(h).zip(xc.chunks(h)) {
                let (mean, rstd) = row_stats(xr, eps);
                for i in 0..h {
                    let v = (xr[i].to_f64() - mean) * rstd;
                    yr[i] = T::from_f64(v * g[i].to_f64() + b[i].to_f64());
                }
            }
        });
    y
}

/// (dx, dgamma, dbeta) of LayerNorm for input `x` and output gradient `dy`.
pub(super) fn ln_bwd<T: Real>(
    x: &[T],
    gamma: &[T],
    dy: &[T],
    eps: f64,
) -> (Vec<T>, Vec<T>, Vec<T>) {
    let h = gamma.len();
    let mut dx = vec![T::from_f64(0.0); x.len()];
    let partial: Vec<(Vec<f64>, Vec<f64>)> = dx
        .par_chunks_mut(h * ROWS_PER_TASK)
        .zip(x.par_chunks(h * ROWS_PER_TASK))
        .zip(dy.par_chunks(h * ROWS_PER_TASK))
        .map(|((dxc, xc), dyc)| {
            let (mut dg, mut db) = (vec![0f64; h], vec![0f64; h]);
            let mut xhat = vec![0f64; h];
            let mut dxhat = vec![0f64; h];
            for ((dxr, xr), dyr) in dxc.chunks_mut(h).zip(xc.chunks(h)).zip(dyc.chunks(h)) {
                let (mean, rstd) = row_stats(xr, eps);
                let (mut s1, mut s2) = (0f64, 0f64);
                for i in 0..h {
                    let d = dyr[i].to_f64();
                    xhat[i] = (xr[i].to_f64() - mean) * rstd;
                    dg[i] += d * xhat[i];
                    db[i] += d;
                    dxhat[i] = d * gamma[i].to_f64();
                    s1 += dxhat[i];
                    s2 += dxhat[i] * xhat[i];
                }
                let (m1, m2) = (s1 / h as f64, s2 / h as f64);
                for i in 0..h {
                    dxr[i] = T::from_f64(rstd * (dxhat[i] - m1 - xhat[i] * m2));
                }
            }
            (dg, db)
        })
        .collect();
    let (mut dg, mut db) = (vec![0f64; h], vec![0f64; h]);
    for (g, b) in partial {
        for i in 0..h {
            dg[i] += g[i];
            db[i] += b[i];
        }
    }
    let cast = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect();
    (dx, cast(dg), cast(db))
}

fn ln_grads<T: Real>(
    x: &Tensor,
    gamma: &Tensor,
    dy: &Tensor,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (dx, dg, db) = with_slice::<T, _>(x, |x| {
        with_slice::<T, _>(gamma, |g| {
            with_slice::<T, _>(dy, |d| Ok(ln_bwd(x, g, d, eps)))
        })
    })?;
    let dev = x.device();
    Ok((
        Tensor::from_vec(dx, x.shape(), dev)?,
        Tensor::from_vec(dg, gamma.shape(), dev)?,
        Tensor::from_vec(db, gamma.shape(), dev)?,
    ))
}

impl CustomOp3 for LayerNormOp {
    fn name(&self) -> &'static str {
        "scorekit-layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        by_dtype!(s1, ln_fwd(s1, l1, s2, l2, s3, l3, self.eps))
    }

    fn bwd(
        &self,
        x: &Tensor,
        gamma: &Tensor,
        _beta: &Tensor,
        _y: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (dx, dg, db) = by_dtype!(x, ln_grads(x, gamma, dy, self.eps))?;
        Ok((Some(dx), Some(dg), Some(db)))
    }
}

// ---------------------------------------------------------------- softmax

/// `softmax(x · scale + mask)` over the last dimension of attention scores `x` `[b, heads, q, k]`,
/// with an additive mask `[b, k]` (no gradient flows to the mask).
pub fn masked_softmax(x: &Tensor, mask: &Tensor, scale: f64) -> Result<Tensor> {
    let (b, _, _, k) = x.dims4()?;
    if !fused(x) {
        let m = mask.reshape((b, 1, 1, k))?;
        return candle_nn::ops::softmax(&(x * scale)?.broadcast_add(&m)?, D::Minus1);
    }
    let mask = mask.reshape((b, k))?.contiguous()?;
    x.contiguous()?.apply_op2(&mask, SoftmaxOp { scale })
}

struct SoftmaxOp {
    scale: f64,
}

fn sm_fwd<T: Real>(
    s1: &CpuStorage,
    l1: &Layout,
    s2: &CpuStorage,
    l2: &Layout,
    scale: f64,
) -> Result<(CpuStorage, Shape)> {
    let (x, m) = (slice::<T>(s1, l1)?, slice::<T>(s2, l2)?);
    let (b, _, _, k) = l1.shape().dims4()?;
    let per_batch = x.len() / b.max(1);
    let mut y = vec![T::from_f64(0.0); x.len()];
    y.par_chunks_mut(k * ROWS_PER_TASK)
        .zip(x.par_chunks(k * ROWS_PER_TASK))
        .enumerate()
        .for_each(|(t, (yc, xc))| {
            let mut z = vec![0f64; k];
            for (r, (yr, xr)) in yc.chunks_mut(k).zip(xc.chunks(k)).enumerate() {
                let row = t * ROWS_PER_TASK + r;
                let mr = &m[(row * k / per_batch) * k..][..k];
                softmax_row(xr, mr, scale, yr, &mut z);
            }
        });
    Ok((T::to_cpu_storage_owned(y), l1.shape().clone()))
}

/// One row of the masked softmax, `y = softmax(x·scale + mask)`; `z` is scratch as long as `x`.
pub(super) fn softmax_row<T: Real>(x: &[T], mask: &[T], scale: f64, y: &mut [T], z: &mut [f64]) {
    if T::vector_masked_softmax_row(x, mask, scale, y) {
        return;
    }
    softmax_row_plain(x, mask, scale, y, z);
}

/// [`softmax_row`]'s generic loop (f64, and the reference of the kernels crate's f32 loop).
pub(super) fn softmax_row_plain<T: Real>(
    x: &[T],
    mask: &[T],
    scale: f64,
    y: &mut [T],
    z: &mut [f64],
) {
    let k = x.len();
    let mut max = f64::NEG_INFINITY;
    for j in 0..k {
        z[j] = T::from_f64(x[j].to_f64() * scale).to_f64() + mask[j].to_f64();
        max = max.max(z[j]);
    }
    let mut sum = 0f64;
    for zj in z[..k].iter_mut() {
        *zj = (*zj - max).exp();
        sum += *zj;
    }
    for j in 0..k {
        y[j] = T::from_f64(z[j] / sum);
    }
}

/// The masked softmax's backward for one row: `dx = y·(dy − Σ y·dy)·scale`.
pub(super) fn softmax_grad_row<T: Real>(y: &[T], dy: &[T], scale: f64, dx: &mut [T]) {
    let dot: f64 = y.iter().zip(dy).map(|(a, b)| a.to_f64() * b.to_f64()).sum();
    for j in 0..y.len() {
        dx[j] = T::from_f64(y[j].to_f64() * (dy[j].to_f64() - dot) * scale);
    }
}

fn sm_grad<T: Real>(y: &Tensor, dy: &Tensor, scale: f64) -> Result<Tensor> {
    let k = y.dim(D::Minus1)?;
    let dx = with_slice::<T, _>(y, |y| {
        with_slice::<T, _>(dy, |d| {
            let mut dx = vec![T::from_f64(0.0); y.len()];
            dx.par_chunks_mut(k * ROWS_PER_TASK)
                .zip(y.par_chunks(k * ROWS_PER_TASK))
                .zip(d.par_chunks(k * ROWS_PER_TASK))
                .for_each(|((dxc, yc), dc)| {
                    for ((dxr, yr), dr) in dxc.chunks_mut(k).zip(yc.chunks(k)).zip(dc.chunks(k)) {
                        softmax_grad_row(yr, dr, scale, dxr);
                    }
                });
            Ok(dx)
        })
    })?;
    Tensor::from_vec(dx, y.shape(), y.device())
}

impl CustomOp2 for SoftmaxOp {
    fn name(&self) -> &'static str {
        "scorekit-masked-softmax"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        by_dtype!(s1, sm_fwd(s1, l1, s2, l2, self.scale))
    }

    fn bwd(
        &self,
        _x: &Tensor,
        _mask: &Tensor,
        y: &Tensor,
        dy: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        Ok((Some(by_dtype!(y, sm_grad(y, dy, self.scale))?), None))
    }
}

// ---------------------------------------------------------------- GELU

/// The exact (erf) GELU, `x · (1 + erf(x / √2)) / 2`, with the exact derivative in backward.
pub fn gelu_erf(x: &Tensor) -> Result<Tensor> {
    if !fused(x) {
        return x.gelu_erf();
    }
    x.contiguous()?.apply_op1(GeluOp)
}

struct GeluOp;

/// Elements handed to one rayon task by the element-wise kernels.
const ELEMS_PER_TASK: usize = 16384;

fn gelu_fwd<T: Real>(s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
    let x = slice::<T>(s, l)?;
    let mut y = vec![T::from_f64(0.0); x.len()];
    gelu_into(x, &mut y);
    Ok((T::to_cpu_storage_owned(y), l.shape().clone()))
}

/// `y = gelu(x)` (exact, erf), element by element, in parallel.
pub(super) fn gelu_into<T: Real>(x: &[T], y: &mut [T]) {
    let vectorised = y
        .par_chunks_mut(ELEMS_PER_TASK)
        .zip(x.par_chunks(ELEMS_PER_TASK))
        .all(|(yc, xc)| T::vector_gelu(xc, yc));
    if vectorised {
        return;
    }
    y.par_chunks_mut(ELEMS_PER_TASK)
        .zip(x.par_chunks(ELEMS_PER_TASK))
        .for_each(|(yc, xc)| gelu_plain(xc, yc));
}

/// [`gelu_into`]'s generic loop (f64, and the reference of the kernels crate's f32 loop).
pub(super) fn gelu_plain<T: Real>(x: &[T], y: &mut [T]) {
    let half = T::from_f64(0.5);
    let one = T::from_f64(1.0);
    let r2 = T::from_f64(std::f64::consts::FRAC_1_SQRT_2);
    for (y, &v) in y.iter_mut().zip(x) {
        // candle's formula and rounding order (`UnaryOpT for GeluErf`).
        *y = (T::erf(v * r2) + one) * half * v;
    }
}

fn gelu_grad<T: Real>(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let dx = with_slice::<T, _>(x, |x| {
        with_slice::<T, _>(dy, |d| {
            let mut dx = vec![T::from_f64(0.0); x.len()];
            gelu_grad_into(x, d, &mut dx);
            Ok(dx)
        })
    })?;
    Tensor::from_vec(dx, x.shape(), x.device())
}

/// `dx = dy · gelu'(x)`, element by element, in parallel.
pub(super) fn gelu_grad_into<T: Real>(x: &[T], d: &[T], dx: &mut [T]) {
    let vectorised = dx
        .par_chunks_mut(ELEMS_PER_TASK)
        .zip(x.par_chunks(ELEMS_PER_TASK))
        .zip(d.par_chunks(ELEMS_PER_TASK))
        .all(|((dxc, xc), dc)| T::vector_gelu_grad(xc, dc, dxc));
    if vectorised {
        return;
    }
    dx.par_chunks_mut(ELEMS_PER_TASK)
        .zip(x.par_chunks(ELEMS_PER_TASK))
        .zip(d.par_chunks(ELEMS_PER_TASK))
        .for_each(|((dxc, xc), dc)| gelu_grad_plain(xc, dc, dxc));
}

/// [`gelu_grad_into`]'s generic loop (f64, and the reference of the kernels crate's f32 loop).
pub(super) fn gelu_grad_plain<T: Real>(x: &[T], d: &[T], dx: &mut [T]) {
    let inv_sqrt_2pi = 1.0 / (2.0 * std::f64::consts::PI).sqrt();
    for ((o, &v), &g) in dx.iter_mut().zip(x).zip(d) {
        let v = v.to_f64();
        let cdf = 0.5 * (1.0 + T::erf(T::from_f64(v * std::f64::consts::FRAC_1_SQRT_2)).to_f64());
        let pdf = (-0.5 * v * v).exp() * inv_sqrt_2pi;
        *o = T::from_f64(g.to_f64() * (cdf + v * pdf));
    }
}

impl CustomOp1 for GeluOp {
    fn name(&self) -> &'static str {
        "scorekit-gelu-erf"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        by_dtype!(s, gelu_fwd(s, l))
    }

    fn bwd(&self, x: &Tensor, _y: &Tensor, dy: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(by_dtype!(x, gelu_grad(x, dy))?))
    }
}

// ---------------------------------------------------------------- linear

/// `x · wᵀ + b` for `x` `[.., k]`, `w` `[n, k]` (a PyTorch `Linear` weight), `b` `[n]`, computed
/// on the flattened `[rows, k]` matrix so that the weight's gradient is one product.
pub fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    let dims = x.dims().to_vec();
    let k = *dims.last().unwrap_or(&0);
    let (n, _) = w.dims2()?;
    let x2 = x.reshape(((), k))?;
    let y = match b {
        #[cfg(target_arch = "x86_64")]
        Some(b)
            if x.device().is_cpu()
                && x.dtype() == DType::F32
                && scorekit_kernels::kernels_available() =>
        {
            x2.contiguous()?
                .apply_op3(&w.contiguous()?, &b.contiguous()?, native::LinearOp)?
        }
        Some(b) => x2.matmul(&w.t()?)?.broadcast_add(b)?,
        None => x2.matmul(&w.t()?)?,
    };
    let mut out = dims;
    if let Some(last) = out.last_mut() {
        *last = n;
    }
    y.reshape(out)
}

#[cfg(target_arch = "x86_64")]
pub(super) mod native {
    //! The f32 linear layer on scorekit's AVX-512 products (`native::gemm`): forward `x·wᵀ + b`,
    //! backward `dx = dy·w`, `dw = dyᵀ·x`, `db = Σ dy`.

    use super::{slice, with_slice};
    use candle_core::{CpuStorage, CustomOp3, Layout, Result, Shape, Tensor};
    use scorekit_kernels::gemm::{gemm, gemm_at, Epilogue, PackedB};

    /// The op; callers check that the CPU has AVX-512F (`native::kernels_available`).
    pub(super) struct LinearOp;

    impl CustomOp3 for LinearOp {
        fn name(&self) -> &'static str {
            "scorekit-linear"
        }

        fn cpu_fwd(
            &self,
            s1: &CpuStorage,
            l1: &Layout,
            s2: &CpuStorage,
            l2: &Layout,
            s3: &CpuStorage,
            l3: &Layout,
        ) -> Result<(CpuStorage, Shape)> {
            let (x, w, b) = (
                slice::<f32>(s1, l1)?,
                slice::<f32>(s2, l2)?,
                slice::<f32>(s3, l3)?,
            );
            let (m, k) = l1.shape().dims2()?;
            let (n, k2) = l2.shape().dims2()?;
            if k != k2 || b.len() != n {
                candle_core::bail!("linear: x {m}x{k}, w {n}x{k2}, b {}", b.len());
            }
            let packed = PackedB::from_nk(w, n, k, k);
            let mut y = vec![0f32; m * n];
            let ep = Epilogue {
                bias: Some(b),
                accumulate: false,
                gelu: false,
            };
            gemm(m, x, k, &packed, &mut y, n, ep, true);
            Ok((CpuStorage::F32(y), Shape::from((m, n))))
        }

        fn bwd(
            &self,
            x: &Tensor,
            w: &Tensor,
            _b: &Tensor,
            _y: &Tensor,
            dy: &Tensor,
        ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
            let (m, k) = x.dims2()?;
            let (n, _) = w.dims2()?;
            let (dx, dw, db) = with_slice::<f32, _>(x, |x| {
                with_slice::<f32, _>(w, |w| {
                    with_slice::<f32, _>(dy, |g| Ok(grads(x, w, g, m, n, k)))
                })
            })?;
            let dev = x.device();
            Ok((
                Some(Tensor::from_vec(dx, (m, k), dev)?),
                Some(Tensor::from_vec(dw, (n, k), dev)?),
                Some(Tensor::from_vec(db, n, dev)?),
            ))
        }
    }

    /// dx `[m, k]` = g·w, dw `[n, k]` = gᵀ·x, db `[n]` = column sums of g (g `[m, n]`).
    pub(crate) fn grads(
        x: &[f32],
        w: &[f32],
        g: &[f32],
        m: usize,
        n: usize,
        k: usize,
    ) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let plain = Epilogue::default();
        // dx: B = w, n rows (the product's depth) of k columns.
        let mut bw = PackedB::default();
        bw.repack_kn(w, n, k, k);
        let mut dx = vec![0f32; m * k];
        gemm(m, g, n, &bw, &mut dx, k, plain, true);
        // dw: A = gᵀ (n×m), read from g as it is; B = x (m rows of depth, k columns).
        let mut bx = PackedB::default();
        bx.repack_kn(x, m, k, k);
        let mut dw = vec![0f32; n * k];
        gemm_at(n, g, n, &bx, &mut dw, k, plain, true);
        (dx, dw, column_sums(g, m, n))
    }

    /// Column sums of `g` `[m, n]`, each accumulated in f64 over the rows in order.
    pub(crate) fn column_sums(g: &[f32], m: usize, n: usize) -> Vec<f32> {
        scorekit_kernels::train::column_sums(g, m, n, false)
    }
}
