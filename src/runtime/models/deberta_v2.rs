//! DeBERTa-v2 and v3 (`model_type: deberta-v2`): disentangled relative attention, on candle's
//! `DebertaV2Model`. Both heads (`...ForMultipleChoice`, `...ForSequenceClassification`) are the
//! context pooler (`pooler.dense` + GELU on the first token) then `classifier`.

use super::bert::bert_layout_config;
use super::{bad, Activation, Architecture, HeadKind, HeadLayout, ModelConfig};
use crate::error::Result;
use crate::runtime::encoder::{Batch, Encoder, Hidden, Linear};
use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::debertav2;
use serde_json::{Map, Value};
use std::path::Path;

/// DeBERTa-v2/v3.
pub struct DebertaV2;

impl Architecture for DebertaV2 {
    fn model_types(&self) -> &'static [&'static str] {
        &["deberta-v2"]
    }

    fn config(&self, mut raw: Map<String, Value>, path: &Path) -> Result<ModelConfig> {
        let hidden = super::usize_field(&raw, "hidden_size", path)?;
        // `transformers` writes these only when they differ from its defaults; candle requires them.
        super::default(&mut raw, "pooler_hidden_size", hidden.into());
        super::default(&mut raw, "pooler_dropout", 0.0.into());
        super::default(&mut raw, "pooler_hidden_act", "gelu".into());
        super::default(&mut raw, "relative_attention", false.into());
        super::default(&mut raw, "max_relative_positions", (-1).into());
        super::default(&mut raw, "position_biased_input", true.into());
        super::default(&mut raw, "pos_att_type", Value::Array(vec![]));
        super::default(&mut raw, "type_vocab_size", 0.into());
        if raw.get("pooler_hidden_act").and_then(Value::as_str) != Some("gelu") {
            return Err(bad(path, "pooler_hidden_act: only \"gelu\" is supported"));
        }
        // Checked here so that loading cannot fail on it later.
        deberta_config(&raw, path)?;
        // The dimensions every encoder has; DeBERTa's own reading stays in `raw`.
        let mut dims = raw.clone();
        dims.remove("position_embedding_type");
        let mut cfg = bert_layout_config(dims, path, "deberta.", false)?;
        cfg.raw = raw;
        cfg.type_ids = cfg.bert.type_vocab_size > 1;
        Ok(cfg)
    }

    fn candle_dtype(&self, _dtype: DType) -> DType {
        // candle's XSoftmax builds its mask constants in f32: DeBERTa runs in f32.
        DType::F32
    }

    fn load_candle(
        &self,
        vb: VarBuilder<'static>,
        cfg: &ModelConfig,
    ) -> candle_core::Result<Box<dyn Encoder>> {
        let dc = deberta_config(&cfg.raw, Path::new("config.json"))
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        let inner = if vb.contains_tensor("deberta.embeddings.word_embeddings.weight") {
            vb.pp("deberta")
        } else {
            vb.clone()
        };
        Ok(Box::new(CandleDeberta {
            model: debertav2::DebertaV2Model::load(inner, &dc)?,
            pad_id: cfg.pad_id,
            root: vb,
        }))
    }

    fn head(&self, _kind: HeadKind) -> HeadLayout {
        HeadLayout {
            first: "pooler.dense",
            act: Activation::Gelu,
            second: "classifier",
        }
    }

    fn legacy_tokenizer(&self, dir: &Path) -> Option<Result<tokenizers::Tokenizer>> {
        // The Hub's microsoft/deberta-v3-* and deberta-v2-* ship spm.model, no tokenizer.json.
        dir.join("spm.model")
            .exists()
            .then(|| crate::runtime::spm::deberta_v2_tokenizer(dir))
    }
}

/// candle's DeBERTa-v2 config from a config.json map with the defaults filled in.
fn deberta_config(raw: &Map<String, Value>, path: &Path) -> Result<debertav2::Config> {
    let mut raw = raw.clone();
    // A multiple-choice config still lists HF's default two labels; the heads are ours.
    raw.insert("id2label".into(), Value::Null);
    raw.insert("label2id".into(), Value::Null);
    super::parse(&raw, path)
}

/// candle's DeBERTa-v2 encoder (padded).
struct CandleDeberta {
    model: debertav2::DebertaV2Model,
    pad_id: u32,
    root: VarBuilder<'static>,
}

impl Encoder for CandleDeberta {
    fn forward(&self, batch: &Batch) -> candle_core::Result<Hidden> {
        let p = batch.padded(self.pad_id, self.root.device())?;
        let x = self.model.forward(
            &p.input_ids,
            Some(p.token_type_ids.clone()),
            Some(p.attention_mask.clone()),
        )?;
        Ok(Hidden::Padded {
            x,
            mask: p.attention_mask,
        })
    }

    fn is_padded(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "candle DeBERTa-v2 layers"
    }

    fn linear(&self, name: &str, n: usize, k: usize) -> candle_core::Result<Box<dyn Linear>> {
        Ok(Box::new(candle_nn::linear(k, n, self.root.pp(name))?))
    }

    fn device(&self) -> &Device {
        self.root.device()
    }
}
