//! Readers for JSONL, JSON and CSV that keep file and line for every record.
//!
//! All readers go through [`read_text`], which handles the classes of damage real files have on
//! purpose: invalid UTF-8 (named by line), an empty file, a UTF-8 byte-order mark, CRLF line ends.

mod csv_reader;
mod json;
mod lines;
mod mapped;
mod record;
mod sentences;
mod text;

pub use csv_reader::{read_csv, CsvRecord, CsvStream, CsvTable};
pub use json::{read_json, read_jsonl, read_jsonl_str};
pub use lines::{Buffered, LineStream};
pub use mapped::MappedFile;
pub use record::{type_name, Record};
/// sha256 of many streams at once (scorekit-kernels), for the readers of many files.
pub use scorekit_kernels::sha256_lanes::{Sha256Lanes, LANES};
pub use sentences::read_sentences;
pub use text::{read_text, TextFile};
