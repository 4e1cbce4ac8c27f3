//! A decoder-only chat model (Llama, Qwen2, Qwen3, Mistral, Gemma 2, Phi-3 and their kin) on
//! scorekit's kernels, for the decoder letter judge: one forward pass over the prompts, the
//! next-token logits at each prompt's last token. The prompt is all of such a judge's work, so
//! every product runs on the packed kernels in f32, bf16 or int8 (`Products`), as the encoders'.
//!
//! As `transformers`' eager forward computes it, per sequence on its own tokens (no padding is
//! ever computed): per layer an RMSNorm (`w · x̂`, or Gemma's `(1 + w) · x̂`, folded into the
//! weight at load), the fused Q|K|V product with its bias, the per-head q/k norms where the
//! family has them, RoPE at positions `0..len` from the caller's [`RopeTable`] (rotating the first
//! `rotary_dim` dimensions, `rotate_half` style), grouped-query attention with the causal (and
//! sliding-window) mask, scores scaled and soft-capped where the family caps them and a softmax in
//! f32, the output product (Gemma 2's sandwich norm on it), then the gated feed-forward layer
//! `down(act(gate(h)) · up(h))`. The final norm and the head (tied or its own) run on the last
//! token of each sequence only, logits soft-capped where the family caps them.
//!
//! Causal attention runs in blocks of [`QUERY_BLOCK`] queries, each against the keys up to its
//! last query (and from its first query's window start): about half the work of the full square
//! that an additive mask costs PyTorch.

use crate::{err, Linear, Products, Weight};
use rayon::prelude::*;
use scorekit_kernels::act::Activation;
use scorekit_kernels::attention::{self, HeadRows};
use scorekit_kernels::block::BlockMut;
use scorekit_kernels::cpu::Avx512;
use scorekit_kernels::widened::to_bf16;

/// Reads a tensor by its full name and shape as f32, or `None` when the file has no such
/// tensor (an error when it has one of another shape).
pub type ReadOptional<'a> =
    &'a (dyn Fn(&str, &[usize]) -> candle_core::Result<Option<Vec<f32>>> + Sync);

/// Query rows whose attention runs as one job.
pub const QUERY_BLOCK: usize = 64;

/// The model's shape and the family's choices, from config.json (the runtime reads it with
/// `models::decoder::DecoderConfig`).
#[derive(Debug, Clone)]
pub struct DecoderShape {
    /// Hidden size.
    pub hidden: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (each serves `heads / kv_heads` query heads).
    pub kv_heads: usize,
    /// Size of one head.
    pub head_dim: usize,
    /// Feed-forward inner size.
    pub intermediate: usize,
    /// Decoder layers.
    pub layers: usize,
    /// Vocabulary rows of the embedding table and of the head.
    pub vocab: usize,
    /// RMSNorm epsilon.
    pub eps: f32,
    /// The feed-forward activation (applied to the gate).
    pub act: Activation,
    /// Gemma's norms: `(1 + w) · x̂`.
    pub norm_plus_one: bool,
    /// Per-head RMSNorms of queries and keys (Qwen3, Gemma 3).
    pub qk_norm: bool,
    /// Gemma 2's norms after attention and around the feed-forward layer.
    pub sandwich_norms: bool,
    /// Phi-3's fused `qkv_proj` and `gate_up_proj`.
    pub fused: bool,
    /// Q/K/V products have biases (Qwen2).
    pub qkv_bias: bool,
    /// The output product has a bias.
    pub o_bias: bool,
    /// The feed-forward products have biases.
    pub mlp_bias: bool,
    /// Embeddings are multiplied by this (Gemma: √hidden, rounded to the model's dtype).
    pub embed_scale: Option<f32>,
    /// Scores are multiplied by this before the softmax.
    pub attn_scaling: f32,
    /// Scores soft-capped: `tanh(s / cap) · cap` (Gemma 2).
    pub attn_softcap: Option<f32>,
    /// Logits soft-capped the same way (Gemma 2).
    pub final_softcap: Option<f32>,
    /// Each layer's sliding window, if it has one.
    pub windows: Vec<Option<usize>>,
    /// The head is the embedding table.
    pub tied: bool,
    /// Keep the embedding table in bf16 (a bf16 model: the table is half the f32 size and its
    /// rows are exactly the file's).
    pub embed_bf16: bool,
}

/// RoPE's `cos` and `sin` of positions `0..len` for one set of inverse frequencies, multiplied
/// by the attention scaling of the rope type, as transformers' rotary embedding computes them
/// (in f32: `position · inv_freq`, then `cos`/`sin`, then `· scaling`).
pub struct RopeTable {
    half: usize,
    len: usize,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl RopeTable {
    /// The table of `len` positions (`inv_freq`: `rotary_dim / 2` values).
    pub fn new(inv_freq: &[f32], scaling: f32, len: usize) -> RopeTable {
        let half = inv_freq.len();
        let mut cos = Vec::with_capacity(len * half);
        let mut sin = Vec::with_capacity(len * half);
        for p in 0..len {
            for f in inv_freq {
                let a = p as f32 * f;
                cos.push(a.cos() * scaling);
                sin.push(a.sin() * scaling);
            }
        }
        RopeTable {
            half,
            len,
            cos,
            sin,
        }
    }

    /// Rotate the first `2·half` values of `x` (one head of one token at position `pos`):
    /// `x · cos + rotate_half(x) · sin`, each product rounded before the sum as in PyTorch.
    fn rotate(&self, x: &mut [f32], pos: usize) {
        let h = self.half;
        let (c, s) = (
            &self.cos[pos * h..(pos + 1) * h],
            &self.sin[pos * h..(pos + 1) * h],
        );
        for i in 0..h {
            let (a, b) = (x[i], x[i + h]);
            x[i] = a * c[i] + (-b) * s[i];
            x[i + h] = b * c[i] + a * s[i];
        }
    }
}

struct Layer {
    input_norm: Vec<f32>,
    /// Q|K|V in one product (`(heads + 2·kv_heads) · head_dim` outputs).
    qkv: Linear,
    q_norm: Option<Vec<f32>>,
    k_norm: Option<Vec<f32>>,
    o: Linear,
    post_attn_norm: Option<Vec<f32>>,
    pre_ff_norm: Vec<f32>,
    post_ff_norm: Option<Vec<f32>>,
    gate: Linear,
    up: Linear,
    down: Linear,
    window: Option<usize>,
}

/// The embedding table, rows `hidden` wide.
enum Table {
    F32(Vec<f32>),
    Bf16(Vec<u16>),
}

/// A decoder-only model on scorekit's kernels.
pub struct FastDecoder {
    embed: Table,
    layers: Vec<Layer>,
    final_norm: Vec<f32>,
    head: Linear,
    shape: DecoderShape,
    /// The CPU runs AVX-512F (checked at load).
    cpu: Avx512,
}

impl FastDecoder {
    /// Load the model through `read` (transformers' names under `prefix`, e.g. `model.`:
    /// `embed_tokens`, `layers.N....`, `norm`; the head `head` unless tied), its products packed
    /// for `products`. A missing or misshapen tensor is an error naming it.
    pub fn load(
        read: ReadOptional,
        prefix: &str,
        head: &str,
        shape: DecoderShape,
        products: Products,
    ) -> candle_core::Result<FastDecoder> {
        let cpu = products.check()?;
        let s = &shape;
        if s.windows.len() != s.layers || s.kv_heads == 0 || !s.heads.is_multiple_of(s.kv_heads) {
            return Err(err(
                "decoder: heads, kv heads or windows do not fit the layers",
            ));
        }
        let need = |name: &str, dims: &[usize]| -> candle_core::Result<Vec<f32>> {
            read(name, dims)?.ok_or_else(|| err(format!("missing tensor {name}")))
        };
        let (h, hd, inter) = (s.hidden, s.head_dim, s.intermediate);
        let (qn, kvn) = (s.heads * hd, s.kv_heads * hd);
        let plus = s.norm_plus_one;
        let norm = |name: &str, n: usize| -> candle_core::Result<Vec<f32>> {
            let mut w = need(&format!("{name}.weight"), &[n])?;
            if plus {
                // Gemma: `x̂ · (1.0 + weight.float())`.
                w.iter_mut().for_each(|v| *v += 1.0);
            }
            Ok(w)
        };
        let lin = |w: Vec<f32>, b: Option<Vec<f32>>, n: usize, k: usize| Linear {
            w: Weight::pack(&w, n, k, products),
            b: b.unwrap_or_else(|| vec![0.0; n]),
        };
        let bias = |name: &str, n: usize, has: bool| -> candle_core::Result<Option<Vec<f32>>> {
            if has {
                need(&format!("{name}.bias"), &[n]).map(Some)
            } else {
                Ok(None)
            }
        };
        let load_layer = |l: usize| -> candle_core::Result<Layer> {
            let p = format!("{prefix}layers.{l}.");
            let a = format!("{p}self_attn.");
            let m = format!("{p}mlp.");
            let qkv_n = qn + 2 * kvn;
            let (wqkv, bqkv) = if s.fused {
                (
                    need(&format!("{a}qkv_proj.weight"), &[qkv_n, h])?,
                    bias(&format!("{a}qkv_proj"), qkv_n, s.qkv_bias)?,
                )
            } else {
                let mut w = Vec::with_capacity(qkv_n * h);
                let mut b = s.qkv_bias.then(|| Vec::with_capacity(qkv_n));
                for (part, n) in [("q_proj", qn), ("k_proj", kvn), ("v_proj", kvn)] {
                    w.extend(need(&format!("{a}{part}.weight"), &[n, h])?);
                    if let (Some(b), Some(part_b)) =
                        (b.as_mut(), bias(&format!("{a}{part}"), n, s.qkv_bias)?)
                    {
                        b.extend(part_b);
                    }
                }
                (w, b)
            };
            let (gate, up) = if s.fused {
                let mut w = need(&format!("{m}gate_up_proj.weight"), &[2 * inter, h])?;
                let b = bias(&format!("{m}gate_up_proj"), 2 * inter, s.mlp_bias)?;
                let up_w = w.split_off(inter * h);
                let (gate_b, up_b) = match b {
                    Some(mut b) => {
                        let up_b = b.split_off(inter);
                        (Some(b), Some(up_b))
                    }
                    None => (None, None),
                };
                (lin(w, gate_b, inter, h), lin(up_w, up_b, inter, h))
            } else {
                let g = need(&format!("{m}gate_proj.weight"), &[inter, h])?;
                let u = need(&format!("{m}up_proj.weight"), &[inter, h])?;
                (
                    lin(
                        g,
                        bias(&format!("{m}gate_proj"), inter, s.mlp_bias)?,
                        inter,
                        h,
                    ),
                    lin(
                        u,
                        bias(&format!("{m}up_proj"), inter, s.mlp_bias)?,
                        inter,
                        h,
                    ),
                )
            };
            let (post_attn_norm, pre_ff_norm, post_ff_norm) = if s.sandwich_norms {
                (
                    Some(norm(&format!("{p}post_attention_layernorm"), h)?),
                    norm(&format!("{p}pre_feedforward_layernorm"), h)?,
                    Some(norm(&format!("{p}post_feedforward_layernorm"), h)?),
                )
            } else {
                (
                    None,
                    norm(&format!("{p}post_attention_layernorm"), h)?,
                    None,
                )
            };
            let (q_norm, k_norm) = if s.qk_norm {
                (
                    Some(norm(&format!("{a}q_norm"), hd)?),
                    Some(norm(&format!("{a}k_norm"), hd)?),
                )
            } else {
                (None, None)
            };
            Ok(Layer {
                input_norm: norm(&format!("{p}input_layernorm"), h)?,
                qkv: lin(wqkv, bqkv, qkv_n, h),
                q_norm,
                k_norm,
                o: lin(
                    need(&format!("{a}o_proj.weight"), &[h, qn])?,
                    bias(&format!("{a}o_proj"), h, s.o_bias)?,
                    h,
                    qn,
                ),
                post_attn_norm,
                pre_ff_norm,
                post_ff_norm,
                gate,
                up,
                down: lin(
                    need(&format!("{m}down_proj.weight"), &[h, inter])?,
                    bias(&format!("{m}down_proj"), h, s.mlp_bias)?,
                    h,
                    inter,
                ),
                window: s.windows[l],
            })
        };
        // The table and the head first, while nothing else is resident (in f32 they are the
        // largest tensors: 2.1 GB each for Llama 3.1 8B), the table's f32 copy dropped as soon
        // as it is kept in bf16.
        let table = need(&format!("{prefix}embed_tokens.weight"), &[s.vocab, h])?;
        let keep = |t: Vec<f32>| {
            if s.embed_bf16 {
                Table::Bf16(t.iter().map(|&v| to_bf16(v)).collect())
            } else {
                Table::F32(t)
            }
        };
        let head_of = |w: &[f32]| Linear {
            w: Weight::pack(w, s.vocab, h, products),
            b: vec![0.0; s.vocab],
        };
        let (embed, head) = if s.tied {
            let head = head_of(&table);
            (keep(table), head)
        } else {
            let embed = keep(table);
            let w = need(&format!("{head}.weight"), &[s.vocab, h])?;
            (embed, head_of(&w))
        };
        // Layers are read and packed two at a time, each on its own thread: each holds a
        // layer's f32 tensors until packed (the packing itself is parallel inside).
        let mut layers = Vec::with_capacity(s.layers);
        for pair in (0..s.layers).collect::<Vec<_>>().chunks(2) {
            let loaded: candle_core::Result<Vec<Layer>> =
                pair.par_iter().map(|&l| load_layer(l)).collect();
            layers.extend(loaded?);
        }
        Ok(FastDecoder {
            embed,
            layers,
            final_norm: norm(&format!("{prefix}norm"), h)?,
            head,
            shape,
            cpu,
        })
    }

    /// Which products run the model (for reports).
    pub fn products_name(&self) -> &'static str {
        self.head.w.products_name()
    }

    /// The model's shape.
    pub fn shape(&self) -> &DecoderShape {
        &self.shape
    }

    /// Row `id` of the embedding table into `out`, scaled where the family scales it.
    fn embed_row(&self, id: usize, out: &mut [f32]) {
        let h = self.shape.hidden;
        match &self.embed {
            Table::F32(t) => out.copy_from_slice(&t[id * h..(id + 1) * h]),
            Table::Bf16(t) => {
                for (o, &b) in out.iter_mut().zip(&t[id * h..(id + 1) * h]) {
                    *o = f32::from_bits((b as u32) << 16);
                }
            }
        }
        if let Some(scale) = self.shape.embed_scale {
            out.iter_mut().for_each(|v| *v *= scale);
        }
    }

    /// RMS-normalise rows of `width` values in place.
    fn rms_rows(&self, x: &mut [f32], width: usize, weight: &[f32]) {
        let (eps, cpu) = (self.shape.eps, self.cpu);
        x.par_chunks_mut(width * 16).for_each(|rows| {
            for r in rows.chunks_mut(width) {
                cpu.rms_norm_row(r, weight, eps);
            }
        });
    }

    /// Next-token logits (`seqs.len()` rows of `vocab`, one after another) at the last token of
    /// each sequence; `ropes[l]` is layer `l`'s table, covering the longest sequence.
    pub fn last_logits(
        &self,
        seqs: &[&[u32]],
        ropes: &[&RopeTable],
    ) -> candle_core::Result<Vec<f32>> {
        let s = &self.shape;
        let (h, hd) = (s.hidden, s.head_dim);
        if seqs.iter().any(|q| q.is_empty()) {
            return Err(err("a decoder needs at least one token per sequence"));
        }
        if let Some(&id) = seqs
            .iter()
            .flat_map(|q| q.iter())
            .find(|&&id| id as usize >= s.vocab)
        {
            return Err(err(format!(
                "token id {id} is outside the vocabulary of {}",
                s.vocab
            )));
        }
        let longest = seqs.iter().map(|q| q.len()).max().unwrap_or(0);
        if ropes.len() != s.layers || ropes.iter().any(|r| r.len < longest || 2 * r.half > hd) {
            return Err(err(
                "decoder: a rope table per layer covering the longest sequence",
            ));
        }
        let mut starts = Vec::with_capacity(seqs.len() + 1);
        starts.push(0);
        for q in seqs {
            starts.push(starts.last().unwrap() + q.len());
        }
        let t = *starts.last().unwrap();
        if t == 0 {
            return Ok(Vec::new());
        }
        let ids: Vec<u32> = seqs.iter().flat_map(|q| q.iter().copied()).collect();
        let mut x = vec![0f32; t * h];
        x.par_chunks_mut(h)
            .zip(ids.par_iter())
            .for_each(|(row, &id)| self.embed_row(id as usize, row));
        let positions: Vec<usize> = seqs.iter().flat_map(|q| 0..q.len()).collect();
        let width = (s.heads + 2 * s.kv_heads) * hd;
        let mut hbuf = vec![0f32; t * h];
        let mut qkv = vec![0f32; t * width];
        let mut ctx = vec![0f32; t * s.heads * hd];
        let mut tmp = vec![0f32; if s.sandwich_norms { t * h } else { 0 }];
        let mut gate = vec![0f32; t * s.intermediate];
        let mut up = vec![0f32; t * s.intermediate];
        for (layer, rope) in self.layers.iter().zip(ropes) {
            hbuf.copy_from_slice(&x);
            self.rms_rows(&mut hbuf, h, &layer.input_norm);
            layer.qkv.run(t, &hbuf, &mut qkv, false, false);
            self.heads_in_place(&mut qkv, &positions, layer, rope);
            self.attention(&qkv, &starts, layer.window, &mut ctx);
            if let Some(n) = &layer.post_attn_norm {
                layer.o.run(t, &ctx, &mut tmp, false, false);
                self.rms_rows(&mut tmp, h, n);
                add(&mut x, &tmp);
            } else {
                layer.o.run(t, &ctx, &mut x, true, false);
            }
            hbuf.copy_from_slice(&x);
            self.rms_rows(&mut hbuf, h, &layer.pre_ff_norm);
            layer.gate.run(t, &hbuf, &mut gate, false, false);
            layer.up.run(t, &hbuf, &mut up, false, false);
            let (n, act, cpu) = (s.intermediate, s.act, self.cpu);
            gate.par_chunks_mut(n * 16)
                .zip(up.par_chunks(n * 16))
                .for_each(|(g, u)| cpu.activate_row(g, Some(u), act));
            if let Some(nw) = &layer.post_ff_norm {
                layer.down.run(t, &gate, &mut tmp, false, false);
                self.rms_rows(&mut tmp, h, nw);
                add(&mut x, &tmp);
            } else {
                layer.down.run(t, &gate, &mut x, true, false);
            }
        }
        let mut last: Vec<f32> = starts[1..]
            .iter()
            .flat_map(|&end| x[(end - 1) * h..end * h].iter().copied())
            .collect();
        self.rms_rows(&mut last, h, &self.final_norm);
        let mut logits = vec![0f32; seqs.len() * s.vocab];
        self.head.run(seqs.len(), &last, &mut logits, false, false);
        if let Some(cap) = s.final_softcap {
            logits
                .par_iter_mut()
                .for_each(|v| *v = (*v / cap).tanh() * cap);
        }
        Ok(logits)
    }

    /// The per-head q/k norms and RoPE, in place on the fused Q|K|V rows (row `i` at position
    /// `positions[i]` of its sequence).
    fn heads_in_place(
        &self,
        qkv: &mut [f32],
        positions: &[usize],
        layer: &Layer,
        rope: &RopeTable,
    ) {
        let s = &self.shape;
        let (hd, eps, cpu) = (s.head_dim, s.eps, self.cpu);
        let width = (s.heads + 2 * s.kv_heads) * hd;
        let rotated = s.heads + s.kv_heads;
        qkv.par_chunks_mut(width)
            .zip(positions.par_iter())
            .for_each(|(row, &pos)| {
                for (i, head) in row[..rotated * hd].chunks_mut(hd).enumerate() {
                    let norm = if i < s.heads {
                        &layer.q_norm
                    } else {
                        &layer.k_norm
                    };
                    if let Some(w) = norm {
                        cpu.rms_norm_row(head, w, eps);
                    }
                    rope.rotate(head, pos);
                }
            });
    }

    /// Causal grouped-query attention per sequence and head on the fused Q|K|V rows, in blocks
    /// of [`QUERY_BLOCK`] queries, into `ctx` (rows `heads · head_dim` wide).
    fn attention(&self, qkv: &[f32], starts: &[usize], window: Option<usize>, ctx: &mut [f32]) {
        let s = &self.shape;
        let (d, heads, kvh) = (s.head_dim, s.heads, s.kv_heads);
        let (ld, inner, rep) = ((heads + 2 * kvh) * d, heads * d, heads / kvh);
        let (scale, cap, cpu) = (s.attn_scaling, s.attn_softcap, self.cpu);
        // A job is (query block, head): the block's rows of its sequence × the head's columns.
        let mut blocks = Vec::new();
        for w in starts.windows(2) {
            let mut a = w[0];
            while a < w[1] {
                let b = (a + QUERY_BLOCK).min(w[1]);
                blocks.push((w[0], a, b));
                a = b;
            }
        }
        let rows: Vec<std::ops::Range<usize>> = blocks.iter().map(|&(_, a, b)| a..b).collect();
        let cols: Vec<std::ops::Range<usize>> = (0..heads).map(|hd| hd * d..hd * d + d).collect();
        let outs = BlockMut::grid(ctx, inner, &rows, &cols);
        thread_local! {
            /// A job's scores and K's transpose, kept between jobs on a thread.
            static SCRATCH: std::cell::RefCell<(Vec<f32>, Vec<f32>)> =
                const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
        }
        outs.into_par_iter().enumerate().for_each(|(job, mut out)| {
            let (s0, a, b) = blocks[job / heads];
            let hd = job % heads;
            let kv = hd / rep;
            // Keys from the first query's window start to the last query.
            let ks = window.map_or(s0, |w| a.saturating_sub(w - 1).max(s0));
            let (mq, keys) = (b - a, b - ks);
            SCRATCH.with(|sc| {
                let (sbuf, kt) = &mut *sc.borrow_mut();
                sbuf.clear();
                sbuf.resize(mq * keys, 0.0);
                let q = HeadRows {
                    at: a * ld + hd * d,
                    ld,
                };
                let k = HeadRows {
                    at: ks * ld + inner + kv * d,
                    ld,
                };
                let v = HeadRows {
                    at: ks * ld + inner + kvh * d + kv * d,
                    ld,
                };
                attention::scores(qkv, q, k, mq, keys, d, kt, sbuf);
                for (i, r) in sbuf.chunks_mut(keys).enumerate() {
                    let qpos = a + i;
                    let softmax_scale = if let Some(cap) = cap {
                        // Gemma 2: `tanh(s · scaling / cap) · cap`, then the mask.
                        r.iter_mut()
                            .for_each(|x| *x = (*x * scale / cap).tanh() * cap);
                        1.0
                    } else {
                        scale
                    };
                    for (j, x) in r.iter_mut().enumerate() {
                        let kpos = ks + j;
                        if kpos > qpos || window.is_some_and(|w| kpos + w <= qpos) {
                            *x = f32::NEG_INFINITY;
                        }
                    }
                    cpu.softmax_row(r, softmax_scale);
                    // Probabilities below f32's smallest normal (exp of scores ~90 below the
                    // row's best) are subnormal, and every FMA that reads one takes a microcode
                    // assist: flushed to zero, they change a context value by under 1e-38 of V.
                    for x in r.iter_mut() {
                        if *x < f32::MIN_POSITIVE {
                            *x = 0.0;
                        }
                    }
                }
                attention::context(sbuf, mq, keys, qkv, v, d, &mut out);
            });
        });
    }
}

/// `x += y`, element by element.
fn add(x: &mut [f32], y: &[f32]) {
    x.par_chunks_mut(4096)
        .zip(y.par_chunks(4096))
        .for_each(|(x, y)| x.iter_mut().zip(y).for_each(|(x, y)| *x += y));
}

#[cfg(test)]
mod tests {
    use super::*;
    use scorekit_kernels::gemm;

    /// A tiny Gemma-2-like model (GQA 4/2 heads, sandwich norms, soft-capping, a window on
    /// layer 1, q/k norms, widths not multiples of 16 so every masked tail runs); weights from
    /// a fixed generator, rounded to bf16 so f32 and bf16 storage hold the same values.
    fn tiny(products: Products, embed_bf16: bool) -> FastDecoder {
        let shape = DecoderShape {
            hidden: 20,
            heads: 4,
            kv_heads: 2,
            head_dim: 6,
            intermediate: 36,
            layers: 2,
            vocab: 50,
            eps: 1e-6,
            act: Activation::GeluTanh,
            norm_plus_one: true,
            qk_norm: true,
            sandwich_norms: true,
            fused: false,
            qkv_bias: true,
            o_bias: false,
            mlp_bias: false,
            embed_scale: Some(4.5),
            attn_scaling: 0.4,
            attn_softcap: Some(50.0),
            final_softcap: Some(30.0),
            windows: vec![None, Some(3)],
            tied: true,
            embed_bf16,
        };
        let read = |name: &str, dims: &[usize]| -> candle_core::Result<Option<Vec<f32>>> {
            let seed = name
                .bytes()
                .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
            let n: usize = dims.iter().product();
            Ok(Some(
                (0..n as u32)
                    .map(|i| {
                        let v = (i.wrapping_mul(2654435761) ^ seed) >> 16;
                        let x = (v % 2001) as f32 / 10000.0 - 0.1;
                        f32::from_bits((x.to_bits() >> 16) << 16)
                    })
                    .collect(),
            ))
        };
        FastDecoder::load(&read, "model.", "lm_head", shape, products).unwrap()
    }

    fn f32_products() -> Products {
        Products {
            int8: false,
            amx: false,
            bf16: false,
            widen_bf16: false,
        }
    }

    fn ropes(len: usize) -> RopeTable {
        let inv: Vec<f32> = (0..3)
            .map(|i| 1.0 / 10000f32.powf(i as f32 / 3.0))
            .collect();
        RopeTable::new(&inv, 1.0, len)
    }

    #[test]
    fn batched_sequences_get_the_logits_they_get_alone() {
        if !gemm::available() {
            return;
        }
        let model = tiny(f32_products(), false);
        let table = ropes(70);
        let r = [&table, &table];
        let long: Vec<u32> = (0..70).map(|i| (i * 7 % 50) as u32).collect();
        let short = [3u32, 9, 4];
        let both = model.last_logits(&[&long, &short], &r).unwrap();
        let alone_long = model.last_logits(&[&long], &r).unwrap();
        let alone_short = model.last_logits(&[&short], &r).unwrap();
        assert_eq!(both[..50], alone_long[..]);
        assert_eq!(both[50..], alone_short[..]);
        assert!(both.iter().all(|v| v.is_finite() && v.abs() <= 30.0));
    }

    #[test]
    fn widened_bf16_weights_give_the_f32_logits_bit_for_bit() {
        if !gemm::available() {
            return;
        }
        let widened = Products {
            bf16: true,
            widen_bf16: true,
            ..f32_products()
        };
        let table = ropes(70);
        let r = [&table, &table];
        let seq: Vec<u32> = (0..70).map(|i| (i * 11 % 50) as u32).collect();
        let a = tiny(f32_products(), false)
            .last_logits(&[&seq], &r)
            .unwrap();
        let b = tiny(widened, true).last_logits(&[&seq], &r).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            tiny(widened, true).products_name(),
            "bf16 weights widened to f32 AVX-512 products"
        );
    }

    #[test]
    fn bad_sequences_are_errors_not_panics() {
        if !gemm::available() {
            return;
        }
        let model = tiny(f32_products(), false);
        let table = ropes(4);
        let r = [&table, &table];
        let e = model.last_logits(&[&[1, 2], &[]], &r).unwrap_err();
        assert!(e.to_string().contains("at least one token"), "{e}");
        let e = model.last_logits(&[&[1, 50]], &r).unwrap_err();
        assert!(e.to_string().contains("outside the vocabulary"), "{e}");
        let e = model.last_logits(&[&[1, 2, 3, 4, 5]], &r).unwrap_err();
        assert!(e.to_string().contains("rope table"), "{e}");
    }
}
