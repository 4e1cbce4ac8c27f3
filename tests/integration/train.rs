//! `scorekit judge train`: the training core against PyTorch (tests/data/train/<name>/, written by
//! scripts/reference/train_reference.py).

use crate::common;

use candle_core::DType;
use common::{repo, test_data, tiny_judge::build_judge};
use scorekit::input::read_jsonl;
use scorekit::runtime::judge::PairTokenizer;
use scorekit::runtime::models;
use scorekit::runtime::train::model::{Dropouts, McModel};
use scorekit::runtime::train::trainer::{
    predict, Control, Event, Example, Recipe, StepLog, Trainer,
};
use scorekit::runtime::train::Precision;
use scorekit::suites::story::parse_questions;
use serde_json::Value;
use std::path::Path;

/// The first `n` Possible Stories dev questions as training examples for the judge in `dir`,
/// through the story judge's own pair builder and tokenizer.
fn examples(dir: &Path, n: usize) -> Vec<Example> {
    let records = read_jsonl(&test_data("possible-stories:dev", "dataset/dev.jsonl")).unwrap();
    let questions = parse_questions(&records[..n]).unwrap();
    let (arch, cfg) = models::read_config(&dir.join("config.json"), "bert").unwrap();
    let tok = PairTokenizer::load(dir, arch, &cfg, None).unwrap();
    questions
        .iter()
        .map(|q| Example {
            choices: tok.encode(&q.gold_pairs()).unwrap(),
            label: q.gold,
        })
        .collect()
}

/// The weight tolerance, relative to the tensor's largest magnitude: 2e-4 in f32, 1e-9 in f64.
/// Element by element relative to |b| is not a fair test: an element whose gradient is tiny
/// (far below the sums it comes from) gets an Adam step whose size depends on rounding, so two
/// correct implementations differ there (in f32, a few of ~40,000 elements per model land between
/// 1e-4 and 1.5e-4 of the tensor's scale). In f64 the weights agree to ~3e-13 of the scale since
/// training runs its own erf-GELU: candle's GELU backward uses 0.398942 for 1/sqrt(2 pi)
/// (relative error 7e-7), which had left f64 word embeddings ~2e-6 of the scale apart.
fn error(a: f64, b: f64, scale: f64, dtype: DType) -> f64 {
    let tol = if dtype == DType::F64 { 1e-9 } else { 2e-4 };
    (a - b).abs() / scale / tol
}

/// A tiny judge trained by scorekit on the recipe, questions and batches of a PyTorch reference.
struct Trained {
    _tmp: tempfile::TempDir,
    /// The judge's folder (its initial weights).
    dir: std::path::PathBuf,
    model: McModel,
    logs: Vec<StepLog>,
    reference: Value,
    data: Vec<Example>,
    max_grad_norm: f64,
}

/// Build judge `name`, check its ids against reference folder `refdir` (tests/data/train/...),
/// and train it with the reference's recipe in `dtype` and `precision`.
fn train_as_reference(name: &str, refdir: &Path, dtype: DType, precision: Precision) -> Trained {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(name);
    build_judge(name, &dir, true);
    let reference: Value = common::read_json(&refdir.join("reference.json"));
    let r = &reference["recipe"];
    let n = r["questions"].as_u64().unwrap() as usize;
    let data = examples(&dir, n);
    // The shared pair builder and tokenizer give the ids `transformers` gave.
    for (q, ex) in data.iter().enumerate() {
        let ids: Vec<Vec<u32>> = ex.choices.iter().map(|t| t.ids.clone()).collect();
        let types: Vec<Vec<u32>> = ex.choices.iter().map(|t| t.type_ids.clone()).collect();
        assert_eq!(
            serde_json::to_value(&ids).unwrap(),
            reference["ids"][q],
            "{name} q{q} ids"
        );
        assert_eq!(
            serde_json::to_value(&types).unwrap(),
            reference["type_ids"][q],
            "{name} q{q} types"
        );
        assert_eq!(ex.label as u64, reference["labels"][q].as_u64().unwrap());
    }
    let model = McModel::load(&dir, &candle_core::Device::Cpu, dtype, 2022).unwrap();
    assert!(model.new_head.is_empty(), "the fixture has its head");
    let recipe = Recipe {
        lr: r["lr"].as_f64().unwrap(),
        batch_questions: r["batch_questions"].as_u64().unwrap() as usize,
        grad_accum: r["grad_accum"].as_u64().unwrap() as usize,
        weight_decay: r["weight_decay"].as_f64().unwrap(),
        warmup_ratio: r["warmup_ratio"].as_f64().unwrap(),
        max_grad_norm: r["max_grad_norm"].as_f64().unwrap(),
        epochs: r["epochs"].as_u64().unwrap(),
        max_steps: None,
        shuffle: false,
        seed: 2022,
        dropouts: Some(Dropouts::all(0.0)),
        precision: Some(precision),
    };
    let max_grad_norm = recipe.max_grad_norm;
    let mut logs: Vec<StepLog> = Vec::new();
    {
        let mut trainer = Trainer::new(&model, recipe, n).unwrap();
        assert_eq!(
            trainer.schedule.total,
            reference["total_steps"].as_u64().unwrap()
        );
        assert_eq!(
            trainer.schedule.warmup,
            reference["warmup_steps"].as_u64().unwrap()
        );
        trainer
            .run(&data, |_, e| {
                if let Event::Step(l) = e {
                    logs.push(l.clone());
                }
                Ok(Control::Continue)
            })
            .unwrap();
    }
    Trained {
        _tmp: tmp,
        dir,
        model,
        logs,
        reference,
        data,
        max_grad_norm,
    }
}

fn parity(name: &str, dtype: DType) {
    let refdir = repo()
        .join("tests/data/train")
        .join(if dtype == DType::F64 {
            format!("{name}_f64")
        } else {
            name.to_string()
        });
    let Trained {
        dir,
        model,
        logs,
        reference,
        data,
        max_grad_norm,
        _tmp: _keep_the_folder,
    } = train_as_reference(name, &refdir, dtype, Precision::F32);
    let n = data.len();
    let steps = reference["steps"].as_array().unwrap();
    assert_eq!(logs.len(), steps.len());
    let mut worst_loss = 0f64;
    let mut clipped = 0;
    for (ours, theirs) in logs.iter().zip(steps) {
        let (l, lr, g) = (
            theirs["loss"].as_f64().unwrap(),
            theirs["lr"].as_f64().unwrap(),
            theirs["grad_norm"].as_f64().unwrap(),
        );
        worst_loss = worst_loss.max((ours.loss - l).abs() / l.abs());
        assert!(
            (ours.loss - l).abs() <= 1e-4 * l.abs(),
            "{name} step {}: loss {} vs {l}",
            ours.step,
            ours.loss
        );
        assert!(
            (ours.lr - lr).abs() <= 1e-12 * lr.max(1e-3),
            "{name} step {}: lr {} vs {lr}",
            ours.step,
            ours.lr
        );
        assert!(
            (ours.grad_norm - g).abs() <= 1e-3 * g,
            "{name} step {}: grad norm {} vs {g}",
            ours.step,
            ours.grad_norm
        );
        clipped += usize::from(g > max_grad_norm);
    }
    assert!(clipped > 0, "the recipe must exercise clipping");
    // Final weights, element by element, except the two kinds whose gradient is rounding noise
    // (attention key biases, the classifier bias: see the spec); those are checked through
    // the logits below.
    let theirs =
        candle_core::safetensors::load(refdir.join("final.safetensors"), &candle_core::Device::Cpu)
            .unwrap();
    let rows: Vec<u32> = reference["word_embedding_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let (mut compared, mut skipped, mut worst) = (0usize, 0usize, 0f64);
    let mut worst_tensor = String::new();
    // The weights before training, for the size of each tensor's update.
    let initial =
        candle_core::safetensors::load(dir.join("model.safetensors"), &candle_core::Device::Cpu)
            .unwrap();
    let (mut worst_rel, mut worst_rel_update) = (0f64, 0f64);
    for (vname, var) in model.named_vars() {
        if vname.ends_with("attention.self.key.bias") || vname == "classifier.bias" {
            skipped += 1;
            continue;
        }
        let mut ours = var.as_tensor().clone();
        let key = if vname.ends_with("word_embeddings.weight") {
            let idx = candle_core::Tensor::new(rows.as_slice(), &candle_core::Device::Cpu).unwrap();
            ours = ours.index_select(&idx, 0).unwrap();
            format!("{vname}.rows")
        } else {
            vname.clone()
        };
        let t = theirs
            .get(&key)
            .unwrap_or_else(|| panic!("{name}: no reference {key}"));
        let f64s = |t: &candle_core::Tensor| {
            t.flatten_all()
                .unwrap()
                .to_dtype(DType::F64)
                .unwrap()
                .to_vec1::<f64>()
                .unwrap()
        };
        let (a, b) = (f64s(&ours), f64s(t));
        assert_eq!(a.len(), b.len(), "{key}");
        // The tensor's relative error, ‖ours − theirs‖ / ‖theirs‖ (the issue's "relative 1e-4
        // on the weights"), and the same against the size of the update ‖theirs − initial‖.
        let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
        let diff = norm(&mut a.iter().zip(&b).map(|(x, y)| x - y));
        let rel = diff / norm(&mut b.iter().copied()).max(1e-300);
        let rel_limit = if dtype == DType::F64 { 1e-10 } else { 1e-4 };
        assert!(
            rel <= rel_limit,
            "{name} {dtype:?} {key}: relative error {rel:.2e}"
        );
        worst_rel = worst_rel.max(rel);
        if let Some(w0) = initial.get(vname.as_str()) {
            let mut w0 = w0.clone();
            if key.ends_with(".rows") {
                let idx =
                    candle_core::Tensor::new(rows.as_slice(), &candle_core::Device::Cpu).unwrap();
                w0 = w0.index_select(&idx, 0).unwrap();
            }
            let update = norm(&mut b.iter().zip(f64s(&w0)).map(|(y, z)| y - z));
            if update > 0.0 {
                worst_rel_update = worst_rel_update.max(diff / update);
            }
        }
        let scale = b.iter().fold(0f64, |m, y| m.max(y.abs()));
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            let e = error(*x, *y, scale, dtype);
            assert!(
                e <= 1.0,
                "{name} {dtype:?} {key}[{i}]: {x} vs {y} (largest {scale})"
            );
            if e > worst {
                worst = e;
                worst_tensor = key.clone();
            }
        }
        compared += 1;
    }
    assert_eq!(
        compared + skipped,
        theirs.len(),
        "{name}: every tensor compared"
    );
    // The trained model's choices: log-softmax of its logits on the training questions.
    let logits = predict(&model, &data, n).unwrap();
    let want: Vec<Vec<f64>> = serde_json::from_value(reference["final_logits"].clone()).unwrap();
    let lsm = |row: &[f64]| -> Vec<f64> {
        let m = row.iter().cloned().fold(f64::MIN, f64::max);
        let z = row.iter().map(|x| (x - m).exp()).sum::<f64>().ln() + m;
        row.iter().map(|x| x - z).collect()
    };
    let mut worst_logit = 0f64;
    for (ours, theirs) in logits.iter().zip(&want) {
        let ours: Vec<f64> = ours.iter().map(|&x| x as f64).collect();
        for (x, y) in lsm(&ours).iter().zip(lsm(theirs)) {
            worst_logit = worst_logit.max((x - y).abs());
            assert!((x - y).abs() < 1e-4, "{name}: log-softmax {x} vs {y}");
        }
    }
    eprintln!(
        "{name} {dtype:?}: {} steps ({clipped} clipped), worst loss rel diff {worst_loss:.2e}, {compared} tensors, worst relative error {worst_rel:.2e} (of the update: {worst_rel_update:.2e}), worst element error {worst:.2e} of the tolerance ({worst_tensor}), worst log-softmax diff {worst_logit:.2e}",
        logs.len()
    );
}

#[test]
fn bert_training_matches_pytorch_f32() {
    parity("bert_mc", DType::F32);
}

#[test]
fn roberta_training_matches_pytorch_f32() {
    parity("roberta_mc", DType::F32);
}

#[test]
fn bert_training_matches_pytorch_f64() {
    parity("bert_mc", DType::F64);
}

#[test]
fn roberta_training_matches_pytorch_f64() {
    parity("roberta_mc", DType::F64);
}

/// DeBERTa-v3's shape (relative attention with position buckets, shared attention keys, p2c +
/// c2p, LayerNorm on the relative embeddings, no token types) and its context-pooler head.
#[test]
fn deberta_v3_training_matches_pytorch_f32() {
    parity("deberta_mc", DType::F32);
}

#[test]
fn deberta_v3_training_matches_pytorch_f64() {
    parity("deberta_mc", DType::F64);
}

/// The tensors of a reference's final.safetensors, the word embeddings' used rows under
/// `<name>.rows`, as f64 vectors by name.
fn final_tensors(refdir: &Path) -> std::collections::BTreeMap<String, Vec<f64>> {
    candle_core::safetensors::load(refdir.join("final.safetensors"), &candle_core::Device::Cpu)
        .unwrap()
        .into_iter()
        .map(|(k, t)| (k, f64s(&t)))
        .collect()
}

fn f64s(t: &candle_core::Tensor) -> Vec<f64> {
    t.flatten_all()
        .unwrap()
        .to_dtype(DType::F64)
        .unwrap()
        .to_vec1::<f64>()
        .unwrap()
}

/// ‖a − b‖.
fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// Root mean square.
fn rms(v: &[f64]) -> f64 {
    (v.iter().map(|x| x * x).sum::<f64>() / v.len().max(1) as f64).sqrt()
}

/// `judge train --precision bf16-mixed` against PyTorch's bf16 autocast (tests/data/train/
/// <name>_bf16/, `train_reference.py --bf16`). bf16 has no exact reference, so the yardstick is
/// PyTorch's own spread: scorekit bf16-mixed must be at least as close to PyTorch bf16 autocast
/// as PyTorch bf16 autocast is to PyTorch f32, on the losses of the steps and on the tensors'
/// updates (relative, printed side by side), and closer to PyTorch bf16 than to PyTorch f32 (so
/// that it is bf16 that runs: f32 training would sit exactly at PyTorch's spread).
///
/// The criterion is over the run (root mean square over steps, over tensors), each step and
/// tensor printed; the losses get twice the spread (see below). On these tiny judges the gradients are mostly bf16 rounding noise (PyTorch
/// bf16 and f32 gradients differ by 2% to 12x of their norm, per tensor, on the first
/// micro-batch: scripts/reference/bf16_grad_spread.py), and a 1-ulp
/// f32 difference anywhere (an exp, a sum's order) flips bf16 roundings downstream, so single
/// steps land on either side of the spread by chance (docs/judge.md, "bf16-mixed training").
/// Excluded as in the f32 parity test: attention key biases and the classifier bias, whose
/// gradient is zero in exact arithmetic (softmax is shift-invariant), so their updates are noise.
fn bf16_yardstick(name: &str) {
    let data_dir = repo().join("tests/data/train");
    let f32_dir = data_dir.join(name);
    let bf16_dir = data_dir.join(format!("{name}_bf16"));
    let t = train_as_reference(name, &bf16_dir, DType::F32, Precision::Bf16Mixed);
    let pt_f32: Value = common::read_json(&f32_dir.join("reference.json"));
    let (pt_bf16, pt_f32) = (
        t.reference["steps"].as_array().unwrap(),
        pt_f32["steps"].as_array().unwrap(),
    );
    assert_eq!(t.logs.len(), pt_bf16.len());
    eprintln!("{name}: relative loss difference: scorekit bf16-mixed vs PyTorch bf16 | PyTorch bf16 vs f32 | scorekit bf16-mixed vs PyTorch f32");
    let (mut ours, mut spread, mut to_f32) = (vec![], vec![], vec![]);
    for ((l, b), f) in t.logs.iter().zip(pt_bf16).zip(pt_f32) {
        let (b, f) = (b["loss"].as_f64().unwrap(), f["loss"].as_f64().unwrap());
        ours.push((l.loss - b).abs() / b);
        spread.push((b - f).abs() / f);
        to_f32.push((l.loss - f).abs() / f);
        eprintln!(
            "  step {}: {:.2e} | {:.2e} | {:.2e}",
            l.step,
            ours.last().unwrap(),
            spread.last().unwrap(),
            to_f32.last().unwrap()
        );
    }
    let losses = (rms(&ours), rms(&spread), rms(&to_f32));
    eprintln!(
        "  rms: {:.2e} | {:.2e} | {:.2e}",
        losses.0, losses.1, losses.2
    );
    let (theirs_bf16, theirs_f32) = (final_tensors(&bf16_dir), final_tensors(&f32_dir));
    let initial =
        candle_core::safetensors::load(t.dir.join("model.safetensors"), &candle_core::Device::Cpu)
            .unwrap();
    let rows: Vec<u32> = t.reference["word_embedding_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let rows = candle_core::Tensor::new(rows.as_slice(), &candle_core::Device::Cpu).unwrap();
    let (mut ours, mut spread, mut to_f32) = (vec![], vec![], vec![]);
    eprintln!("{name}: distance of the final tensors, of the update: scorekit bf16-mixed vs PyTorch bf16 | PyTorch bf16 vs f32 | scorekit bf16-mixed vs PyTorch f32");
    for (vname, var) in t.model.named_vars() {
        if vname.ends_with("key.bias")
            || vname.ends_with("key_proj.bias")
            || vname == "classifier.bias"
        {
            continue;
        }
        let word = vname.ends_with("word_embeddings.weight");
        let pick = |x: &candle_core::Tensor| {
            if word {
                x.index_select(&rows, 0).unwrap()
            } else {
                x.clone()
            }
        };
        let key = if word {
            format!("{vname}.rows")
        } else {
            vname.clone()
        };
        let mine = f64s(&pick(var.as_tensor()));
        let w0 = f64s(&pick(&initial[vname.as_str()]));
        let (b, f) = (&theirs_bf16[&key], &theirs_f32[&key]);
        let update = distance(b, &w0);
        if update == 0.0 {
            continue; // untouched by training (rows of unused positions)
        }
        ours.push(distance(&mine, b) / update);
        spread.push(distance(b, f) / update);
        to_f32.push(distance(&mine, f) / update);
        eprintln!(
            "  {key}: {:.2e} | {:.2e} | {:.2e}",
            ours.last().unwrap(),
            spread.last().unwrap(),
            to_f32.last().unwrap()
        );
    }
    assert!(
        ours.len() > 10,
        "{name}: only {} tensors compared",
        ours.len()
    );
    let (ours, spread, to_f32) = (rms(&ours), rms(&spread), rms(&to_f32));
    eprintln!("  rms: {ours:.2e} | {spread:.2e} | {to_f32:.2e}");
    // The losses move ~1e-4 over the run (the tiny judges stay near ln 4), so their differences
    // are rounding flips; measured rms ratios to the spread: BERT 1.44, RoBERTa 0.09, DeBERTa
    // 0.17 on the composed path; BERT 1.09 and RoBERTa 0.075 on the fused bf16 layer (AMX-BF16,
    // 2026-12-03). The bound of 2 catches a wrong rounding point or an f32 product without failing on a
    // CPU whose f32 sums flip other roundings (CPUs without AVX-512 run candle's bf16 products).
    let (l_ours, l_spread, _) = losses;
    assert!(
        l_ours <= 2.0 * l_spread,
        "{name}: losses {l_ours:.2e} from PyTorch bf16 (rms), over twice PyTorch's spread {l_spread:.2e}"
    );
    assert!(
        ours <= spread,
        "{name}: updates {ours:.2e} from PyTorch bf16 (rms), which is {spread:.2e} from PyTorch f32"
    );
    assert!(
        ours < to_f32,
        "{name}: updates nearer PyTorch f32 ({to_f32:.2e}) than bf16 ({ours:.2e})"
    );
}

#[test]
fn bert_bf16_mixed_training_is_within_pytorch_bf16_spread() {
    bf16_yardstick("bert_mc");
}

#[test]
fn roberta_bf16_mixed_training_is_within_pytorch_bf16_spread() {
    bf16_yardstick("roberta_mc");
}

#[test]
fn deberta_v3_bf16_mixed_training_is_within_pytorch_bf16_spread() {
    bf16_yardstick("deberta_mc");
}
