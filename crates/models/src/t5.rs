//! T5, T5 v1.1 and Flan-T5 (`T5ForConditionalGeneration`, `model_type: t5`): the encoder, the
//! decoder with a key/value cache, and greedy decoding, as `transformers`' `modeling_t5.py` runs
//! them, for the letter judge (a prompt in, the answer's tokens out).
//!
//! What differs from candle-transformers' `t5.rs`, on purpose: relative position buckets are
//! bidirectional in the encoder and causal in the decoder (as `transformers`), the encoder takes
//! an attention mask so padded prompts run batched with the answers of one prompt at a time, and
//! attention scores, masks and softmax are computed in f32 whatever the weights' dtype.
//!
//! Layout: `shared.weight` (token embeddings, shared by both stacks), `encoder.block.{i}` /
//! `decoder.block.{i}` with `layer.0.SelfAttention.{q,k,v,o}` (block 0 also carries
//! `relative_attention_bias`), the decoder's `layer.1.EncDecAttention`, the feed-forward
//! `DenseReluDense.{wi,wo}` (relu, T5) or `{wi_0,wi_1,wo}` (gated-gelu, T5 v1.1 / Flan), RMS
//! LayerNorms without bias, `{encoder,decoder}.final_layer_norm`, and `lm_head.weight` when the
//! head is not tied (Flan), else the embeddings scaled by `d_model^-0.5`.

use crate::arch::{bad, parse};
use candle_core::{DType, Device, Tensor, D};
use candle_nn::{linear_no_bias, VarBuilder};
use scorekit_core::error::Result;
use scorekit_encoder::Linear as DenseLayer;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::Path;

/// `model_type` values of this architecture.
pub const MODEL_TYPES: &[&str] = &["t5"];

/// Builds a product without bias from the weight's full name (`...q.weight`'s `...q`), its
/// outputs and inputs: another engine's (scorekit's kernels) in place of candle's.
pub type MakeLinear<'a> =
    &'a dyn Fn(&str, usize, usize) -> candle_core::Result<Box<dyn DenseLayer>>;

/// A product without bias, `[.., k]` → `[.., n]`.
struct Linear(Box<dyn DenseLayer>);

impl Linear {
    /// `vb.pp(name)`'s weight, `n` outputs of `k` inputs: from `make` where given, else candle's.
    fn load(
        vb: &VarBuilder,
        name: &str,
        (k, n): (usize, usize),
        make: Option<MakeLinear>,
    ) -> candle_core::Result<Self> {
        Ok(Linear(match make {
            Some(make) => make(&vb.pp(name).prefix(), n, k)?,
            None => Box::new(linear_no_bias(k, n, vb.pp(name))?),
        }))
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let dims = x.dims().to_vec();
        let k = *dims.last().unwrap_or(&0);
        let rows = x.reshape(((x.elem_count() / k.max(1)), k))?;
        let y = self.0.forward(&rows)?;
        let mut out = dims;
        if let Some(last) = out.last_mut() {
            *last = y.dim(1)?;
        }
        y.reshape(out)
    }
}

/// The feed-forward activation (`feed_forward_proj`'s last part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// `relu` (T5).
    Relu,
    /// `gelu_new`, GELU's tanh approximation (what `gated-gelu` means: T5 v1.1, Flan-T5).
    GeluNew,
    /// `gelu`, erf-GELU.
    Gelu,
    /// `silu`.
    Silu,
}

/// config.json of a T5 model, with the defaults of `transformers`' `T5Config`.
#[derive(Debug, Clone, Deserialize)]
pub struct T5Config {
    /// Embedding rows (the tokenizer's vocabulary plus padding rows).
    #[serde(default = "defaults::vocab_size")]
    pub vocab_size: usize,
    /// Hidden size.
    #[serde(default = "defaults::d_model")]
    pub d_model: usize,
    /// Size of one attention head.
    #[serde(default = "defaults::d_kv")]
    pub d_kv: usize,
    /// Feed-forward inner size.
    #[serde(default = "defaults::d_ff")]
    pub d_ff: usize,
    /// Encoder blocks.
    #[serde(default = "defaults::num_layers")]
    pub num_layers: usize,
    /// Decoder blocks (`num_layers` when absent).
    #[serde(default)]
    pub num_decoder_layers: Option<usize>,
    /// Attention heads.
    #[serde(default = "defaults::num_heads")]
    pub num_heads: usize,
    /// Relative position buckets.
    #[serde(default = "defaults::buckets")]
    pub relative_attention_num_buckets: usize,
    /// Distance beyond which relative positions share the last bucket.
    #[serde(default = "defaults::max_distance")]
    pub relative_attention_max_distance: usize,
    /// RMS norm epsilon.
    #[serde(default = "defaults::eps")]
    pub layer_norm_epsilon: f64,
    /// `relu`, `gated-gelu`, ... (see [`Act`]).
    #[serde(default = "defaults::ff_proj")]
    pub feed_forward_proj: String,
    /// Whether the output head is the embedding matrix (scaled by `d_model^-0.5`).
    #[serde(default = "defaults::yes")]
    pub tie_word_embeddings: bool,
    /// Padding token id.
    #[serde(default)]
    pub pad_token_id: u32,
    /// End-of-sequence token id.
    #[serde(default = "defaults::eos")]
    pub eos_token_id: u32,
    /// The decoder's first token (`pad_token_id` when absent, as every T5 checkpoint has it).
    #[serde(default)]
    pub decoder_start_token_id: Option<u32>,
}

mod defaults {
    pub fn vocab_size() -> usize {
        32128
    }
    pub fn d_model() -> usize {
        512
    }
    pub fn d_kv() -> usize {
        64
    }
    pub fn d_ff() -> usize {
        2048
    }
    pub fn num_layers() -> usize {
        6
    }
    pub fn num_heads() -> usize {
        8
    }
    pub fn buckets() -> usize {
        32
    }
    pub fn max_distance() -> usize {
        128
    }
    pub fn eps() -> f64 {
        1e-6
    }
    pub fn ff_proj() -> String {
        "relu".into()
    }
    pub fn yes() -> bool {
        true
    }
    pub fn eos() -> u32 {
        1
    }
}

impl T5Config {
    /// Parse config.json (`raw`, read from `path`); errors name the file and field.
    pub fn from_raw(raw: &Map<String, Value>, path: &Path) -> Result<Self> {
        let cfg: T5Config = parse(raw, path)?;
        cfg.feed_forward(path)?;
        for (field, v) in [
            ("d_model", cfg.d_model),
            ("d_kv", cfg.d_kv),
            ("d_ff", cfg.d_ff),
            ("num_layers", cfg.num_layers),
            ("num_heads", cfg.num_heads),
            ("vocab_size", cfg.vocab_size),
            (
                "relative_attention_num_buckets",
                cfg.relative_attention_num_buckets,
            ),
            (
                "relative_attention_max_distance",
                cfg.relative_attention_max_distance,
            ),
        ] {
            if v == 0 {
                return Err(bad(path, format!("field {field}: must be at least 1")));
            }
        }
        if cfg.relative_attention_num_buckets < 4 {
            return Err(bad(
                path,
                "field relative_attention_num_buckets: T5's buckets need at least 4",
            ));
        }
        // The logarithmic buckets start at buckets / 2 (causal) and must reach further.
        if cfg.relative_attention_max_distance <= cfg.relative_attention_num_buckets / 2 {
            return Err(bad(
                path,
                format!(
                    "field relative_attention_max_distance: {} must exceed half of relative_attention_num_buckets ({})",
                    cfg.relative_attention_max_distance, cfg.relative_attention_num_buckets
                ),
            ));
        }
        for (field, id) in [
            ("pad_token_id", cfg.pad_token_id),
            ("eos_token_id", cfg.eos_token_id),
            ("decoder_start_token_id", cfg.start_token()),
        ] {
            if id as usize >= cfg.vocab_size {
                return Err(bad(
                    path,
                    format!(
                        "field {field}: {id} is not below vocab_size {}",
                        cfg.vocab_size
                    ),
                ));
            }
        }
        Ok(cfg)
    }

    /// Read a T5 folder's config.json.
    pub fn read(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).map_err(|e| bad(path, format!("cannot read: {e}")))?;
        let raw: Value =
            serde_json::from_str(&text).map_err(|e| bad(path, format!("not valid JSON: {e}")))?;
        let Value::Object(raw) = raw else {
            return Err(bad(path, "config.json is not a JSON object"));
        };
        Self::from_raw(&raw, path)
    }

    /// (gated, activation) from `feed_forward_proj`, as `T5Config.__init__` reads it.
    pub fn feed_forward(&self, path: &Path) -> Result<(bool, Act)> {
        let parts: Vec<&str> = self.feed_forward_proj.split('-').collect();
        let (gated, act) = match parts.as_slice() {
            [act] => (false, *act),
            ["gated", act] => (true, *act),
            _ => {
                return Err(bad(
                    path,
                    format!(
                        "field feed_forward_proj: {:?} is not `{{ACT}}` or `gated-{{ACT}}`",
                        self.feed_forward_proj
                    ),
                ))
            }
        };
        let act = match act {
            "relu" => Act::Relu,
            // transformers: "gated-gelu" means gelu_new, for backwards compatibility.
            "gelu" if gated => Act::GeluNew,
            "gelu" => Act::Gelu,
            "gelu_new" => Act::GeluNew,
            "silu" | "swish" => Act::Silu,
            other => {
                return Err(bad(
                    path,
                    format!(
                        "field feed_forward_proj: activation {other:?} is not supported (relu, gelu, gelu_new, silu)"
                    ),
                ))
            }
        };
        Ok((gated, act))
    }

    /// Decoder blocks.
    pub fn decoder_layers(&self) -> usize {
        self.num_decoder_layers.unwrap_or(self.num_layers)
    }

    /// The decoder's first token.
    pub fn start_token(&self) -> u32 {
        self.decoder_start_token_id.unwrap_or(self.pad_token_id)
    }
}

/// The bucket of relative position `rel` (key position − query position), exactly as
/// `T5Attention._relative_position_bucket` computes it (the logarithm in f32, truncated).
pub fn relative_bucket(rel: i64, bidirectional: bool, buckets: usize, max_distance: usize) -> u32 {
    let mut buckets = buckets as i64;
    let mut out = 0i64;
    let n = if bidirectional {
        buckets /= 2;
        if rel > 0 {
            out += buckets;
        }
        rel.abs()
    } else {
        (-rel).max(0)
    };
    let max_exact = buckets / 2;
    if n < max_exact {
        out += n;
    } else {
        // torch: log(n.float() / max_exact) / math.log(max_distance / max_exact) * (buckets -
        // max_exact), in f32 (the double divisor rounded to f32), then `.to(torch.long)`.
        let ratio = (n as f32 / max_exact as f32).ln();
        let scale = (max_distance as f64 / max_exact as f64).ln() as f32;
        let large = max_exact + (ratio / scale * (buckets - max_exact) as f32) as i64;
        // Within the table whatever the config (from_raw refuses distances that would leave it).
        out += large.clamp(0, buckets - 1);
    }
    out as u32
}

/// T5's LayerNorm: RMS only, no mean and no bias, in f32.
struct RmsNorm {
    weight: Tensor,
    eps: f64,
}

impl RmsNorm {
    fn load(vb: VarBuilder, d: usize, eps: f64) -> candle_core::Result<Self> {
        Ok(RmsNorm {
            weight: vb.get(d, "weight")?,
            eps,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let dt = x.dtype();
        let xf = x.to_dtype(DType::F32)?;
        let var = xf.sqr()?.mean_keepdim(D::Minus1)?;
        let normed = xf.broadcast_div(&(var + self.eps)?.sqrt()?)?;
        normed.to_dtype(dt)?.broadcast_mul(&self.weight)
    }
}

/// One attention module (self or cross): four products without bias, no score scaling.
struct Attention {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    heads: usize,
    d_kv: usize,
    /// `[buckets, heads]` in f32, on the first block of each stack's self-attention.
    bias: Option<Tensor>,
}

impl Attention {
    fn load(
        vb: VarBuilder,
        cfg: &T5Config,
        with_bias: bool,
        make: Option<MakeLinear>,
    ) -> candle_core::Result<Self> {
        let inner = cfg.num_heads * cfg.d_kv;
        let (d, i) = (cfg.d_model, inner);
        let bias = if with_bias {
            Some(
                vb.get(
                    (cfg.relative_attention_num_buckets, cfg.num_heads),
                    "relative_attention_bias.weight",
                )?
                .to_dtype(DType::F32)?,
            )
        } else {
            None
        };
        Ok(Attention {
            q: Linear::load(&vb, "q", (d, i), make)?,
            k: Linear::load(&vb, "k", (d, i), make)?,
            v: Linear::load(&vb, "v", (d, i), make)?,
            o: Linear::load(&vb, "o", (i, d), make)?,
            heads: cfg.num_heads,
            d_kv: cfg.d_kv,
            bias,
        })
    }

    /// `[b, s, d]` → `[b, heads, s, d_kv]`.
    fn split(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (b, s, _) = x.dims3()?;
        x.reshape((b, s, self.heads, self.d_kv))?
            .transpose(1, 2)?
            .contiguous()
    }

    /// Keys and values of `x` (`[b, s, d]`), split into heads.
    fn keys_values(&self, x: &Tensor) -> candle_core::Result<(Tensor, Tensor)> {
        Ok((
            self.split(&self.k.forward(x)?)?,
            self.split(&self.v.forward(x)?)?,
        ))
    }

    /// Attention of queries from `x` over keys `k` and values `v` (`[b, heads, t, d_kv]`), with
    /// `bias` (f32, broadcast to `[b, heads, s, t]`: position bias plus mask) added to the scores.
    fn attend(
        &self,
        x: &Tensor,
        k: &Tensor,
        v: &Tensor,
        bias: &Tensor,
    ) -> candle_core::Result<Tensor> {
        let (b, s, _) = x.dims3()?;
        let q = self.split(&self.q.forward(x)?)?;
        let scores = q.matmul(&k.t()?)?.to_dtype(DType::F32)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores.broadcast_add(bias)?)?;
        let ctx = probs.to_dtype(v.dtype())?.matmul(v)?;
        let ctx = ctx
            .transpose(1, 2)?
            .reshape((b, s, self.heads * self.d_kv))?;
        self.o.forward(&ctx)
    }
}

/// `DenseReluDense` / `DenseGatedActDense`.
struct FeedForward {
    wi: Linear,
    gate: Option<Linear>,
    wo: Linear,
    act: Act,
}

impl FeedForward {
    fn load(
        vb: VarBuilder,
        cfg: &T5Config,
        (gated, act): (bool, Act),
        make: Option<MakeLinear>,
    ) -> candle_core::Result<Self> {
        let (d, ff) = (cfg.d_model, cfg.d_ff);
        let (wi, gate) = if gated {
            (
                Linear::load(&vb, "wi_0", (d, ff), make)?,
                Some(Linear::load(&vb, "wi_1", (d, ff), make)?),
            )
        } else {
            (Linear::load(&vb, "wi", (d, ff), make)?, None)
        };
        Ok(FeedForward {
            wi,
            gate,
            wo: Linear::load(&vb, "wo", (ff, d), make)?,
            act,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let h = self.wi.forward(x)?;
        let h = match self.act {
            Act::Relu => h.relu()?,
            Act::GeluNew => h.gelu()?,
            Act::Gelu => h.gelu_erf()?,
            Act::Silu => h.silu()?,
        };
        let h = match &self.gate {
            Some(g) => (h * g.forward(x)?)?,
            None => h,
        };
        self.wo.forward(&h)
    }
}

/// One block: self-attention, cross-attention (decoder only), feed-forward, each pre-normed
/// and residual.
struct Block {
    self_attn: Attention,
    self_norm: RmsNorm,
    cross: Option<(Attention, RmsNorm)>,
    ff: FeedForward,
    ff_norm: RmsNorm,
}

impl Block {
    fn load(
        vb: VarBuilder,
        cfg: &T5Config,
        decoder: bool,
        first: bool,
        ff: (bool, Act),
        make: Option<MakeLinear>,
    ) -> candle_core::Result<Self> {
        let eps = cfg.layer_norm_epsilon;
        let l0 = vb.pp("layer.0");
        let self_attn = Attention::load(l0.pp("SelfAttention"), cfg, first, make)?;
        let self_norm = RmsNorm::load(l0.pp("layer_norm"), cfg.d_model, eps)?;
        let (cross, ff_layer) = if decoder {
            let l1 = vb.pp("layer.1");
            let cross = (
                Attention::load(l1.pp("EncDecAttention"), cfg, false, make)?,
                RmsNorm::load(l1.pp("layer_norm"), cfg.d_model, eps)?,
            );
            (Some(cross), vb.pp("layer.2"))
        } else {
            (None, vb.pp("layer.1"))
        };
        Ok(Block {
            self_attn,
            self_norm,
            cross,
            ff: FeedForward::load(ff_layer.pp("DenseReluDense"), cfg, ff, make)?,
            ff_norm: RmsNorm::load(ff_layer.pp("layer_norm"), cfg.d_model, eps)?,
        })
    }
}

/// The encoder's output for a batch: hidden states and the additive mask of its padding.
pub struct Encoded {
    /// `[b, s, d]` final hidden states.
    pub hidden: Tensor,
    /// `[b, 1, 1, s]` f32: 0 on tokens, `f32::MIN` on padding.
    mask: Tensor,
}

impl Encoded {
    /// Hidden states `[b, s, d]` computed elsewhere (scorekit's native encoder) with their
    /// `[b, s]` 0/1 mask (1 on tokens).
    pub fn from_hidden(hidden: Tensor, mask: &Tensor) -> candle_core::Result<Encoded> {
        Ok(Encoded {
            hidden,
            mask: additive_mask(mask)?,
        })
    }
}

/// `[b, s]` 0/1 → `[b, 1, 1, s]` f32: (1 − mask)·finfo(f32).min, as transformers' extended
/// attention mask.
fn additive_mask(mask: &Tensor) -> candle_core::Result<Tensor> {
    let (b, s) = mask.dims2()?;
    ((1.0 - mask.to_dtype(DType::F32)?)? * f64::from(f32::MIN))?.reshape((b, 1, 1, s))
}

/// The decoder's key/value cache: self-attention keys and values so far, and the encoder's
/// keys and values per block (computed once).
struct Cache {
    steps: usize,
    self_kv: Vec<Option<(Tensor, Tensor)>>,
    cross_kv: Vec<(Tensor, Tensor)>,
}

/// A T5 model for conditional generation.
pub struct T5 {
    cfg: T5Config,
    shared: Tensor,
    /// The encoder's blocks and final norm; `None` where another engine runs the encoder.
    encoder: Option<(Vec<Block>, RmsNorm)>,
    decoder: Vec<Block>,
    decoder_norm: RmsNorm,
    /// `lm_head`, or `shared` when tied.
    head: Linear,
    device: Device,
}

impl T5 {
    /// Load the model from `vb`. `path` is config.json, named in errors where the weights and
    /// the config disagree on the feed-forward form or the head.
    pub fn load(vb: VarBuilder, cfg: &T5Config, path: &Path) -> Result<Self> {
        Self::load_parts(vb, cfg, path, true, None)
    }

    /// [`T5::load`] without the encoder's blocks (never read from the weights), for an encoder
    /// run elsewhere whose hidden states reach [`T5::generate_encoded`], and with the decoder's
    /// products and head built by `make`: `vb` then supplies the embeddings and norms only.
    pub fn load_decoder(
        vb: VarBuilder,
        cfg: &T5Config,
        path: &Path,
        make: MakeLinear,
    ) -> Result<Self> {
        Self::load_parts(vb, cfg, path, false, Some(make))
    }

    fn load_parts(
        vb: VarBuilder,
        cfg: &T5Config,
        path: &Path,
        encoder: bool,
        make: Option<MakeLinear>,
    ) -> Result<Self> {
        let (gated, act) = cfg.feed_forward(path)?;
        let probe = "encoder.block.0.layer.1.DenseReluDense.wi_0.weight";
        if vb.contains_tensor(probe) != gated {
            let has = if gated {
                "relu (wi)"
            } else {
                "gated (wi_0, wi_1)"
            };
            return Err(bad(
                path,
                format!(
                    "field feed_forward_proj: {:?}, but the weights have {has} feed-forward layers",
                    cfg.feed_forward_proj
                ),
            ));
        }
        if !cfg.tie_word_embeddings && !vb.contains_tensor("lm_head.weight") {
            return Err(bad(
                path,
                "field tie_word_embeddings: false, but the weights have no lm_head.weight",
            ));
        }
        let load = || -> candle_core::Result<T5> {
            let shape = (cfg.vocab_size, cfg.d_model);
            let shared_name = if vb.contains_tensor("shared.weight") {
                "shared"
            } else {
                "encoder.embed_tokens"
            };
            let shared = vb.get(shape, &format!("{shared_name}.weight"))?;
            let stack = |name: &str, n: usize, decoder: bool| -> candle_core::Result<Vec<Block>> {
                (0..n)
                    .map(|i| {
                        Block::load(
                            vb.pp(format!("{name}.block.{i}")),
                            cfg,
                            decoder,
                            i == 0,
                            (gated, act),
                            make,
                        )
                    })
                    .collect()
            };
            let eps = cfg.layer_norm_epsilon;
            let dims = (cfg.d_model, cfg.vocab_size);
            let head = match (cfg.tie_word_embeddings, make) {
                (true, None) => Linear(Box::new(candle_nn::Linear::new(shared.clone(), None))),
                (true, Some(_)) => Linear::load(&vb, shared_name, dims, make)?,
                (false, _) => Linear::load(&vb, "lm_head", dims, make)?,
            };
            let encoder = if encoder {
                Some((
                    stack("encoder", cfg.num_layers, false)?,
                    RmsNorm::load(vb.pp("encoder.final_layer_norm"), cfg.d_model, eps)?,
                ))
            } else {
                None
            };
            Ok(T5 {
                encoder,
                decoder: stack("decoder", cfg.decoder_layers(), true)?,
                decoder_norm: RmsNorm::load(vb.pp("decoder.final_layer_norm"), cfg.d_model, eps)?,
                head,
                shared,
                cfg: cfg.clone(),
                device: vb.device().clone(),
            })
        };
        load().map_err(|e| bad(path, format!("the weights do not fit config.json: {e}")))
    }

    /// The config.
    pub fn config(&self) -> &T5Config {
        &self.cfg
    }

    /// The token embeddings of `ids`, `[n, d_model]` in the weights' dtype.
    pub fn embed_rows(&self, ids: &[u32]) -> candle_core::Result<Tensor> {
        let ids = Tensor::from_slice(ids, ids.len(), &self.device)?;
        self.shared.index_select(&ids, 0)
    }

    fn embed(&self, ids: &Tensor) -> candle_core::Result<Tensor> {
        let (b, s) = ids.dims2()?;
        self.shared
            .index_select(&ids.flatten_all()?, 0)?
            .reshape((b, s, self.cfg.d_model))
    }

    /// `[1, heads, nq, nk]` f32 position bias of query positions `q0..q0 + nq` over keys
    /// `0..nk`, from the first block's table.
    fn position_bias(
        &self,
        table: &Tensor,
        q0: usize,
        nq: usize,
        nk: usize,
        bidirectional: bool,
    ) -> candle_core::Result<Tensor> {
        let mut idx = Vec::with_capacity(nq * nk);
        for q in q0..q0 + nq {
            for k in 0..nk {
                idx.push(relative_bucket(
                    k as i64 - q as i64,
                    bidirectional,
                    self.cfg.relative_attention_num_buckets,
                    self.cfg.relative_attention_max_distance,
                ));
            }
        }
        let idx = Tensor::from_vec(idx, nq * nk, &self.device)?;
        table
            .index_select(&idx, 0)?
            .reshape((nq, nk, self.cfg.num_heads))?
            .permute((2, 0, 1))?
            .unsqueeze(0)?
            .contiguous()
    }

    /// Run the encoder on `[b, s]` u32 ids with a `[b, s]` 0/1 mask (1 on tokens).
    pub fn encode(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Encoded> {
        let (_, s) = ids.dims2()?;
        let mask = additive_mask(mask)?;
        let Some((blocks, norm)) = &self.encoder else {
            candle_core::bail!("this T5 was loaded without its encoder");
        };
        let table = blocks[0]
            .self_attn
            .bias
            .as_ref()
            .expect("block 0 has the table");
        let bias = self
            .position_bias(table, 0, s, s, true)?
            .broadcast_add(&mask)?;
        let mut x = self.embed(ids)?;
        for block in blocks {
            let h = block.self_norm.forward(&x)?;
            let (k, v) = block.self_attn.keys_values(&h)?;
            x = (x + block.self_attn.attend(&h, &k, &v, &bias)?)?;
            x = (&x + block.ff.forward(&block.ff_norm.forward(&x)?)?)?;
        }
        Ok(Encoded {
            hidden: norm.forward(&x)?,
            mask,
        })
    }

    /// A fresh decoder cache for `enc` (the cross-attention keys and values of every block).
    fn cache(&self, enc: &Encoded) -> candle_core::Result<Cache> {
        let cross_kv = self
            .decoder
            .iter()
            .map(|b| {
                let (attn, _) = b.cross.as_ref().expect("decoder blocks attend the encoder");
                attn.keys_values(&enc.hidden)
            })
            .collect::<candle_core::Result<_>>()?;
        Ok(Cache {
            steps: 0,
            self_kv: vec![None; self.decoder.len()],
            cross_kv,
        })
    }

    /// One decoder step: `[b]` tokens in, `[b, vocab]` f32 logits of the next token out.
    fn step(
        &self,
        tokens: &[u32],
        enc: &Encoded,
        cache: &mut Cache,
    ) -> candle_core::Result<Tensor> {
        let b = tokens.len();
        let ids = Tensor::from_vec(tokens.to_vec(), (b, 1), &self.device)?;
        let pos = cache.steps;
        let table = self.decoder[0]
            .self_attn
            .bias
            .as_ref()
            .expect("block 0 has the table");
        // Causal buckets; the query sees keys 0..=pos only, so no further mask is needed.
        let self_bias = self.position_bias(table, pos, 1, pos + 1, false)?;
        let mut x = self.embed(&ids)?;
        for (i, block) in self.decoder.iter().enumerate() {
            let h = block.self_norm.forward(&x)?;
            let (k, v) = block.self_attn.keys_values(&h)?;
            let (k, v) = match &cache.self_kv[i] {
                Some((pk, pv)) => (Tensor::cat(&[pk, &k], 2)?, Tensor::cat(&[pv, &v], 2)?),
                None => (k, v),
            };
            x = (x + block.self_attn.attend(&h, &k, &v, &self_bias)?)?;
            cache.self_kv[i] = Some((k, v));
            let (attn, norm) = block
                .cross
                .as_ref()
                .expect("decoder blocks attend the encoder");
            let (ck, cv) = &cache.cross_kv[i];
            x = (&x + attn.attend(&norm.forward(&x)?, ck, cv, &enc.mask)?)?;
            x = (&x + block.ff.forward(&block.ff_norm.forward(&x)?)?)?;
        }
        cache.steps += 1;
        let mut x = self.decoder_norm.forward(&x)?.squeeze(1)?;
        if self.cfg.tie_word_embeddings {
            // Rescale before the tied head, as transformers does (Mesh TensorFlow's layout).
            x = (x * (self.cfg.d_model as f64).powf(-0.5))?;
        }
        self.head.forward(&x)?.to_dtype(DType::F32)
    }

    /// Greedy decoding of a padded batch (`[b, s]` ids and 0/1 mask), as `generate(input_ids,
    /// max_length=max_length, do_sample=False, num_beams=1)` gives it for each prompt alone: per
    /// prompt the start token, then the argmax token until `</s>` (kept) or `max_length` tokens
    /// in all. Also the
    /// log-probabilities of the first generated token, `[b, vocab]`, where `first_log_probs`.
    pub fn generate(
        &self,
        ids: &Tensor,
        mask: &Tensor,
        max_length: usize,
        first_log_probs: bool,
    ) -> candle_core::Result<(Vec<Vec<u32>>, Option<Tensor>)> {
        let enc = self.encode(ids, mask)?;
        self.generate_encoded(&enc, max_length, first_log_probs)
    }

    /// [`T5::generate`] from the encoder's output.
    pub fn generate_encoded(
        &self,
        enc: &Encoded,
        max_length: usize,
        first_log_probs: bool,
    ) -> candle_core::Result<(Vec<Vec<u32>>, Option<Tensor>)> {
        let (b, _, _) = enc.hidden.dims3()?;
        let mut cache = self.cache(enc)?;
        let start = self.cfg.start_token();
        let mut out: Vec<Vec<u32>> = vec![vec![start]; b];
        let mut tokens = vec![start; b];
        let mut done = vec![false; b];
        let mut first = None;
        while out.iter().map(Vec::len).max().unwrap_or(0) < max_length && done.iter().any(|d| !d) {
            let logits = self.step(&tokens, enc, &mut cache)?;
            if first.is_none() && first_log_probs {
                first = Some(candle_nn::ops::log_softmax(&logits, D::Minus1)?);
            }
            let next: Vec<u32> = logits.argmax(D::Minus1)?.to_vec1()?;
            for i in 0..b {
                if done[i] {
                    // transformers feeds finished rows padding; their answers are complete.
                    tokens[i] = self.cfg.pad_token_id;
                    continue;
                }
                tokens[i] = next[i];
                out[i].push(next[i]);
                done[i] = next[i] == self.cfg.eos_token_id;
            }
        }
        Ok((out, first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_bidirectional_in_the_encoder_and_causal_in_the_decoder() {
        // transformers' _relative_position_bucket, 32 buckets, max distance 128.
        let enc = |r| relative_bucket(r, true, 32, 128);
        let dec = |r| relative_bucket(r, false, 32, 128);
        assert_eq!(enc(0), 0);
        assert_eq!(enc(-3), 3);
        assert_eq!(enc(3), 19);
        assert_eq!(enc(-8), 8);
        assert_eq!(enc(-200), 15);
        assert_eq!(enc(200), 31);
        // The decoder: keys after the query all fall in bucket 0; past keys spread over 32.
        assert_eq!(dec(5), 0);
        assert_eq!(dec(-5), 5);
        assert_eq!(dec(-15), 15);
        assert_eq!(dec(-16), 16);
        assert_eq!(dec(-1000), 31);
        // Every bucket is inside the table, whatever the distance.
        for b in [4usize, 5, 8, 32] {
            for r in [-100_000i64, -17, -1, 0, 1, 17, 100_000] {
                assert!((relative_bucket(r, true, b, b) as usize) < b);
                assert!((relative_bucket(r, false, b, b) as usize) < b);
            }
        }
    }

    #[test]
    fn feed_forward_proj_is_read_as_transformers_reads_it() {
        let p = Path::new("config.json");
        let cfg = |ff: &str| {
            let raw: Map<String, Value> =
                serde_json::from_value(serde_json::json!({ "feed_forward_proj": ff })).unwrap();
            T5Config::from_raw(&raw, p)
        };
        assert_eq!(
            cfg("relu").unwrap().feed_forward(p).unwrap(),
            (false, Act::Relu)
        );
        assert_eq!(
            cfg("gated-gelu").unwrap().feed_forward(p).unwrap(),
            (true, Act::GeluNew)
        );
        assert_eq!(
            cfg("gelu").unwrap().feed_forward(p).unwrap(),
            (false, Act::Gelu)
        );
        let raw: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"relative_attention_max_distance": 16}))
                .unwrap();
        let e = T5Config::from_raw(&raw, p).unwrap_err().to_string();
        assert!(e.contains("relative_attention_max_distance"), "{e}");
        for wrong in ["gated-gelu-x", "ungated-relu", "tanh"] {
            let e = cfg(wrong).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains("feed_forward_proj"), "{e}");
        }
        let c = cfg("relu").unwrap();
        assert_eq!((c.d_model, c.num_heads, c.start_token()), (512, 8, 0));
    }
}
