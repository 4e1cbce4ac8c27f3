//! The suites as `scorekit merge` sees them: a name, an item type (one line of items.jsonl, defined
//! in the suite's module) and the one function that rebuilds metrics and reports from items, shared
//! with the suite's own command. [`REGISTRY`] lists every suite; add a new one there.

use crate::error::{InputError, Result};
use crate::report::{jsonl, MetricsDoc, Outputs};
use crate::suites;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::PathBuf;

/// A scoring suite whose sharded runs can be merged.
pub trait Suite {
    /// The `suite` field of its metrics.json.
    const NAME: &'static str;
    /// One line of its items.jsonl.
    type Item: Serialize + DeserializeOwned;
    /// Put `items` in the single-run order, fill `doc.metrics` and `doc.groups` from them with
    /// the settings in `doc`, and render the report, the stdout table and the other files.
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs>;
    /// Before `outputs` in a merge: fold into `doc` (the first part's) what the parts'
    /// metrics.json know and their items do not (e.g. story's coverage scope). Nothing by default.
    fn combine(_doc: &mut MetricsDoc, _parts: &[&MetricsDoc]) {}
}

/// `scorekit grasp`.
pub struct Grasp;
/// `scorekit mint`.
pub struct Mint;
/// `scorekit muse`.
pub struct Muse;
/// `scorekit story`.
pub struct Story;

impl Suite for Grasp {
    const NAME: &'static str = "grasp";
    type Item = suites::grasp::Item;
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::grasp::outputs(doc, items)
    }
}

impl Suite for Mint {
    const NAME: &'static str = "mint";
    type Item = suites::mint::Item;
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::mint::outputs(doc, items)
    }
}

impl Suite for Muse {
    const NAME: &'static str = "muse";
    type Item = suites::muse::Item;
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::muse::outputs(doc, items)
    }
}

impl Suite for Story {
    const NAME: &'static str = "story";
    type Item = suites::story::Item;
    fn outputs(doc: &mut MetricsDoc, items: &mut [Self::Item]) -> Result<Outputs> {
        super::story::outputs(doc, items)
    }
    fn combine(doc: &mut MetricsDoc, parts: &[&MetricsDoc]) {
        super::story::combine_scopes(doc, parts)
    }
}

/// A merge's result: the merged items.jsonl and the rebuilt outputs.
pub type Rebuilt = (Vec<u8>, Outputs);

/// One registered suite, its item type erased: its name and how a merge rebuilds its results.
pub struct Registered {
    /// [`Suite::NAME`].
    pub name: &'static str,
    /// Read the items.jsonl of every part folder (in the order given), rebuild metrics and
    /// outputs from the items, and return the merged items.jsonl with the outputs.
    pub rebuild: fn(&mut MetricsDoc, &[PathBuf]) -> Result<Rebuilt>,
    /// [`Suite::combine`].
    pub combine: fn(&mut MetricsDoc, &[&MetricsDoc]),
}

fn rebuild<S: Suite>(doc: &mut MetricsDoc, parts: &[PathBuf]) -> Result<Rebuilt> {
    let mut items = read_items::<S::Item>(parts)?;
    let outputs = S::outputs(doc, &mut items)?;
    Ok((jsonl(&items)?, outputs))
}

/// Every part's items.jsonl, parsed as the suite's items (order: parts, then lines; the suite's
/// `outputs` puts them back into the single-run order).
fn read_items<T: DeserializeOwned>(parts: &[PathBuf]) -> Result<Vec<T>> {
    let mut items = Vec::new();
    for dir in parts {
        let path = dir.join("items.jsonl");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| InputError::file(&path, format!("cannot read: {e}")))?;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let item: T = serde_json::from_str(line).map_err(|e| {
                InputError::line(&path, i + 1, format!("not an item of this suite: {e}"))
            })?;
            items.push(item);
        }
    }
    Ok(items)
}

const fn registered<S: Suite>() -> Registered {
    Registered {
        name: S::NAME,
        rebuild: rebuild::<S>,
        combine: S::combine,
    }
}

/// Every suite `scorekit merge` can merge.
pub static REGISTRY: [Registered; 4] = [
    registered::<Grasp>(),
    registered::<Mint>(),
    registered::<Muse>(),
    registered::<Story>(),
];

/// The registered suite called `name`.
pub fn find(name: &str) -> Option<&'static Registered> {
    REGISTRY.iter().find(|s| s.name == name)
}
