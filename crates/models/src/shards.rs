//! A model folder's weight files in every form the Hub carries: one `model.safetensors`, shards
//! named by `model.safetensors.index.json`, one `pytorch_model.bin`, or shards named by
//! `pytorch_model.bin.index.json` (large checkpoints such as flan-t5-xl/xxl come as shards).
//! Safetensors are read one tensor at a time (no map: a mapped file's pages stayed resident beside
//! the converted copy, 2.0x the weights in peak RSS); PyTorch shards are read lazily, one tensor at
//! a time.

use crate::arch::bad;
use candle_core::pickle::PthTensors;
use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::VarBuilder;
use scorekit_core::error::{Error, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The weight files of a model folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WeightFiles {
    /// One or more safetensors files.
    Safetensors(Vec<PathBuf>),
    /// One or more PyTorch pickles (`pytorch_model.bin` or its shards).
    Pth(Vec<PathBuf>),
}

impl WeightFiles {
    /// The files, in the order the index first names them.
    pub fn files(&self) -> &[PathBuf] {
        match self {
            WeightFiles::Safetensors(f) | WeightFiles::Pth(f) => f,
        }
    }
}

/// Find the weights of `dir`: model.safetensors, its index, pytorch_model.bin, its index, in that
/// order of preference. An index whose shards are missing is an input error naming the index
/// file and the tensor whose shard is absent.
pub fn weight_files(dir: &Path) -> Result<WeightFiles> {
    let single = dir.join("model.safetensors");
    if single.exists() {
        return Ok(WeightFiles::Safetensors(vec![single]));
    }
    let index = dir.join("model.safetensors.index.json");
    if index.exists() {
        return Ok(WeightFiles::Safetensors(shards_of(&index)?));
    }
    let single = dir.join("pytorch_model.bin");
    if single.exists() {
        return Ok(WeightFiles::Pth(vec![single]));
    }
    let index = dir.join("pytorch_model.bin.index.json");
    if index.exists() {
        return Ok(WeightFiles::Pth(shards_of(&index)?));
    }
    Err(Error::usage(format!(
        "model {}: no model.safetensors, model.safetensors.index.json, pytorch_model.bin or \
         pytorch_model.bin.index.json",
        dir.display()
    )))
}

/// The distinct shard file names an index's `weight_map` names, in first-mention order, each
/// with the first tensor that names it (for messages); each is a plain file name in the index's
/// folder (no path may leave it).
pub fn shard_names(index: &Path) -> Result<Vec<(String, String)>> {
    let text =
        std::fs::read_to_string(index).map_err(|e| bad(index, format!("cannot read: {e}")))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| bad(index, format!("not valid JSON: {e}")))?;
    let map = json
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| bad(index, "field weight_map: missing or not an object"))?;
    let mut names: Vec<(String, String)> = Vec::new();
    for (tensor, file) in map {
        let name = file.as_str().ok_or_else(|| {
            bad(
                index,
                format!("field weight_map.{tensor}: not a file name string"),
            )
        })?;
        if name.is_empty() || name.contains(['/', '\\']) || name == ".." {
            return Err(bad(
                index,
                format!("field weight_map.{tensor}: {name:?} is not a file name in the folder"),
            ));
        }
        if !names.iter().any(|(n, _)| n == name) {
            names.push((name.to_string(), tensor.clone()));
        }
    }
    if names.is_empty() {
        return Err(bad(index, "field weight_map: names no tensor"));
    }
    Ok(names)
}

/// The shard files of an index, each checked to exist (the error names the index, a tensor of
/// the missing shard and the shard).
fn shards_of(index: &Path) -> Result<Vec<PathBuf>> {
    let dir = index.parent().unwrap_or(Path::new("."));
    shard_names(index)?
        .into_iter()
        .map(|(name, tensor)| {
            let path = dir.join(&name);
            if path.exists() {
                Ok(path)
            } else {
                Err(bad(
                    index,
                    format!(
                        "field weight_map.{tensor}: shard {name} is not in {}",
                        dir.display()
                    ),
                ))
            }
        })
        .collect()
}

/// candle's view of the weight files, loading each tensor into `dtype` on `device` as it is
/// asked for, one tensor at a time: a safetensors tensor is read from the file into a buffer of
/// its own size and converted (not memory-mapped, whose touched pages would count twice while the
/// model holds its copy: peak memory is the model plus its largest tensor); PyTorch shards are
/// read by candle's pickle reader.
pub fn var_builder_of(
    files: &WeightFiles,
    dtype: DType,
    device: &Device,
) -> Result<VarBuilder<'static>> {
    let first = &files.files()[0];
    let vb = match files {
        WeightFiles::Safetensors(paths) => {
            let backend: Box<dyn SimpleBackend> = Box::new(SafetensorsFiles::open(paths)?);
            Ok(VarBuilder::from_backend(backend, dtype, device.clone()))
        }
        WeightFiles::Pth(paths) if paths.len() == 1 => VarBuilder::from_pth(first, dtype, device),
        WeightFiles::Pth(paths) => {
            let mut shards = Vec::with_capacity(paths.len());
            for p in paths {
                shards.push(
                    PthTensors::new(p, None).map_err(|e| bad(p, format!("cannot load: {e}")))?,
                );
            }
            let backend: Box<dyn SimpleBackend> = Box::new(PthShards { shards });
            Ok(VarBuilder::from_backend(backend, dtype, device.clone()))
        }
    };
    vb.map_err(|e| bad(first, format!("cannot load: {e}")))
}

/// `t` when it has the shape a layer asks for, else candle's shape error naming the tensor.
fn of_shape(t: Tensor, s: Shape, name: &str) -> candle_core::Result<Tensor> {
    if t.shape() != &s {
        return Err(candle_core::Error::UnexpectedShape {
            msg: format!("shape mismatch for {name}"),
            expected: s,
            got: t.shape().clone(),
        }
        .bt());
    }
    Ok(t)
}

/// Safetensors files read tensor by tensor (headers checked by `weights::check_safetensors`).
struct SafetensorsFiles {
    files: Vec<(PathBuf, std::sync::Mutex<std::fs::File>)>,
    /// Tensor name → (file index, its header entry).
    tensors: std::collections::HashMap<String, (usize, crate::weights::TensorInfo)>,
}

impl SafetensorsFiles {
    fn open(paths: &[PathBuf]) -> Result<Self> {
        let mut files = Vec::with_capacity(paths.len());
        let mut tensors = std::collections::HashMap::new();
        for (i, p) in paths.iter().enumerate() {
            for (name, info) in crate::weights::check_safetensors(p)? {
                tensors.insert(name, (i, info));
            }
            let f = std::fs::File::open(p).map_err(|e| bad(p, format!("cannot open: {e}")))?;
            files.push((p.clone(), std::sync::Mutex::new(f)));
        }
        Ok(SafetensorsFiles { files, tensors })
    }
}

/// candle's type of a safetensors dtype name.
fn candle_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "F32" => DType::F32,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "F64" => DType::F64,
        "U8" => DType::U8,
        "U32" => DType::U32,
        "I64" => DType::I64,
        _ => return None,
    })
}

impl SimpleBackend for SafetensorsFiles {
    fn get(
        &self,
        s: Shape,
        name: &str,
        _h: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        of_shape(self.get_unchecked(name, dtype, dev)?, s, name)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        use std::io::{Read, Seek, SeekFrom};
        let Some((i, info)) = self.tensors.get(name) else {
            return Err(candle_core::Error::CannotFindTensor {
                path: name.to_string(),
            }
            .bt());
        };
        let (path, file) = &self.files[*i];
        let stored = candle_dtype(&info.dtype).ok_or_else(|| {
            candle_core::Error::Msg(format!(
                "{}: tensor {name} has dtype {}",
                path.display(),
                info.dtype
            ))
        })?;
        let mut bytes = vec![0u8; (info.data.end - info.data.start) as usize];
        {
            let mut f = file
                .lock()
                .map_err(|_| candle_core::Error::Msg("weight file lock poisoned".into()))?;
            f.seek(SeekFrom::Start(info.data.start))?;
            f.read_exact(&mut bytes)?;
        }
        Tensor::from_raw_buffer(&bytes, stored, &info.shape, &Device::Cpu)?
            .to_dtype(dtype)?
            .to_device(dev)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }
}

/// Sharded PyTorch pickles behind candle's `VarBuilder`: a tensor is read from the shard that
/// holds it when a layer asks for it.
struct PthShards {
    shards: Vec<PthTensors>,
}

impl SimpleBackend for PthShards {
    fn get(
        &self,
        s: Shape,
        name: &str,
        _h: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        of_shape(self.get_unchecked(name, dtype, dev)?, s, name)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        for shard in &self.shards {
            if let Some(t) = shard.get(name)? {
                return t.to_device(dev)?.to_dtype(dtype);
            }
        }
        Err(candle_core::Error::CannotFindTensor {
            path: name.to_string(),
        }
        .bt())
    }

    fn contains_tensor(&self, name: &str) -> bool {
        self.shards
            .iter()
            .any(|s| s.tensor_infos().contains_key(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_naming_a_missing_shard_names_the_index_and_tensor() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.safetensors"), b"x").unwrap();
        std::fs::write(
            dir.path().join("model.safetensors.index.json"),
            r#"{"weight_map":{"shared.weight":"a.safetensors","lm_head.weight":"b.safetensors"}}"#,
        )
        .unwrap();
        let e = weight_files(dir.path()).unwrap_err();
        let text = e.to_string();
        assert_eq!(e.exit_code(), 2);
        assert!(
            text.contains("model.safetensors.index.json")
                && text.contains("weight_map.lm_head.weight")
                && text.contains("b.safetensors"),
            "{text}"
        );
        std::fs::write(dir.path().join("b.safetensors"), b"x").unwrap();
        let files = weight_files(dir.path()).unwrap();
        // Two tensors, two shards, in the index's order (serde_json's map is sorted by name).
        assert_eq!(files.files().len(), 2);
    }

    #[test]
    fn a_shard_name_may_not_leave_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pytorch_model.bin.index.json"),
            r#"{"weight_map":{"shared.weight":"../x.bin"}}"#,
        )
        .unwrap();
        let e = weight_files(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a file name in the folder"), "{e}");
    }

    #[test]
    fn the_single_file_is_preferred_and_none_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(weight_files(dir.path()).unwrap_err().exit_code(), 2);
        std::fs::write(dir.path().join("pytorch_model.bin"), b"x").unwrap();
        std::fs::write(dir.path().join("model.safetensors"), b"x").unwrap();
        assert!(matches!(
            weight_files(dir.path()).unwrap(),
            WeightFiles::Safetensors(f) if f.len() == 1
        ));
    }
}
