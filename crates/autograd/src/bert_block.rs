//! One BERT encoder layer (self-attention, feed-forward, post-LayerNorm, dropout) as a single
//! node of candle's graph with a hand-written backward pass, for training on CPUs with AVX-512:
//! f32 (`native::gemm`), or bf16-mixed with the weight products on the CPU's bf16 instructions
//! ([`crate::bf16_linear`]).
//!
//! Why: candle's backward walks the graph node by node. Each of a layer's ~25 nodes allocates
//! its gradient, and the gradient of every input starts as a tensor of zeros to which the
//! contribution is then added (`GradStore::or_insert` + `add`): measured with `perf` on a
//! MiniLM step (BENCHMARKS.md, "Judge training"), those sums, zero fills and the page faults of
//! fresh buffers were about a third of a step, and each node's pass ran alone. Here the forward
//! pass keeps what the backward needs, and the backward runs as a few products and row passes.
//!
//! The arithmetic is that of the composed path (`bert_layers::BertLayers::forward` in training
//! mode, the operations of `train::ops`) step for step, with the same dropout masks drawn in the
//! same order, so both give the same numbers up to the products' summation order (test
//! `bert_layers::tests::the_fused_layer_equals_the_composed_graph`). In bf16-mixed it rounds
//! where [`crate::Precision`]'s products round (operands, results, the gradients reaching and
//! leaving each product, the scaled attention scores), so a value differs from the composed
//! path's only where a differently ordered f32 sum rounds to the neighbouring bf16 value.
//! A custom op takes at most three tensors, so the weights are not inputs of the node: their
//! gradients go to a [`GradSink`], which the trainer adds to the gradients candle returns.

use super::ops::{
    gelu_grad_into, gelu_into, ln_bwd, ln_rows, native::grads, softmax_grad_row, softmax_row,
    with_slice,
};
use super::rng::KeepDraws;
use super::{bf16_linear, GradSink, Precision};
use candle_core::{bail, CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};
use rayon::prelude::*;
use scorekit_kernels::bf16small::{Operand, SmallBf16};
use scorekit_kernels::block::BlockMut;
use scorekit_kernels::gemm::{gemm, gemm_at_block, gemm_block, Epilogue, PackedB};
use scorekit_kernels::train::{bf16_round, bf16_round_in_place};
use std::sync::Mutex;

/// A layer's tensors, in the order of [`LayerTensors::NAMES`].
pub struct LayerTensors(pub [Tensor; 16]);

impl LayerTensors {
    /// What each tensor is (for error messages).
    pub const NAMES: [&'static str; 16] = [
        "query.weight",
        "query.bias",
        "key.weight",
        "key.bias",
        "value.weight",
        "value.bias",
        "attention.output.dense.weight",
        "attention.output.dense.bias",
        "attention.output.LayerNorm.weight",
        "attention.output.LayerNorm.bias",
        "intermediate.dense.weight",
        "intermediate.dense.bias",
        "output.dense.weight",
        "output.dense.bias",
        "output.LayerNorm.weight",
        "output.LayerNorm.bias",
    ];
}

/// The dropout of one layer: the draws that decide which elements are kept (one per element
/// of the padded tensor, in its order, as the composed path draws its masks; the layer
/// computes those of its tokens only), and the scale of the kept ones.
pub struct LayerDropout {
    /// Attention probabilities `[b, heads, s, s]` (None: no dropout).
    pub attention: Option<KeepDraws>,
    /// After the attention's output projection, `[b, s, h]`.
    pub attention_output: Option<KeepDraws>,
    /// After the feed-forward output projection, `[b, s, h]`.
    pub output: Option<KeepDraws>,
    /// 1 / (1 − p) of the attention dropout, as f32.
    pub attention_scale: f32,
    /// 1 / (1 − p) of the hidden dropout, as f32.
    pub hidden_scale: f32,
}

/// A layer's dropout inside the op: the keep decisions of the packed rows (see [`Packing`]).
struct PackedDropout {
    /// The attention blocks' decisions, block after block.
    attention: Option<Vec<bool>>,
    /// After the attention's output projection, `[tokens, h]`.
    attention_output: Option<Vec<bool>>,
    /// After the feed-forward output projection, `[tokens, h]`.
    output: Option<Vec<bool>>,
    attention_scale: f32,
    hidden_scale: f32,
}

/// The shape of a layer's input and its configuration.
#[derive(Debug, Clone, Copy)]
pub struct LayerShape {
    /// Sequences.
    pub b: usize,
    /// Padded sequence length.
    pub s: usize,
    /// Hidden size.
    pub h: usize,
    /// Attention heads.
    pub heads: usize,
    /// Feed-forward width.
    pub f: usize,
    /// LayerNorm epsilon.
    pub eps: f64,
}

/// Whether the fused layer can train in `precision` on this CPU: AVX-512 for f32, and bf16
/// products (AMX-BF16 or AVX512-BF16) besides for bf16-mixed.
pub fn runs_here(precision: Precision) -> bool {
    scorekit_kernels::kernels_available()
        && match precision {
            Precision::F32 => true,
            Precision::Bf16Mixed => bf16_linear::available(),
        }
}

/// The layer on `x` `[b, s, h]` (f32, CPU) with additive key mask `mask` `[b, s]`, its products
/// in `precision`, as one differentiable node. Callers check [`runs_here`].
pub fn forward(
    x: &Tensor,
    mask: Vec<f32>,
    tensors: LayerTensors,
    shape: LayerShape,
    dropout: LayerDropout,
    precision: Precision,
    sink: GradSink,
) -> Result<Tensor> {
    if !runs_here(precision) {
        bail!("fused BERT layer: no {precision:?} products on this CPU");
    }
    let LayerShape {
        b, s, h, heads, f, ..
    } = shape;
    if x.dims() != [b, s, h] || mask.len() != b * s || h % heads != 0 {
        bail!(
            "fused BERT layer: input {:?}, mask {}, {heads} heads of {h}",
            x.dims(),
            mask.len()
        );
    }
    let want: [usize; 16] = [
        h * h,
        h,
        h * h,
        h,
        h * h,
        h,
        h * h,
        h,
        h,
        h,
        f * h,
        f,
        h * f,
        h,
        h,
        h,
    ];
    for ((t, n), name) in tensors.0.iter().zip(want).zip(LayerTensors::NAMES) {
        if t.elem_count() != n {
            bail!(
                "fused BERT layer: {name} has {} values, not {n}",
                t.elem_count()
            );
        }
    }
    let sizes = [
        (&dropout.attention, b * heads * s * s, "attention"),
        (&dropout.attention_output, b * s * h, "attention output"),
        (&dropout.output, b * s * h, "output"),
    ];
    for (draws, n, what) in sizes {
        if let Some(d) = draws.filter(|d| d.len() != n) {
            bail!("fused BERT layer: {} {what} dropout draws for {n}", d.len());
        }
    }
    let weights = Weights::read(&tensors)?;
    let packing = Packing::new(&mask, b, s, heads);
    let dropout = PackedDropout {
        attention: dropout.attention.map(|d| packing.attention_keep(&d, heads)),
        attention_output: dropout.attention_output.map(|d| packing.keep_rows(&d, h)),
        output: dropout.output.map(|d| packing.keep_rows(&d, h)),
        attention_scale: dropout.attention_scale,
        hidden_scale: dropout.hidden_scale,
    };
    x.contiguous()?.apply_op1(LayerOp {
        shape,
        packing,
        mask,
        tensors,
        weights,
        dropout,
        bf16: match precision {
            Precision::F32 => None,
            Precision::Bf16Mixed => bf16_linear::Instructions::here(),
        },
        small_bf16: precision == Precision::Bf16Mixed && scorekit_kernels::bf16dot::available(),
        saved: Mutex::new(None),
        sink,
    })
}

/// The tokens of a padded batch, packed: sequence `i` holds `lens[i]` tokens from padded row
/// `i·s` on, and rows `starts[i]..starts[i + 1]` of the packed layout. The layer computes only
/// these rows (Possible Stories batches are ~18% padding, ~32% of the attention), which gives
/// the padded computation's numbers on them: padded keys have weight exactly 0 (the masked
/// softmax), and padded queries feed nothing a loss on the first tokens sees; their output rows
/// are zero. Masks that are not a prefix of kept keys (or keep none) leave every row in.
struct Packing {
    /// Padded length.
    s: usize,
    /// Tokens per sequence.
    lens: Vec<usize>,
    /// First packed row of each sequence, and the total at the end.
    starts: Vec<usize>,
    /// First element of each (sequence, head) attention block, and the total at the end.
    blocks: Vec<usize>,
}

impl Packing {
    fn new(mask: &[f32], b: usize, s: usize, heads: usize) -> Packing {
        let prefix = |row: &[f32]| {
            let n = row.iter().take_while(|&&v| v == 0.0).count();
            (n > 0 && row[n..].iter().all(|&v| v != 0.0)).then_some(n)
        };
        let lens: Option<Vec<usize>> = mask.chunks(s.max(1)).take(b).map(prefix).collect();
        let lens = lens.unwrap_or_else(|| vec![s; b]);
        let mut starts = vec![0];
        let mut blocks = vec![0];
        for &n in &lens {
            starts.push(starts.last().copied().unwrap_or(0) + n);
            for _ in 0..heads {
                blocks.push(blocks.last().copied().unwrap_or(0) + n * n);
            }
        }
        Packing {
            s,
            lens,
            starts,
            blocks,
        }
    }

    /// Packed rows.
    fn tokens(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// Elements of all attention blocks.
    fn attention_len(&self) -> usize {
        self.blocks.last().copied().unwrap_or(0)
    }

    /// The range of attention block `job` (sequence `job / heads`).
    fn block(&self, job: usize) -> std::ops::Range<usize> {
        self.blocks[job]..self.blocks[job + 1]
    }

    /// Each sequence's packed rows.
    fn row_ranges(&self) -> Vec<std::ops::Range<usize>> {
        self.starts.windows(2).map(|w| w[0]..w[1]).collect()
    }

    /// `all` cut into the attention blocks.
    fn blocks<'a, T>(&self, mut all: &'a mut [T]) -> Vec<&'a mut [T]> {
        let mut out = Vec::with_capacity(self.blocks.len() - 1);
        for w in self.blocks.windows(2) {
            let (block, rest) = all.split_at_mut(w[1] - w[0]);
            out.push(block);
            all = rest;
        }
        out
    }

    /// `all` cut into the sequences' packed rows of width `w`.
    fn sequences<'a, T>(&self, mut all: &'a mut [T], w: usize) -> Vec<&'a mut [T]> {
        let mut out = Vec::with_capacity(self.lens.len());
        for &n in &self.lens {
            let (part, rest) = all.split_at_mut(n * w);
            out.push(part);
            all = rest;
        }
        out
    }

    /// The token rows (width `w`) of a padded `[b·s, w]` matrix, copied in parallel (a
    /// layer's input and output gradient: on one thread these copies were 2% of a step).
    fn gather(&self, padded: &[f32], w: usize) -> Vec<f32> {
        let mut out = overwritten(self.tokens() * w);
        self.sequences(&mut out, w)
            .into_par_iter()
            .enumerate()
            .for_each(|(i, part)| {
                let at = i * self.s * w;
                part.copy_from_slice(&padded[at..at + part.len()]);
            });
        out
    }

    /// The padded `[b·s, w]` matrix of packed rows, zero in the padding, copied in parallel.
    fn scatter(&self, packed: &[f32], w: usize) -> Vec<f32> {
        let mut out = vec![0f32; self.lens.len() * self.s * w];
        out.par_chunks_mut((self.s * w).max(1))
            .enumerate()
            .for_each(|(i, seq)| {
                let src = &packed[self.starts[i] * w..self.starts[i + 1] * w];
                seq[..src.len()].copy_from_slice(src);
            });
        out
    }

    /// The keep decisions of the token × token part of each (sequence, head) block of a
    /// padded `[b, heads, s, s]` attention mask, block after block, computed in parallel.
    fn attention_keep(&self, draws: &KeepDraws, heads: usize) -> Vec<bool> {
        let s = self.s;
        let mut out = vec![false; self.attention_len()];
        self.blocks(&mut out)
            .into_par_iter()
            .enumerate()
            .for_each(|(job, block)| {
                let n = self.lens[job / heads];
                for (r, row) in block.chunks_mut(n.max(1)).enumerate() {
                    draws.fill((job * s + r) * s, row);
                }
            });
        out
    }

    /// The keep decisions of the token rows (width `w`) of a padded `[b·s, w]` mask, computed
    /// in parallel.
    fn keep_rows(&self, draws: &KeepDraws, w: usize) -> Vec<bool> {
        let mut out = vec![false; self.tokens() * w];
        self.sequences(&mut out, w)
            .into_par_iter()
            .enumerate()
            .for_each(|(i, part)| {
                part.par_chunks_mut(1 << 14)
                    .enumerate()
                    .for_each(|(c, chunk)| draws.fill(i * self.s * w + (c << 14), chunk));
            });
        out
    }
}

/// The weights as plain vectors, Q, K and V stacked (one product for the three).
struct Weights {
    qkv_w: Vec<f32>,
    qkv_b: Vec<f32>,
    o_w: Vec<f32>,
    o_b: Vec<f32>,
    ln1_g: Vec<f32>,
    ln1_b: Vec<f32>,
    i_w: Vec<f32>,
    i_b: Vec<f32>,
    o2_w: Vec<f32>,
    o2_b: Vec<f32>,
    ln2_g: Vec<f32>,
    ln2_b: Vec<f32>,
}

impl Weights {
    fn read(t: &LayerTensors) -> Result<Weights> {
        let v = |i: usize| -> Result<Vec<f32>> { t.0[i].flatten_all()?.to_vec1::<f32>() };
        let stack = |a: usize, b: usize, c: usize| -> Result<Vec<f32>> {
            Ok([v(a)?, v(b)?, v(c)?].concat())
        };
        Ok(Weights {
            qkv_w: stack(0, 2, 4)?,
            qkv_b: stack(1, 3, 5)?,
            o_w: v(6)?,
            o_b: v(7)?,
            ln1_g: v(8)?,
            ln1_b: v(9)?,
            i_w: v(10)?,
            i_b: v(11)?,
            o2_w: v(12)?,
            o2_b: v(13)?,
            ln2_g: v(14)?,
            ln2_b: v(15)?,
        })
    }
}

/// What the forward pass keeps for the backward.
struct Saved {
    /// Q | K | V `[tokens, 3h]` (packed rows, as everything here).
    qkv: Vec<f32>,
    /// Attention probabilities before dropout, an n×n block per (sequence, head).
    probs: Vec<f32>,
    /// Attention context `[tokens, h]`.
    ctx: Vec<f32>,
    /// Input of the first LayerNorm.
    r1: Vec<f32>,
    /// Its output.
    a: Vec<f32>,
    /// Feed-forward input to GELU `[tokens, f]`.
    pre: Vec<f32>,
    /// GELU's output.
    act: Vec<f32>,
    /// Input of the second LayerNorm.
    r2: Vec<f32>,
}

impl Saved {
    /// Hands every buffer to [`overwritten`] (after the backward pass).
    fn recycle(self) {
        let Saved {
            qkv,
            probs,
            ctx,
            r1,
            a,
            pre,
            act,
            r2,
        } = self;
        [qkv, probs, ctx, r1, a, pre, act, r2]
            .into_iter()
            .for_each(recycle);
    }
}

struct LayerOp {
    shape: LayerShape,
    packing: Packing,
    mask: Vec<f32>,
    tensors: LayerTensors,
    weights: Weights,
    dropout: PackedDropout,
    /// bf16-mixed products on these instructions (None: f32).
    bf16: Option<bf16_linear::Instructions>,
    /// bf16-mixed attention products on AVX512-BF16 (`bf16small`); else the f32 kernel, the
    /// results rounded after in bf16-mixed.
    small_bf16: bool,
    saved: Mutex<Option<Saved>>,
    sink: GradSink,
}

/// Buffers the layers have finished with (activations after their backward, gradients after
/// their products), handed to the next buffer a layer overwrites in full, so that it is not
/// first filled with zeros: `vec![0; n]` on memory the allocator kept was a memset of ~400 MB a
/// MiniLM step (3.4% of a bf16-mixed step's samples, `perf`).
static SPARE: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());

/// Spare buffers kept at most (a layer's forward and backward free about a dozen).
const SPARE_MAX: usize = 32;

/// A vector of `len` values for a caller that overwrites every one: a spare buffer (holding old
/// values, not zeros) when one has the capacity, else a new zeroed one.
fn overwritten(len: usize) -> Vec<f32> {
    let taken = {
        let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
        // The smallest that fits, so large buffers stay for large requests.
        let best = (0..spare.len())
            .filter(|&i| spare[i].capacity() >= len)
            .min_by_key(|&i| spare[i].capacity());
        best.map(|i| spare.swap_remove(i))
    };
    match taken {
        Some(mut v) => {
            if v.len() >= len {
                v.truncate(len);
            } else {
                v.resize(len, 0.0);
            }
            v
        }
        None => vec![0f32; len],
    }
}

/// Fills every spare buffer with NaN, so that a test run after it fails wherever a layer reads
/// a value of a recycled buffer it did not write (a test hook; scoring and training never call
/// it).
#[doc(hidden)]
pub fn poison_spare_buffers() {
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    spare.iter_mut().for_each(|v| v.fill(f32::NAN));
}

/// Hands `v` to [`overwritten`] (dropped when enough are kept).
fn recycle(v: Vec<f32>) {
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    if spare.len() < SPARE_MAX && v.capacity() > 0 {
        spare.push(v);
    }
}

/// `x · keep-scale` where kept, 0 where dropped (the composed path's `x * mask`).
fn apply_dropout(x: &mut [f32], keep: Option<&Vec<bool>>, scale: f32) {
    if let Some(keep) = keep {
        x.par_chunks_mut(1 << 14)
            .zip(keep.par_chunks(1 << 14))
            .for_each(|(xs, ks)| drop_in_place(xs, ks, scale));
    }
}

/// [`apply_dropout`] into a new vector, `x` left as it is (a gradient both the dropout's
/// backward and the residual path read), in one parallel pass.
fn dropped(x: &[f32], keep: Option<&Vec<bool>>, scale: f32) -> Vec<f32> {
    let mut out = overwritten(x.len());
    out.par_chunks_mut(1 << 14)
        .zip(x.par_chunks(1 << 14))
        .enumerate()
        .for_each(|(c, (o, xs))| {
            o.copy_from_slice(xs);
            if let Some(keep) = keep {
                drop_in_place(o, &keep[c << 14..(c << 14) + xs.len()], scale);
            }
        });
    out
}

/// `x · keep-scale` where kept, 0 where dropped, on one thread (inside a parallel job).
fn drop_in_place(x: &mut [f32], keep: &[bool], scale: f32) {
    for (v, &k) in x.iter_mut().zip(keep) {
        *v *= if k { scale } else { 0.0 };
    }
}

/// `a += b`, element by element.
fn add_into(a: &mut [f32], b: &[f32]) {
    a.par_chunks_mut(1 << 14)
        .zip(b.par_chunks(1 << 14))
        .for_each(|(x, y)| x.iter_mut().zip(y).for_each(|(p, q)| *p += q));
}

/// `y = x·wᵀ + bias` for `x` `[m, k]`, `w` `[n, k]`.
fn linear(x: &[f32], m: usize, w: &[f32], bias: &[f32], n: usize, k: usize) -> Vec<f32> {
    let mut y = vec![0f32; m * n];
    let ep = Epilogue {
        bias: Some(bias),
        accumulate: false,
        gelu: false,
    };
    gemm(m, x, k, &PackedB::from_nk(w, n, k, k), &mut y, n, ep, true);
    y
}

/// Per-thread scratch of the attention jobs.
#[derive(Default)]
struct Scratch {
    /// Two n×n matrices.
    t1: Vec<f32>,
    t2: Vec<f32>,
    /// The f32 products' packed B.
    packed: PackedB,
    /// The bf16 products' converted operands.
    small: SmallBf16,
    /// A softmax row.
    z: Vec<f64>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Default::default());
}

impl LayerOp {
    /// `y = x·wᵀ + bias` for `x` `[m, k]`, `w` `[n, k]`, in the layer's precision.
    fn linear(&self, x: &[f32], m: usize, w: &[f32], bias: &[f32], n: usize, k: usize) -> Vec<f32> {
        if let Some(on) = self.bf16 {
            bf16_linear::linear(x, m, w, bias, n, k, on)
        } else {
            linear(x, m, w, bias, n, k)
        }
    }

    /// dx, dw, db of [`LayerOp::linear`] for output gradient `g`; `parts` linears stacked in
    /// `w` (see `bf16_linear::grads`; f32 sums them in one product, as before).
    #[allow(clippy::too_many_arguments)]
    fn grads(
        &self,
        x: &[f32],
        w: &[f32],
        g: &[f32],
        m: usize,
        n: usize,
        k: usize,
        parts: usize,
    ) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        if let Some(on) = self.bf16 {
            bf16_linear::grads(x, w, g, m, n, k, parts, on)
        } else {
            grads(x, w, g, m, n, k)
        }
    }

    /// The scale of the attention scores, and what the softmax applies of it: all of it in
    /// f32; in bf16-mixed none, the scores having been scaled and rounded (autocast scales the
    /// bf16 product in bf16) by [`LayerOp::scale_scores`].
    fn softmax_scale(&self, d: usize) -> (f32, f64) {
        let scale = 1.0 / (d as f64).sqrt();
        // candle's `scores * scale` multiplies by the scale as f32.
        (scale as f32, if self.bf16.is_some() { 1.0 } else { scale })
    }

    /// In bf16-mixed, a product's result (or a gradient of the scaled scores) rounded, scaled
    /// and rounded again, as `round(round(q·kᵀ) · scale)` and its backward do; nothing in f32.
    fn scale_scores(&self, v: &mut [f32], scale: f32) {
        if self.bf16.is_some() {
            v.iter_mut()
                .for_each(|x| *x = bf16_round(bf16_round(*x) * scale));
        }
    }

    /// One attention job's product `out = A·B` (A m×k, B k×n, into the first m rows × n columns
    /// of the block `out`) in the layer's precision. bf16-mixed: on AVX512-BF16 (`bf16small`,
    /// each result rounded: autocast's bf16 product); on AMX CPUs without it, the f32 kernel on
    /// the operands (bf16 values already) with the result rounded after. f32: the f32 kernel.
    #[allow(clippy::too_many_arguments)]
    fn head_product(
        &self,
        sc: &mut Scratch,
        m: usize,
        n: usize,
        k: usize,
        a: Operand,
        b: Operand,
        out: &mut BlockMut,
    ) {
        if self.small_bf16 {
            return sc.small.product_block(m, n, k, a, b, out, true);
        }
        match b {
            Operand::Rows { x, ld } => sc.packed.repack_kn(x, k, n, ld),
            Operand::Columns { x, ld } => sc.packed.repack_nk(x, n, k, ld),
        }
        match a {
            Operand::Rows { x, ld } => {
                gemm_block(m, x, ld, &sc.packed, out, Epilogue::default(), false)
            }
            Operand::Columns { x, ld } => gemm_at_block(m, x, ld, &sc.packed, out),
        }
        if self.bf16.is_some() {
            for r in 0..m {
                bf16_round_in_place(&mut out.row(r)[..n]);
            }
        }
    }

    fn forward(&self, x: &[f32]) -> (Vec<f32>, Saved) {
        let LayerShape {
            s,
            h,
            heads,
            f,
            eps,
            ..
        } = self.shape;
        let (m, d) = (self.packing.tokens(), h / heads);
        let w = &self.weights;
        let dr = &self.dropout;
        let qkv = self.linear(x, m, &w.qkv_w, &w.qkv_b, 3 * h, h);

        // Attention, one job per (sequence, head) over the sequence's n tokens; each job owns
        // its n×n block of `probs` and its head's columns of its sequence's rows of `ctx`.
        let pk = &self.packing;
        let (scale, softmax_scale) = self.softmax_scale(d);
        // Every value of both is written below (each job its block and its columns).
        let mut probs = overwritten(pk.attention_len());
        let mut ctx = overwritten(m * h);
        let heads_cols: Vec<_> = (0..heads).map(|hd| hd * d..hd * d + d).collect();
        let ctx_blocks = BlockMut::grid(&mut ctx, h, &pk.row_ranges(), &heads_cols);
        pk.blocks(&mut probs)
            .into_par_iter()
            .zip(ctx_blocks)
            .enumerate()
            .for_each(|(job, (p, mut out))| {
                let (bi, hd) = (job / heads, job % heads);
                let n = pk.lens[bi];
                if n == 0 {
                    return;
                }
                let base = pk.starts[bi] * 3 * h + hd * d;
                SCRATCH.with(|sc| {
                    let sc = &mut *sc.borrow_mut();
                    let mut scores = std::mem::take(&mut sc.t1);
                    scores.resize(n * n, 0.0);
                    sc.z.resize(n, 0.0);
                    let q = Operand::Rows {
                        x: &qkv[base..],
                        ld: 3 * h,
                    };
                    // Kᵀ: K's rows read as columns.
                    let kt = Operand::Columns {
                        x: &qkv[base + h..],
                        ld: 3 * h,
                    };
                    let mut block = BlockMut::new(&mut scores, n, n, n);
                    self.head_product(sc, n, n, d, q, kt, &mut block);
                    self.scale_scores(&mut scores, scale);
                    let mrow = &self.mask[bi * s..bi * s + n];
                    for (xr, yr) in scores.chunks(n).zip(p.chunks_mut(n)) {
                        softmax_row(xr, mrow, softmax_scale, yr, &mut sc.z);
                    }
                    sc.t1 = scores;
                    let mut pd = std::mem::take(&mut sc.t2);
                    // The product's operand: the probabilities after dropout, rounded in
                    // bf16-mixed (by the bf16 products as they convert them, else here).
                    let round = self.bf16.is_some() && !self.small_bf16;
                    let pd_ref: &[f32] = if dr.attention.is_none() && !round {
                        &*p
                    } else {
                        pd.clear();
                        pd.extend_from_slice(p);
                        if let Some(keep) = &dr.attention {
                            drop_in_place(&mut pd, &keep[pk.block(job)], dr.attention_scale);
                        }
                        if round {
                            bf16_round_in_place(&mut pd);
                        }
                        &pd
                    };
                    let v = Operand::Rows {
                        x: &qkv[base + 2 * h..],
                        ld: 3 * h,
                    };
                    let pd_op = Operand::Rows { x: pd_ref, ld: n };
                    // Job (bi, hd)'s block: rows of sequence bi × its head's columns.
                    self.head_product(sc, n, d, n, pd_op, v, &mut out);
                    sc.t2 = pd;
                });
            });

        let mut r1 = self.linear(&ctx, m, &w.o_w, &w.o_b, h, h);
        apply_dropout(&mut r1, dr.attention_output.as_ref(), dr.hidden_scale);
        add_into(&mut r1, x);
        let a = ln_rows(&r1, &w.ln1_g, &w.ln1_b, eps);
        let pre = self.linear(&a, m, &w.i_w, &w.i_b, f, h);
        let mut act = overwritten(pre.len());
        gelu_into(&pre, &mut act);
        let mut r2 = self.linear(&act, m, &w.o2_w, &w.o2_b, h, f);
        apply_dropout(&mut r2, dr.output.as_ref(), dr.hidden_scale);
        add_into(&mut r2, &a);
        let y = ln_rows(&r2, &w.ln2_g, &w.ln2_b, eps);
        let saved = Saved {
            qkv,
            probs,
            ctx,
            r1,
            a,
            pre,
            act,
            r2,
        };
        (y, saved)
    }

    /// dx of the layer for output gradient `dy`; the weights' gradients go to the sink.
    fn backward(&self, x: &[f32], dy: &[f32], sv: &Saved) -> Result<Vec<f32>> {
        let LayerShape { h, f, eps, .. } = self.shape;
        let m = self.packing.tokens();
        let w = &self.weights;
        let dr = &self.dropout;

        let (dr2, dg2, db2) = ln_bwd(&sv.r2, &w.ln2_g, dy, eps);
        let d_out = dropped(&dr2, dr.output.as_ref(), dr.hidden_scale);
        let (dact, dw_o2, db_o2) = self.grads(&sv.act, &w.o2_w, &d_out, m, h, f, 1);
        recycle(d_out);
        let mut dpre = overwritten(dact.len());
        gelu_grad_into(&sv.pre, &dact, &mut dpre);
        recycle(dact);
        let (mut da, dw_i, db_i) = self.grads(&sv.a, &w.i_w, &dpre, m, f, h, 1);
        recycle(dpre);
        add_into(&mut da, &dr2);
        recycle(dr2);
        let (dr1, dg1, db1) = ln_bwd(&sv.r1, &w.ln1_g, &da, eps);
        recycle(da);
        let d_attn_out = dropped(&dr1, dr.attention_output.as_ref(), dr.hidden_scale);
        let (dctx, dw_o, db_o) = self.grads(&sv.ctx, &w.o_w, &d_attn_out, m, h, h, 1);
        recycle(d_attn_out);
        let dqkv = self.attention_backward(&sv.qkv, &sv.probs, &dctx);
        recycle(dctx);
        let (mut dx, dw_qkv, db_qkv) = self.grads(x, &w.qkv_w, &dqkv, m, 3 * h, h, 3);
        recycle(dqkv);
        add_into(&mut dx, &dr1);
        recycle(dr1);

        let t = &self.tensors.0;
        let dev = t[0].device();
        let put = |i: usize, g: Vec<f32>| -> Result<()> {
            self.sink
                .push(&t[i], Tensor::from_vec(g, t[i].shape(), dev)?);
            Ok(())
        };
        for (j, (wi, bi)) in [(0, 1), (2, 3), (4, 5)].into_iter().enumerate() {
            put(wi, dw_qkv[j * h * h..(j + 1) * h * h].to_vec())?;
            put(bi, db_qkv[j * h..(j + 1) * h].to_vec())?;
        }
        put(6, dw_o)?;
        put(7, db_o)?;
        put(8, dg1)?;
        put(9, db1)?;
        put(10, dw_i)?;
        put(11, db_i)?;
        put(12, dw_o2)?;
        put(13, db_o2)?;
        put(14, dg2)?;
        put(15, db2)?;
        Ok(dx)
    }

    /// dQ | dK | dV `[tokens, 3h]` from the context's gradient `dctx` `[tokens, h]`.
    fn attention_backward(&self, qkv: &[f32], probs: &[f32], dctx: &[f32]) -> Vec<f32> {
        let LayerShape { h, heads, .. } = self.shape;
        let pk = &self.packing;
        let d = h / heads;
        let (scale, softmax_scale) = self.softmax_scale(d);
        let dr = &self.dropout;
        // Every value is written below (each job its sequence's rows × its head's columns).
        let mut dqkv = overwritten(pk.tokens() * 3 * h);
        // Job (bi, hd) writes rows of sequence bi × its head's columns of Q, K and V: three
        // blocks, side by side in the grid (columns hd·d, h + hd·d, 2h + hd·d).
        let cols: Vec<_> = (0..heads)
            .flat_map(|hd| [0, h, 2 * h].map(|part| part + hd * d..part + hd * d + d))
            .collect();
        let mut blocks = BlockMut::grid(&mut dqkv, 3 * h, &pk.row_ranges(), &cols);
        blocks.par_chunks_mut(3).enumerate().for_each(|(job, out)| {
            let (bi, hd) = (job / heads, job % heads);
            let s = pk.lens[bi];
            if s == 0 {
                return;
            }
            let base = pk.starts[bi] * 3 * h + hd * d;
            let p = &probs[pk.block(job)];
            let keep = dr.attention.as_ref().map(|k| &k[pk.block(job)]);
            let dc = &dctx[pk.starts[bi] * h + hd * d..];
            let [dq, dk, dv] = out else {
                unreachable!("three blocks per job")
            };
            fn rows(x: &[f32], ld: usize) -> Operand<'_> {
                Operand::Rows { x, ld }
            }
            let (q, k) = (rows(&qkv[base..], 3 * h), rows(&qkv[base + h..], 3 * h));
            let dc_op = rows(dc, h);
            SCRATCH.with(|sc| {
                let sc = &mut *sc.borrow_mut();
                let (mut t1, mut t2) = (std::mem::take(&mut sc.t1), std::mem::take(&mut sc.t2));
                // d(dropped probs) = dctx · Vᵀ (rounded in bf16-mixed before the dropout's
                // backward, as the product's result).
                t1.resize(s * s, 0.0);
                let vt = Operand::Columns {
                    x: &qkv[base + 2 * h..],
                    ld: 3 * h,
                };
                self.head_product(sc, s, s, d, dc_op, vt, &mut BlockMut::new(&mut t1, s, s, s));
                // The dropped probabilities, then dV = (dropped probs)ᵀ · dctx.
                t2.clear();
                t2.extend_from_slice(p);
                if let Some(keep) = keep {
                    drop_in_place(&mut t2, keep, dr.attention_scale);
                    drop_in_place(&mut t1, keep, dr.attention_scale);
                }
                if self.bf16.is_some() && !self.small_bf16 {
                    // The product's operand, rounded (the bf16 products round as they
                    // convert).
                    bf16_round_in_place(&mut t2);
                }
                let t2t = Operand::Columns { x: &t2, ld: s };
                self.head_product(sc, s, d, s, t2t, dc_op, dv);
                // d(scores) through the softmax (t1 has been through the dropout).
                for (dr, (pr, gr)) in t2.chunks_mut(s).zip(p.chunks(s).zip(t1.chunks(s))) {
                    softmax_grad_row(pr, gr, softmax_scale, dr);
                }
                self.scale_scores(&mut t2, scale);
                // dQ = dS · K, dK = dSᵀ · Q.
                self.head_product(sc, s, d, s, rows(&t2, s), k, dq);
                let dst = Operand::Columns { x: &t2, ld: s };
                self.head_product(sc, s, d, s, dst, q, dk);
                (sc.t1, sc.t2) = (t1, t2);
            });
        });
        dqkv
    }
}

impl CustomOp1 for LayerOp {
    fn name(&self) -> &'static str {
        "scorekit-bert-layer"
    }

    fn cpu_fwd(&self, st: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = crate::ops::slice::<f32>(st, l)?;
        let h = self.shape.h;
        let (y, saved) = self.forward(&self.packing.gather(x, h));
        *self.saved.lock().unwrap_or_else(|e| e.into_inner()) = Some(saved);
        Ok((
            CpuStorage::F32(self.packing.scatter(&y, h)),
            l.shape().clone(),
        ))
    }

    fn bwd(&self, x: &Tensor, _y: &Tensor, dy: &Tensor) -> Result<Option<Tensor>> {
        let saved = self.saved.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(saved) = saved else {
            bail!("fused BERT layer: backward ran twice for one forward")
        };
        let (pk, h) = (&self.packing, self.shape.h);
        let dx = with_slice::<f32, _>(x, |x| {
            with_slice::<f32, _>(dy, |dy| {
                let (x, dy) = (pk.gather(x, h), pk.gather(dy, h));
                let dx = self.backward(&x, &dy, &saved)?;
                let padded = pk.scatter(&dx, h);
                [x, dy, dx].into_iter().for_each(recycle);
                Ok(padded)
            })
        })?;
        saved.recycle();
        Ok(Some(Tensor::from_vec(dx, x.shape(), x.device())?))
    }
}
