//! The command line as a whole: help, usage errors and exit codes.

use crate::common;
use common::*;

#[test]
fn help_lists_every_command_of_the_contract() {
    let o = run(&["--help"]);
    assert!(o.status.success());
    let help = stdout(&o);
    for cmd in [
        "story", "grasp", "muse", "mint", "embed", "models", "data", "bench", "merge", "doctor",
    ] {
        assert!(
            help.contains(&format!("  {cmd} ")),
            "{cmd} missing from --help:\n{help}"
        );
        let sub = run(&[cmd, "--help"]);
        assert!(sub.status.success(), "{cmd} --help");
        assert!(
            stdout(&sub).contains("Example:"),
            "{cmd} --help has no example"
        );
    }
}

#[test]
fn usage_errors_exit_two() {
    let o = run(&["grasp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--responses"), "{}", stderr(&o));
    let o = run(&["no-such-command"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn version_is_printed() {
    let o = run(&["--version"]);
    assert!(o.status.success());
    assert!(stdout(&o).starts_with("scorekit "));
}

#[test]
fn a_closed_stdout_pipe_ends_quietly_not_in_a_panic() {
    // `scorekit ... | head`: the reader is gone before scorekit prints.
    let mut child = scorekit()
        .args(["models", "list"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
}
