//! A multiple-choice judge as trainable candle variables: the architecture's own encoder
//! definition (`Architecture::trainable`) and head names (`Architecture::head`), built on a
//! `VarMap` and filled from the checkpoint's tensors, so that the saved folder is read back by
//! the scoring judge exactly as it was trained.

use anyhow::anyhow;
use candle_core::{DType, Device, IndexOp, Module, Tensor, Var};
use candle_nn::{Linear, VarBuilder, VarMap};
use scorekit_autograd::rng::SplitMix;
use scorekit_autograd::Precision;
use scorekit_core::error::{Error, Result};
use scorekit_models::bert_layers::Train;
use scorekit_models::{
    self as models, Activation, Architecture, HeadKind, ModelConfig, TrainableEncoder,
};
use std::path::Path;

/// Dropout probabilities of the model's config.json (`transformers`' names).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Dropouts {
    /// `hidden_dropout_prob`.
    pub hidden: f64,
    /// `attention_probs_dropout_prob`.
    pub attention: f64,
    /// `classifier_dropout` (DeBERTa: `cls_dropout`), else `hidden_dropout_prob`.
    pub classifier: f64,
    /// On the first token before the head (DeBERTa's `pooler_dropout`; 0 for the others).
    /// Absent from runs recorded before DeBERTa trained: 0.
    #[serde(default)]
    pub pooler: f64,
}

impl Dropouts {
    /// All three set to `p` (`--dropout P`).
    pub fn all(p: f64) -> Self {
        Dropouts {
            hidden: p,
            attention: p,
            classifier: p,
            pooler: p,
        }
    }
}

/// A trainable `...ForMultipleChoice` model.
pub struct McModel {
    /// The architecture (config parsing, tensor names, heads).
    pub arch: &'static dyn Architecture,
    /// The parsed config.json.
    pub cfg: ModelConfig,
    /// Every trainable tensor, by its name in the saved folder.
    pub varmap: VarMap,
    encoder: Box<dyn TrainableEncoder>,
    first: Linear,
    act: Activation,
    second: Linear,
    /// Dropouts of config.json.
    pub config_dropouts: Dropouts,
    /// Head tensors the checkpoint did not have, initialised as `transformers` does.
    pub new_head: Vec<String>,
    device: Device,
}

/// The head tensors' names (weight and bias of both layers) of `arch`'s multiple-choice head.
fn head_names(arch: &dyn Architecture) -> [String; 4] {
    let h = arch.head(HeadKind::MultipleChoice);
    [
        format!("{}.weight", h.first),
        format!("{}.bias", h.first),
        format!("{}.weight", h.second),
        format!("{}.bias", h.second),
    ]
}

impl McModel {
    /// Load model folder `dir` (config.json, model.safetensors or pytorch_model.bin) as a
    /// trainable multiple-choice model in `dtype` (f32; f64 for exactness tests) on `device`. Head tensors the checkpoint lacks are
    /// drawn from normal(0, `initializer_range`) (weights) and zero (biases) with `seed`.
    pub fn load(dir: &Path, device: &Device, dtype: DType, seed: u64) -> Result<McModel> {
        let config_path = dir.join("config.json");
        let (arch, cfg) = models::read_config(&config_path, "bert")?;
        let weights = models::weights_file(dir)?;
        arch.check_weights(&weights, &cfg)?;
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, dtype, device);
        let prefix = cfg.prefix.trim_end_matches('.');
        let encoder = arch
            .trainable(vb.pp(prefix), &cfg)
            .ok_or_else(|| {
                Error::usage(format!(
                    "{}: scorekit trains BERT, RoBERTa, XLM-R and DeBERTa-v2/v3 judges; model_type {:?} is scored only",
                    dir.display(),
                    cfg.model_type
                ))
            })?
            .map_err(|e| models::weights_error(&weights, e))?;
        let layout = arch.head(HeadKind::MultipleChoice);
        let h = cfg.bert.hidden_size;
        let head = || -> candle_core::Result<(Linear, Linear)> {
            Ok((
                candle_nn::linear(h, h, vb.pp(layout.first))?,
                candle_nn::linear(h, 1, vb.pp(layout.second))?,
            ))
        };
        let (first, second) = head().map_err(|e| Error::Internal(anyhow!("head: {e}")))?;
        let new_head = fill_from_checkpoint(&varmap, &weights, arch, &cfg, device, dtype, seed)?;
        let f = |k: &str, d: f64| cfg.raw.get(k).and_then(|v| v.as_f64()).unwrap_or(d);
        let head_dropouts = arch.head_dropouts(&cfg);
        let config_dropouts = Dropouts {
            hidden: cfg.bert.hidden_dropout_prob,
            attention: f("attention_probs_dropout_prob", 0.1),
            classifier: head_dropouts.classifier,
            pooler: head_dropouts.pooler,
        };
        Ok(McModel {
            arch,
            cfg,
            varmap,
            encoder,
            first,
            act: layout.act,
            second,
            config_dropouts,
            new_head,
            device: device.clone(),
        })
    }

    /// The device the variables live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Every variable with its name, sorted by name (the optimiser's fixed order).
    pub fn named_vars(&self) -> Vec<(String, Var)> {
        let data = self.varmap.data().lock().expect("varmap lock");
        let mut v: Vec<(String, Var)> = data.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// `[q, c]` logits of `q` questions with `c` choices each, from padded `[q·c, s]` inputs.
    /// With `train`: training mode (dropout from its generator; the head's with `pooler` on
    /// the first token and `classifier` on the pooled vector).
    pub fn logits(
        &self,
        ids: &Tensor,
        types: &Tensor,
        mask: &Tensor,
        choices: usize,
        train: Option<(&mut Train, &Dropouts)>,
    ) -> candle_core::Result<Tensor> {
        let (rows, _) = ids.dims2()?;
        let mut train = train;
        let encoder_train = train.as_mut().map(|(t, _)| &mut **t);
        let hidden = self
            .encoder
            .forward_padded(ids, types, mask, encoder_train)?;
        let mut first = hidden.i((.., 0))?.contiguous()?;
        if let Some((t, d)) = train.as_mut() {
            first = t.dropout(&first, d.pooler)?;
        }
        // f32 runs keep candle's layers (the numbers of the parity tests); bf16-mixed runs the
        // head's products in bf16 as autocast does.
        let precision = train.as_ref().map(|(t, _)| t.precision);
        let head = |l: &Linear, x: &Tensor| match precision {
            Some(p @ Precision::Bf16Mixed) => p.linear(x, l.weight(), l.bias()),
            _ => l.forward(x),
        };
        let x = head(&self.first, &first)?;
        // Training: the fused erf-GELU, whose backward is exact (candle's rounds 1/√(2π)).
        let mut x = match self.act {
            Activation::Tanh => x.tanh()?,
            Activation::Gelu if train.is_some() => scorekit_autograd::ops::gelu_erf(&x)?,
            Activation::Gelu => x.gelu_erf()?,
        };
        if let Some((t, d)) = train {
            x = t.dropout(&x, d.classifier)?;
        }
        head(&self.second, &x)?.reshape((rows / choices, choices))
    }
}

/// Set every variable of `varmap` from the checkpoint (under its full name, or without the
/// encoder prefix for a base model); head tensors the checkpoint lacks are initialised as
/// `transformers` does, in name order from `seed`. Returns the initialised names.
fn fill_from_checkpoint(
    varmap: &VarMap,
    weights: &Path,
    arch: &dyn Architecture,
    cfg: &ModelConfig,
    device: &Device,
    dtype: DType,
    seed: u64,
) -> Result<Vec<String>> {
    let src = models::var_builder(weights, dtype, device)?;
    let head = head_names(arch);
    let vars = {
        let data = varmap.data().lock().expect("varmap lock");
        let mut v: Vec<(String, Var)> = data.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let mut rng = SplitMix::new(seed);
    let mut fresh = Vec::new();
    for (name, var) in vars {
        let found = [name.as_str(), name.strip_prefix(cfg.prefix).unwrap_or("")]
            .into_iter()
            .find(|n| !n.is_empty() && src.contains_tensor(n));
        let value = match found {
            Some(n) => src
                .get(var.shape(), n)
                .map_err(|e| models::weights_error(weights, e))?,
            None if head.contains(&name) => {
                fresh.push(name.clone());
                let n = var.elem_count();
                let data: Vec<f32> = if name.ends_with(".bias") {
                    vec![0.0; n]
                } else {
                    (0..n)
                        .map(|_| (rng.normal() * cfg.bert.initializer_range) as f32)
                        .collect()
                };
                Tensor::from_vec(data, var.shape(), device)
                    .and_then(|t| t.to_dtype(dtype))
                    .map_err(|e| Error::Internal(anyhow!("{e}")))?
            }
            None => {
                return Err(models::bad(
                    weights,
                    format!("has no tensor {name:?} (config.json does not match the weights)"),
                ))
            }
        };
        var.set(&value)
            .map_err(|e| models::weights_error(weights, e))?;
    }
    Ok(fresh)
}
