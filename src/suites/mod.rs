//! One module per suite; each turns records into verdicts and metrics and knows nothing of the CLI.
pub mod grasp;
pub mod judge_data;
pub mod mint;
pub mod muse;
pub mod story;
