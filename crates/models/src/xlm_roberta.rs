//! XLM-RoBERTa: RoBERTa's architecture and tensor names (`transformers`' XLM-R classes keep the
//! `roberta.` prefix) with a SentencePiece vocabulary, which tokenizer.json carries. Everything
//! but the `model_type` it answers to is RoBERTa's (`roberta.rs`).

use super::roberta::Roberta;
use crate::arch::{Architecture, HeadKind, HeadLayout, ModelConfig, TrainableEncoder};
use candle_nn::VarBuilder;
use scorekit_core::error::Result;
use scorekit_encoder::Encoder;
use serde_json::{Map, Value};
use std::path::Path;

/// XLM-RoBERTa (`model_type: xlm-roberta`).
pub struct XlmRoberta;

impl Architecture for XlmRoberta {
    fn model_types(&self) -> &'static [&'static str] {
        &["xlm-roberta"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<ModelConfig> {
        Roberta.config(raw, path)
    }

    fn check_weights(&self, weights: &Path, cfg: &ModelConfig) -> Result<()> {
        Roberta.check_weights(weights, cfg)
    }

    fn load_candle(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> candle_core::Result<Box<dyn Encoder>> {
        Roberta.load_candle(vb, cfg)
    }

    fn trainable(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> Option<candle_core::Result<Box<dyn TrainableEncoder>>> {
        Roberta.trainable(vb, cfg)
    }

    fn head(&self, kind: HeadKind) -> HeadLayout {
        Roberta.head(kind)
    }
}
