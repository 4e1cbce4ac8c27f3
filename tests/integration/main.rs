//! The integration tests, one binary (as ripgrep keeps them): each file of this folder is a
//! module, `common` holds what they share. One binary links candle once instead of once a file.
//! Run one area with a filter: `cargo test --test integration story::`.

mod common;

mod bad_input;
mod bench;
mod calibration;
mod cli;
mod compare;
mod datasets;
mod decoder;
mod docs;
mod doctor;
mod grasp;
mod handover;
mod help;
mod html;
mod judge_cli;
mod labelling;
mod layers;
mod letter;
mod merge;
mod mint;
mod mint_hostile;
mod muse;
mod newcomer;
mod resume;
mod runtime;
mod semantic;
mod spm;
mod story;
mod summaries;
mod train;
