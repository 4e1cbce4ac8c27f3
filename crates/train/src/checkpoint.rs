//! Checkpoints (`--resume`): weights, AdamW moments and step count, and the loop's
//! [`Position`] (step, epoch, place in the epoch, dropout generator). Written to a temporary
//! folder and swapped into place by renames, so a run killed at any point (kill -9 included)
//! leaves one complete checkpoint: `checkpoint/`, or between the two renames of a swap
//! `checkpoint.old/`, which [`recover`] puts back.

use super::trainer::{Position, Trainer};
use anyhow::{anyhow, Context};
use candle_core::Tensor;
use scorekit_core::error::{Error, InputError, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// The loop's state as `state.json` holds it, with whatever the caller keeps beside it
/// (`extra`: the command's logs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    /// Where the run stands.
    pub pos: Position,
    /// AdamW's step count.
    pub opt_step: u64,
    /// The caller's own record.
    pub extra: serde_json::Value,
}

/// Save the trainer's weights, moments and position into `dir` (replaced atomically).
pub fn save(dir: &Path, trainer: &Trainer, extra: serde_json::Value) -> Result<()> {
    let tmp = dir.with_extension("partial");
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
    }
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut weights: HashMap<String, Tensor> = HashMap::new();
    let mut moments: HashMap<String, Tensor> = HashMap::new();
    for s in &trainer.opt.slots {
        weights.insert(s.name.clone(), s.var.as_tensor().clone());
        moments.insert(format!("m.{}", s.name), s.m.clone());
        moments.insert(format!("v.{}", s.name), s.v.clone());
    }
    candle_core::safetensors::save(&weights, tmp.join("model.safetensors"))
        .map_err(|e| anyhow!("writing checkpoint weights: {e}"))?;
    candle_core::safetensors::save(&moments, tmp.join("optimizer.safetensors"))
        .map_err(|e| anyhow!("writing optimiser moments: {e}"))?;
    let state = State {
        pos: trainer.pos.clone(),
        opt_step: trainer.opt.step,
        extra,
    };
    let text = serde_json::to_string_pretty(&state).map_err(|e| anyhow!("{e}"))?;
    std::fs::write(tmp.join("state.json"), text)
        .with_context(|| format!("writing {}", tmp.display()))?;
    // Swap by renames: deleting the old checkpoint in place could leave a half-deleted folder.
    let old = dir.with_extension("old");
    if old.exists() {
        std::fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
    }
    if dir.exists() {
        std::fs::rename(dir, &old).with_context(|| format!("renaming {}", dir.display()))?;
    }
    std::fs::rename(&tmp, dir).with_context(|| format!("renaming to {}", dir.display()))?;
    if old.exists() {
        std::fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
    }
    Ok(())
}

/// After a kill between the two renames of [`save`]: put the previous checkpoint
/// (`checkpoint.old/`, complete) back in place. Nothing to do otherwise.
pub fn recover(dir: &Path) -> Result<()> {
    let old = dir.with_extension("old");
    if !dir.exists() && old.exists() {
        std::fs::rename(&old, dir).with_context(|| format!("renaming {}", old.display()))?;
    }
    Ok(())
}

/// Restore weights, moments and position from `dir` into `trainer`; returns the caller's record.
pub fn load(dir: &Path, trainer: &mut Trainer) -> Result<serde_json::Value> {
    let bad = |file: &str, msg: String| Error::Input(InputError::file(dir.join(file), msg));
    let text = std::fs::read_to_string(dir.join("state.json"))
        .map_err(|e| bad("state.json", format!("cannot read: {e}")))?;
    let state: State = serde_json::from_str(&text)
        .map_err(|e| bad("state.json", format!("not a scorekit checkpoint: {e}")))?;
    let dev = trainer.model.device().clone();
    let weights = candle_core::safetensors::load(dir.join("model.safetensors"), &dev)
        .map_err(|e| bad("model.safetensors", format!("cannot read: {e}")))?;
    let moments = candle_core::safetensors::load(dir.join("optimizer.safetensors"), &dev)
        .map_err(|e| bad("optimizer.safetensors", format!("cannot read: {e}")))?;
    for s in &mut trainer.opt.slots {
        let get = |map: &HashMap<String, Tensor>, file: &str, name: &str| {
            map.get(name)
                .filter(|t| t.shape() == s.var.shape())
                .cloned()
                .ok_or_else(|| {
                    bad(
                        file,
                        format!("no tensor {name:?} of shape {:?}", s.var.shape()),
                    )
                })
        };
        let w = get(&weights, "model.safetensors", &s.name)?;
        s.m = get(&moments, "optimizer.safetensors", &format!("m.{}", s.name))?;
        s.v = get(&moments, "optimizer.safetensors", &format!("v.{}", s.name))?;
        s.var.set(&w).map_err(|e| anyhow!("{e}"))?;
    }
    trainer.opt.step = state.opt_step;
    trainer.pos = state.pos;
    Ok(state.extra)
}
