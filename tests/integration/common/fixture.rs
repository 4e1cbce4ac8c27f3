//! Fixture makers: random-weight BERT sentence-transformers folders (config, safetensors,
//! WordPiece tokenizer.json, modules.json, pooling and Dense configs) for tests and benchmarks.
//! Deterministic: the same spec and seed give the same bytes, so reference values computed
//! once with PyTorch on a generated folder stay valid.

use std::io::Write;
use std::path::Path;

/// What to generate.
#[derive(Debug, Clone)]
pub struct BertFixture {
    /// WordPiece vocabulary, one token per id; must contain `[PAD] [UNK] [CLS] [SEP] [MASK]`.
    pub vocab: Vec<String>,
    /// Hidden size.
    pub hidden: usize,
    /// Encoder layers.
    pub layers: usize,
    /// Attention heads.
    pub heads: usize,
    /// Feed-forward size.
    pub intermediate: usize,
    /// Position embeddings.
    pub max_position: usize,
    /// Lower-case in the tokenizer's normaliser (uncased models).
    pub lowercase: bool,
    /// `cls`, `mean`, `max` or `mean_sqrt_len_tokens`.
    pub pooling: String,
    /// A Dense module with this many outputs and tanh, as LaBSE has.
    pub dense_out: Option<usize>,
    /// A Normalize module.
    pub normalize: bool,
    /// `max_seq_length` of sentence_bert_config.json.
    pub max_seq_length: usize,
    /// Seed of the weights.
    pub seed: u64,
}

/// A small vocabulary for tiny models: specials at BERT's ids, letters, digits, punctuation,
/// `##` pieces and a few whole words, so real sentences tokenise into several pieces.
pub fn tiny_vocab() -> Vec<String> {
    let mut v: Vec<String> = vec!["[PAD]".into()];
    v.extend((1..100).map(|i| format!("[unused{i}]")));
    v.extend(["[UNK]", "[CLS]", "[SEP]", "[MASK]"].map(String::from));
    for c in "abcdefghijklmnopqrstuvwxyz0123456789.,!?'\"-:;()".chars() {
        v.push(c.to_string());
    }
    for c in "abcdefghijklmnopqrstuvwxyz0123456789".chars() {
        v.push(format!("##{c}"));
    }
    for w in [
        "the", "cat", "sat", "on", "mat", "a", "is", "dog", "story", "end", "and", "he", "she",
        "was", "happy", "##s", "##ing", "##ed", "it", "to", "of", "in", "rug", "sitting",
    ] {
        v.push(w.to_string());
    }
    // Dedupe single-letter words already added as characters, keeping the first id.
    let mut seen = std::collections::HashSet::new();
    v.retain(|t| seen.insert(t.clone()));
    v
}

impl BertFixture {
    /// A tiny LaBSE-like model (CLS → Dense tanh → Normalize), cased, on `vocab`.
    pub fn tiny(vocab: Vec<String>, seed: u64) -> Self {
        BertFixture {
            vocab,
            hidden: 32,
            layers: 2,
            heads: 4,
            intermediate: 64,
            max_position: 64,
            lowercase: true,
            pooling: "cls".into(),
            dense_out: Some(32),
            normalize: true,
            max_seq_length: 24,
            seed,
        }
    }

    /// LaBSE's true shape (BERT-base, 12 layers, hidden 768, CLS → Dense 768 tanh → Normalize,
    /// 256 tokens, cased) with random weights, on LaBSE's 501,153-token vocabulary.
    pub fn labse_shaped(vocab: Vec<String>, seed: u64) -> Self {
        BertFixture {
            vocab,
            hidden: 768,
            layers: 12,
            heads: 12,
            intermediate: 3072,
            max_position: 512,
            lowercase: false,
            pooling: "cls".into(),
            dense_out: Some(768),
            normalize: true,
            max_seq_length: 256,
            seed,
        }
    }
}

/// xorshift64*: tiny, deterministic, good enough for random weights.
struct Rng(u64);

impl Rng {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545F4914F6CDD1D);
        // Uniform in [-1, 1).
        ((x >> 40) as f32 / (1u64 << 23) as f32) - 1.0
    }
}

/// How a tensor is filled: `scale * U(-1,1) + offset`.
struct Fill {
    name: String,
    shape: Vec<usize>,
    scale: f32,
    offset: f32,
}

fn write_random_safetensors(path: &Path, fills: &[Fill], seed: u64) -> std::io::Result<()> {
    let shapes: Vec<(&str, &[usize])> = fills
        .iter()
        .map(|f| (f.name.as_str(), f.shape.as_slice()))
        .collect();
    let mut w = std::io::BufWriter::with_capacity(1 << 22, std::fs::File::create(path)?);
    w.write_all(&scorekit::runtime::weights::f32_safetensors_header(
        &shapes,
        serde_json::json!({"format": "pt"}),
    ))?;
    let mut rng = Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1);
    let mut buf = Vec::with_capacity(1 << 22);
    for f in fills {
        let n: usize = f.shape.iter().product();
        for _ in 0..n {
            let x = f.offset + f.scale * rng.next_f32();
            buf.extend_from_slice(&x.to_le_bytes());
            if buf.len() >= 1 << 22 {
                w.write_all(&buf)?;
                buf.clear();
            }
        }
    }
    w.write_all(&buf)?;
    w.flush()
}

fn json(path: &Path, v: &serde_json::Value) -> std::io::Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(v).expect("json") + "\n")
}

/// The `tokenizer.json` of a BERT WordPiece tokenizer over `vocab`, as transformers'
/// `BertTokenizerFast` writes it.
pub fn wordpiece_tokenizer_json(vocab: &[String], lowercase: bool) -> serde_json::Value {
    let id = |t: &str| {
        vocab
            .iter()
            .position(|v| v == t)
            .expect("special token in vocab") as u32
    };
    let specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
    let added: Vec<_> = specials
        .iter()
        .map(|t| {
            serde_json::json!({"id": id(t), "content": t, "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let mut map = serde_json::Map::new();
    for (i, t) in vocab.iter().enumerate() {
        map.entry(t.clone())
            .or_insert(serde_json::Value::from(i as u32));
    }
    let (cls, sep) = (id("[CLS]"), id("[SEP]"));
    serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
            "strip_accents": null, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": map}
    })
}

/// Write a complete sentence-transformers folder for `spec` into `dir` (created if needed).
pub fn write_bert_fixture(dir: &Path, spec: &BertFixture) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let (h, i, v) = (spec.hidden, spec.intermediate, spec.vocab.len());
    let pad = spec.vocab.iter().position(|t| t == "[PAD]").unwrap_or(0);
    json(
        &dir.join("config.json"),
        &serde_json::json!({
            "architectures": ["BertModel"], "model_type": "bert", "attention_probs_dropout_prob": 0.1,
            "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": h, "initializer_range": 0.02,
            "intermediate_size": i, "layer_norm_eps": 1e-12, "max_position_embeddings": spec.max_position,
            "num_attention_heads": spec.heads, "num_hidden_layers": spec.layers, "pad_token_id": pad,
            "position_embedding_type": "absolute", "type_vocab_size": 2, "vocab_size": v
        }),
    )?;
    let mut fills = Vec::new();
    let mut add = |name: String, shape: Vec<usize>, scale: f32, offset: f32| {
        fills.push(Fill {
            name,
            shape,
            scale,
            offset,
        })
    };
    add(
        "embeddings.word_embeddings.weight".into(),
        vec![v, h],
        0.5,
        0.0,
    );
    add(
        "embeddings.position_embeddings.weight".into(),
        vec![spec.max_position, h],
        0.5,
        0.0,
    );
    add(
        "embeddings.token_type_embeddings.weight".into(),
        vec![2, h],
        0.5,
        0.0,
    );
    add("embeddings.LayerNorm.weight".into(), vec![h], 0.2, 1.0);
    add("embeddings.LayerNorm.bias".into(), vec![h], 0.1, 0.0);
    let ws = 1.7 / (h as f32).sqrt();
    for l in 0..spec.layers {
        let p = format!("encoder.layer.{l}.");
        for m in [
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
            "attention.output.dense",
        ] {
            add(format!("{p}{m}.weight"), vec![h, h], ws, 0.0);
            add(format!("{p}{m}.bias"), vec![h], 0.1, 0.0);
        }
        add(
            format!("{p}attention.output.LayerNorm.weight"),
            vec![h],
            0.2,
            1.0,
        );
        add(
            format!("{p}attention.output.LayerNorm.bias"),
            vec![h],
            0.1,
            0.0,
        );
        add(format!("{p}intermediate.dense.weight"), vec![i, h], ws, 0.0);
        add(format!("{p}intermediate.dense.bias"), vec![i], 0.1, 0.0);
        add(
            format!("{p}output.dense.weight"),
            vec![h, i],
            1.7 / (i as f32).sqrt(),
            0.0,
        );
        add(format!("{p}output.dense.bias"), vec![h], 0.1, 0.0);
        add(format!("{p}output.LayerNorm.weight"), vec![h], 0.2, 1.0);
        add(format!("{p}output.LayerNorm.bias"), vec![h], 0.1, 0.0);
    }
    add("pooler.dense.weight".into(), vec![h, h], ws, 0.0);
    add("pooler.dense.bias".into(), vec![h], 0.1, 0.0);
    write_random_safetensors(&dir.join("model.safetensors"), &fills, spec.seed)?;

    std::fs::write(dir.join("vocab.txt"), spec.vocab.join("\n") + "\n")?;
    json(
        &dir.join("tokenizer.json"),
        &wordpiece_tokenizer_json(&spec.vocab, spec.lowercase),
    )?;
    json(
        &dir.join("tokenizer_config.json"),
        &serde_json::json!({"do_lower_case": spec.lowercase, "tokenize_chinese_chars": true, "strip_accents": null,
            "model_max_length": spec.max_position, "tokenizer_class": "BertTokenizer", "unk_token": "[UNK]",
            "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}),
    )?;
    json(
        &dir.join("special_tokens_map.json"),
        &serde_json::json!({"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}),
    )?;
    json(
        &dir.join("sentence_bert_config.json"),
        &serde_json::json!({"max_seq_length": spec.max_seq_length, "do_lower_case": false}),
    )?;
    let mut modules = vec![
        serde_json::json!({"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}),
        serde_json::json!({"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}),
    ];
    std::fs::create_dir_all(dir.join("1_Pooling"))?;
    let mode = |m: &str| spec.pooling == m;
    json(
        &dir.join("1_Pooling/config.json"),
        &serde_json::json!({"word_embedding_dimension": h, "pooling_mode_cls_token": mode("cls"),
            "pooling_mode_mean_tokens": mode("mean"), "pooling_mode_max_tokens": mode("max"),
            "pooling_mode_mean_sqrt_len_tokens": mode("mean_sqrt_len_tokens")}),
    )?;
    if let Some(out) = spec.dense_out {
        modules.push(serde_json::json!({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}));
        std::fs::create_dir_all(dir.join("2_Dense"))?;
        json(
            &dir.join("2_Dense/config.json"),
            &serde_json::json!({"in_features": h, "out_features": out, "bias": true,
                "activation_function": "torch.nn.modules.activation.Tanh"}),
        )?;
        let fills = [
            Fill {
                name: "linear.weight".into(),
                shape: vec![out, h],
                scale: ws,
                offset: 0.0,
            },
            Fill {
                name: "linear.bias".into(),
                shape: vec![out],
                scale: 0.1,
                offset: 0.0,
            },
        ];
        write_random_safetensors(
            &dir.join("2_Dense/model.safetensors"),
            &fills,
            spec.seed ^ 0xD3,
        )?;
    }
    if spec.normalize {
        let idx = modules.len();
        modules.push(serde_json::json!({"idx": idx, "name": idx.to_string(), "path": format!("{idx}_Normalize"),
            "type": "sentence_transformers.models.Normalize"}));
    }
    json(
        &dir.join("modules.json"),
        &serde_json::Value::Array(modules),
    )?;
    json(
        &dir.join("config_sentence_transformers.json"),
        &serde_json::json!({"__version__": {"sentence_transformers": "2.0.0"}}),
    )
}

/// Read a `vocab.txt` (one token per line) into a vocabulary.
pub fn read_vocab(path: &Path) -> std::io::Result<Vec<String>> {
    Ok(std::fs::read_to_string(path)?
        .lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect())
}
