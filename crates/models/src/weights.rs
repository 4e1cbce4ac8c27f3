//! Cheap checks of weight files before loading: a truncated or malformed safetensors file, or a
//! tensor of the wrong shape, is named here instead of surfacing as an obscure error mid-run.

use scorekit_core::error::{Error, InputError, Result};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// One tensor of a safetensors header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Element type as written (`F32`, `F16`, `I64`, ...).
    pub dtype: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Where its bytes are in the file (absolute offsets).
    pub data: std::ops::Range<u64>,
}

/// Parse and check a safetensors header against the file's size, without reading the data.
///
/// Detects truncation (data shorter than the header promises), trailing garbage, overlapping or
/// mis-sized tensors and a malformed header. Errors name the file.
pub fn check_safetensors(path: &Path) -> Result<BTreeMap<String, TensorInfo>> {
    let bad = |msg: String| Error::Input(InputError::file(path, msg));
    let mut f = std::fs::File::open(path).map_err(|e| bad(format!("cannot open: {e}")))?;
    let size = f
        .metadata()
        .map_err(|e| bad(format!("cannot stat: {e}")))?
        .len();
    let mut len8 = [0u8; 8];
    f.read_exact(&mut len8)
        .map_err(|_| bad(format!("not a safetensors file: only {size} bytes")))?;
    let n = u64::from_le_bytes(len8);
    if n > 100 << 20 || 8 + n > size {
        return Err(bad(format!(
            "truncated or not a safetensors file: header of {n} bytes in a file of {size} bytes"
        )));
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header)
        .map_err(|e| bad(format!("cannot read header: {e}")))?;
    let json: serde_json::Value = serde_json::from_slice(&header)
        .map_err(|e| bad(format!("safetensors header is not valid JSON: {e}")))?;
    let obj = json
        .as_object()
        .ok_or_else(|| bad("safetensors header is not a JSON object".into()))?;
    let mut out = BTreeMap::new();
    let mut spans = Vec::new();
    for (name, v) in obj {
        if name == "__metadata__" {
            continue;
        }
        let dtype = v["dtype"].as_str().unwrap_or("").to_string();
        let shape: Option<Vec<usize>> = v["shape"]
            .as_array()
            .and_then(|a| a.iter().map(|d| d.as_u64().map(|d| d as usize)).collect());
        let offs: Option<Vec<u64>> = v["data_offsets"]
            .as_array()
            .and_then(|a| a.iter().map(|d| d.as_u64()).collect());
        let (Some(shape), Some(offs)) = (shape, offs) else {
            return Err(bad(format!("tensor {name}: malformed header entry")));
        };
        let width = dtype_size(&dtype)
            .ok_or_else(|| bad(format!("tensor {name}: unknown dtype {dtype:?}")))?;
        if offs.len() != 2 || offs[1] < offs[0] {
            return Err(bad(format!("tensor {name}: bad data_offsets {offs:?}")));
        }
        let numel: u64 = shape.iter().map(|&d| d as u64).product();
        if offs[1] - offs[0] != numel * width {
            return Err(bad(format!(
                "tensor {name}: {dtype} {shape:?} needs {} bytes, header gives {}",
                numel * width,
                offs[1] - offs[0]
            )));
        }
        spans.push((offs[0], offs[1], name.clone()));
        let data = 8 + n + offs[0]..8 + n + offs[1];
        out.insert(name.clone(), TensorInfo { dtype, shape, data });
    }
    spans.sort();
    for w in spans.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(bad(format!("tensors {} and {} overlap", w[0].2, w[1].2)));
        }
    }
    let data_end = spans.iter().map(|s| s.1).max().unwrap_or(0);
    let expected = 8 + n + data_end;
    if size < expected {
        return Err(bad(format!(
            "truncated: {size} bytes, the header needs {expected} (download it again: scorekit models pull)"
        )));
    }
    if size > expected {
        return Err(bad(format!(
            "corrupt: {size} bytes, the header accounts for {expected}"
        )));
    }
    Ok(out)
}

fn dtype_size(d: &str) -> Option<u64> {
    Some(match d {
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" => 1,
        "U16" | "I16" | "F16" | "BF16" => 2,
        "U32" | "I32" | "F32" => 4,
        "U64" | "I64" | "F64" => 8,
        _ => return None,
    })
}

/// Find a tensor under any of the usual prefixes (`""`, `bert.`, `<model_type>.`).
pub fn find_tensor<'a>(
    tensors: &'a BTreeMap<String, TensorInfo>,
    name: &str,
    prefixes: &[&str],
) -> Option<(String, &'a TensorInfo)> {
    prefixes.iter().find_map(|p| {
        let full = format!("{p}{name}");
        tensors.get(&full).map(|t| (full, t))
    })
}

/// Check that the named tensors exist with the expected shapes; the error names the file, the
/// tensor, and both shapes (e.g. a config.json that does not match the weights).
pub fn expect_shapes(
    path: &Path,
    tensors: &BTreeMap<String, TensorInfo>,
    prefixes: &[&str],
    expected: &[(String, Vec<usize>)],
) -> Result<()> {
    for (name, shape) in expected {
        match find_tensor(tensors, name, prefixes) {
            None => {
                return Err(Error::Input(InputError::file(
                    path,
                    format!("tensor {name} is missing (is this the right kind of model?)"),
                )))
            }
            Some((full, t)) if &t.shape != shape => {
                return Err(Error::Input(InputError::file(
                    path,
                    format!(
                        "tensor {full} has shape {:?}, config.json implies {shape:?} (config.json does not match the weights)",
                        t.shape
                    ),
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Write tensors as a safetensors file (used by fixture makers and tests).
pub fn write_safetensors(
    path: &Path,
    tensors: &[(String, Vec<usize>, Vec<f32>)],
) -> std::io::Result<()> {
    use std::io::Write;
    let shapes: Vec<(&str, &[usize])> = tensors
        .iter()
        .map(|(n, s, _)| (n.as_str(), s.as_slice()))
        .collect();
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    w.write_all(&f32_safetensors_header(
        &shapes,
        serde_json::json!({"format": "pt"}),
    ))?;
    for (_, _, data) in tensors {
        for x in data {
            w.write_all(&x.to_le_bytes())?;
        }
    }
    w.flush()
}

/// The first bytes of an F32 safetensors file: the u64 header length, then the JSON header
/// (tensors laid out back to back in the given order, `__metadata__`), space-padded to 8 bytes.
pub fn f32_safetensors_header(
    tensors: &[(&str, &[usize])],
    metadata: serde_json::Value,
) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut offset = 0u64;
    for (name, shape) in tensors {
        let bytes = shape.iter().product::<usize>() as u64 * 4;
        header.insert(
            name.to_string(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + bytes]}),
        );
        offset += bytes;
    }
    header.insert("__metadata__".into(), metadata);
    let mut h = serde_json::to_vec(&header).expect("a JSON map serialises");
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&h);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_truncation_and_bad_shapes() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("m.safetensors");
        write_safetensors(
            &p,
            &[
                ("a".into(), vec![2, 3], vec![0.5; 6]),
                ("b".into(), vec![4], vec![1.0; 4]),
            ],
        )
        .unwrap();
        let h = check_safetensors(&p).unwrap();
        assert_eq!(h["a"].shape, vec![2, 3]);
        expect_shapes(&p, &h, &[""], &[("a".into(), vec![2, 3])]).unwrap();
        let e = expect_shapes(&p, &h, &[""], &[("a".into(), vec![3, 2])]).unwrap_err();
        assert!(
            e.to_string().contains("m.safetensors") && e.to_string().contains("[3, 2]"),
            "{e}"
        );

        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 3]).unwrap();
        let e = check_safetensors(&p).unwrap_err().to_string();
        assert!(
            e.contains("m.safetensors") && e.contains("truncated"),
            "{e}"
        );
        std::fs::write(&p, &bytes[..5]).unwrap();
        assert!(check_safetensors(&p).is_err());
    }
}
