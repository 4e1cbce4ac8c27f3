//! Decoder-only letter judges against `transformers`: tiny layouts of each family written by
//! scripts/reference/decoder_reference.py (tests/data/decoder/<name>: config, tokenizer, the
//! family's real chat template, the weights' names and shapes; the values from the shared
//! generator), asked every Possible Stories dev question through the chat template. The four
//! letter logits at the last token equal transformers' (f32, eager attention) within 1e-4 and
//! every pick equals it, one prompt at a time and batched; through `scorekit judge eval` the
//! picks of all 458 dev questions equal the reference's. Both engines are checked: candle's
//! layers and scorekit's kernels (where this CPU runs them).

use crate::common::{read_json, stderr, test_data};
use scorekit::runtime::decoder_judge::DecoderJudge;
use scorekit::runtime::engine::{EngineChoice, EngineOptions};
use scorekit::runtime::weights::write_safetensors;
use scorekit::suites::letter;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The letter logits' tolerance against transformers (f32: candle, the kernels' AVX-512 f32).
const TOL: f32 = 1e-4;

/// The tolerance of the kernels' default f32 on AMX tiles: each product is four bf16 tile
/// products (split-bf16, about 2⁻¹⁷ relative per term), not one f32 product; measured up to
/// 1.4e-4 (Gemma 3's layout, ×8 embedding scale and (1 + w) norms). `--amx off` is exact f32.
const TOL_SPLIT: f32 = 3e-4;

/// The tolerance of the engine `judge` runs on.
fn tolerance(judge: &DecoderJudge) -> f32 {
    if judge.engine().contains("split-bf16") {
        TOL_SPLIT
    } else {
        TOL
    }
}

/// Whether a pick must equal the reference's: always within [`TOL`]; on split-bf16 tiles only
/// where the reference's best letter leads the next by more than twice the tolerance.
fn pick_is_determined(reference_logits: &[f32], tol: f32) -> bool {
    let mut sorted = reference_logits.to_vec();
    sorted.sort_by(|x, y| y.total_cmp(x));
    tol <= TOL || sorted[0] - sorted[1] > 2.0 * tol
}

fn data(name: &str) -> PathBuf {
    crate::common::repo().join("tests/data/decoder").join(name)
}

/// The model folder of layout `name` under `dir`: the committed files and the generated
/// weights, in two safetensors shards behind an index when `sharded`.
pub(crate) fn decoder_folder(name: &str, dir: &Path, sharded: bool) -> PathBuf {
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
    ] {
        if data(name).join(f).exists() {
            std::fs::copy(data(name).join(f), to.join(f)).unwrap();
        }
    }
    let tensors = crate::common::tiny_judge::tiny_tensors(&data(name).join("tensors.json"));
    if !sharded {
        write_safetensors(&to.join("model.safetensors"), &tensors).unwrap();
        return to;
    }
    let half = tensors.len() / 2;
    let mut map = serde_json::Map::new();
    for (i, part) in [&tensors[..half], &tensors[half..]].iter().enumerate() {
        let file = format!("model-0000{}-of-00002.safetensors", i + 1);
        write_safetensors(&to.join(&file), part).unwrap();
        for (n, _, _) in part.iter() {
            map.insert(n.clone(), json!(file));
        }
    }
    let index = json!({"metadata": {}, "weight_map": map});
    std::fs::write(to.join("model.safetensors.index.json"), index.to_string()).unwrap();
    to
}

/// The dev split's questions and their zero-shot prompts (the suite's letter prompt).
fn dev_prompts() -> Vec<String> {
    crate::common::dev_questions()
        .iter()
        .map(|q| {
            let options: Vec<&str> = q["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_str().unwrap())
                .collect();
            letter::zero_shot_prompt(
                q["document"].as_str().unwrap(),
                q["question"].as_str().unwrap(),
                &options,
            )
        })
        .collect()
}

fn ids_sha(ids: &[u32]) -> String {
    let text = ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn logits_of(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

/// The engines a decoder judge runs on here: candle, and scorekit's kernels where this CPU has
/// AVX-512F (f32 products: split-bf16 AMX tiles where the CPU has them, and AVX-512).
fn engines() -> Vec<EngineOptions> {
    let mut all = vec![EngineOptions {
        engine: EngineChoice::Candle,
        ..EngineOptions::default()
    }];
    if scorekit::runtime::kernels::kernels_available() {
        all.push(EngineOptions {
            engine: EngineChoice::Native,
            ..EngineOptions::default()
        });
    }
    // With AMX tiles the kernels' f32 default is split-bf16 tile products: plain AVX-512 f32
    // products too.
    if scorekit::runtime::kernels::amx_available() {
        all.push(EngineOptions {
            engine: EngineChoice::Native,
            amx: false,
            ..EngineOptions::default()
        });
    }
    all
}

/// Load layout folder `dir` in `dtype` on `engine`, without a system prompt or length cap.
fn load_on(dir: &Path, dtype: candle_core::DType, engine: &EngineOptions) -> DecoderJudge {
    DecoderJudge::load(dir, &candle_core::Device::Cpu, dtype, engine, None, None).unwrap()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Layout `name`: token ids, letter logits and picks of all dev prompts equal transformers',
/// batched under a budget and one at a time; the system-prompt renders too. On every engine.
fn parity(name: &str, sharded: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = decoder_folder(name, tmp.path(), sharded);
    for engine in engines() {
        let tiles = if engine.amx { "" } else { ", no AMX" };
        parity_on(
            &format!("{name} on {:?}{tiles}", engine.engine),
            &dir,
            &engine,
        );
    }
}

/// [`parity`] of the layout folder `dir` on one engine (`label` names both in failures).
fn parity_on(label: &str, dir: &Path, engine: &EngineOptions) {
    let name = dir.file_name().unwrap().to_str().unwrap();
    let reference = read_json(&data(name).join("reference.json"));
    let name = label;
    let judge = load_on(dir, candle_core::DType::F32, engine);
    let tol = tolerance(&judge);
    let letter_ids: Vec<u32> = serde_json::from_value(reference["letter_ids"].clone()).unwrap();
    assert_eq!(
        judge.letter_ids().to_vec(),
        letter_ids,
        "{name}: letter tokens"
    );
    let prompts = dev_prompts();
    let rows = reference["questions"].as_array().unwrap();
    assert_eq!(rows.len(), prompts.len());
    let encoded = judge.encode(&prompts).unwrap();
    for (i, ((ids, cut), row)) in encoded.iter().zip(rows).enumerate() {
        assert!(!cut, "{name} prompt {i} was truncated");
        assert_eq!(
            ids.len() as u64,
            row["tokens"].as_u64().unwrap(),
            "{name} prompt {i}: tokens"
        );
        assert_eq!(
            ids_sha(ids),
            row["ids_sha256"].as_str().unwrap(),
            "{name} prompt {i}: ids"
        );
    }
    let bar = indicatif::ProgressBar::hidden();
    let batched = judge.verdicts(&prompts, 4096, &bar).unwrap();
    let mut worst = 0f32;
    for (i, (v, row)) in batched.iter().zip(rows).enumerate() {
        let want = logits_of(&row["letter_logits"]);
        let d = max_diff(&v.letter_logits, &want);
        worst = worst.max(d);
        assert!(
            d < tol,
            "{name} prompt {i}: {:?} vs {want:?}",
            v.letter_logits
        );
        if pick_is_determined(&want, tol) {
            assert_eq!(
                v.pick as u64,
                row["pick"].as_u64().unwrap(),
                "{name} prompt {i}: pick"
            );
        }
        let mass = row["letter_mass"].as_f64().unwrap() as f32;
        assert!(
            (v.letter_mass - mass).abs() < tol,
            "{name} prompt {i}: mass {} vs {mass}",
            v.letter_mass
        );
    }
    // One prompt at a time (a budget below any prompt), against transformers' left-padded
    // batches of 5 with their attention masks and position ids (of the dev questions
    // `batched_index` names: all-short or all-long batches for longrope).
    let n = reference["batched"].as_array().unwrap().len();
    let index: Vec<usize> = match reference.get("batched_index") {
        Some(v) => serde_json::from_value(v.clone()).unwrap(),
        None => (0..n).collect(),
    };
    let asked: Vec<String> = index.iter().map(|&i| prompts[i].clone()).collect();
    let alone = judge.verdicts(&asked, 1, &bar).unwrap();
    for (k, (v, want)) in alone
        .iter()
        .zip(reference["batched"].as_array().unwrap())
        .enumerate()
    {
        let want = logits_of(want);
        assert!(
            max_diff(&v.letter_logits, &want) < tol,
            "{name} batched prompt {}",
            index[k]
        );
        assert_eq!(v.pick, batched[index[k]].pick);
    }
    eprintln!(
        "{name}: largest letter-logit difference {worst:.2e} over {} prompts",
        prompts.len()
    );
    // With a system message, where the template takes one.
    if let Some(system) = reference["system_prompt"].as_str() {
        let judge = DecoderJudge::load(
            dir,
            &candle_core::Device::Cpu,
            candle_core::DType::F32,
            engine,
            Some(system),
            None,
        )
        .unwrap();
        let want = reference["system"].as_array().unwrap();
        let encoded = judge.encode(&prompts[..want.len()]).unwrap();
        let got = judge.verdicts(&prompts[..want.len()], 4096, &bar).unwrap();
        for (i, ((v, (ids, _)), row)) in got.iter().zip(&encoded).zip(want).enumerate() {
            assert_eq!(
                ids_sha(ids),
                row["ids_sha256"].as_str().unwrap(),
                "{name} system prompt {i}"
            );
            let want = logits_of(&row["letter_logits"]);
            assert!(max_diff(&v.letter_logits, &want) < tol);
            if pick_is_determined(&want, tol) {
                assert_eq!(v.pick as u64, row["pick"].as_u64().unwrap());
            }
        }
    }
}

#[test]
fn llama_letter_logits_equal_transformers_from_shards() {
    parity("llama", true);
}

#[test]
fn smollm_tied_llama_letter_logits_equal_transformers() {
    parity("smollm", false);
}

#[test]
fn qwen2_letter_logits_equal_transformers() {
    parity("qwen2", false);
}

#[test]
fn qwen3_letter_logits_equal_transformers() {
    parity("qwen3", false);
}

#[test]
fn mistral_letter_logits_equal_transformers() {
    parity("mistral", false);
}

#[test]
fn gemma2_letter_logits_equal_transformers() {
    parity("gemma2", false);
}

#[test]
fn phi3_letter_logits_equal_transformers() {
    parity("phi3", false);
}

#[test]
fn gemma3_letter_logits_equal_transformers() {
    parity("gemma3", false);
}

/// Phi-3.5's longrope: short factors for prompts up to the original context (178 tokens here),
/// long ones past it, cos and sin times the attention factor.
#[test]
fn phi35_longrope_letter_logits_equal_transformers() {
    parity("phi35", false);
}

/// In one batch, the longest row chooses longrope's factors for every row, as transformers'
/// `max(position_ids) + 1` does (`Rope::frequencies`): the model's logits of a batch mixing short
/// and long prompts equal transformers' left-padded batch of the same prompts. (The judge never
/// batches them together, so its verdicts are each prompt's own.)
#[test]
fn a_mixed_longrope_batch_takes_its_longest_rows_factors() {
    use scorekit::runtime::models::decoder::{model::Decoder, read_decoder_config};
    use scorekit::runtime::models::shards::{var_builder_of, weight_files};
    let tmp = tempfile::tempdir().unwrap();
    let dir = decoder_folder("phi35", tmp.path(), false);
    let reference = read_json(&data("phi35").join("reference.json"));
    let straddle = &reference["straddle"];
    let index: Vec<usize> = serde_json::from_value(straddle["index"].clone()).unwrap();
    let cfg = read_decoder_config(&dir.join("config.json")).unwrap();
    let (short, _) = cfg.rope.frequencies(cfg.rope.original_max_positions);
    let (long, _) = cfg.rope.frequencies(cfg.rope.original_max_positions + 1);
    assert_ne!(short, long);
    let vb = var_builder_of(
        &weight_files(&dir).unwrap(),
        candle_core::DType::F32,
        &candle_core::Device::Cpu,
    )
    .unwrap();
    let model = Decoder::load(vb, &cfg).unwrap();
    let judge = DecoderJudge::load(
        &dir,
        &candle_core::Device::Cpu,
        candle_core::DType::F32,
        &EngineOptions::default(),
        None,
        None,
    )
    .unwrap();
    let prompts = dev_prompts();
    let asked: Vec<String> = index.iter().map(|&i| prompts[i].clone()).collect();
    let ids: Vec<Vec<u32>> = judge
        .encode(&asked)
        .unwrap()
        .into_iter()
        .map(|(ids, _)| ids)
        .collect();
    let lens: Vec<usize> = ids.iter().map(Vec::len).collect();
    let cut = cfg.rope.original_max_positions;
    assert!(lens.iter().any(|&l| l <= cut) && lens.iter().any(|&l| l > cut));
    let logits = model.last_logits(&ids).unwrap().to_vec2::<f32>().unwrap();
    let letters = judge.letter_ids();
    for (k, (row, want)) in logits
        .iter()
        .zip(straddle["letter_logits"].as_array().unwrap())
        .enumerate()
    {
        let got: Vec<f32> = letters.iter().map(|&l| row[l as usize]).collect();
        assert!(
            max_diff(&got, &logits_of(want)) < TOL,
            "row {k} ({} tokens): {got:?} vs {want}",
            lens[k]
        );
    }
    // The short rows alone differ from the mixed batch: the factors did change.
    let alone = judge
        .verdicts(&asked, 1, &indicatif::ProgressBar::hidden())
        .unwrap();
    let short_row = lens.iter().position(|&l| l <= cut).unwrap();
    let mixed: Vec<f32> = letters
        .iter()
        .map(|&l| logits[short_row][l as usize])
        .collect();
    assert!(max_diff(&alone[short_row].letter_logits, &mixed) > 1e-3);
}

/// A multimodal Gemma 3 checkpoint (`model_type` `gemma3`, `text_config`, the text weights under
/// `language_model.model.` as the Hub stores them, a vision tower beside them) judges with its
/// text part: the same letter logits as the text model's reference.
#[test]
fn a_multimodal_gemma3_checkpoint_judges_with_its_text_part() {
    let tmp = tempfile::tempdir().unwrap();
    let text = decoder_folder("gemma3", &tmp.path().join("text"), false);
    let mm = tmp.path().join("mm");
    std::fs::create_dir_all(&mm).unwrap();
    for f in [
        "tokenizer.json",
        "tokenizer_config.json",
        "chat_template.jinja",
    ] {
        if text.join(f).exists() {
            std::fs::copy(text.join(f), mm.join(f)).unwrap();
        }
    }
    let text_config = read_json(&text.join("config.json"));
    let config = json!({
        "model_type": "gemma3",
        "architectures": ["Gemma3ForConditionalGeneration"],
        "text_config": text_config,
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 8},
        "mm_tokens_per_image": 4,
    });
    std::fs::write(mm.join("config.json"), config.to_string()).unwrap();
    let mut tensors = crate::common::tiny_judge::tiny_tensors(&data("gemma3").join("tensors.json"));
    for t in tensors.iter_mut() {
        t.0 = t.0.replacen("model.", "language_model.model.", 1);
    }
    tensors.push((
        "vision_tower.vision_model.embeddings.patch_embedding.weight".into(),
        vec![8, 3, 2, 2],
        vec![0.5; 96],
    ));
    tensors.push((
        "multi_modal_projector.mm_input_projection_weight".into(),
        vec![8, 64],
        vec![0.25; 512],
    ));
    write_safetensors(&mm.join("model.safetensors"), &tensors).unwrap();
    let reference = read_json(&data("gemma3").join("reference.json"));
    let prompts = dev_prompts()[..40].to_vec();
    for engine in engines() {
        let judge = load_on(&mm, candle_core::DType::F32, &engine);
        assert_eq!(judge.arch(), "gemma3");
        let got = judge
            .verdicts(&prompts, 4096, &indicatif::ProgressBar::hidden())
            .unwrap();
        for (i, (v, row)) in got
            .iter()
            .zip(reference["questions"].as_array().unwrap())
            .enumerate()
        {
            assert!(
                max_diff(&v.letter_logits, &logits_of(&row["letter_logits"])) < tolerance(&judge),
                "prompt {i} on {}",
                judge.engine()
            );
        }
    }
    // Without text_config: exit 2 naming the field.
    std::fs::write(
        mm.join("config.json"),
        json!({"model_type": "gemma3", "vision_config": {}}).to_string(),
    )
    .unwrap();
    let e = DecoderJudge::load(
        &mm,
        &candle_core::Device::Cpu,
        candle_core::DType::F32,
        &EngineOptions::default(),
        None,
        None,
    )
    .err()
    .unwrap();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("text_config"), "{e}");
}

/// `scorekit judge eval` with a decoder judge on the whole dev split: every pick is the
/// reference's, the judge recorded as a decoder letter judge.
#[test]
fn judge_eval_picks_equal_transformers_on_the_dev_split() {
    for name in ["qwen3", "gemma2"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = decoder_folder(name, tmp.path(), false);
        let dev = test_data("possible-stories:dev", "dataset/dev.jsonl");
        let out = tmp.path().join("eval");
        let r = crate::letter::eval_letter(&dir, &dev, &out, &[]);
        assert!(r.status.success(), "{}", stderr(&r));
        let reference = read_json(&data(name).join("reference.json"));
        let rows = reference["questions"].as_array().unwrap();
        let items = crate::letter::read_items(&out.join("items.jsonl"));
        assert_eq!(items.len(), rows.len());
        for (item, row) in items.iter().zip(rows) {
            assert_eq!(item["question_id"], row["question_id"]);
            assert_eq!(item["pick"], row["pick"], "{name} {}", row["question_id"]);
            assert_eq!(
                item["answer"].as_str().unwrap(),
                LETTERS_OF[row["pick"].as_u64().unwrap() as usize]
            );
        }
        let m = read_json(&out.join("metrics.json"));
        assert_eq!(m["settings"]["judge_kind"], "decoder-letter", "{name}");
        let decoding = m["settings"]["letter"]["judge_decoding"]
            .as_str()
            .unwrap_or_default();
        assert!(
            decoding.starts_with("one forward pass"),
            "{}",
            m["settings"]["letter"]
        );
    }
}

const LETTERS_OF: [&str; 4] = ["A", "B", "C", "D"];

/// Bad decoder folders exit 2 naming the file and the field, before any scoring.
#[test]
fn broken_decoder_folders_exit_2_naming_the_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let dev = crate::letter::dev_head(tmp.path(), 3);
    let eval = |dir: &Path, extra: &[&str]| {
        let mut extra = extra.to_vec();
        extra.push("--force");
        crate::letter::eval_letter(dir, &dev, &tmp.path().join("out"), &extra)
    };
    let edit = |name: &str, f: &dyn Fn(&mut Value)| {
        let dir = decoder_folder("llama", &tmp.path().join(name), false);
        let mut cfg = read_json(&dir.join("config.json"));
        f(&mut cfg);
        std::fs::write(dir.join("config.json"), cfg.to_string()).unwrap();
        dir
    };
    let cases: Vec<(PathBuf, Vec<&str>)> = vec![
        (
            edit("rope", &|c| c["rope_scaling"]["rope_type"] = json!("yarn")),
            vec!["config.json", "rope_scaling.rope_type", "yarn"],
        ),
        (
            edit("arch", &|c| {
                c["model_type"] = json!("falcon");
                c["architectures"] = json!(["FalconForCausalLM"]);
            }),
            vec!["config.json", "model_type", "falcon"],
        ),
        (
            edit("act", &|c| c["hidden_act"] = json!("relu2")),
            vec!["config.json", "hidden_act", "relu2"],
        ),
    ];
    for (dir, words) in cases {
        let r = eval(&dir, &[]);
        assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
        let e = stderr(&r);
        for w in words {
            assert!(e.contains(w), "{w:?} not in {e}");
        }
    }
    // A missing shard: the index and the tensor named.
    let sharded = decoder_folder("llama", &tmp.path().join("shard"), true);
    std::fs::remove_file(sharded.join("model-00002-of-00002.safetensors")).unwrap();
    let r = eval(&sharded, &[]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert!(
        stderr(&r).contains("model.safetensors.index.json"),
        "{}",
        stderr(&r)
    );
    // A letter of several tokens (Mistral's "C" is "▁C"; without that merge it is "▁", "C"):
    // the model and the letter named.
    let multi = decoder_folder("mistral", &tmp.path().join("multi"), false);
    let mut tok = read_json(&multi.join("tokenizer.json"));
    let merges = tok["model"]["merges"].as_array_mut().unwrap();
    let before = merges.len();
    merges.retain(|m| {
        let pair: Vec<String> = match m {
            Value::String(s) => s.split(' ').map(str::to_string).collect(),
            other => serde_json::from_value(other.clone()).unwrap(),
        };
        pair.concat() != "\u{2581}C"
    });
    assert_eq!(merges.len(), before - 1);
    std::fs::write(multi.join("tokenizer.json"), tok.to_string()).unwrap();
    let r = eval(&multi, &[]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    let e = stderr(&r);
    assert!(e.contains("tokenizer.json") && e.contains("\"C\""), "{e}");
    // A system prompt for a model whose template refuses one (Gemma 2's raises).
    let gemma = decoder_folder("gemma2", &tmp.path().join("gemma"), false);
    let r = eval(&gemma, &["--system-prompt", "Be brief."]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
}

/// A prompt longer than the context keeps its last tokens, is counted, and still gets a verdict
/// (every position within the context); `judge eval` warns about it.
#[test]
fn prompts_longer_than_the_context_keep_their_last_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let full_dir = decoder_folder("qwen3", &tmp.path().join("full"), false);
    let short = decoder_folder("qwen3", &tmp.path().join("short"), false);
    let mut cfg = read_json(&short.join("config.json"));
    cfg["max_position_embeddings"] = json!(64);
    std::fs::write(short.join("config.json"), cfg.to_string()).unwrap();
    let load = |d: &Path| load_on(d, candle_core::DType::F32, &EngineOptions::default());
    let (full, short_judge) = (load(&full_dir), load(&short));
    let prompts = dev_prompts()[..3].to_vec();
    let whole = full.encode(&prompts).unwrap();
    let cut = short_judge.encode(&prompts).unwrap();
    for ((ids, was_cut), (all, _)) in cut.iter().zip(&whole) {
        assert!(*was_cut && all.len() > 64);
        assert_eq!(ids[..], all[all.len() - 64..]);
    }
    let bar = indicatif::ProgressBar::hidden();
    let verdicts = short_judge.verdicts(&prompts, 4096, &bar).unwrap();
    assert!(verdicts.iter().all(|v| v.truncated));
    assert_eq!(short_judge.truncated(), 3);
    let dev = crate::letter::dev_head(tmp.path(), 3);
    // `judge eval` warns; `--max-length` cuts the same way below the model's own context.
    for (judge, extra) in [(&short, None), (&full_dir, Some("64"))] {
        let mut args = vec!["--force"];
        if let Some(n) = extra {
            args.extend(["--max-length", n]);
        }
        let out = tmp.path().join("eval");
        let r = crate::letter::eval_letter(judge, &dev, &out, &args);
        assert!(r.status.success(), "{}", stderr(&r));
        assert!(
            stderr(&r).contains("prompts were longer than the judge's context"),
            "{}",
            stderr(&r)
        );
        // metrics.json counts the items cut; each says so.
        let m = read_json(&out.join("metrics.json"));
        assert_eq!(m["metrics"]["truncated_items"], 3, "{}", m["metrics"]);
        let items = crate::letter::read_items(&out.join("items.jsonl"));
        assert!(items.iter().all(|it| it["truncated"] == true));
    }
    // Nothing cut: the count is there, and 0.
    let out = tmp.path().join("eval-full");
    let r = crate::letter::eval_letter(&full_dir, &dev, &out, &[]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(
        read_json(&out.join("metrics.json"))["metrics"]["truncated_items"],
        0
    );
    assert!(!stderr(&r).contains("longer than the judge's context"));
}

/// A story run with `--max-length` below some prompts: an item is marked `truncated` exactly
/// when its ending's prompt or its human options' prompt has more tokens than that, and
/// metrics.json counts them.
#[test]
fn story_counts_the_items_whose_prompts_were_cut() {
    const N: usize = 40;
    const CONTEXT: usize = 200;
    let tmp = tempfile::tempdir().unwrap();
    let dir = decoder_folder("qwen3", tmp.path(), false);
    let qs = crate::common::dev_questions();
    let all = next_gold_generations(tmp.path());
    let head: String = std::fs::read_to_string(&all)
        .unwrap()
        .lines()
        .take(N)
        .map(|l| format!("{l}\n"))
        .collect();
    let gens = crate::common::write(tmp.path(), "head.jsonl", head);
    let out = tmp.path().join("story");
    let context = CONTEXT.to_string();
    let r = crate::common::judge_only(
        &dir,
        &gens,
        &out,
        &[
            "--device",
            "cpu",
            "--bootstrap",
            "100",
            "--no-calibration",
            "--max-length",
            &context,
        ],
    );
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(stderr(&r).contains("prompts were longer than the judge's context"));
    // The expected marks, from the prompts' token counts.
    let judge = DecoderJudge::load(
        &dir,
        &candle_core::Device::Cpu,
        candle_core::DType::F32,
        &EngineOptions::default(),
        None,
        None,
    )
    .unwrap();
    let options = |q: &Value| -> Vec<String> {
        q["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap().to_string())
            .collect()
    };
    let prompt = |q: &Value, opts: &[String]| {
        let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
        letter::zero_shot_prompt(
            q["document"].as_str().unwrap(),
            q["question"].as_str().unwrap(),
            &opts,
        )
    };
    let mut want = 0;
    let items = crate::letter::read_items(&out.join("items.jsonl"));
    assert_eq!(items.len(), N);
    for (i, it) in items.iter().enumerate() {
        let q = &qs[i];
        assert_eq!(it["question_id"], q["question_id"]);
        let human = options(q);
        let mut ending = human.clone();
        let next = &qs[i + 1];
        let gold = q["gold_label"].as_u64().unwrap() as usize;
        ending[gold] = options(next)[next["gold_label"].as_u64().unwrap() as usize].clone();
        let lens = judge
            .encode(&[prompt(q, &human), prompt(q, &ending)])
            .unwrap();
        let cut = lens.iter().any(|(ids, _)| ids.len() > CONTEXT);
        assert_eq!(it["truncated"] == true, cut, "item {i}");
        want += usize::from(cut);
    }
    assert!(want > 0 && want < N, "{want}");
    let m = read_json(&out.join("metrics.json"));
    assert_eq!(m["metrics"]["truncated_items"], json!(want));
}

/// Letter logits of the first 40 dev prompts in `dtype` on `engine` stay within `tol` of
/// candle's f32 ones, and the picks equal f32's wherever f32's best letter leads by more than
/// twice the distance.
fn near_f32(name: &str, dir: &Path, dtype: candle_core::DType, engine: &EngineOptions, tol: f32) {
    let prompts = dev_prompts()[..40].to_vec();
    let bar = indicatif::ProgressBar::hidden();
    let f32s = load_on(dir, candle_core::DType::F32, &engines()[0])
        .verdicts(&prompts, 4096, &bar)
        .unwrap();
    let judge = load_on(dir, dtype, engine);
    let others = judge.verdicts(&prompts, 4096, &bar).unwrap();
    let mut worst = 0f32;
    for (a, b) in f32s.iter().zip(&others) {
        let d = max_diff(&a.letter_logits, &b.letter_logits);
        worst = worst.max(d);
        let mut sorted = a.letter_logits;
        sorted.sort_by(|x, y| y.total_cmp(x));
        if sorted[0] - sorted[1] > 2.0 * d {
            assert_eq!(a.pick, b.pick, "{name}");
        }
    }
    let what = format!("{name} {dtype:?} on {}", judge.engine());
    assert!(worst < tol, "{what}: letter logits {worst} from f32's");
    eprintln!("{what}: letter logits within {worst:.3} of f32");
}

/// `--dtype bf16` loads the weights in bf16 (candle runs the layers in it, norms and softmax in
/// f32; scorekit's kernels run bf16 products with f32 accumulation on f32 activations): the
/// letter logits stay near f32's.
#[test]
fn bf16_letter_logits_stay_near_f32() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["llama", "gemma2"] {
        let dir = decoder_folder(name, tmp.path(), false);
        for engine in engines() {
            near_f32(name, &dir, candle_core::DType::BF16, &engine, 0.1);
        }
    }
}

/// `--quantize`: int8 products (weights per output row, activations per row) on scorekit's
/// kernels stay near f32's letter logits; without the kernels it is refused.
#[test]
fn int8_letter_logits_stay_near_f32() {
    let tmp = tempfile::tempdir().unwrap();
    let int8 = EngineOptions {
        int8: true,
        ..EngineOptions::default()
    };
    if !scorekit::runtime::kernels::int8_available() {
        return;
    }
    for name in ["llama", "qwen2", "gemma2", "phi3"] {
        let dir = decoder_folder(name, tmp.path(), false);
        near_f32(name, &dir, candle_core::DType::F32, &int8, 0.1);
    }
    let candle_int8 = EngineOptions {
        engine: EngineChoice::Candle,
        ..int8
    };
    let dir = tmp.path().join("llama");
    let e = DecoderJudge::load(
        &dir,
        &candle_core::Device::Cpu,
        candle_core::DType::F32,
        &candle_int8,
        None,
        None,
    )
    .err()
    .unwrap();
    assert_eq!(e.exit_code(), 2, "{e}");
    assert!(e.to_string().contains("int8"), "{e}");
}

/// Generations whose ending for dev question i is question i+1's gold option.
fn next_gold_generations(dir: &Path) -> PathBuf {
    let qs = crate::common::dev_questions();
    let gens: String = (0..qs.len())
        .map(|i| {
            let next = &qs[(i + 1) % qs.len()];
            let ending = &next["options"][next["gold_label"].as_u64().unwrap() as usize];
            format!(
                "{}\n",
                json!({"question_id": qs[i]["question_id"], "ending": ending})
            )
        })
        .collect();
    crate::common::write(dir, "gens.jsonl", gens)
}

/// A story run with a decoder judge on the whole dev split: every item carries the letter
/// logits and letter mass of both prompts (the human options' ones served from the calibration's
/// memo, fresh or cached alike, equal to transformers'), the pick is their argmax, and the run
/// warns that the tiny model's median letter mass is below one half.
#[test]
fn story_items_carry_letter_logits_and_mass_from_the_calibration_memo() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = decoder_folder("qwen3", tmp.path(), false);
    let gens = next_gold_generations(tmp.path());
    let reference = read_json(&data("qwen3").join("reference.json"));
    let by_id: std::collections::HashMap<&str, &Value> = reference["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["question_id"].as_str().unwrap(), r))
        .collect();
    // The CLI's default engine: the kernels' split-bf16 tiles where the CPU has AMX.
    let tol = if scorekit::runtime::kernels::amx_available() {
        TOL_SPLIT
    } else {
        TOL
    };
    let mut runs = Vec::new();
    for (name, recalibrate) in [("fresh", true), ("cached", false)] {
        let out = tmp.path().join(name);
        let mut args = vec!["--device", "cpu", "--bootstrap", "100"];
        if recalibrate {
            args.push("--recalibrate");
        }
        let r = crate::common::judge_only(&dir, &gens, &out, &args);
        assert!(r.status.success(), "{}", stderr(&r));
        assert!(
            stderr(&r).contains("median letter mass"),
            "{name}: {}",
            stderr(&r)
        );
        let items = crate::letter::read_items(&out.join("items.jsonl"));
        assert_eq!(items.len(), by_id.len());
        for it in &items {
            let row = by_id[it["question_id"].as_str().unwrap()];
            let gold = logits_of(&it["gold_letter_logits"]);
            assert!(
                max_diff(&gold, &logits_of(&row["letter_logits"])) < tol,
                "{name} {}: {gold:?} vs {}",
                it["question_id"],
                row["letter_logits"]
            );
            if pick_is_determined(&logits_of(&row["letter_logits"]), tol) {
                assert_eq!(it["judge_gold_pick"], row["pick"]);
            }
            let mass = it["gold_letter_mass"].as_f64().unwrap();
            assert!((mass - row["letter_mass"].as_f64().unwrap()).abs() < 1e-4);
            // The ending's prompt: its own logits, whose argmax is the pick.
            let own = logits_of(&it["letter_logits"]);
            let argmax = (0..4).fold(0, |b, k| if own[k] > own[b] { k } else { b });
            assert_eq!(it["judge_pick"], json!(argmax), "{name}");
            let m = it["letter_mass"].as_f64().unwrap();
            assert!(m > 0.0 && m < 0.5, "{m}");
        }
        runs.push(items);
    }
    assert_eq!(
        runs[0], runs[1],
        "fresh and cached calibrations give the same items"
    );
}
