//! XLM-RoBERTa: RoBERTa's architecture and tensor names (`transformers`' XLM-R classes keep the
//! `roberta.` prefix) with a SentencePiece vocabulary, which tokenizer.json carries.

use super::roberta::{load_roberta, roberta_config, roberta_head};
use super::{Architecture, HeadKind, HeadLayout, ModelConfig};
use crate::error::Result;
use crate::runtime::encoder::Encoder;
use candle_nn::VarBuilder;
use serde_json::{Map, Value};
use std::path::Path;

/// XLM-RoBERTa (`model_type: xlm-roberta`).
pub struct XlmRoberta;

impl Architecture for XlmRoberta {
    fn model_types(&self) -> &'static [&'static str] {
        &["xlm-roberta"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<ModelConfig> {
        roberta_config(raw, path, "roberta.")
    }

    fn check_weights(&self, weights: &Path, cfg: &ModelConfig) -> Result<()> {
        super::bert::check_bert_layout(weights, cfg, None)
    }

    fn load_candle(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> candle_core::Result<Box<dyn Encoder>> {
        load_roberta(vb, cfg)
    }

    fn head(&self, kind: HeadKind) -> HeadLayout {
        roberta_head(kind)
    }
}
