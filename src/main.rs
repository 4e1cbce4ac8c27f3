//! The `scorekit` binary: parse the command line, dispatch, turn errors into exit codes.

use clap::Parser;
use scorekit::cli::Cli;

fn main() {
    // Rust ignores SIGPIPE, so `scorekit ... | head` would panic in println! once the reader
    // goes away; restore the default (end quietly), as cat and grep do.
    #[cfg(unix)]
    // SAFETY: `signal` with a valid signal number and SIG_DFL installs no handler of ours (so
    // no code runs in signal context); it only resets the process's disposition, here before
    // any other thread exists that could rely on SIGPIPE being ignored.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = e.print();
            std::process::exit(if e.use_stderr() { 2 } else { 0 });
        }
    };
    scorekit::build_info::stamp_metrics();
    // Before any work: a model command may belong to the CUDA binary (src/handover.rs).
    let result = scorekit::handover::hand_over_if_wanted(&cli.command)
        .and_then(|()| scorekit::commands::run(cli.command));
    if let Err(e) = result {
        match &e {
            // Lower layers name their own settings; the user set them with flags.
            scorekit::Error::Setting(s) => {
                eprintln!("error: {}", s.shown_as(scorekit::cli::flag_of(s.setting)))
            }
            _ => eprintln!("error: {e}"),
        }
        std::process::exit(e.exit_code());
    }
}
