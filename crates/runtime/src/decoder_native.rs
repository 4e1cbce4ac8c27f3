//! A decoder letter judge's model on scorekit's kernels (`scorekit_native::FastDecoder`): its
//! shape from config.json, its weights read one tensor at a time and packed for the products
//! asked (`--quantize` int8, `--dtype bf16`, else f32), and RoPE tables per batch. The candle
//! model (`models::decoder::model`) runs everywhere else; `engine::products_on_kernels` chooses.

#[cfg(target_arch = "x86_64")]
pub use x86::{load, NativeDecoder};

/// No value: there is no native decoder off x86-64.
#[cfg(not(target_arch = "x86_64"))]
pub enum NativeDecoder {}

#[cfg(not(target_arch = "x86_64"))]
impl NativeDecoder {
    /// Unreachable: no value exists.
    pub fn last_logits(
        &self,
        _: &[Vec<u32>],
        _: &scorekit_models::decoder::DecoderConfig,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        match *self {}
    }

    /// Unreachable: no value exists.
    pub fn products_name(&self) -> &'static str {
        match *self {}
    }
}

/// Off x86-64 `products_on_kernels` never chooses the kernels; reaching here is a bug.
#[cfg(not(target_arch = "x86_64"))]
pub fn load(
    _: &scorekit_models::shards::WeightFiles,
    _: &scorekit_models::decoder::DecoderConfig,
    _: candle_core::DType,
    _: &crate::engine::EngineOptions,
) -> scorekit_core::error::Result<NativeDecoder> {
    Err(scorekit_core::error::Error::Internal(anyhow::anyhow!(
        "scorekit's kernels exist on x86-64 only"
    )))
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use crate::engine::EngineOptions;
    use candle_core::{DType, Device};
    use scorekit_core::error::{Error, InputError, Result};
    use scorekit_kernels::act::Activation;
    use scorekit_models::decoder::{DecoderAct, DecoderConfig, Layout};
    use scorekit_models::shards::{var_builder_of, WeightFiles};
    use scorekit_native::{DecoderShape, FastDecoder, RopeTable};

    /// A decoder on scorekit's kernels.
    pub struct NativeDecoder(FastDecoder);

    /// Load the model of `cfg` from `files`, its products packed as `opts` and `dtype` ask.
    pub fn load(
        files: &WeightFiles,
        cfg: &DecoderConfig,
        dtype: DType,
        opts: &EngineOptions,
    ) -> Result<NativeDecoder> {
        let bf16 = dtype == DType::BF16;
        let shape = DecoderShape {
            hidden: cfg.hidden_size,
            heads: cfg.num_heads,
            kv_heads: cfg.num_kv_heads,
            head_dim: cfg.head_dim,
            intermediate: cfg.intermediate_size,
            layers: cfg.num_layers,
            vocab: cfg.vocab_size,
            eps: cfg.rms_norm_eps as f32,
            act: match cfg.act {
                DecoderAct::Silu => Activation::Silu,
                DecoderAct::GeluTanh => Activation::GeluTanh,
                DecoderAct::Gelu => Activation::GeluErf,
            },
            norm_plus_one: cfg.norm_plus_one,
            qk_norm: cfg.qk_norm,
            sandwich_norms: cfg.sandwich_norms,
            fused: cfg.layout == Layout::Fused,
            qkv_bias: cfg.qkv_bias,
            o_bias: cfg.o_bias,
            mlp_bias: cfg.mlp_bias,
            // `torch.tensor(hidden_size**0.5, dtype=hidden.dtype)`: rounded to the model's dtype.
            embed_scale: cfg.embed_scale.then(|| {
                let s = (cfg.hidden_size as f64).sqrt() as f32;
                if bf16 {
                    scorekit_kernels::train::bf16_round(s)
                } else {
                    s
                }
            }),
            attn_scaling: cfg.attn_scaling as f32,
            attn_softcap: cfg.attn_softcap.map(|c| c as f32),
            final_softcap: cfg.final_softcap.map(|c| c as f32),
            windows: cfg.sliding_windows.clone(),
            tied: cfg.tie_word_embeddings,
            embed_bf16: bf16,
        };
        let products = crate::engine::kernel_products(opts, dtype);
        // An f32 view of the weights on the CPU, read one tensor at a time as the model packs it.
        let f32s = var_builder_of(files, DType::F32, &Device::Cpu)?;
        let read = |name: &str, dims: &[usize]| -> candle_core::Result<Option<Vec<f32>>> {
            if !f32s.contains_tensor(name) {
                return Ok(None);
            }
            f32s.get(dims, name)?
                .flatten_all()?
                .to_vec1::<f32>()
                .map(Some)
        };
        let (prefix, head) = cfg.weight_names(&|name| f32s.contains_tensor(name));
        let prefix = format!("{prefix}.");
        let model = FastDecoder::load(&read, &prefix, &head, shape, products).map_err(|e| {
            Error::Input(InputError::file(
                &files.files()[0],
                format!("the weights do not fit config.json: {e}"),
            ))
        })?;
        Ok(NativeDecoder(model))
    }

    impl NativeDecoder {
        /// Next-token logits at the last token of each row of `ids`.
        pub fn last_logits(
            &self,
            ids: &[Vec<u32>],
            cfg: &DecoderConfig,
        ) -> candle_core::Result<Vec<Vec<f32>>> {
            let longest = ids.iter().map(Vec::len).max().unwrap_or(0);
            // One table per distinct rope (Gemma 3: local and global), each layer pointing at
            // its own; the batch's longest row chooses longrope's factors, as in candle's path.
            let table_of = |rope: &scorekit_models::decoder::Rope| {
                let (inv_freq, scaling) = rope.frequencies(longest);
                RopeTable::new(&inv_freq, scaling, longest)
            };
            let global = table_of(&cfg.rope);
            let local = cfg.local_rope.as_ref().map(table_of);
            let ropes: Vec<&RopeTable> = (0..cfg.num_layers)
                .map(|l| match &local {
                    Some(t) if !std::ptr::eq(cfg.rope_of(l), &cfg.rope) => t,
                    _ => &global,
                })
                .collect();
            let seqs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
            let flat = self.0.last_logits(&seqs, &ropes)?;
            Ok(flat
                .chunks(cfg.vocab_size.max(1))
                .map(<[f32]>::to_vec)
                .collect())
        }

        /// Which products run the model (for reports).
        pub fn products_name(&self) -> &'static str {
            self.0.products_name()
        }
    }
}
