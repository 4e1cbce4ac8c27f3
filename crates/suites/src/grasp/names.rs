//! The scene names each GRASP test knows, the rows its config expects per scene, and upstream's
//! renamed tests: a typo in a scene would otherwise split a group silently.
//!
//! Built from i-machine-think/grasp @676d13a (`configs/tests/*.yaml` -> `data/prompts/*.json`,
//! `tools/prepare_data.py`); `tests/grasp.rs` checks these tables against the copies in
//! `../shared/data/grasp` (prompt keys, `derived/inventory.json`, `derived/rename_map.json`).

use super::{Row, RowIssue, TestKind};
use std::collections::BTreeMap;

/// Videos per Unity scene folder in upstream's default generation (`generate_videos.py`, N=128).
pub const VIDEOS_PER_FOLDER: usize = 128;

/// Level 1 tests: (scene, video folders, has an open-ended question).
const LEVEL1: [(&str, usize, bool); 8] = [
    ("Movement", 2, false),
    ("RelationalPosition", 2, true),
    ("Direction", 4, true),
    ("Shape", 2, true),
    ("Color", 4, true),
    ("TwoObjectOrdering", 1, false),
    ("ThreeObjectOrdering", 1, false),
    ("FourObjectOrdering", 1, false),
];

/// Level 2 tests (`data/prompts/level2.json`), each with `P_` and `IP_` video folders.
const LEVEL2: [&str; 16] = [
    "Collision",
    "Continuity",
    "Gravity",
    "GravityContinuity",
    "GravityInertia",
    "GravityInertia2",
    "GravitySupport",
    "Inertia",
    "Inertia2",
    "ObjectPermanence",
    "ObjectPermanence2",
    "ObjectPermanence3",
    "SolidityContinuity",
    "SolidityContinuity2",
    "Unchangeableness",
    "Unchangeableness2",
];

/// Level 2 text tests (`data/prompts/level2_scene_descriptions.json`): one `P_` and one `IP_`
/// description each; no Collision or Continuity, and the support test is `SupportGravity`.
const LEVEL2_TEXT: [&str; 14] = [
    "Gravity",
    "Inertia",
    "Inertia2",
    "ObjectPermanence2",
    "ObjectPermanence",
    "Unchangeableness",
    "Unchangeableness2",
    "ObjectPermanence3",
    "GravityInertia",
    "GravityInertia2",
    "GravityContinuity",
    "SolidityContinuity",
    "SolidityContinuity2",
    "SupportGravity",
];

/// Old Level 2 test names (before upstream c04c24a / a3bd1f2) and their current names.
const LEVEL2_RENAMES: [(&str, &str); 4] = [
    ("Continuity2", "Continuity"),
    ("DirectionalInertia", "Inertia"),
    ("LocationMemory", "ObjectPermanence2"),
    ("Solidity2", "ObjectPermanence3"),
];

/// Old Level 2 text keys (without the `P_`/`IP_` prefix) and their current names.
const LEVEL2_TEXT_RENAMES: [(&str, &str); 2] = [
    ("LocationMemory", "ObjectPermanence2"),
    ("Solidity", "ObjectPermanence3"),
];

/// Every scene the test knows, with the rows its config expects (for upstream's default of
/// [`VIDEOS_PER_FOLDER`] videos per folder): Level 1 binary 2 rows a video (true and false
/// statement), Level 1 open 1 a video, Level 2 1 a video per `P_`/`IP_` folder, Level 2 text 1.
pub fn known_scenes(test: TestKind) -> BTreeMap<String, usize> {
    let n = VIDEOS_PER_FOLDER;
    let prefixed = |tests: &[&str], rows: usize| -> BTreeMap<String, usize> {
        tests
            .iter()
            .flat_map(|t| [format!("P_{t}"), format!("IP_{t}")])
            .map(|s| (s, rows))
            .collect()
    };
    match test {
        TestKind::Level1Binary => LEVEL1
            .iter()
            .map(|(s, folders, _)| (s.to_string(), 2 * folders * n))
            .collect(),
        TestKind::Level1Open => LEVEL1
            .iter()
            .filter(|t| t.2)
            .map(|(s, folders, _)| (s.to_string(), folders * n))
            .collect(),
        TestKind::Level2 => prefixed(&LEVEL2, n),
        TestKind::Level2Text => prefixed(&LEVEL2_TEXT, 1),
    }
}

/// Upstream's renamed scenes for this test: old scene name -> current one.
pub fn renames(test: TestKind) -> BTreeMap<String, String> {
    let table: &[(&str, &str)] = match test {
        TestKind::Level2 => &LEVEL2_RENAMES,
        TestKind::Level2Text => &LEVEL2_TEXT_RENAMES,
        TestKind::Level1Binary | TestKind::Level1Open => &[],
    };
    table
        .iter()
        .flat_map(|(old, new)| ["P", "IP"].map(|p| (format!("{p}_{old}"), format!("{p}_{new}"))))
        .collect()
}

/// What the name check did to the rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SceneCheck {
    /// Row -> the old scene name it had before it was mapped to the current one.
    pub renamed: BTreeMap<usize, String>,
    /// Rows whose scene the test does not know, kept (`--allow-unknown-scenes`) as their own group.
    pub unknown: Vec<usize>,
}

/// Check every row's scene against the test's known names: an old name is mapped to its current
/// one (in place, recorded), an unknown one is an issue naming the row, unless `allow_unknown`
/// keeps it as it is.
pub fn check_scenes(
    test: TestKind,
    rows: &mut [Row],
    allow_unknown: bool,
) -> Result<SceneCheck, RowIssue> {
    let names = SceneNames::new(test, allow_unknown);
    let mut out = SceneCheck::default();
    for r in rows.iter_mut() {
        match names.check(r)? {
            SceneStatus::Known => {}
            SceneStatus::Renamed(old) => {
                out.renamed.insert(r.row, old);
            }
            SceneStatus::Unknown => out.unknown.push(r.row),
        }
    }
    Ok(out)
}

/// What the check found of one row's scene.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SceneStatus {
    /// A scene of the test.
    Known,
    /// An old upstream name, now mapped to the current one; the old name.
    Renamed(String),
    /// A scene the test does not know, kept as its own group (`allow_unknown`).
    Unknown,
}

/// A test's scene names, to check rows one at a time as they are read ([`check_scenes`] over a
/// whole file is the same check row after row).
pub struct SceneNames {
    test: TestKind,
    known: BTreeMap<String, usize>,
    renames: BTreeMap<String, String>,
    allow_unknown: bool,
}

impl SceneNames {
    /// The names of `test`; `allow_unknown` keeps an unknown scene as its own group.
    pub fn new(test: TestKind, allow_unknown: bool) -> Self {
        SceneNames {
            test,
            known: known_scenes(test),
            renames: renames(test),
            allow_unknown,
        }
    }

    /// Check one row: an old name is mapped in place, an unknown one kept or an issue naming
    /// the row.
    pub fn check(&self, r: &mut Row) -> Result<SceneStatus, RowIssue> {
        if self.known.contains_key(&r.scene) {
            return Ok(SceneStatus::Known);
        }
        if let Some(new) = self.renames.get(&r.scene) {
            return Ok(SceneStatus::Renamed(std::mem::replace(
                &mut r.scene,
                new.clone(),
            )));
        }
        if self.allow_unknown {
            return Ok(SceneStatus::Unknown);
        }
        let names: Vec<&str> = self.known.keys().map(String::as_str).collect();
        let what = if self.test.is_open() {
            format!("{:?} has no open-ended question", r.scene)
        } else {
            format!("{:?} is not a scene of {}", r.scene, self.test.name())
        };
        Err(RowIssue {
            row: r.row,
            field: "scene",
            message: format!(
                "{what}; expected one of {} (--allow-unknown-scenes keeps it as its own group)",
                names.join(", ")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(row: usize, scene: &str) -> Row {
        Row {
            row,
            scene: scene.into(),
            gt: "yes".into(),
            response: "yes".into(),
            video_file: None,
        }
    }

    #[test]
    fn old_names_are_mapped_and_unknown_ones_refused_or_kept() {
        let mut rows = vec![
            row(1, "P_Gravity"),
            row(2, "IP_DirectionalInertia"),
            row(3, "P_Gravty"),
        ];
        let e = check_scenes(TestKind::Level2, &mut rows.clone(), false).unwrap_err();
        assert_eq!((e.row, e.field), (3, "scene"));
        assert!(e
            .message
            .starts_with("\"P_Gravty\" is not a scene of level2; expected one of IP_Collision"));
        let c = check_scenes(TestKind::Level2, &mut rows, true).unwrap();
        assert_eq!(c.renamed[&2], "IP_DirectionalInertia");
        assert_eq!(rows[1].scene, "IP_Inertia");
        assert_eq!(c.unknown, [3]);
        assert_eq!(rows[2].scene, "P_Gravty");
        assert_eq!(known_scenes(TestKind::Level2).len(), 32);
        assert_eq!(known_scenes(TestKind::Level2Text).len(), 28);
        assert_eq!(known_scenes(TestKind::Level1Binary)["Color"], 1024);
        assert_eq!(known_scenes(TestKind::Level1Open)["Shape"], 256);
        assert_eq!(
            renames(TestKind::Level2Text)["IP_Solidity"],
            "IP_ObjectPermanence3"
        );
    }
}
