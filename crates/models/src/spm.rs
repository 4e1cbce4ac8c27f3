//! DeBERTa-v2/v3 tokenizers from SentencePiece's `spm.model`, for the Hub folders that ship no
//! tokenizer.json (microsoft/deberta-v3-large and its siblings): a minimal reader of the protobuf
//! `ModelProto`, and the fast tokenizer that transformers' `DebertaV2Converter` (transformers 4,
//! convert_slow_tokenizer.py) and `DebertaV2TokenizerFast` build from it, token for token.
//!
//! The reader ([`proto`], on prost) knows the few fields the converter uses (pieces,
//! `trainer_spec.model_type`, `unk_id`, `normalizer_spec.precompiled_charsmap`) and skips the rest,
//! so any valid model parses; a truncated or corrupt file is an input error naming the file, never
//! a panic. Only unigram models are read: every DeBERTa-v2/v3 checkpoint is one, and the converter's
//! BPE path needs SentencePiece's own merge extraction.

use scorekit_core::error::{Error, InputError, Result};
use serde_json::Value;
use std::path::Path;
use tokenizers::decoders::metaspace::Metaspace as MetaspaceDecoder;
use tokenizers::models::unigram::Unigram;
use tokenizers::normalizers::replace::ReplacePattern;
use tokenizers::normalizers::{Lowercase, Precompiled, Replace, Sequence, Strip};
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::punctuation::Punctuation;
use tokenizers::pre_tokenizers::sequence::Sequence as PreSequence;
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, NormalizerWrapper, PreTokenizerWrapper, SplitDelimiterBehavior};
use tokenizers::{Model, Tokenizer};

/// What a SentencePiece piece is (`SentencePiece.Type` in sentencepiece_model.proto).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceType {
    /// An ordinary piece (1, the default).
    Normal,
    /// The unknown piece (2).
    Unknown,
    /// A control symbol such as `[CLS]` (3): never produced from text.
    Control,
    /// A user-defined symbol (4): always produced whole.
    UserDefined,
    /// Unused (5).
    Unused,
    /// A byte-fallback piece `<0x41>` (6).
    Byte,
}

/// One vocabulary entry of spm.model.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    /// The piece's text (`▁` marks a word start).
    pub piece: String,
    /// Its log probability (unigram).
    pub score: f32,
    /// Its kind.
    pub kind: PieceType,
}

/// The fields of a SentencePiece `ModelProto` that the DeBERTa-v2 converter uses.
#[derive(Debug, Clone, PartialEq)]
pub struct SpmModel {
    /// The vocabulary, in id order.
    pub pieces: Vec<Piece>,
    /// `trainer_spec.model_type`: 1 unigram, 2 BPE, 3 word, 4 char.
    pub model_type: i32,
    /// `trainer_spec.unk_id`.
    pub unk_id: i32,
    /// `trainer_spec.byte_fallback` (the converter ignores it, as transformers does).
    pub byte_fallback: bool,
    /// `normalizer_spec.precompiled_charsmap`: SentencePiece's normalisation rules (NFKC...).
    pub precompiled_charsmap: Vec<u8>,
}

impl SpmModel {
    /// Read and check `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path)
            .map_err(|e| Error::Input(InputError::file(path, format!("cannot read: {e}"))))?;
        Self::parse(&bytes).map_err(|why| {
            Error::Input(InputError::file(
                path,
                format!("not a valid SentencePiece model: {why}"),
            ))
        })
    }

    /// Parse the bytes of a `ModelProto` and check what the tokenizer relies on.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        // prost names the field ("ModelProto.pieces: buffer underflow"), not the likely cause.
        let model = <proto::ModelProto as prost::Message>::decode(bytes)
            .map_err(|e| format!("{e} (a truncated or corrupt file?)"))?;
        // SentencePiece writes the pieces, then trainer_spec, then normalizer_spec: a file cut
        // short between two fields still parses, but lacks the specs.
        let has_trainer = model.trainer_spec.is_some();
        let (Some(trainer), Some(normalizer)) = (model.trainer_spec, model.normalizer_spec) else {
            return Err(format!(
                "no {} (a truncated file?)",
                if has_trainer {
                    "normalizer_spec"
                } else {
                    "trainer_spec"
                }
            ));
        };
        let pieces = model
            .pieces
            .into_iter()
            .enumerate()
            .map(|(n, p)| {
                let kind = match p.r#type.unwrap_or(1) {
                    1 => PieceType::Normal,
                    2 => PieceType::Unknown,
                    3 => PieceType::Control,
                    4 => PieceType::UserDefined,
                    5 => PieceType::Unused,
                    6 => PieceType::Byte,
                    t => return Err(format!("piece {n}: unknown type {t}")),
                };
                Ok(Piece {
                    piece: p.piece.unwrap_or_default(),
                    score: p.score.unwrap_or(0.0),
                    kind,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let m = SpmModel {
            pieces,
            model_type: trainer.model_type.unwrap_or(1),
            unk_id: trainer.unk_id.unwrap_or(0),
            byte_fallback: trainer.byte_fallback.unwrap_or(false),
            precompiled_charsmap: normalizer.precompiled_charsmap.unwrap_or_default(),
        };
        if m.pieces.is_empty() {
            return Err("no pieces".into());
        }
        match m.model_type {
            1 => {}
            2 => {
                return Err(
                    "a BPE model; scorekit reads unigram models (every DeBERTa-v2/v3 \
                             checkpoint); add the folder's tokenizer.json instead"
                        .into(),
                )
            }
            t => {
                return Err(format!(
                    "model_type {t}: scorekit reads unigram models only"
                ))
            }
        }
        if m.unk_id < 0 || m.unk_id as usize >= m.pieces.len() {
            return Err(format!(
                "trainer_spec.unk_id {} is not a piece (the model has {})",
                m.unk_id,
                m.pieces.len()
            ));
        }
        Ok(m)
    }
}

/// The messages of SentencePiece's `sentencepiece_model.proto` (proto2) that the converters read,
/// declared with prost's derive (no protoc, no build script); every other field is skipped as
/// unknown.
///
/// prost rather than the hand-written wire reader scorekit had before (issue 30), measured: these
/// 34 lines of declarations replace 136 lines of code (varints, lengths, wire types and the
/// per-message field dispatch; spm.rs went from 688 to 587 lines of code). The cost: two crates
/// (prost and prost-derive 0.14.6; their syn, quote, itertools and bytes were already in the
/// tree: the binary's tree 220 -> 222 crates), ~5.4 s of CPU in a clean dev build (prost-derive
/// 5.3, prost 0.6), built beside candle-transformers and so off the critical path, and nothing in
/// an incremental one. Both readers gave equal models for tests/data/t5/spiece.model and
/// tests/data/spm/spm.model and agreed (Ok or Err, and the value) on every 7th prefix of each
/// (35,638 and 36,618 prefixes). prost parses slower (median of 201 runs, release: spiece.model
/// 113 us against 33 us, spm.model 129 against 54), nothing beside building the tokenizer; its
/// errors name the field (`ModelProto.pieces: buffer underflow`, to which `parse` adds "a
/// truncated or corrupt file?") where the old reader gave the byte offset. Measured in BENCHMARKS.md §10 ("spm.model with prost").
pub mod proto {
    /// `ModelProto`: the vocabulary and the two specs read (self-test data and the
    /// denormaliser are skipped).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModelProto {
        /// The vocabulary, in id order.
        #[prost(message, repeated, tag = "1")]
        pub pieces: Vec<SentencePiece>,
        /// The training settings.
        #[prost(message, optional, tag = "2")]
        pub trainer_spec: Option<TrainerSpec>,
        /// The normalisation rules.
        #[prost(message, optional, tag = "3")]
        pub normalizer_spec: Option<NormalizerSpec>,
    }

    /// `ModelProto.SentencePiece`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SentencePiece {
        /// The piece's text.
        #[prost(string, optional, tag = "1")]
        pub piece: Option<String>,
        /// Its log probability.
        #[prost(float, optional, tag = "2")]
        pub score: Option<f32>,
        /// `SentencePiece.Type` (1 normal when absent).
        #[prost(int32, optional, tag = "3")]
        pub r#type: Option<i32>,
    }

    /// The `TrainerSpec` fields the converters read.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrainerSpec {
        /// 1 unigram (the default), 2 BPE, 3 word, 4 char.
        #[prost(int32, optional, tag = "3")]
        pub model_type: Option<i32>,
        /// Unknown bytes as `<0x..>` pieces.
        #[prost(bool, optional, tag = "35")]
        pub byte_fallback: Option<bool>,
        /// The unknown piece's id (0 when absent).
        #[prost(int32, optional, tag = "40")]
        pub unk_id: Option<i32>,
    }

    /// The `NormalizerSpec` field the converters read.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NormalizerSpec {
        /// SentencePiece's compiled normalisation rules.
        #[prost(bytes = "vec", optional, tag = "2")]
        pub precompiled_charsmap: Option<Vec<u8>>,
    }
}

/// The tokenizer settings of tokenizer_config.json (and special_tokens_map.json) that
/// `DebertaV2Tokenizer` reads, with its defaults.
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    do_lower_case: bool,
    split_by_punct: bool,
    add_prefix_space: bool,
    /// bos, eos, unk, sep, pad, cls, mask: the order transformers adds special tokens in.
    specials: [(&'static str, String); 7],
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            do_lower_case: false,
            split_by_punct: false,
            add_prefix_space: true,
            specials: [
                ("bos_token", "[CLS]".into()),
                ("eos_token", "[SEP]".into()),
                ("unk_token", "[UNK]".into()),
                ("sep_token", "[SEP]".into()),
                ("pad_token", "[PAD]".into()),
                ("cls_token", "[CLS]".into()),
                ("mask_token", "[MASK]".into()),
            ],
        }
    }
}

impl Settings {
    fn read(dir: &Path) -> Result<Self> {
        let mut s = Settings::default();
        // special_tokens_map.json overrides tokenizer_config.json, as in transformers.
        for name in ["tokenizer_config.json", "special_tokens_map.json"] {
            let path = dir.join(name);
            let Some(map) = read_object(&path)? else {
                continue;
            };
            let flag = |key: &str, v: &mut bool| -> Result<()> {
                match map.get(key) {
                    None | Some(Value::Null) => Ok(()),
                    Some(Value::Bool(b)) => {
                        *v = *b;
                        Ok(())
                    }
                    Some(other) => Err(Error::Input(InputError {
                        field: Some(key.into()),
                        ..InputError::file(&path, format!("expected true or false, found {other}"))
                    })),
                }
            };
            flag("do_lower_case", &mut s.do_lower_case)?;
            flag("split_by_punct", &mut s.split_by_punct)?;
            flag("add_prefix_space", &mut s.add_prefix_space)?;
            for (key, token) in s.specials.iter_mut() {
                let content = match map.get(*key) {
                    None | Some(Value::Null) => continue,
                    Some(Value::String(t)) => Some(t.clone()),
                    Some(Value::Object(o)) => {
                        o.get("content").and_then(Value::as_str).map(String::from)
                    }
                    Some(_) => None,
                };
                *token = content.ok_or_else(|| {
                    Error::Input(InputError {
                        field: Some(key.to_string()),
                        ..InputError::file(
                            &path,
                            "expected a token: a string or {\"content\": ...}",
                        )
                    })
                })?;
            }
        }
        Ok(s)
    }
}

/// A JSON object file, or None where the file does not exist.
fn read_object(path: &Path) -> Result<Option<serde_json::Map<String, Value>>> {
    if !path.exists() {
        return Ok(None);
    }
    let bad = |why: String| Error::Input(InputError::file(path, why));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read: {e}")))?;
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(bad("expected a JSON object".into())),
        Err(e) => Err(bad(format!("not valid JSON: {e}"))),
    }
}

/// The fast DeBERTa-v2/v3 tokenizer of the folder `dir` (spm.model, optional
/// tokenizer_config.json / special_tokens_map.json), as `DebertaV2TokenizerFast` converts it.
/// Truncation and padding are left to the caller.
pub fn deberta_v2_tokenizer(dir: &Path) -> Result<Tokenizer> {
    let path = dir.join("spm.model");
    let spm = SpmModel::load(&path)?;
    let settings = Settings::read(dir)?;
    let tokenizer =
        converted(&spm, &settings).map_err(|why| Error::Input(InputError::file(&path, why)))?;
    check_added_tokens(dir, &tokenizer)?;
    Ok(tokenizer)
}

/// The fast T5 tokenizer of the folder `dir` (spiece.model; `extra_ids` from
/// tokenizer_config.json, default 100), as transformers 4's `T5Converter` builds the
/// tokenizer.json of the Hub's T5 and Flan-T5 folders: the pieces, then `<extra_id_N>` for N from
/// `extra_ids - 1` down to 0; the precompiled charsmap then runs of spaces folded; Metaspace
/// (`▁`, always prepended); `</s>` appended. For folders without tokenizer.json.
pub fn t5_tokenizer(dir: &Path) -> Result<Tokenizer> {
    let path = dir.join("spiece.model");
    let spm = SpmModel::load(&path)?;
    let config = dir.join("tokenizer_config.json");
    let extra_ids = match read_object(&config)?.and_then(|m| m.get("extra_ids").cloned()) {
        None => 100,
        Some(v) => v.as_u64().filter(|&n| n <= 10_000).ok_or_else(|| {
            Error::Input(InputError {
                field: Some("extra_ids".into()),
                ..InputError::file(&config, "not a count of extra ids (0..=10000)")
            })
        })? as usize,
    };
    t5_converted(&spm, extra_ids).map_err(|why| Error::Input(InputError::file(&path, why)))
}

/// `normalizers`, then SentencePiece's precompiled charsmap (checked so that it cannot panic) and
/// runs of spaces folded to one: the normaliser tail every `SpmConverter` writes.
fn charsmap_then_spaces(
    spm: &SpmModel,
    mut normalizers: Vec<NormalizerWrapper>,
) -> Result<Vec<NormalizerWrapper>, String> {
    if !spm.precompiled_charsmap.is_empty() {
        check_charsmap(&spm.precompiled_charsmap)
            .map_err(|why| format!("bad normalizer_spec.precompiled_charsmap: {why}"))?;
        let charsmap = Precompiled::from(spm.precompiled_charsmap.as_slice())
            .map_err(|e| format!("bad normalizer_spec.precompiled_charsmap: {e}"))?;
        normalizers.push(charsmap.into());
    }
    let spaces =
        Replace::new(ReplacePattern::Regex(" {2,}".into()), " ").map_err(|e| e.to_string())?;
    normalizers.push(spaces.into());
    Ok(normalizers)
}

/// `T5Converter.converted()`.
fn t5_converted(spm: &SpmModel, extra_ids: usize) -> Result<Tokenizer, String> {
    let mut vocab: Vec<(String, f64)> = spm
        .pieces
        .iter()
        .map(|p| (p.piece.clone(), f64::from(p.score)))
        .collect();
    vocab.extend(
        (0..extra_ids)
            .rev()
            .map(|i| (format!("<extra_id_{i}>"), 0.0)),
    );
    let unigram = Unigram::from(vocab, Some(spm.unk_id as usize), false)
        .map_err(|e| format!("cannot build the unigram model: {e}"))?;
    let mut tokenizer = Tokenizer::new(unigram);
    let normalizers = charsmap_then_spaces(spm, Vec::new())?;
    tokenizer
        .with_normalizer(Some(Sequence::new(normalizers)))
        .map_err(|e| e.to_string())?;
    tokenizer.with_pre_tokenizer(Some(Metaspace::new('▁', PrependScheme::Always, true)));
    tokenizer.with_decoder(Some(MetaspaceDecoder::new(
        '▁',
        PrependScheme::Always,
        true,
    )));
    // Control and unknown pieces (<pad>, </s>, <unk>) and the extra ids are special tokens.
    let mut specials: Vec<AddedToken> = spm
        .pieces
        .iter()
        .filter(|p| matches!(p.kind, PieceType::Control | PieceType::Unknown))
        .map(|p| AddedToken::from(p.piece.clone(), true).normalized(false))
        .collect();
    specials.extend(
        (0..extra_ids)
            .rev()
            .map(|i| AddedToken::from(format!("<extra_id_{i}>"), true).normalized(false)),
    );
    tokenizer
        .add_special_tokens(specials)
        .map_err(|e| e.to_string())?;
    let eos = tokenizer
        .token_to_id("</s>")
        .ok_or("no </s> piece: not a T5 model")?;
    let mut template = TemplateProcessing::builder();
    template.try_single("$A:0 </s>:0")?;
    template.try_pair("$A:0 </s>:0 $B:0 </s>:0")?;
    template.special_tokens(vec![("</s>", eos)]);
    let template = template.build().map_err(|e| e.to_string())?;
    tokenizer.with_post_processor(Some(template));
    Ok(tokenizer)
}

/// added_tokens.json (microsoft/deberta-v3-*: `{"[MASK]": 128000}`) must name tokens with the ids
/// they got here; a folder with other added tokens needs its tokenizer.json, so they are refused
/// rather than guessed.
fn check_added_tokens(dir: &Path, tokenizer: &Tokenizer) -> Result<()> {
    let path = dir.join("added_tokens.json");
    let Some(map) = read_object(&path)? else {
        return Ok(());
    };
    for (token, id) in &map {
        let ours = tokenizer.token_to_id(token);
        if id.as_u64().is_none() || ours.map(u64::from) != id.as_u64() {
            let got = ours.map_or("none".to_string(), |i| i.to_string());
            return Err(Error::Input(InputError {
                field: Some(token.clone()),
                ..InputError::file(
                    &path,
                    format!(
                        "id {id}, but spm.model and the special tokens give it {got}; \
                         scorekit cannot rebuild this tokenizer (add its tokenizer.json)"
                    ),
                )
            }));
        }
    }
    Ok(())
}

/// Check SentencePiece's precompiled charsmap (a little-endian u32 trie size, a darts-clone
/// double-array trie of u32 units, then NUL-separated replacement strings) so that the
/// `tokenizers` crate's `Precompiled` normaliser, which indexes both without bounds checks,
/// cannot panic on any text: from every node reachable from the root, every byte's slot is inside
/// the array (darts-clone allocates blocks of 256 units, so real tries pass), and every leaf
/// points at a character boundary of the replacement strings.
fn check_charsmap(bytes: &[u8]) -> Result<(), String> {
    let head = bytes.get(..4).ok_or("shorter than its 4-byte header")?;
    let trie_bytes = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let units: Vec<usize> = bytes
        .get(4..4 + trie_bytes)
        .ok_or(format!(
            "trie of {trie_bytes} bytes announced, {} left",
            bytes.len() - 4
        ))?
        .chunks_exact(4)
        .map(|u| u32::from_le_bytes([u[0], u[1], u[2], u[3]]) as usize)
        .collect();
    let replacements = std::str::from_utf8(&bytes[4 + trie_bytes..])
        .map_err(|_| "replacement strings are not UTF-8".to_string())?;
    // The unit layout of spm_precompiled (and darts-clone).
    let offset = |u: usize| (u >> 10) << ((u & (1 << 9)) >> 6);
    let label = |u: usize| u & ((1 << 31) | 0xff);
    let has_leaf = |u: usize| (u >> 8) & 1 == 1;
    let value = |u: usize| u & ((1 << 31) - 1);
    let root = *units.first().ok_or("empty trie")?;
    let mut seen = vec![false; units.len()];
    let mut todo = vec![offset(root)];
    while let Some(node) = todo.pop() {
        for c in 1..=255usize {
            let slot = node ^ c;
            let Some(&unit) = units.get(slot) else {
                return Err(format!(
                    "trie slot {slot} outside its {} units",
                    units.len()
                ));
            };
            if label(unit) != c {
                continue;
            }
            let next = slot ^ offset(unit);
            if has_leaf(unit) {
                let leaf = *units.get(next).ok_or(format!(
                    "trie leaf {next} outside its {} units",
                    units.len()
                ))?;
                if !replacements.is_char_boundary(value(leaf)) {
                    return Err(format!(
                        "replacement offset {} outside the strings",
                        value(leaf)
                    ));
                }
            }
            if next < seen.len() && !seen[next] {
                seen[next] = true;
                todo.push(next);
            } else if next >= seen.len() {
                // Its children are checked against the array bounds when it is visited; there
                // is no slot to mark it in.
                for c in 1..=255usize {
                    if units.get(next ^ c).is_none() {
                        return Err(format!("trie slot {} outside its units", next ^ c));
                    }
                }
            }
        }
    }
    Ok(())
}

/// `DebertaV2Converter.converted()` followed by the special tokens `DebertaV2Tokenizer` adds.
fn converted(spm: &SpmModel, s: &Settings) -> Result<Tokenizer, String> {
    let vocab: Vec<(String, f64)> = spm
        .pieces
        .iter()
        .map(|p| (p.piece.clone(), f64::from(p.score)))
        .collect();
    // The converter never enables byte fallback for DeBERTa (`handle_byte_fallback = False`).
    let unigram = Unigram::from(vocab, Some(spm.unk_id as usize), false)
        .map_err(|e| format!("cannot build the unigram model: {e}"))?;
    let mut tokenizer = Tokenizer::new(unigram);

    let mut normalizers: Vec<NormalizerWrapper> = Vec::new();
    if s.do_lower_case {
        normalizers.push(Lowercase.into());
    }
    normalizers.push(Strip::new(true, true).into());
    let normalizers = charsmap_then_spaces(spm, normalizers)?;
    tokenizer
        .with_normalizer(Some(Sequence::new(normalizers)))
        .map_err(|e| e.to_string())?;

    // `_get_prepend_scheme`: the slow DeBERTa tokenizer has no `legacy`, so "always".
    let scheme = if s.add_prefix_space {
        PrependScheme::Always
    } else {
        PrependScheme::Never
    };
    let mut pre: Vec<PreTokenizerWrapper> = Vec::new();
    if s.split_by_punct {
        pre.push(Punctuation::new(SplitDelimiterBehavior::Isolated).into());
    }
    pre.push(Metaspace::new('▁', scheme, true).into());
    tokenizer.with_pre_tokenizer(Some(PreSequence::new(pre)));
    tokenizer.with_decoder(Some(MetaspaceDecoder::new('▁', scheme, true)));

    // The converter adds control pieces (special) and user-defined ones (not special), unnormalised.
    let pieces: Vec<AddedToken> = spm
        .pieces
        .iter()
        .filter(|p| matches!(p.kind, PieceType::Control | PieceType::UserDefined))
        .map(|p| AddedToken::from(p.piece.clone(), p.kind == PieceType::Control).normalized(false))
        .collect();
    tokenizer.add_tokens(pieces).map_err(|e| e.to_string())?;
    // Then the tokenizer's special tokens that are not added yet, in transformers' order; a
    // token missing from the vocabulary gets the next id ([MASK] of deberta-v3: 128000).
    // `DebertaV2Tokenizer` makes its unknown token a normalised one.
    for (key, content) in &s.specials {
        if tokenizer
            .get_added_tokens_decoder()
            .values()
            .any(|t| &t.content == content)
        {
            continue;
        }
        let token = AddedToken::from(content.clone(), true).normalized(*key == "unk_token");
        tokenizer.add_tokens([token]).map_err(|e| e.to_string())?;
    }

    let id = |t: &str| {
        tokenizer
            .token_to_id(t)
            .ok_or_else(|| format!("no {t} piece: not a DeBERTa-v2/v3 model"))
    };
    let (cls, sep) = (id("[CLS]")?, id("[SEP]")?);
    let mut template = TemplateProcessing::builder();
    template.try_single("[CLS]:0 $A:0 [SEP]:0")?;
    template.try_pair("[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1")?;
    template.special_tokens(vec![("[CLS]", cls), ("[SEP]", sep)]);
    let template = template.build().map_err(|e| e.to_string())?;
    tokenizer.with_post_processor(Some(template));
    debug_assert!(tokenizer.get_model().get_vocab_size() == spm.pieces.len());
    Ok(tokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Vec<u8> {
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/spm/spm.model"
        ))
        .unwrap()
    }

    /// A protobuf key and length-delimited payload.
    fn message(field: u8, payload: &[u8]) -> Vec<u8> {
        assert!(payload.len() < 128);
        let mut v = vec![field << 3 | 2, payload.len() as u8];
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn reads_the_deberta_v3_layout_of_the_fixture() {
        let m = SpmModel::parse(&fixture()).unwrap();
        assert_eq!(m.pieces.len(), 1000);
        let names: Vec<(&str, PieceType)> = m.pieces[..4]
            .iter()
            .map(|p| (p.piece.as_str(), p.kind))
            .collect();
        assert_eq!(
            names,
            [
                ("[PAD]", PieceType::Control),
                ("[CLS]", PieceType::Control),
                ("[SEP]", PieceType::Control),
                ("[UNK]", PieceType::Unknown),
            ]
        );
        assert_eq!((m.model_type, m.unk_id, m.byte_fallback), (1, 3, false));
        assert!(m.pieces[4..]
            .iter()
            .all(|p| p.kind == PieceType::Normal && p.score < 0.0));
        // nmt_nfkc's rules.
        assert!(m.precompiled_charsmap.len() > 100_000);
    }

    #[test]
    fn truncations_and_corruptions_are_errors_not_panics() {
        let bytes = fixture();
        // Every cut inside the first pieces, then every 97th, and every one near the end.
        let cuts = (0..2_000)
            .chain((2_000..bytes.len()).step_by(97))
            .chain(bytes.len() - 64..bytes.len());
        for n in cuts {
            assert!(SpmModel::parse(&bytes[..n]).is_err(), "prefix of {n} bytes");
        }
        // Overwritten bytes: whatever the result, no panic.
        let mut state = 17u64;
        for _ in 0..2000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut b = bytes.clone();
            let at = (state >> 33) as usize % 20_000;
            b[at] = (state >> 20) as u8;
            let _ = SpmModel::parse(&b);
        }
    }

    #[test]
    fn charsmaps_that_would_make_the_normaliser_panic_are_refused() {
        let good = SpmModel::parse(&fixture()).unwrap().precompiled_charsmap;
        check_charsmap(&good).unwrap();
        assert!(check_charsmap(&good[..3]).is_err());
        assert!(check_charsmap(&good[..1000])
            .unwrap_err()
            .contains("announced"));
        // A trie cut to its first 300 units: slots point past it.
        let mut short = 1200u32.to_le_bytes().to_vec();
        short.extend_from_slice(&good[4..1204]);
        assert!(check_charsmap(&short).unwrap_err().contains("outside"));
        // Replacement strings cut short: leaves point past them.
        let trie = u32::from_le_bytes([good[0], good[1], good[2], good[3]]) as usize;
        let e = check_charsmap(&good[..4 + trie + 10]).unwrap_err();
        assert!(e.contains("outside the strings"), "{e}");
        // Random overwrites of the trie: an error or a charsmap the normaliser can run.
        let mut state = 5u64;
        for _ in 0..300 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut b = good.clone();
            let at = 4 + (state >> 33) as usize % trie;
            b[at] = (state >> 20) as u8;
            if check_charsmap(&b).is_ok() {
                let p = Precompiled::from(b.as_slice()).unwrap();
                let _ = p.normalize_string("Zoë ＡＢＣ ﬁne 東京 😀 e\u{301} \u{a0}");
            }
        }
    }

    #[test]
    fn bad_protobuf_is_described() {
        let e = SpmModel::parse(&[0x0a, 0x80]).unwrap_err();
        assert!(e.contains("ModelProto.pieces: invalid varint"), "{e}");
        let e = SpmModel::parse(&[0x0a, 0x05, 1, 2]).unwrap_err();
        assert!(e.contains("ModelProto.pieces: buffer underflow"), "{e}");
        let e = SpmModel::parse(&[0x0b]).unwrap_err();
        assert!(e.contains("invalid wire type"), "{e}");
        let e = SpmModel::parse(&[0x20, 1, 0x20, 1]).unwrap_err();
        assert!(e.contains("no trainer_spec"), "{e}");
        let e = SpmModel::parse(b"<html>Not found</html>").unwrap_err();
        assert!(!e.is_empty());
    }

    #[test]
    fn only_unigram_models_with_an_unknown_piece_are_read() {
        let piece = message(1, &[&message(1, b"[UNK]")[..], &[3 << 3, 2]].concat());
        let normalizer = message(3, &[]);
        // trainer_spec { model_type: BPE }
        let bpe = [&piece[..], &message(2, &[3 << 3, 2]), &normalizer].concat();
        assert!(SpmModel::parse(&bpe).unwrap_err().contains("BPE"));
        // trainer_spec { unk_id: 5 } (field 40: a two-byte key)
        let unk = [&piece[..], &message(2, &[0xc0, 0x02, 5]), &normalizer].concat();
        let e = SpmModel::parse(&unk).unwrap_err();
        assert!(e.contains("unk_id 5"), "{e}");
        let ok = [&piece[..], &message(2, &[]), &normalizer].concat();
        let m = SpmModel::parse(&ok).unwrap();
        assert_eq!(m.pieces[0].kind, PieceType::Unknown);
        // Special tokens missing from the vocabulary are appended, as transformers does.
        let t = converted(&m, &Settings::default()).unwrap();
        assert_eq!(t.token_to_id("[CLS]"), Some(1));
        assert_eq!(t.token_to_id("[MASK]"), Some(4));
    }
}
