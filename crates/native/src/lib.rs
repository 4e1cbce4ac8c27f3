//! scorekit's native engine: a BERT encoder on the kernels of `scorekit-kernels` (and T5's encoder
//! and packed products for the letter judge, `t5.rs`; decoder-only chat models for the decoder
//! letter judge, `decoder.rs`), for CPU f32 (optionally int8 or bf16 matrix
//! products), on x86-64 with AVX-512F (elsewhere this crate is empty and
//! candle's layers run):
//!
//! - variable length: the batch's padding is dropped before the encoder; every product runs on
//!   the real tokens only, and attention runs per sequence and head on its own keys (what the
//!   additive mask does in PyTorch, without the masked work);
//! - weights packed once at load (fused Q|K|V, 32-column panels), read from the safetensors file
//!   with `pread`; the word-embedding table stays memory-mapped (only used rows become
//!   resident), so peak memory is the encoder's weights plus activations;
//! - fused epilogues: bias, residual and erf-GELU inside the matrix product;
//! - with CLS pooling the last layer computes keys and values for every token but the rest
//!   (query, attention, output, feed-forward) for `[CLS]` only: the other rows are never read.
//!
//! Outputs match PyTorch within float rounding (parity tests in tests/runtime.rs).
#![cfg(target_arch = "x86_64")]
// The AVX-512 intrinsics are stable since Rust 1.89; the crate's declared MSRV is older.
#![allow(clippy::incompatible_msrv)]

use candle_core::{Device, Tensor};
use candle_transformers::models::bert::{Config as BertConfig, HiddenAct};
use rayon::prelude::*;
use scorekit_encoder::NativeLayout;
use scorekit_encoder::{Batch, Encoder, Hidden, Linear as HeadLinear};
use scorekit_io::MappedFile;
use scorekit_kernels::amx::{self, PackedProduct, PackedSplit, TileTerms};
use scorekit_kernels::attention::{self, HeadRows};
use scorekit_kernels::bf16dot::{self, PackedBf16Dot};
use scorekit_kernels::block::BlockMut;
use scorekit_kernels::cpu::Avx512;
use scorekit_kernels::gemm::{self, Epilogue, PackedB};
use scorekit_kernels::int8::PackedI8;
use scorekit_kernels::widened::PackedBf16Weights;
use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::Path;

mod decoder;
mod t5;
pub use decoder::{DecoderShape, FastDecoder, ReadOptional, RopeTable, QUERY_BLOCK};
pub use t5::{FastT5Encoder, ReadTensor, T5Shape};

/// A weight matrix for y = x·Wᵀ + b.
enum Weight {
    F32(PackedB),
    /// AMX tile products: f32 as four split-bf16 products (~2⁻¹⁷ relative per term), or plain
    /// bf16 products with f32 accumulation (`Products::bf16`).
    Split(PackedSplit),
    /// bf16 products on AVX512-BF16 (`vdpbf16ps`), for CPUs without AMX tiles.
    Bf16Dot(PackedBf16Dot),
    /// bf16 weights widened to f32 for AVX-512 f32 products, where bf16 products are slower.
    Widened(PackedBf16Weights),
    I8(PackedI8),
}

/// Which products the encoder's weights are packed for (from `EngineOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Products {
    /// int8 products (VNNI, or AMX-INT8 tiles when `amx` and available).
    pub int8: bool,
    /// AMX tiles where the CPU has them.
    pub amx: bool,
    /// bf16 products with f32 accumulation (`--dtype bf16`): on AMX-BF16 tiles where `amx`
    /// allows and the CPU has them, else on AVX512-BF16; everything else (embeddings,
    /// LayerNorm, attention, GELU, residuals, heads) stays f32.
    pub bf16: bool,
    /// With `bf16` and no AMX tiles: keep the weights in bf16 but multiply them widened to f32
    /// with f32 FMAs (where the CPU's bf16 products are slower than its f32 FMAs; the runtime
    /// measures and decides).
    pub widen_bf16: bool,
}

impl Products {
    /// Whether this CPU computes these products: AVX-512F always (the row kernels run on the
    /// token returned, the products check again as they run), VNNI for int8, AMX-BF16 tiles or
    /// AVX512-BF16 for bf16.
    fn check(&self) -> candle_core::Result<Avx512> {
        let Some(cpu) = Avx512::detect() else {
            return Err(err("scorekit's kernels need AVX-512F"));
        };
        if self.int8 && !scorekit_kernels::int8::available() {
            return Err(err("int8 products need AVX-512 VNNI"));
        }
        let bf16_runs = self.amx && amx::available() || bf16dot::available() || self.widen_bf16;
        if self.bf16 && (self.int8 || !bf16_runs) {
            return Err(err(
                "bf16 products need AMX-BF16 tiles, AVX512-BF16 or widening to f32 (and exclude int8) in scorekit's kernels",
            ));
        }
        Ok(cpu)
    }
}

impl Weight {
    /// Pack a PyTorch `Linear` weight (n rows of k) for the products asked for: int8 when asked,
    /// bf16 when asked (tiles where allowed and available, else AVX512-BF16, which `load_with`
    /// checked), else split-bf16 AMX where allowed and available, else AVX-512 f32.
    fn pack(w: &[f32], n: usize, k: usize, products: Products) -> Self {
        if products.bf16 && products.widen_bf16 && !(products.amx && amx::available()) {
            Weight::Widened(PackedBf16Weights::from_nk(w, n, k))
        } else if products.bf16 && products.amx && amx::available() {
            Weight::Split(PackedSplit::from_nk_as(w, n, k, TileTerms::Bf16))
        } else if products.bf16 {
            Weight::Bf16Dot(PackedBf16Dot::from_nk(w, n, k))
        } else if products.int8 {
            Weight::I8(PackedI8::from_nk_on(
                w,
                n,
                k,
                products.amx && amx::int8_available(),
            ))
        } else if products.amx && amx::available() {
            Weight::Split(PackedSplit::from_nk(w, n, k))
        } else {
            Weight::F32(PackedB::from_nk(w, n, k, k))
        }
    }
}

impl Weight {
    /// Which products this weight runs (for reports).
    fn products_name(&self) -> &'static str {
        match self {
            Weight::I8(p) if p.on_tiles() => "int8 AMX products",
            Weight::I8(_) => "int8 VNNI products",
            Weight::Split(p) if p.terms() == TileTerms::Bf16 => {
                "bf16 AMX products (f32 accumulation)"
            }
            Weight::Split(_) => "f32 as split-bf16 AMX products",
            Weight::Bf16Dot(_) => "bf16 AVX512-BF16 products (f32 accumulation)",
            Weight::Widened(_) => "bf16 weights widened to f32 AVX-512 products",
            Weight::F32(_) => "f32 AVX-512",
        }
    }
}

struct Linear {
    w: Weight,
    b: Vec<f32>,
}

impl Linear {
    /// out (m×n, row stride n) = x (m×k, stride k)·Wᵀ + b, with the epilogue flags.
    fn run(&self, m: usize, x: &[f32], out: &mut [f32], accumulate: bool, gelu: bool) {
        match &self.w {
            Weight::F32(p) => gemm::gemm(
                m,
                x,
                p.k(),
                p,
                out,
                p.n(),
                Epilogue {
                    bias: Some(&self.b),
                    accumulate,
                    gelu,
                },
                true,
            ),
            Weight::Split(p) => p.gemm(m, x, out, &self.b, accumulate, gelu),
            Weight::Bf16Dot(p) => p.gemm(m, x, out, &self.b, accumulate, gelu),
            Weight::Widened(p) => p.gemm(m, x, out, &self.b, accumulate, gelu),
            Weight::I8(p) => p.gemm(m, x, out, &self.b, accumulate, gelu),
        }
    }
}

struct Layer {
    qkv: Linear,
    out: Linear,
    ln1: (Vec<f32>, Vec<f32>),
    ffn1: Linear,
    ffn2: Linear,
    ln2: (Vec<f32>, Vec<f32>),
}

#[derive(Clone, Copy)]
enum Dt {
    F32,
    F16,
    Bf16,
}

struct TensorRef {
    dt: Dt,
    shape: Vec<usize>,
    offset: u64,
}

/// Where the weights' bytes are.
enum Backing {
    /// A safetensors file: an open handle for `pread` and a read-only map (for embedding rows).
    Mapped {
        file: std::fs::File,
        map: MappedFile,
    },
    /// Tensors converted in memory (from a PyTorch pickle), one after another.
    Owned(Vec<u8>),
}

/// The weights: names, dtypes, shapes and offsets over a [`Backing`].
struct StFile {
    bytes: Backing,
    tensors: BTreeMap<String, TensorRef>,
    prefix: String,
}

fn err(msg: impl Into<String>) -> candle_core::Error {
    candle_core::Error::Msg(msg.into())
}

impl StFile {
    fn open(path: &Path, prefixes: &[String]) -> candle_core::Result<Self> {
        let file = std::fs::File::open(path)?;
        let mut len8 = [0u8; 8];
        file.read_exact_at(&mut len8, 0)?;
        let n = u64::from_le_bytes(len8);
        let mut header = vec![0u8; n as usize];
        file.read_exact_at(&mut header, 8)?;
        let json: serde_json::Value =
            serde_json::from_slice(&header).map_err(|e| err(format!("header: {e}")))?;
        let mut tensors = BTreeMap::new();
        for (name, v) in json.as_object().into_iter().flatten() {
            if name == "__metadata__" {
                continue;
            }
            let dt = match v["dtype"].as_str() {
                Some("F32") => Dt::F32,
                Some("F16") => Dt::F16,
                Some("BF16") => Dt::Bf16,
                _ => continue,
            };
            let shape = v["shape"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|d| d.as_u64().map(|d| d as usize))
                        .collect()
                })
                .unwrap_or_default();
            let offset = v["data_offsets"][0].as_u64().unwrap_or(0) + 8 + n;
            tensors.insert(name.clone(), TensorRef { dt, shape, offset });
        }
        let map = MappedFile::map(&file)?;
        Self::with_prefix(Backing::Mapped { file, map }, tensors, prefixes)
    }

    /// Tensors already in memory (a PyTorch checkpoint read by candle), laid out one after
    /// another in one f32 buffer.
    fn from_tensors(list: Vec<(String, Tensor)>, prefixes: &[String]) -> candle_core::Result<Self> {
        let mut bytes = Vec::new();
        let mut tensors = BTreeMap::new();
        for (name, t) in list {
            let shape = t.dims().to_vec();
            let flat = t.flatten_all()?;
            let offset = bytes.len() as u64;
            // PyTorch checkpoints of these encoders are f32; anything else is widened.
            let v = flat.to_dtype(candle_core::DType::F32)?.to_vec1::<f32>()?;
            bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
            let dt = Dt::F32;
            tensors.insert(name, TensorRef { dt, shape, offset });
        }
        Self::with_prefix(Backing::Owned(bytes), tensors, prefixes)
    }

    /// Find the encoder's prefix (one of `prefixes`) by its word embeddings.
    fn with_prefix(
        bytes: Backing,
        tensors: BTreeMap<String, TensorRef>,
        prefixes: &[String],
    ) -> candle_core::Result<Self> {
        let prefix = prefixes
            .iter()
            .find(|p| tensors.contains_key(&format!("{p}embeddings.word_embeddings.weight")))
            .ok_or_else(|| err("no embeddings.word_embeddings.weight"))?
            .to_string();
        Ok(StFile {
            bytes,
            tensors,
            prefix,
        })
    }

    /// All bytes (the map of a file, or the owned buffer).
    fn all(&self) -> &[u8] {
        match &self.bytes {
            Backing::Mapped { map, .. } => map,
            Backing::Owned(b) => b,
        }
    }

    fn get(&self, name: &str) -> candle_core::Result<&TensorRef> {
        let full = format!("{}{name}", self.prefix);
        self.tensors
            .get(&full)
            .ok_or_else(|| err(format!("missing tensor {full}")))
    }

    /// Read a tensor as f32 with `pread` (no page of the map is touched).
    fn read(&self, name: &str, shape: &[usize]) -> candle_core::Result<Vec<f32>> {
        self.read_full(&format!("{}{name}", self.prefix), shape)
    }

    /// [`StFile::read`] by the full tensor name (heads live outside the encoder's prefix).
    fn read_full(&self, name: &str, shape: &[usize]) -> candle_core::Result<Vec<f32>> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| err(format!("missing tensor {name}")))?;
        if t.shape != shape {
            return Err(err(format!(
                "{name}: shape {:?}, expected {shape:?}",
                t.shape
            )));
        }
        let n: usize = shape.iter().product();
        let width = match t.dt {
            Dt::F32 => 4,
            _ => 2,
        };
        match &self.bytes {
            Backing::Mapped { file, .. } => {
                let mut bytes = vec![0u8; n * width];
                file.read_exact_at(&mut bytes, t.offset)?;
                Ok(convert(t.dt, &bytes))
            }
            Backing::Owned(b) => {
                let at = t.offset as usize;
                Ok(convert(t.dt, &b[at..at + n * width]))
            }
        }
    }

    /// A LayerNorm's weight and bias, each of `hidden` values (the kernel reads that many).
    fn layer_norm(&self, p: &str, hidden: usize) -> candle_core::Result<(Vec<f32>, Vec<f32>)> {
        let h = self
            .get(&format!("{p}.weight"))
            .or_else(|_| self.get(&format!("{p}.gamma")))?;
        let h = h.shape.clone();
        if h != [hidden] {
            return Err(err(format!("{p}: shape {h:?}, expected [{hidden}]")));
        }
        let w = self
            .read(&format!("{p}.weight"), &h)
            .or_else(|_| self.read(&format!("{p}.gamma"), &h))?;
        let b = self
            .read(&format!("{p}.bias"), &h)
            .or_else(|_| self.read(&format!("{p}.beta"), &h))?;
        Ok((w, b))
    }
}

fn convert(dt: Dt, bytes: &[u8]) -> Vec<f32> {
    match dt {
        Dt::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        Dt::F16 => bytes
            .chunks_exact(2)
            .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
        Dt::Bf16 => bytes
            .chunks_exact(2)
            .map(|c| f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16))
            .collect(),
    }
}

/// IEEE half to single precision (exact).
fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise.
            let shift = m.leading_zeros() - 21;
            let m = (m << shift) & 0x3ff;
            sign | ((127 - 15 + 1 - shift) << 23) | (m << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// A dense layer y = x·Wᵀ + b on the packed f32 kernels (for heads on top of the encoder).
pub struct Dense {
    lin: Linear,
    n: usize,
}

impl Dense {
    /// Outputs of `m` rows of `x` (m×k), m×n.
    pub fn forward(&self, m: usize, x: &[f32]) -> Vec<f32> {
        let mut out = vec![0f32; m * self.n];
        self.lin.run(m, x, &mut out, false, false);
        out
    }
}

/// The encoder.
pub struct FastBert {
    st: StFile,
    word_offset: u64,
    word_dt: Dt,
    vocab: usize,
    pos: Vec<f32>,
    types: Vec<f32>,
    type_vocab: usize,
    /// Position of the first token: 0 for BERT, `pad_token_id + 1` for RoBERTa.
    pos_offset: usize,
    emb_ln: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
    h: usize,
    heads: usize,
    inter: usize,
    eps: f32,
    /// Only `[CLS]` rows of the output are needed (CLS pooling).
    pub cls_only: bool,
    /// The products the weights are packed for (heads get the same, in f32).
    products: Products,
    /// The CPU runs AVX-512F (checked at load): the LayerNorm and softmax rows run on it.
    cpu: Avx512,
    device: Device,
}

impl FastBert {
    /// Load from a safetensors file or a PyTorch checkpoint (`.bin`, read into memory) with the
    /// encoder's tensors under one of `layout.prefixes`, positions counted from
    /// `layout.pos_offset` (RoBERTa: `pad_token_id + 1`), weights packed for `products`.
    pub fn load_with(
        path: &Path,
        cfg: &BertConfig,
        products: Products,
        layout: &NativeLayout,
    ) -> candle_core::Result<Self> {
        let cpu = products.check()?;
        if !matches!(cfg.hidden_act, HiddenAct::Gelu) {
            return Err(err("scorekit's encoder runs erf-GELU models only"));
        }
        let st = if path.extension().is_some_and(|e| e == "safetensors") {
            StFile::open(path, &layout.prefixes)?
        } else {
            StFile::from_tensors(candle_core::pickle::read_all(path)?, &layout.prefixes)?
        };
        let pos_offset = layout.pos_offset;
        let (h, inter) = (cfg.hidden_size, cfg.intermediate_size);
        let word = st.get("embeddings.word_embeddings.weight")?;
        if word.shape != [cfg.vocab_size, h] {
            return Err(err("embeddings.word_embeddings.weight: shape"));
        }
        let (word_offset, word_dt) = (word.offset, word.dt);
        let pos = st.read(
            "embeddings.position_embeddings.weight",
            &[cfg.max_position_embeddings, h],
        )?;
        let types = st.read(
            "embeddings.token_type_embeddings.weight",
            &[cfg.type_vocab_size, h],
        )?;
        let emb_ln = st.layer_norm("embeddings.LayerNorm", h)?;
        let lin = |w: Vec<f32>, b: Vec<f32>, n: usize, k: usize| -> Linear {
            Linear {
                w: Weight::pack(&w, n, k, products),
                b,
            }
        };
        // Layers are packed in parallel (each packs its own matrices).
        let layers: candle_core::Result<Vec<Layer>> = (0..cfg.num_hidden_layers)
            .into_par_iter()
            .map(|l| {
                let p = format!("encoder.layer.{l}.");
                let mut wqkv = Vec::with_capacity(3 * h * h);
                let mut bqkv = Vec::with_capacity(3 * h);
                for m in ["query", "key", "value"] {
                    wqkv.extend(st.read(&format!("{p}attention.self.{m}.weight"), &[h, h])?);
                    bqkv.extend(st.read(&format!("{p}attention.self.{m}.bias"), &[h])?);
                }
                let o = st.read(&format!("{p}attention.output.dense.weight"), &[h, h])?;
                let ob = st.read(&format!("{p}attention.output.dense.bias"), &[h])?;
                let f1 = st.read(&format!("{p}intermediate.dense.weight"), &[inter, h])?;
                let f1b = st.read(&format!("{p}intermediate.dense.bias"), &[inter])?;
                let f2 = st.read(&format!("{p}output.dense.weight"), &[h, inter])?;
                let f2b = st.read(&format!("{p}output.dense.bias"), &[h])?;
                Ok(Layer {
                    qkv: lin(wqkv, bqkv, 3 * h, h),
                    out: lin(o, ob, h, h),
                    ln1: st.layer_norm(&format!("{p}attention.output.LayerNorm"), h)?,
                    ffn1: lin(f1, f1b, inter, h),
                    ffn2: lin(f2, f2b, h, inter),
                    ln2: st.layer_norm(&format!("{p}output.LayerNorm"), h)?,
                })
            })
            .collect();
        Ok(FastBert {
            word_offset,
            word_dt,
            vocab: cfg.vocab_size,
            pos,
            types,
            type_vocab: cfg.type_vocab_size,
            pos_offset,
            emb_ln,
            layers: layers?,
            h,
            heads: cfg.num_attention_heads,
            inter,
            eps: cfg.layer_norm_eps as f32,
            cls_only: false,
            products,
            cpu,
            st,
            device: Device::Cpu,
        })
    }

    /// A dense layer outside the encoder (a head), by its full name: `{name}.weight` (n×k)
    /// and `{name}.bias`.
    pub fn dense(&self, name: &str, n: usize, k: usize) -> candle_core::Result<Dense> {
        let w = self.st.read_full(&format!("{name}.weight"), &[n, k])?;
        let b = self.st.read_full(&format!("{name}.bias"), &[n])?;
        Ok(Dense {
            lin: Linear {
                w: Weight::pack(
                    &w,
                    n,
                    k,
                    Products {
                        int8: false,
                        bf16: false,
                        ..self.products
                    },
                ),
                b,
            },
            n,
        })
    }

    /// Drop every weight byte the encoder no longer reads (all but the word embeddings) when
    /// they are held in memory; a mapped file is left as it is. Call after the last
    /// [`FastBert::dense`].
    pub fn release_unused(&mut self) {
        if let Backing::Owned(b) = &self.st.bytes {
            let start = self.word_offset as usize;
            let len = self.vocab * self.h * 4;
            let words = b[start..start + len].to_vec();
            self.st.bytes = Backing::Owned(words);
            self.st.tensors.clear();
            self.word_offset = 0;
        }
    }

    /// The engine's name for reports.
    pub fn engine(&self) -> &'static str {
        match self.layers.first().map(|l| &l.qkv.w) {
            Some(Weight::I8(p)) if p.on_tiles() => "scorekit encoder, int8 AMX products",
            Some(Weight::I8(_)) => "scorekit encoder, int8 VNNI products",
            Some(Weight::Split(p)) if p.terms() == TileTerms::Bf16 => {
                "scorekit encoder, bf16 AMX products (f32 accumulation)"
            }
            Some(Weight::Split(_)) => "scorekit encoder, f32 as split-bf16 AMX products",
            Some(Weight::Bf16Dot(_)) => {
                "scorekit encoder, bf16 AVX512-BF16 products (f32 accumulation)"
            }
            Some(Weight::Widened(_)) => {
                "scorekit encoder, bf16 weights widened to f32 AVX-512 products"
            }
            _ => "scorekit encoder, f32 AVX-512",
        }
    }

    fn word_row(&self, id: usize, out: &mut [f32]) {
        let h = self.h;
        let width = if matches!(self.word_dt, Dt::F32) {
            4
        } else {
            2
        };
        let start = self.word_offset as usize + id * h * width;
        let bytes = &self.st.all()[start..start + h * width];
        match self.word_dt {
            Dt::F32 => {
                for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                    *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
            }
            dt => out.copy_from_slice(&convert(dt, bytes)),
        }
    }

    fn layer_norm_rows(&self, x: &mut [f32], ln: &(Vec<f32>, Vec<f32>)) {
        let (eps, cpu) = (self.eps, self.cpu);
        x.par_chunks_mut(self.h * 16).for_each(|rows| {
            for r in rows.chunks_mut(self.h) {
                cpu.layer_norm_row(r, &ln.0, &ln.1, eps);
            }
        });
    }

    /// Run the encoder on sequences given as (ids, type ids); returns the hidden states of all
    /// tokens (concatenated, T×h), or with `cls_only` one row per sequence.
    pub fn forward_seqs(&self, seqs: &[(&[u32], &[u32])]) -> candle_core::Result<Vec<f32>> {
        let h = self.h;
        let mut starts = Vec::with_capacity(seqs.len() + 1);
        let mut t = 0;
        for (ids, _) in seqs {
            starts.push(t);
            t += ids.len();
        }
        starts.push(t);
        let mut x = vec![0f32; t * h];
        for (si, (ids, tys)) in seqs.iter().enumerate() {
            if (ids.len() + self.pos_offset) * h > self.pos.len() {
                return Err(err("sequence longer than the position embeddings"));
            }
            for (p, (&id, &ty)) in ids.iter().zip(tys.iter()).enumerate() {
                let (id, ty) = (id as usize, ty as usize);
                if id >= self.vocab || ty >= self.type_vocab {
                    return Err(err(format!("token id {id} or type {ty} out of range")));
                }
                let row = &mut x[(starts[si] + p) * h..][..h];
                self.word_row(id, row);
                for ((r, a), b) in row
                    .iter_mut()
                    .zip(&self.pos[(p + self.pos_offset) * h..][..h])
                    .zip(&self.types[ty * h..(ty + 1) * h])
                {
                    *r += a + b;
                }
            }
        }
        self.layer_norm_rows(&mut x, &self.emb_ln);
        let nl = self.layers.len();
        let mut qkv = vec![0f32; t * 3 * h];
        let mut ctx = vec![0f32; t * h];
        let mut mid = vec![0f32; t * self.inter];
        for (li, layer) in self.layers.iter().enumerate() {
            layer.qkv.run(t, &x, &mut qkv, false, false);
            let cls = self.cls_only && li + 1 == nl;
            let m = if cls {
                // From here on only the [CLS] rows: gather them as the residual stream.
                let mut xc = vec![0f32; seqs.len() * h];
                for (si, &s0) in starts[..seqs.len()].iter().enumerate() {
                    xc[si * h..(si + 1) * h].copy_from_slice(&x[s0 * h..(s0 + 1) * h]);
                }
                x = xc;
                seqs.len()
            } else {
                t
            };
            let shape = AttnShape {
                heads: self.heads,
                d: h / self.heads,
                inner: h,
                scale: 1.0 / ((h / self.heads) as f32).sqrt(),
                cpu: self.cpu,
            };
            attention(&qkv, &starts, shape, None, cls, &mut ctx);
            layer.out.run(m, &ctx, &mut x, true, false);
            self.layer_norm_rows(&mut x[..m * h], &layer.ln1);
            layer.ffn1.run(m, &x, &mut mid, false, true);
            layer.ffn2.run(m, &mid, &mut x, true, false);
            self.layer_norm_rows(&mut x[..m * h], &layer.ln2);
        }
        Ok(x)
    }
}

/// The shape of one attention: heads, head size, their product (`inner`: the width of a Q, K
/// or V row and of the context), the score scale, and the CPU it runs on.
#[derive(Clone, Copy)]
struct AttnShape {
    heads: usize,
    d: usize,
    inner: usize,
    scale: f32,
    cpu: Avx512,
}

/// A relative position bias per head over the offsets −(len−1)..=len−1 of a batch's longest
/// sequence (T5's buckets, looked up once per batch): `per_head[hd·(2·len−1) + len−1 + (k−q)]`.
struct RelBias {
    len: usize,
    per_head: Vec<f32>,
}

impl RelBias {
    /// The bias row of query `q` for keys `0..keys` of head `hd`.
    fn row(&self, hd: usize, q: usize, keys: usize) -> &[f32] {
        let at = hd * (2 * self.len - 1) + self.len - 1 - q;
        &self.per_head[at..at + keys]
    }
}

/// Dot-product attention per sequence and head on fused Q|K|V rows (each `3·inner` wide), with
/// `bias` added to the scores before the softmax where given. With `cls` only the first query
/// of each sequence, written to row `seq` of `ctx` (rows `inner` wide).
fn attention(
    qkv: &[f32],
    starts: &[usize],
    shape: AttnShape,
    bias: Option<&RelBias>,
    cls: bool,
    ctx: &mut [f32],
) {
    let AttnShape {
        heads,
        d,
        inner,
        scale,
        cpu,
    } = shape;
    let nseq = starts.len() - 1;
    // Job (sequence si, head hd) writes its own rows (its sequence's tokens, or row si with
    // `cls`) × its head's columns [hd·d, hd·d + d) of `ctx`: one block of the grid each.
    let rows: Vec<std::ops::Range<usize>> = (0..nseq)
        .map(|si| {
            if cls {
                si..si + 1
            } else {
                starts[si]..starts[si + 1]
            }
        })
        .collect();
    let cols: Vec<std::ops::Range<usize>> = (0..heads).map(|hd| hd * d..hd * d + d).collect();
    let blocks = BlockMut::grid(ctx, inner, &rows, &cols);
    thread_local! {
        /// A job's scores and K's transpose, kept between jobs on a thread.
        static SCRATCH: std::cell::RefCell<(Vec<f32>, Vec<f32>)> =
            const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
    }
    let jobs = blocks.into_par_iter().enumerate();
    jobs.for_each(|(job, mut out)| {
        let (si, hd) = (job / heads, job % heads);
        let (s0, len) = (starts[si], starts[si + 1] - starts[si]);
        let mq = if cls { 1 } else { len };
        SCRATCH.with(|s| {
            let (sbuf, kt) = &mut *s.borrow_mut();
            let ld = 3 * inner;
            let head = |part: usize| HeadRows {
                at: s0 * ld + part * inner + hd * d,
                ld,
            };
            sbuf.clear();
            sbuf.resize(mq * len, 0.0);
            attention::scores(qkv, head(0), head(1), mq, len, d, kt, sbuf);
            for (q, r) in sbuf.chunks_mut(len).enumerate() {
                if let Some(b) = bias {
                    for (x, b) in r.iter_mut().zip(b.row(hd, q, len)) {
                        *x += b;
                    }
                }
                cpu.softmax_row(r, scale);
            }
            attention::context(sbuf, mq, len, qkv, head(2), d, &mut out);
        });
    });
}

/// A dense layer on the packed kernels, for candle's tensors: rows of any float dtype in (read
/// as f32), the same dtype out.
struct NativeLinear(Dense);

impl HeadLinear for NativeLinear {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let (m, _) = x.dims2()?;
        let rows = x
            .to_dtype(candle_core::DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        Tensor::from_vec(self.0.forward(m, &rows), (m, self.0.n), x.device())?.to_dtype(x.dtype())
    }
}

/// A product y = x·Wᵀ without bias (`w`: n rows of k) on the kernels, packed for `products`, as
/// a layer of a candle model (T5's decoder).
pub fn packed_linear(
    w: &[f32],
    n: usize,
    k: usize,
    products: Products,
) -> candle_core::Result<Box<dyn HeadLinear>> {
    products.check()?;
    if w.len() != n * k {
        return Err(err(format!("a {n}×{k} weight has {} values", w.len())));
    }
    Ok(Box::new(NativeLinear(Dense {
        lin: Linear {
            w: Weight::pack(w, n, k, products),
            b: vec![0.0; n],
        },
        n,
    })))
}

impl Encoder for FastBert {
    fn forward(&self, batch: &Batch) -> candle_core::Result<Hidden> {
        let seqs: Vec<(&[u32], &[u32])> = (0..batch.len()).map(|i| batch.seq(i)).collect();
        let x = self.forward_seqs(&seqs)?;
        let rows = x.len() / self.h;
        let x = Tensor::from_vec(x, (rows, self.h), &self.device)?;
        Ok(if self.cls_only {
            Hidden::FirstTokens(x)
        } else {
            Hidden::Unpadded {
                x,
                cu_seqlens: batch.cu_seqlens.clone(),
            }
        })
    }

    fn is_padded(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        self.engine()
    }

    fn first_token_only(&mut self) {
        self.cls_only = true;
    }

    fn linear(&self, name: &str, n: usize, k: usize) -> candle_core::Result<Box<dyn HeadLinear>> {
        Ok(Box::new(NativeLinear(self.dense(name, n, k)?)))
    }

    fn release_unused(&mut self) {
        FastBert::release_unused(self)
    }

    fn device(&self) -> &Device {
        &self.device
    }
}
