//! Landlock rules of a program: read and execute anywhere, write only inside its working folder
//! (and /dev/null), no TCP connect or bind (ABI 4), no signals to or abstract UNIX sockets of
//! processes outside the sandbox (ABI 6). Built in the parent; the child only enforces them.

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use std::path::Path;

/// The newest ABI whose access rights these rules were written and tested for; newer kernels
/// get exactly these rights (the crate never enables unknown ones).
const ABI_VETTED: ABI = ABI::V6;

/// The ruleset for a program working in `dir`, or None without Landlock (`landlock_abi` 0, as
/// the probe found it) or if building it fails: the run goes on with the other layers, and the
/// probe has reported the gap.
pub fn ruleset(landlock_abi: u32, dir: &Path) -> Option<RulesetCreated> {
    if landlock_abi == 0 {
        return None;
    }
    build(dir).ok()
}

fn build(dir: &Path) -> Result<RulesetCreated, landlock::RulesetError> {
    let abi = ABI_VETTED;
    Ruleset::default()
        .handle_access(AccessFs::from_all(abi))?
        .handle_access(AccessNet::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules([dir], AccessFs::from_all(abi)))?
        .add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_file(abi)))
}

/// The Landlock ABI in force here: builds the rules for a scratch folder and enforces them in a
/// throw-away child, which reports the ABI the kernel accepted (0 when it enforced nothing).
pub fn probe_abi() -> u32 {
    let Ok(dir) = super::workdir::WorkDir::new() else {
        return 0;
    };
    let Ok(ruleset) = build(dir.path()) else {
        return 0;
    };
    let code = super::trial::child_exit_code(move || match ruleset.restrict_self() {
        Ok(s) if s.ruleset != RulesetStatus::NotEnforced => match s.landlock {
            landlock::LandlockStatus::Available { effective_abi, .. } => effective_abi as i32,
            _ => 0,
        },
        _ => 0,
    });
    code.unwrap_or(0) as u32
}
