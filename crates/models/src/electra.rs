//! ELECTRA (discriminator): BERT's layers and tensor layout under `electra.`, embeddings of their
//! own width (`embedding_size`) projected to the hidden size by `electra.embeddings_project`
//! where the two differ, and GELU heads: `...ForMultipleChoice` is `sequence_summary.summary` +
//! GELU on the first token then `classifier`; `...ForSequenceClassification` is
//! `classifier.dense` + GELU + `classifier.out_proj`.

use super::bert::{
    bert_layout_config, check_bert_layout, embedding_size, native_layout, CandleBert,
};
use crate::arch::{Activation, Architecture, HeadKind, HeadLayout, ModelConfig};
use candle_nn::VarBuilder;
use scorekit_core::error::Result;
use scorekit_encoder::Encoder;
use serde_json::{Map, Value};
use std::path::Path;

/// ELECTRA (`model_type: electra`).
pub struct Electra;

/// The projection from embedding width to hidden size.
const PROJECTION: &str = "electra.embeddings_project";

impl Architecture for Electra {
    fn model_types(&self) -> &'static [&'static str] {
        &["electra"]
    }

    fn config(&self, mut raw: Map<String, Value>, path: &Path) -> Result<ModelConfig> {
        // ElectraConfig's defaults where they differ from BertConfig's.
        crate::arch::default(&mut raw, "embedding_size", 128.into());
        let mut cfg = bert_layout_config(raw, path, "electra.", false)?;
        // The native encoder has no projection: it runs ELECTRA where there is none.
        if embedding_size(&cfg) == cfg.bert.hidden_size {
            cfg.native = native_layout(&cfg, 0);
        }
        Ok(cfg)
    }

    fn check_weights(&self, weights: &Path, cfg: &ModelConfig) -> Result<()> {
        check_bert_layout(weights, cfg, Some("embeddings_project"))
    }

    fn load_candle(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> candle_core::Result<Box<dyn Encoder>> {
        Ok(Box::new(CandleBert::load(vb, cfg, 0, Some(PROJECTION))?))
    }

    fn head(&self, kind: HeadKind) -> HeadLayout {
        match kind {
            HeadKind::MultipleChoice => HeadLayout {
                first: "sequence_summary.summary",
                act: Activation::Gelu,
                second: "classifier",
            },
            HeadKind::SequenceClassification(_) => HeadLayout {
                first: "classifier.dense",
                act: Activation::Gelu,
                second: "classifier.out_proj",
            },
        }
    }
}
