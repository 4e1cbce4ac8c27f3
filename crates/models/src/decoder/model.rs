//! The forward pass every decoder family shares, as `transformers`' eager attention computes it:
//! embeddings (scaled for Gemma), per layer an RMSNorm, attention with RoPE, grouped-query heads,
//! the causal (and sliding-window) mask and a softmax in f32, then a gated feed-forward layer;
//! the final norm and the head (tied or its own), logits soft-capped where the family caps them.
//!
//! Batches are right-padded: a real token never attends to a later position, so the padding
//! after it cannot change it, and every row's positions are `0..len` as transformers gives a
//! prompt alone. Only the last real token of each row reaches the head.

use super::{DecoderAct, DecoderConfig, Layout};
use candle_core::{DType, Device, Module, Tensor, D};
use candle_nn::{Linear, VarBuilder};

/// An RMSNorm as the family computes it: in f32, the weight applied as `w` or Gemma's `1 + w`.
struct RmsNorm {
    weight: Tensor,
    eps: f64,
    plus_one: bool,
}

impl RmsNorm {
    fn load(vb: VarBuilder, size: usize, cfg: &DecoderConfig) -> candle_core::Result<Self> {
        Ok(RmsNorm {
            weight: vb.get(size, "weight")?,
            eps: cfg.rms_norm_eps,
            plus_one: cfg.norm_plus_one,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let dtype = x.dtype();
        let xf = x.to_dtype(DType::F32)?;
        let var = xf.sqr()?.mean_keepdim(D::Minus1)?;
        let normed = xf.broadcast_div(&(var + self.eps)?.sqrt()?)?;
        if self.plus_one {
            // Gemma: `output * (1.0 + weight.float())`, then cast.
            let w = (self.weight.to_dtype(DType::F32)? + 1.0)?;
            normed.broadcast_mul(&w)?.to_dtype(dtype)
        } else {
            // Llama: `weight * hidden_states.to(input_dtype)`.
            normed.to_dtype(dtype)?.broadcast_mul(&self.weight)
        }
    }
}

fn linear(vb: VarBuilder, inp: usize, out: usize, bias: bool) -> candle_core::Result<Linear> {
    let w = vb.get((out, inp), "weight")?;
    let b = if bias {
        Some(vb.get(out, "bias")?)
    } else {
        None
    };
    Ok(Linear::new(w, b))
}

/// The attention's input projections: separate, or Phi-3's fused one.
enum Qkv {
    Split(Linear, Linear, Linear),
    Fused(Linear),
}

struct Attention {
    qkv: Qkv,
    o: Linear,
    q_norm: Option<RmsNorm>,
    k_norm: Option<RmsNorm>,
    window: Option<usize>,
}

/// The feed-forward layer's input projections: separate gate and up, or Phi-3's fused one.
enum GateUp {
    Split(Linear, Linear),
    Fused(Linear),
}

struct Layer {
    input_norm: RmsNorm,
    attn: Attention,
    /// Gemma 2's norm of the attention's output.
    post_attn_norm: Option<RmsNorm>,
    /// The norm before the feed-forward layer (Llama's `post_attention_layernorm`, Gemma 2's
    /// `pre_feedforward_layernorm`).
    pre_ff_norm: RmsNorm,
    /// Gemma 2's norm of the feed-forward layer's output.
    post_ff_norm: Option<RmsNorm>,
    gate_up: GateUp,
    down: Linear,
}

/// A loaded decoder-only model.
pub struct Decoder {
    embed: Tensor,
    layers: Vec<Layer>,
    norm: RmsNorm,
    head: Tensor,
    cfg: DecoderConfig,
    device: Device,
    dtype: DType,
}

impl Decoder {
    /// Load the weights of `cfg` from `vb` (transformers' names: `model.embed_tokens`,
    /// `model.layers.N....`, `model.norm`, `lm_head`; the head is the embedding table when
    /// `tie_word_embeddings`). A missing or misshapen tensor is candle's error naming it.
    pub fn load(vb: VarBuilder, cfg: &DecoderConfig) -> candle_core::Result<Decoder> {
        let (h, hd) = (cfg.hidden_size, cfg.head_dim);
        let (nh, nkv) = (cfg.num_heads, cfg.num_kv_heads);
        let (prefix, head_name) = cfg.weight_names(&|name| vb.contains_tensor(name));
        let m = vb.pp(&prefix);
        let embed = m.get((cfg.vocab_size, h), "embed_tokens.weight")?;
        let mut layers = Vec::with_capacity(cfg.num_layers);
        for i in 0..cfg.num_layers {
            let l = m.pp(format!("layers.{i}"));
            let a = l.pp("self_attn");
            let qkv = match cfg.layout {
                Layout::Split => Qkv::Split(
                    linear(a.pp("q_proj"), h, nh * hd, cfg.qkv_bias)?,
                    linear(a.pp("k_proj"), h, nkv * hd, cfg.qkv_bias)?,
                    linear(a.pp("v_proj"), h, nkv * hd, cfg.qkv_bias)?,
                ),
                Layout::Fused => Qkv::Fused(linear(
                    a.pp("qkv_proj"),
                    h,
                    (nh + 2 * nkv) * hd,
                    cfg.qkv_bias,
                )?),
            };
            let (q_norm, k_norm) = if cfg.qk_norm {
                (
                    Some(RmsNorm::load(a.pp("q_norm"), hd, cfg)?),
                    Some(RmsNorm::load(a.pp("k_norm"), hd, cfg)?),
                )
            } else {
                (None, None)
            };
            let attn = Attention {
                qkv,
                o: linear(a.pp("o_proj"), nh * hd, h, cfg.o_bias)?,
                q_norm,
                k_norm,
                window: cfg.sliding_windows[i],
            };
            let f = l.pp("mlp");
            let inter = cfg.intermediate_size;
            let gate_up = match cfg.layout {
                Layout::Split => GateUp::Split(
                    linear(f.pp("gate_proj"), h, inter, cfg.mlp_bias)?,
                    linear(f.pp("up_proj"), h, inter, cfg.mlp_bias)?,
                ),
                Layout::Fused => {
                    GateUp::Fused(linear(f.pp("gate_up_proj"), h, 2 * inter, cfg.mlp_bias)?)
                }
            };
            let (post_attn_norm, pre_ff_norm, post_ff_norm) = if cfg.sandwich_norms {
                (
                    Some(RmsNorm::load(l.pp("post_attention_layernorm"), h, cfg)?),
                    RmsNorm::load(l.pp("pre_feedforward_layernorm"), h, cfg)?,
                    Some(RmsNorm::load(l.pp("post_feedforward_layernorm"), h, cfg)?),
                )
            } else {
                (
                    None,
                    RmsNorm::load(l.pp("post_attention_layernorm"), h, cfg)?,
                    None,
                )
            };
            layers.push(Layer {
                input_norm: RmsNorm::load(l.pp("input_layernorm"), h, cfg)?,
                attn,
                post_attn_norm,
                pre_ff_norm,
                post_ff_norm,
                gate_up,
                down: linear(f.pp("down_proj"), inter, h, cfg.mlp_bias)?,
            });
        }
        let norm = RmsNorm::load(m.pp("norm"), h, cfg)?;
        let head = if cfg.tie_word_embeddings {
            embed.clone()
        } else {
            vb.get((cfg.vocab_size, h), &format!("{head_name}.weight"))?
        };
        Ok(Decoder {
            embed,
            layers,
            norm,
            head,
            cfg: cfg.clone(),
            device: vb.device().clone(),
            dtype: vb.dtype(),
        })
    }

    /// The config the model was loaded with.
    pub fn config(&self) -> &DecoderConfig {
        &self.cfg
    }

    /// The device it runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Next-token logits (f32, `[rows, vocab]`) at the last real token of each row of `ids`
    /// (`[rows][..]`, any lengths ≥ 1; padded on the right here).
    pub fn last_logits(&self, ids: &[Vec<u32>]) -> candle_core::Result<Tensor> {
        let b = ids.len();
        let s = ids.iter().map(Vec::len).max().unwrap_or(0);
        if b == 0 || s == 0 || ids.iter().any(Vec::is_empty) {
            candle_core::bail!("a decoder needs at least one token per row");
        }
        let mut flat = Vec::with_capacity(b * s);
        let mut last = Vec::with_capacity(b);
        for (i, row) in ids.iter().enumerate() {
            flat.extend_from_slice(row);
            // Padding: the row's last token repeated (any id works; it is never attended to).
            flat.extend(std::iter::repeat_n(row[row.len() - 1], s - row.len()));
            last.push((i * s + row.len() - 1) as u32);
        }
        let ids_t = Tensor::from_vec(flat, b * s, &self.device)?;
        let mut x = self
            .embed
            .index_select(&ids_t, 0)?
            .reshape((b, s, self.cfg.hidden_size))?;
        if self.cfg.embed_scale {
            // `hidden * torch.tensor(hidden_size**0.5, dtype=hidden.dtype)`.
            let scale = Tensor::new((self.cfg.hidden_size as f64).sqrt() as f32, &self.device)?
                .to_dtype(self.dtype)?;
            x = x.broadcast_mul(&scale)?;
        }
        // One table per rotary embedding (Gemma 3's sliding layers have their own).
        let global = self.cfg.rope.cos_sin(s, self.dtype, &self.device)?;
        let local = match &self.cfg.local_rope {
            Some(r) => Some(r.cos_sin(s, self.dtype, &self.device)?),
            None => None,
        };
        let masks = Masks::new(s, self.dtype, &self.device)?;
        for (i, layer) in self.layers.iter().enumerate() {
            let (cos, sin) = match &local {
                Some(l) if !std::ptr::eq(self.cfg.rope_of(i), &self.cfg.rope) => l,
                _ => &global,
            };
            x = layer.forward(&x, cos, sin, &masks, &self.cfg)?;
        }
        let idx = Tensor::from_vec(last, b, &self.device)?;
        let x = x
            .reshape((b * s, self.cfg.hidden_size))?
            .index_select(&idx, 0)?;
        let x = self.norm.forward(&x)?;
        let mut logits = x.matmul(&self.head.t()?)?.to_dtype(DType::F32)?;
        if let Some(cap) = self.cfg.final_softcap {
            logits = ((logits / cap)?.tanh()? * cap)?;
        }
        Ok(logits)
    }
}

/// Additive attention masks of one batch width, per window (0 allowed, -inf masked).
struct Masks {
    s: usize,
    dtype: DType,
    device: Device,
    causal: Tensor,
}

impl Masks {
    fn new(s: usize, dtype: DType, device: &Device) -> candle_core::Result<Self> {
        Ok(Masks {
            s,
            dtype,
            device: device.clone(),
            causal: Self::build(s, None, dtype, device)?,
        })
    }

    /// Query `q` sees key `k` when `k <= q` and, with a window, `k > q - window`
    /// (transformers' `sliding_window_overlay`).
    fn build(
        s: usize,
        window: Option<usize>,
        dtype: DType,
        device: &Device,
    ) -> candle_core::Result<Tensor> {
        let mut m = vec![0f32; s * s];
        for q in 0..s {
            for k in 0..s {
                let seen = k <= q && window.is_none_or(|w| k + w > q);
                if !seen {
                    m[q * s + k] = f32::NEG_INFINITY;
                }
            }
        }
        Tensor::from_vec(m, (s, s), device)?.to_dtype(dtype)
    }

    fn of(&self, window: Option<usize>) -> candle_core::Result<Tensor> {
        match window {
            Some(w) if w < self.s => Self::build(self.s, Some(w), self.dtype, &self.device),
            _ => Ok(self.causal.clone()),
        }
    }
}

/// `rotate_half` and the rotation of the first `cos.dim(1)` dimensions of `x` (`[b, h, s, d]`).
fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> candle_core::Result<Tensor> {
    let d = x.dim(D::Minus1)?;
    let rot = cos.dim(1)?;
    let (x_rot, x_pass) = if rot < d {
        (
            x.narrow(D::Minus1, 0, rot)?,
            Some(x.narrow(D::Minus1, rot, d - rot)?),
        )
    } else {
        (x.clone(), None)
    };
    let half = rot / 2;
    let x1 = x_rot.narrow(D::Minus1, 0, half)?;
    let x2 = x_rot.narrow(D::Minus1, half, half)?;
    let rotated = Tensor::cat(&[&x2.neg()?, &x1], D::Minus1)?;
    let out = (x_rot.broadcast_mul(cos)? + rotated.broadcast_mul(sin)?)?;
    match x_pass {
        Some(p) => Tensor::cat(&[&out, &p], D::Minus1),
        None => Ok(out),
    }
}

/// transformers' `repeat_kv`: each key/value head serves `rep` consecutive query heads.
fn repeat_kv(x: Tensor, rep: usize) -> candle_core::Result<Tensor> {
    if rep == 1 {
        return Ok(x);
    }
    let (b, n, s, d) = x.dims4()?;
    x.unsqueeze(2)?
        .expand((b, n, rep, s, d))?
        .reshape((b, n * rep, s, d))
}

impl Attention {
    fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        masks: &Masks,
        cfg: &DecoderConfig,
    ) -> candle_core::Result<Tensor> {
        let (b, s, _) = x.dims3()?;
        let (nh, nkv, hd) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
        let (q, k, v) = match &self.qkv {
            Qkv::Split(q, k, v) => (q.forward(x)?, k.forward(x)?, v.forward(x)?),
            Qkv::Fused(qkv) => {
                let all = qkv.forward(x)?;
                (
                    all.narrow(D::Minus1, 0, nh * hd)?,
                    all.narrow(D::Minus1, nh * hd, nkv * hd)?,
                    all.narrow(D::Minus1, (nh + nkv) * hd, nkv * hd)?,
                )
            }
        };
        let mut q = q.reshape((b, s, nh, hd))?;
        let mut k = k.reshape((b, s, nkv, hd))?;
        if let (Some(qn), Some(kn)) = (&self.q_norm, &self.k_norm) {
            q = qn.forward(&q)?;
            k = kn.forward(&k)?;
        }
        let q = rope(&q.transpose(1, 2)?.contiguous()?, cos, sin)?;
        let k = rope(&k.transpose(1, 2)?.contiguous()?, cos, sin)?;
        let v = v.reshape((b, s, nkv, hd))?.transpose(1, 2)?.contiguous()?;
        let k = repeat_kv(k, nh / nkv)?.contiguous()?;
        let v = repeat_kv(v, nh / nkv)?.contiguous()?;
        let mut scores = (q.matmul(&k.t()?.contiguous()?)? * cfg.attn_scaling)?;
        if let Some(cap) = cfg.attn_softcap {
            scores = ((scores / cap)?.tanh()? * cap)?;
        }
        let scores = scores.broadcast_add(&masks.of(self.window)?)?;
        let probs =
            candle_nn::ops::softmax_last_dim(&scores.to_dtype(DType::F32)?)?.to_dtype(x.dtype())?;
        let out = probs
            .matmul(&v)?
            .transpose(1, 2)?
            .reshape((b, s, nh * hd))?;
        self.o.forward(&out)
    }
}

fn act(x: &Tensor, a: DecoderAct) -> candle_core::Result<Tensor> {
    match a {
        DecoderAct::Silu => x.silu(),
        DecoderAct::GeluTanh => x.gelu(),
        DecoderAct::Gelu => x.gelu_erf(),
    }
}

impl Layer {
    fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        masks: &Masks,
        cfg: &DecoderConfig,
    ) -> candle_core::Result<Tensor> {
        let mut a = self
            .attn
            .forward(&self.input_norm.forward(x)?, cos, sin, masks, cfg)?;
        if let Some(n) = &self.post_attn_norm {
            a = n.forward(&a)?;
        }
        let h = (x + a)?;
        let y = self.pre_ff_norm.forward(&h)?;
        let inner = match &self.gate_up {
            GateUp::Split(g, u) => (act(&g.forward(&y)?, cfg.act)? * u.forward(&y)?)?,
            GateUp::Fused(gu) => {
                let both = gu.forward(&y)?;
                let n = cfg.intermediate_size;
                let gate = both.narrow(D::Minus1, 0, n)?;
                let up = both.narrow(D::Minus1, n, n)?;
                (up * act(&gate, cfg.act)?)?
            }
        };
        let mut f = self.down.forward(&inner)?;
        if let Some(n) = &self.post_ff_norm {
            f = n.forward(&f)?;
        }
        h + f
    }
}
