//! One module per subcommand: flags to settings (`crate::settings`), models lent through
//! `model_runtime`, then the suite's (or bench's) own call, and what it prints. No scoring logic
//! here: each suite's pipeline lives in `scorekit-suites`.

pub mod bench;
pub mod compare;
pub mod data;
pub mod doctor;
pub mod embed;
pub mod grasp;
pub mod judge;
pub mod label;
pub mod merge;
pub mod mint;
pub mod models;
pub mod muse;
pub mod story;
pub mod view;

use crate::cli::Command;
use scorekit_core::error::Result;

/// Run a parsed command.
pub fn run(command: Command) -> Result<()> {
    match command {
        Command::Story(a) => story::run(a),
        Command::Grasp(a) => grasp::run(a),
        Command::Muse(a) => muse::run(a),
        Command::Mint(a) => mint::run(a),
        Command::Embed(a) => embed::run(a),
        Command::Models(a) => models::run(a),
        Command::Data(a) => data::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Label(a) => label::run(a),
        Command::View(a) => view::run(a),
        Command::Judge(c) => judge::run(c),
        Command::Doctor(a) => doctor::run(a),
    }
}
