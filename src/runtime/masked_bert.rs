//! candle's BERT encoder layers behind our own embeddings and attention mask, so that f16 and bf16
//! work.
//!
//! candle-transformers 0.11.1 `BertModel::forward` builds the additive mask as
//! `(1 - mask) * f32::MIN` cast to the model dtype; in f16/bf16 `f32::MIN` becomes -inf and
//! `0 * -inf` is NaN, so every output is NaN in half precision, padded or not. Here the mask uses
//! the most negative *finite* value of the dtype, as transformers does (`torch.finfo(dtype).min`).
//! The layers themselves are candle's (`BertEncoder` is public); only the embeddings, which are
//! private in candle, are rebuilt with the same weights and the same arithmetic.

use candle_core::{DType, Module, Result, Tensor};
use candle_nn::{embedding, layer_norm, Embedding, LayerNorm, VarBuilder};
use candle_transformers::models::bert::{BertEncoder, Config};

/// A BERT encoder (embeddings + layers) whose attention mask is safe in every float dtype.
pub struct MaskedBert {
    word: Embedding,
    position: Embedding,
    token_type: Embedding,
    norm: LayerNorm,
    encoder: BertEncoder,
}

impl MaskedBert {
    /// Load with the same key lookup as candle's `BertModel::load` (unprefixed, `bert.`, or
    /// `<model_type>.`).
    pub fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else if let Some(mt) = cfg.model_type.as_deref().filter(|mt| {
            !vb.contains_tensor("embeddings.word_embeddings.weight")
                && vb.contains_tensor(&format!("{mt}.embeddings.word_embeddings.weight"))
        }) {
            vb.pp(mt)
        } else {
            vb
        };
        let e = vb.pp("embeddings");
        Ok(MaskedBert {
            word: embedding(cfg.vocab_size, cfg.hidden_size, e.pp("word_embeddings"))?,
            position: embedding(
                cfg.max_position_embeddings,
                cfg.hidden_size,
                e.pp("position_embeddings"),
            )?,
            token_type: embedding(
                cfg.type_vocab_size,
                cfg.hidden_size,
                e.pp("token_type_embeddings"),
            )?,
            norm: layer_norm(cfg.hidden_size, cfg.layer_norm_eps, e.pp("LayerNorm"))?,
            encoder: BertEncoder::load(vb.pp("encoder"), cfg)?,
        })
    }

    /// The same contract as candle's `BertModel::forward`: `[b, s]` ids, `[b, s, h]` output.
    pub fn forward(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let (_, seq_len) = input_ids.dims2()?;
        let positions = Tensor::arange(0u32, seq_len as u32, input_ids.device())?;
        let x = (self.word.forward(input_ids)? + self.token_type.forward(token_type_ids)?)?
            .broadcast_add(&self.position.forward(&positions)?)?;
        let x = self.norm.forward(&x)?;
        let mask = match attention_mask {
            Some(m) => additive_mask(m, x.dtype())?,
            // No padding: a zero mask changes nothing.
            None => Tensor::zeros((1, 1, 1, seq_len), x.dtype(), x.device())?,
        };
        self.encoder.forward(&x, &mask)
    }
}

/// `[b, s]` 0/1 mask → `[b, 1, 1, s]` additive mask: 0 where attended, the dtype's most negative
/// finite value where padded.
pub fn additive_mask(mask: &Tensor, dtype: DType) -> Result<Tensor> {
    let min = match dtype {
        DType::F16 => -65504.0,
        DType::BF16 => -3.389_531_4e38,
        DType::F64 => f64::MIN,
        _ => f32::MIN as f64,
    };
    // Computed in f32 (1 - mask is exactly 0 or 1), then scaled and cast: no 0 * -inf anywhere.
    let inverted = (1.0 - mask.to_dtype(DType::F32)?)?;
    (inverted * min)?
        .to_dtype(dtype)?
        .unsqueeze(1)?
        .unsqueeze(1)
}

#[cfg(test)]
mod tests {
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
    }
}
