//! RoBERTa: BERT's layers and tensor layout, positions counted from `pad_token_id + 1`, no token
//! types (a type vocabulary of one), byte-level BPE, and its own classification head.

use super::bert::{
    bert_layout_config, check_bert_layout, native_layout, position_offset, CandleBert,
};
use crate::arch::{Activation, Architecture, HeadKind, HeadLayout, ModelConfig, TrainableEncoder};
use anyhow::anyhow;
use candle_nn::VarBuilder;
use scorekit_core::error::Result;
use scorekit_encoder::Encoder;
use serde_json::{Map, Value};
use std::path::Path;
use tokenizers::Tokenizer;

/// RoBERTa (`model_type: roberta`).
pub struct Roberta;

/// Parse a RoBERTa-family config with the encoder's tensors under `prefix`.
pub fn roberta_config(
    raw: Map<String, Value>,
    path: &Path,
    prefix: &'static str,
) -> Result<ModelConfig> {
    let mut cfg = bert_layout_config(raw, path, prefix, true)?;
    cfg.native = native_layout(&cfg, position_offset(&cfg.bert, true));
    Ok(cfg)
}

/// candle's layers with RoBERTa's positions.
pub fn load_roberta(
    vb: VarBuilder<'static>,
    cfg: &ModelConfig,
) -> candle_core::Result<Box<dyn Encoder>> {
    Ok(Box::new(roberta_layers(vb, cfg)?))
}

/// The RoBERTa encoder as a concrete (trainable) module.
pub fn roberta_layers(
    vb: VarBuilder<'static>,
    cfg: &ModelConfig,
) -> candle_core::Result<CandleBert> {
    CandleBert::load(vb, cfg, position_offset(&cfg.bert, true), None)
}

/// RoBERTa's heads: `...ForMultipleChoice` pools with `roberta.pooler` then `classifier`;
/// `...ForSequenceClassification` has `classifier.dense` + tanh + `classifier.out_proj`.
pub fn roberta_head(kind: HeadKind) -> HeadLayout {
    match kind {
        HeadKind::MultipleChoice => HeadLayout {
            first: "roberta.pooler.dense",
            act: Activation::Tanh,
            second: "classifier",
        },
        HeadKind::SequenceClassification(_) => HeadLayout {
            first: "classifier.dense",
            act: Activation::Tanh,
            second: "classifier.out_proj",
        },
    }
}

impl Architecture for Roberta {
    fn model_types(&self) -> &'static [&'static str] {
        &["roberta"]
    }

    fn config(&self, raw: Map<String, Value>, path: &Path) -> Result<ModelConfig> {
        roberta_config(raw, path, "roberta.")
    }

    fn check_weights(&self, weights: &Path, cfg: &ModelConfig) -> Result<()> {
        check_bert_layout(weights, cfg, None)
    }

    fn load_candle(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> candle_core::Result<Box<dyn Encoder>> {
        load_roberta(vb, cfg)
    }

    fn trainable(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> Option<candle_core::Result<Box<dyn TrainableEncoder>>> {
        Some(roberta_layers(vb, cfg).map(|m| Box::new(m) as _))
    }

    fn head(&self, kind: HeadKind) -> HeadLayout {
        roberta_head(kind)
    }

    fn legacy_tokenizer(&self, dir: &Path) -> Option<Result<Tokenizer>> {
        dir.join("vocab.json")
            .exists()
            .then(|| roberta_tokenizer(dir))
    }
}

/// The byte-level BPE tokenizer of `RobertaTokenizer` from vocab.json + merges.txt (checkpoints
/// that predate tokenizer.json): `<s> A </s></s> B </s>`.
pub fn roberta_tokenizer(dir: &Path) -> Result<Tokenizer> {
    use tokenizers::models::bpe::BPE;
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;
    use tokenizers::processors::roberta::RobertaProcessing;
    use tokenizers::AddedToken;
    let vocab = dir.join("vocab.json");
    let merges = dir.join("merges.txt");
    let bpe = BPE::from_file(&vocab.to_string_lossy(), &merges.to_string_lossy())
        .build()
        .map_err(|e| anyhow!("cannot load {} / merges.txt: {e}", vocab.display()))?;
    let id = |t: &str| {
        tokenizers::Model::token_to_id(&bpe, t)
            .ok_or_else(|| anyhow!("{}: no token {t}", vocab.display()))
    };
    let (bos, eos) = (id("<s>")?, id("</s>")?);
    let specials: Vec<AddedToken> = ["<s>", "</s>", "<unk>", "<pad>", "<mask>"]
        .iter()
        .filter(|t| tokenizers::Model::token_to_id(&bpe, t).is_some())
        .map(|t| AddedToken::from(t.to_string(), true))
        .collect();
    let mut tokenizer = Tokenizer::new(bpe);
    tokenizer.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
    tokenizer.with_decoder(Some(ByteLevel::new(false, true, true)));
    tokenizer.with_post_processor(Some(
        RobertaProcessing::new(("</s>".into(), eos), ("<s>".into(), bos))
            .trim_offsets(true)
            .add_prefix_space(false),
    ));
    // Returns how many were new; all of them are in the vocabulary already.
    let _ = tokenizer.add_special_tokens(specials);
    Ok(tokenizer)
}
