//! A file mapped read-only into memory, for inputs too large to read whole that are read at
//! random (a weight file's embedding rows: LaBSE's are 1.5 GB in f32, of which a batch touches a
//! few thousand rows). The one `unsafe` of mapping lives here, behind a safe constructor.

use memmap2::Mmap;
use std::fs::File;

/// The bytes of a file, mapped read-only.
#[derive(Debug)]
pub struct MappedFile {
    map: Mmap,
}

impl MappedFile {
    /// Map all of `file` (opened for reading).
    pub fn map(file: &File) -> std::io::Result<Self> {
        // SAFETY: `Mmap::map` is unsafe because the mapped bytes must not change while the map
        // lives (a rewrite changes them under `&[u8]`, a truncation faults). scorekit never
        // writes the files it maps, which are inputs (model weights from the hub cache or a
        // folder given by the user) that nothing rewrites while scorekit runs: the assumption
        // every mmap-based weight loader makes (candle's VarBuilder, safetensors). The map is
        // only read, through bounds-checked slices.
        let map = unsafe { Mmap::map(file)? };
        Ok(MappedFile { map })
    }
}

impl std::ops::Deref for MappedFile {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map
    }
}
