//! The BERT encoder layers (self-attention, feed-forward, post-LayerNorm) that BERT, RoBERTa,
//! XLM-R and ELECTRA share, in candle, for scoring and for training.
//!
//! Why our own and not `candle_transformers::models::bert::BertEncoder` (whose arithmetic this
//! copies operation for operation): in candle 0.11.1 that encoder cannot be trained. Its
//! `Dropout` is the identity (a `TODO` in candle's source), and its `LayerNorm` runs the fused
//! `candle_nn::ops::layer_norm`, which is registered without a backward pass
//! (`apply_op3_no_bwd`), so gradients stop at the first LayerNorm they meet. Here scoring runs
//! the same fused LayerNorm (same numbers as before), and training ([`Train`]) runs the fused
//! operations of `train::ops` (linear layers, LayerNorm, masked softmax, GELU, each with a
//! backward pass) and applies dropout from a seeded generator, so that a training run can be
//! repeated and resumed exactly.

use candle_core::{DType, Module, Tensor, D};
use candle_nn::{layer_norm, linear, LayerNorm, Linear, VarBuilder};
use candle_transformers::models::bert::{Config, HiddenAct};
#[cfg(target_arch = "x86_64")]
use scorekit_autograd::bert_block;
use scorekit_autograd::ops;
use scorekit_autograd::rng::SplitMix;
use scorekit_autograd::{GradSink, Precision};

/// `[b, s]` 0/1 mask → `[b, 1, 1, s]` additive mask: 0 where attended, the dtype's most negative
/// finite value where padded.
pub fn additive_mask(mask: &Tensor, dtype: DType) -> candle_core::Result<Tensor> {
    let min = match dtype {
        DType::F16 => -65504.0,
        DType::BF16 => -3.389_531_4e38,
        DType::F64 => f64::MIN,
        _ => f32::MIN as f64,
    };
    // Computed in f32 (f64 for f64 models, whose minimum f32 cannot hold), 1 - mask exactly 0
    // or 1, then scaled and cast: no 0 * -inf anywhere.
    let wide = if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let inverted = (1.0 - mask.to_dtype(wide)?)?;
    (inverted * min)?
        .to_dtype(dtype)?
        .unsqueeze(1)?
        .unsqueeze(1)
}

/// Dropout probabilities of a training run and the generator of its masks.
#[derive(Debug, Clone, PartialEq)]
pub struct Train {
    /// Dropout on hidden states (embeddings, after each dense output).
    pub hidden: f64,
    /// Dropout on attention probabilities.
    pub attention: f64,
    /// The mask generator, saved in checkpoints.
    pub rng: SplitMix,
    /// Gradients of weights used inside fused layers (`train::bert_block`), which the trainer
    /// adds to candle's.
    pub grads: GradSink,
    /// The precision of the products (`judge train --precision`).
    pub precision: Precision,
}

impl Train {
    /// Which of `n` elements dropout with probability `p` keeps: one draw per element, dropped
    /// when its top 24 bits fall below `p`·2²⁴.
    pub fn keep_mask(&mut self, n: usize, p: f64) -> Vec<bool> {
        self.rng.keep_draws(n, p).all()
    }

    /// Drop elements of `x` with probability `p` and scale the rest by 1 / (1 − p), as
    /// `torch.nn.functional.dropout` in training mode. `p = 0` draws nothing.
    pub fn dropout(&mut self, x: &Tensor, p: f64) -> candle_core::Result<Tensor> {
        if p <= 0.0 {
            return Ok(x.clone());
        }
        let keep = (1.0 / (1.0 - p)) as f32;
        let mask: Vec<f32> = self
            .keep_mask(x.elem_count(), p)
            .into_iter()
            .map(|k| if k { keep } else { 0.0 })
            .collect();
        let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
        x * mask
    }
}

/// A LayerNorm and its epsilon: candle's fused kernel when scoring, `train::ops::layer_norm`
/// (differentiable; the formula of `candle_nn::ops::layer_norm_slow`) when training.
#[derive(Clone)]
pub struct Norm {
    ln: LayerNorm,
    eps: f64,
}

impl Norm {
    /// `{vb}.weight` and `{vb}.bias` of width `h`.
    pub fn load(h: usize, eps: f64, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(Norm {
            ln: layer_norm(h, eps, vb)?,
            eps,
        })
    }

    /// Normalise the last dimension (differentiably when `train`).
    pub fn forward(&self, x: &Tensor, train: bool) -> candle_core::Result<Tensor> {
        // candle's fused kernel has no f64 (and no backward pass).
        if !train && x.dtype() != DType::F64 {
            return self.ln.forward(x);
        }
        let dtype = x.dtype();
        let internal = match dtype {
            DType::F16 | DType::BF16 => DType::F32,
            d => d,
        };
        let (w, b) = (self.ln.weight(), self.ln.bias());
        let y = match b {
            Some(b) if dtype == internal => return ops::layer_norm(x, w, b, self.eps),
            _ => ops::layer_norm(
                &x.to_dtype(internal)?,
                &w.to_dtype(internal)?,
                &match b {
                    Some(b) => b.to_dtype(internal)?,
                    None => w.zeros_like()?.to_dtype(internal)?,
                },
                self.eps,
            )?,
        };
        y.to_dtype(dtype)
    }
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    intermediate: Linear,
    output: Linear,
    out_norm: Norm,
}

impl Layer {
    /// Whether Q, K and V all have biases or none has (so they stack into one product).
    fn qkv_biases_alike(&self) -> bool {
        let has = [&self.query, &self.key, &self.value].map(|l| l.bias().is_some());
        has.iter().all(|&b| b == has[0])
    }

    /// `x · [Wq; Wk; Wv]ᵀ + [bq; bk; bv]`: Q | K | V from one product. The weights are stacked
    /// per call, so a judge being trained is scored with its current weights; the copy is 3·h²
    /// values a layer, small against a batch's products.
    fn qkv(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let parts = [&self.query, &self.key, &self.value];
        let w = Tensor::cat(&parts.map(|l| l.weight().clone()), 0)?;
        let b = match parts.map(|l| l.bias().cloned()) {
            [Some(q), Some(k), Some(v)] => Some(Tensor::cat(&[q, k, v], 0)?),
            _ => None,
        };
        Linear::new(w, b).forward(x)
    }
}

/// The stack of BERT layers (`encoder.layer.{i}.*`).
pub struct BertLayers {
    layers: Vec<Layer>,
    heads: usize,
    head_size: usize,
    act: HiddenAct,
}

impl BertLayers {
    /// Load `layer.{i}` for every layer of `cfg` from `vb` (the `encoder` prefix).
    pub fn load(vb: VarBuilder, cfg: &Config) -> candle_core::Result<Self> {
        let h = cfg.hidden_size;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                let vb = vb.pp(format!("layer.{i}"));
                let a = vb.pp("attention");
                Ok(Layer {
                    query: linear(h, h, a.pp("self.query"))?,
                    key: linear(h, h, a.pp("self.key"))?,
                    value: linear(h, h, a.pp("self.value"))?,
                    attn_out: linear(h, h, a.pp("output.dense"))?,
                    attn_norm: Norm::load(h, cfg.layer_norm_eps, a.pp("output.LayerNorm"))?,
                    intermediate: linear(h, cfg.intermediate_size, vb.pp("intermediate.dense"))?,
                    output: linear(cfg.intermediate_size, h, vb.pp("output.dense"))?,
                    out_norm: Norm::load(h, cfg.layer_norm_eps, vb.pp("output.LayerNorm"))?,
                })
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(BertLayers {
            layers,
            heads: cfg.num_attention_heads,
            head_size: h / cfg.num_attention_heads,
            act: cfg.hidden_act,
        })
    }

    /// `[b, s, h]` states and `[b, 1, 1, s]` additive mask in, `[b, s, h]` out. With `train`:
    /// differentiable LayerNorm and dropout. Scoring takes `None` for a batch without padding
    /// (no mask to add); training needs the mask.
    pub fn forward(
        &self,
        x: &Tensor,
        mask: Option<&Tensor>,
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))] // the fused path borrows it
        mut train: Option<&mut Train>,
    ) -> candle_core::Result<Tensor> {
        if mask.is_none() && train.is_some() {
            candle_core::bail!("training needs the attention mask");
        }
        #[cfg(target_arch = "x86_64")]
        if let (Some(tr), Some(mask)) = (train.as_deref_mut(), mask) {
            if self.fusable(x, tr.precision) {
                return self.forward_fused(x.clone(), mask, tr);
            }
        }
        self.forward_composed(x, mask, train)
    }

    /// [`BertLayers::forward`] as a graph of candle and `train::ops` operations (scoring, and
    /// training where the fused layers do not apply).
    fn forward_composed(
        &self,
        x: &Tensor,
        mask: Option<&Tensor>,
        mut train: Option<&mut Train>,
    ) -> candle_core::Result<Tensor> {
        let mut x = x.clone();
        let is_train = train.is_some();
        let precision = train.as_ref().map_or(Precision::F32, |t| t.precision);
        let mut drop = |t: Tensor, attention: bool| match train.as_deref_mut() {
            Some(tr) => {
                let p = if attention { tr.attention } else { tr.hidden };
                tr.dropout(&t, p)
            }
            None => Ok(t),
        };
        // Training runs the fused operations with backward passes (`train::ops`); scoring keeps
        // candle's layers, whose numbers the scoring engines are compared against.
        let lin = |l: &Linear, x: &Tensor| -> candle_core::Result<Tensor> {
            if is_train {
                precision.linear(x, l.weight(), l.bias())
            } else {
                l.forward(x)
            }
        };
        let (b, s, _) = x.dims3()?;
        for l in &self.layers {
            let split = |t: Tensor| -> candle_core::Result<Tensor> {
                t.reshape((b, s, self.heads, self.head_size))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let (q, k, v) = if !is_train && !x.device().is_cpu() && l.qkv_biases_alike() {
                // Scoring on a GPU: one product for Q, K and V (one launch instead of three, a
                // wider GEMM). The CPU keeps three products (its numbers are the ones the
                // exactness tests hold).
                let qkv = l.qkv(&x)?;
                let h = self.heads * self.head_size;
                (
                    split(qkv.narrow(D::Minus1, 0, h)?)?,
                    split(qkv.narrow(D::Minus1, h, h)?)?,
                    split(qkv.narrow(D::Minus1, 2 * h, h)?)?,
                )
            } else {
                (
                    split(lin(&l.query, &x)?)?,
                    split(lin(&l.key, &x)?)?,
                    split(lin(&l.value, &x)?)?,
                )
            };
            let probs = if let (true, Some(mask)) = (is_train, mask) {
                let scale = 1.0 / (self.head_size as f64).sqrt();
                let scores = precision.matmul(&q, &k.t()?)?;
                match precision {
                    Precision::F32 => ops::masked_softmax(&scores, mask, scale)?,
                    // Autocast scales the bf16 scores in bf16 (`matmul(q, kᵀ) * scaling`):
                    // one more rounding, forward and backward.
                    p => ops::masked_softmax(&p.round(&(scores * scale)?)?, mask, 1.0)?,
                }
            } else {
                // Scoring: candle's one-kernel softmax (CPU, CUDA, Metal; no backward needed),
                // and no mask to add where no sequence is padded.
                let mut scores = (q.matmul(&k.t()?)? / (self.head_size as f64).sqrt())?;
                if let Some(m) = mask {
                    scores = scores.broadcast_add(m)?;
                }
                candle_nn::ops::softmax_last_dim(&scores)?
            };
            let probs = drop(probs, true)?;
            let ctx = precision
                .matmul(&probs, &v)?
                .transpose(1, 2)?
                .contiguous()?
                .flatten_from(D::Minus2)?;
            let a = drop(lin(&l.attn_out, &ctx)?, false)?;
            let a = l.attn_norm.forward(&(a + &x)?, is_train)?;
            let i = lin(&l.intermediate, &a)?;
            let i = match self.act {
                HiddenAct::Gelu if is_train => ops::gelu_erf(&i)?,
                HiddenAct::Gelu => i.gelu_erf()?,
                HiddenAct::GeluApproximate => i.gelu()?,
                HiddenAct::Relu => i.relu()?,
            };
            let o = drop(lin(&l.output, &i)?, false)?;
            x = l.out_norm.forward(&(o + a)?, is_train)?;
        }
        Ok(x)
    }

    /// Whether training can run the fused layers of `train::bert_block` on `x`: f32
    /// activations on a CPU with AVX-512 (and bf16 products for bf16-mixed), erf-GELU,
    /// LayerNorms with biases.
    #[cfg(target_arch = "x86_64")]
    fn fusable(&self, x: &Tensor, precision: Precision) -> bool {
        x.device().is_cpu()
            && x.dtype() == DType::F32
            && bert_block::runs_here(precision)
            && matches!(self.act, HiddenAct::Gelu)
            && self.layers.iter().all(|l| {
                [
                    &l.query,
                    &l.key,
                    &l.value,
                    &l.attn_out,
                    &l.intermediate,
                    &l.output,
                ]
                .iter()
                .all(|lin| lin.bias().is_some())
                    && l.attn_norm.ln.bias().is_some()
                    && l.out_norm.ln.bias().is_some()
            })
    }

    /// Training on the fused layers: each layer one node of the graph, its dropout masks drawn
    /// in the composed path's order (attention, attention output, output).
    #[cfg(target_arch = "x86_64")]
    fn forward_fused(
        &self,
        mut x: Tensor,
        mask: &Tensor,
        tr: &mut Train,
    ) -> candle_core::Result<Tensor> {
        let (b, s, h) = x.dims3()?;
        let mask = mask.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()?;
        // The draws of the composed path's masks, which the layer computes for its tokens only.
        let draw = |tr: &mut Train, n: usize, p: f64| (p > 0.0).then(|| tr.rng.keep_draws(n, p));
        let scale = |p: f64| (1.0 / (1.0 - p)) as f32;
        for l in &self.layers {
            let missing = || candle_core::Error::Msg("fused BERT layer: a bias is missing".into());
            let bias = |lin: &Linear| lin.bias().cloned().ok_or_else(missing);
            let nb = |n: &Norm| n.ln.bias().cloned().ok_or_else(missing);
            let tensors = bert_block::LayerTensors([
                l.query.weight().clone(),
                bias(&l.query)?,
                l.key.weight().clone(),
                bias(&l.key)?,
                l.value.weight().clone(),
                bias(&l.value)?,
                l.attn_out.weight().clone(),
                bias(&l.attn_out)?,
                l.attn_norm.ln.weight().clone(),
                nb(&l.attn_norm)?,
                l.intermediate.weight().clone(),
                bias(&l.intermediate)?,
                l.output.weight().clone(),
                bias(&l.output)?,
                l.out_norm.ln.weight().clone(),
                nb(&l.out_norm)?,
            ]);
            let dropout = bert_block::LayerDropout {
                attention: draw(tr, b * self.heads * s * s, tr.attention),
                attention_output: draw(tr, b * s * h, tr.hidden),
                output: draw(tr, b * s * h, tr.hidden),
                attention_scale: scale(tr.attention),
                hidden_scale: scale(tr.hidden),
            };
            let shape = bert_block::LayerShape {
                b,
                s,
                h,
                heads: self.heads,
                f: l.intermediate.weight().dim(0)?,
                eps: l.attn_norm.eps,
            };
            if l.out_norm.eps != l.attn_norm.eps {
                candle_core::bail!("the two LayerNorms of a layer differ in epsilon");
            }
            x = bert_block::forward(
                &x,
                mask.clone(),
                tensors,
                shape,
                dropout,
                tr.precision,
                tr.grads.clone(),
            )?;
        }
        Ok(x)
    }
}

/// The mask on every CPU (the layers' tests below run on x86-64 only).
#[cfg(test)]
mod mask_tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn half_precision_masks_are_finite() {
        let m = Tensor::new(&[[1u32, 1, 0]], &Device::Cpu).unwrap();
        for dt in [DType::F16, DType::BF16, DType::F32] {
            let a = additive_mask(&m, dt).unwrap();
            let v: Vec<f32> = a
                .to_dtype(DType::F32)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            assert_eq!(v[0], 0.0, "{dt:?}");
            assert_eq!(v[1], 0.0, "{dt:?}");
            assert!(v[2].is_finite() && v[2] < -6e4, "{dt:?}: {}", v[2]);
        }
        // f64 (exactness tests of training): f64's own minimum, not f32's cast (-inf, NaN).
        let a = additive_mask(&m, DType::F64).unwrap();
        let v: Vec<f64> = a.flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!((v[0], v[2]), (0.0, f64::MIN));
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use candle_core::{Device, Var};
    use candle_nn::VarMap;
    use candle_transformers::models::bert::PositionEmbeddingType;

    fn config() -> Config {
        Config {
            vocab_size: 10,
            hidden_size: 64,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            intermediate_size: 96,
            hidden_act: HiddenAct::Gelu,
            hidden_dropout_prob: 0.1,
            max_position_embeddings: 32,
            type_vocab_size: 2,
            initializer_range: 0.02,
            layer_norm_eps: 1e-12,
            pad_token_id: 0,
            position_embedding_type: PositionEmbeddingType::Absolute,
            use_cache: false,
            classifier_dropout: None,
            model_type: None,
        }
    }

    /// A run's output, its gradients by name, and the dropout generator's state after it.
    type Run = (Vec<f32>, Vec<(String, Vec<f32>)>, u64);

    /// Output and every gradient (input and weights) of `layers` on `x`, with dropout drawn
    /// from `seed`, through the fused layers or the composed graph, in f32.
    fn run(
        layers: &BertLayers,
        vars: &VarMap,
        x: &Var,
        mask: &Tensor,
        weights: &Tensor,
        seed: u64,
        fused: bool,
    ) -> Run {
        run_in(layers, vars, x, mask, weights, seed, fused, Precision::F32)
    }

    /// [`run`] in `precision`.
    #[allow(clippy::too_many_arguments)]
    fn run_in(
        layers: &BertLayers,
        vars: &VarMap,
        x: &Var,
        mask: &Tensor,
        weights: &Tensor,
        seed: u64,
        fused: bool,
        precision: Precision,
    ) -> Run {
        let mut tr = Train {
            hidden: 0.1,
            attention: 0.15,
            rng: SplitMix::new(seed),
            grads: GradSink::default(),
            precision,
        };
        assert!(layers.fusable(x.as_tensor(), tr.precision));
        let y = if fused {
            layers
                .forward(x.as_tensor(), Some(mask), Some(&mut tr))
                .unwrap()
        } else {
            layers
                .forward_composed(x.as_tensor(), Some(mask), Some(&mut tr))
                .unwrap()
        };
        let loss = (&y * weights).unwrap().sum_all().unwrap();
        let store = loss.backward().unwrap();
        let outside = tr.grads.take();
        let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let mut grads = vec![("x".to_string(), flat(store.get(x.as_tensor()).unwrap()))];
        let data = vars.data().lock().unwrap();
        let mut names: Vec<&String> = data.keys().collect();
        names.sort();
        for name in names {
            let v = data[name].as_tensor();
            let mut g = store.get(v).map(flat);
            for (var, part) in &outside {
                if var.id() == v.id() {
                    assert!(g.is_none(), "{name}: two gradients");
                    g = Some(flat(part));
                }
            }
            grads.push((
                name.clone(),
                g.unwrap_or_else(|| panic!("{name}: no gradient")),
            ));
        }
        (flat(&y), grads, tr.rng.state)
    }

    /// Layers of `config()` with fresh random weights, on the CPU.
    fn random_layers() -> (BertLayers, Device) {
        let dev = Device::Cpu;
        let vb = VarBuilder::from_varmap(&VarMap::new(), DType::F32, &dev);
        (BertLayers::load(vb, &config()).unwrap(), dev)
    }

    /// The stacked Q | K | V product (scoring on GPUs) equals the three products.
    #[test]
    fn stacked_qkv_equals_three_products() {
        let (layers, dev) = random_layers();
        let l = &layers.layers[0];
        assert!(l.qkv_biases_alike());
        let x = Tensor::randn(0f32, 1.0, (2, 5, 64), &dev).unwrap();
        let fused = l.qkv(&x).unwrap();
        let three = Tensor::cat(
            &[
                l.query.forward(&x).unwrap(),
                l.key.forward(&x).unwrap(),
                l.value.forward(&x).unwrap(),
            ],
            D::Minus1,
        )
        .unwrap();
        let d = (fused - three).unwrap().abs().unwrap().max_all().unwrap();
        assert!(d.to_scalar::<f32>().unwrap() < 1e-5);
    }

    /// Scoring a batch without padding adds no mask: the same numbers as adding an all-zero one.
    #[test]
    fn scoring_without_padding_skips_the_mask_and_changes_nothing() {
        let (layers, dev) = random_layers();
        let x = Tensor::randn(0f32, 1.0, (2, 5, 64), &dev).unwrap();
        let zero = Tensor::zeros((2, 1, 1, 5), DType::F32, &dev).unwrap();
        let with = layers.forward(&x, Some(&zero), None).unwrap();
        let without = layers.forward(&x, None, None).unwrap();
        let d = (with - without).unwrap().abs().unwrap().max_all().unwrap();
        assert_eq!(d.to_scalar::<f32>().unwrap(), 0.0);
    }

    /// Layers of `config()` with biases and LayerNorm weights moved away from their initial 0
    /// and 1, an input of three sequences (13, 9 and 5 tokens), its mask, the kept-token
    /// flags, and loss weights on real tokens only.
    #[allow(clippy::type_complexity)]
    fn fused_case() -> (BertLayers, VarMap, Var, Tensor, Vec<f32>, Tensor, Device) {
        let dev = Device::Cpu;
        let cfg = config();
        let vars = VarMap::new();
        let vb = VarBuilder::from_varmap(&vars, DType::F32, &dev);
        let layers = BertLayers::load(vb, &cfg).unwrap();
        for (name, v) in vars.data().lock().unwrap().iter() {
            if !name.ends_with("dense.weight") && !name.contains("self.") || name.ends_with("bias")
            {
                let t = v.as_tensor();
                let noise = (Tensor::randn(0f32, 0.3, t.shape(), &dev).unwrap() + t).unwrap();
                v.set(&noise).unwrap();
            }
        }
        let (b, s, h) = (3, 13, cfg.hidden_size);
        let x = Var::from_tensor(&Tensor::randn(0f32, 1.0, (b, s, h), &dev).unwrap()).unwrap();
        let keep: Vec<f32> = [13, 9, 5]
            .iter()
            .flat_map(|&n| (0..s).map(move |i| f32::from(u8::from(i < n))))
            .collect();
        let mask = additive_mask(
            &Tensor::from_vec(keep.clone(), (b, s), &dev).unwrap(),
            DType::F32,
        )
        .unwrap();
        // The loss weighs real tokens only, as a loss on the first tokens does: padded rows
        // then carry no gradient in either path (the fused layer does not compute them).
        let real = Tensor::from_vec(keep.clone(), (b, s, 1), &dev).unwrap();
        let weights = Tensor::randn(0f32, 1.0, (b, s, h), &dev)
            .unwrap()
            .broadcast_mul(&real)
            .unwrap();
        (layers, vars, x, mask, keep, weights, dev)
    }

    /// bf16-mixed: the fused layer with products on the CPU's bf16 instructions against the
    /// composed graph in bf16-mixed. They round at the same places but sum in other orders, so
    /// a value may land one bf16 step away and carry that on; the yardstick is bf16 itself:
    /// for the output and every gradient, the two bf16 paths must be closer to each other
    /// (root-mean-square difference) than bf16 is to f32, and within 2% of the tensor's size.
    /// That catches a missing bf16 path or an f32 product, not a single misplaced rounding: one
    /// flipped rounding early in the layer carries into everything upstream of it (up to 4e-3 of
    /// the size in half the random draws), as much as leaving out the dQ/dK/dV rounding moves
    /// them (4e-3 to 9e-3, found in review). The rounding points themselves are held by
    /// `bf16_linear`'s product test and by the PyTorch yardstick (`tests/integration/train.rs`).
    #[test]
    fn the_fused_bf16_layer_matches_the_composed_bf16_graph() {
        if !bert_block::runs_here(Precision::Bf16Mixed) {
            eprintln!("no AVX-512 with bf16 products: the fused bf16 layer does not run here");
            return;
        }
        let (layers, vars, x, mask, keep, weights, _) = fused_case();
        let bf16 = Precision::Bf16Mixed;
        let h = config().hidden_size;
        let (y1, g1, r1) = run_in(&layers, &vars, &x, &mask, &weights, 7, true, bf16);
        let (y2, g2, r2) = run_in(&layers, &vars, &x, &mask, &weights, 7, false, bf16);
        let (y3, g3, _) = run(&layers, &vars, &x, &mask, &weights, 7, false);
        assert_eq!(r1, r2, "both draw the same number of dropout decisions");
        let rms = |a: &[f32], b: &[f32]| -> f64 {
            let s: f64 = a.iter().zip(b).map(|(p, q)| f64::from(p - q).powi(2)).sum();
            (s / a.len().max(1) as f64).sqrt()
        };
        // Outputs on real tokens (the fused layer leaves padded rows at zero).
        let rows = |y: &[f32]| -> Vec<f32> {
            y.chunks(h)
                .zip(&keep)
                .filter(|(_, &k)| k > 0.0)
                .flat_map(|(r, _)| r.to_vec())
                .collect()
        };
        let mut tensors = vec![("output".to_string(), rows(&y1), rows(&y2), rows(&y3))];
        for (((n, a), (_, b)), (_, c)) in g1.into_iter().zip(g2).zip(g3) {
            tensors.push((n, a, b, c));
        }
        for (name, fused, composed, f32s) in &tensors {
            if name.ends_with("self.key.bias") {
                continue; // zero in exact arithmetic: noise in every path
            }
            let size = (f32s.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>()
                / f32s.len() as f64)
                .sqrt();
            let (paths, precision) = (rms(fused, composed), rms(composed, f32s));
            eprintln!(
                "{name}: fused vs composed bf16 {:.2e}, bf16 vs f32 {:.2e} (of the size)",
                paths / size,
                precision / size
            );
            // (The last LayerNorm's bias gradient is the loss weights' sum: no product.)
            assert!(name != "output" || precision > 0.0, "bf16 changed nothing");
            assert!(
                paths <= precision.max(1e-6 * size) && paths <= 2e-2 * size,
                "{name}: fused vs composed {paths:.3e}, bf16 vs f32 {precision:.3e}, size {size:.3e}"
            );
        }
    }

    #[test]
    fn the_fused_layer_equals_the_composed_graph() {
        if !scorekit_kernels::kernels_available() {
            eprintln!("no AVX-512: the fused layer does not run here");
            return;
        }
        let (layers, vars, x, mask, keep, weights, dev) = fused_case();
        let (b, s, h) = (3, 13, config().hidden_size);
        let (y1, g1, r1) = run(&layers, &vars, &x, &mask, &weights, 7, true);
        let (y2, g2, r2) = run(&layers, &vars, &x, &mask, &weights, 7, false);
        assert_eq!(r1, r2, "both draw the same number of dropout decisions");
        // Again: the layer now writes into the buffers the first run freed, filled with NaN
        // here, and must give the same bits.
        bert_block::poison_spare_buffers();
        let again = run(&layers, &vars, &x, &mask, &weights, 7, true);
        assert!(
            again == (y1.clone(), g1.clone(), r1),
            "a second fused run differs"
        );
        let close = |what: &str, a: &[f32], b: &[f32]| {
            assert_eq!(a.len(), b.len(), "{what}");
            let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-6);
            let worst = a
                .iter()
                .zip(b)
                .map(|(p, q)| (p - q).abs())
                .fold(0f32, f32::max);
            eprintln!("{what}: worst difference {:.2e} of the max", worst / scale);
            assert!(
                worst <= 2e-5 * scale,
                "{what}: worst difference {worst} of max {scale}"
            );
        };
        // Outputs on real tokens (the fused layer leaves padded rows at zero).
        let rows = |y: &[f32]| -> Vec<f32> {
            y.chunks(h)
                .zip(&keep)
                .filter(|(_, &k)| k > 0.0)
                .flat_map(|(r, _)| r.to_vec())
                .collect()
        };
        close("output", &rows(&y1), &rows(&y2));
        assert!(y1
            .chunks(h)
            .zip(&keep)
            .all(|(r, &k)| k > 0.0 || r.iter().all(|&v| v == 0.0)));
        assert_eq!(g1.len(), 2 * 16 + 1);
        let biggest = |g: &[f32]| g.iter().fold(0f32, |m, v| m.max(v.abs()));
        for ((n1, a), (n2, b)) in g1.iter().zip(&g2) {
            assert_eq!(n1, n2);
            if n1.ends_with("self.key.bias") {
                // Zero in exact arithmetic (a softmax row does not change when all its scores
                // move by q·bias): both must be rounding noise.
                let noise = biggest(a).max(biggest(b));
                assert!(noise < 1e-5 * biggest(&g1[0].1), "{n1}: {noise}");
            } else {
                close(n1, a, b);
            }
        }
        // Another seed draws other masks: the comparison is not vacuous.
        let (y3, _, _) = run(&layers, &vars, &x, &mask, &weights, 8, true);
        assert!(y3.iter().zip(&y1).any(|(p, q)| (p - q).abs() > 1e-3));
        // A mask that is not a prefix of kept keys: every row computed, as the composed path.
        let holes: Vec<f32> = (0..b * s)
            .map(|i| f32::from(u8::from(i % 4 != 2)))
            .collect();
        let mask =
            additive_mask(&Tensor::from_vec(holes, (b, s), &dev).unwrap(), DType::F32).unwrap();
        let all = Tensor::randn(0f32, 1.0, (b, s, h), &dev).unwrap();
        let (y1, g1, _) = run(&layers, &vars, &x, &mask, &all, 5, true);
        let (y2, g2, _) = run(&layers, &vars, &x, &mask, &all, 5, false);
        close("output with holes", &y1, &y2);
        for ((n1, a), (_, b)) in g1.iter().zip(&g2) {
            if !n1.ends_with("self.key.bias") {
                close(n1, a, b);
            }
        }
    }
}
