//! What `scorekit compare` pairs: per result group, per metric, the items' values by id. Each
//! suite declares its metrics and reads them off its own items in its `suite.rs` (with
//! [`insert`] and [`bit`]).

use super::Values;

use std::collections::BTreeMap;

/// Per group (system), per metric name, the items' values by id.
pub type Observed = BTreeMap<String, BTreeMap<&'static str, Values>>;

/// Two items of one group claim the same id for a metric: their positions, for the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateId {
    /// The group.
    pub group: String,
    /// The id.
    pub id: String,
    /// The 1-based item line (in items.jsonl) of the second one.
    pub item: usize,
}

/// Record `value` of `metric` for item `id` of `group` (the item's 1-based line for the error).
pub fn insert(
    out: &mut Observed,
    group: &str,
    metric: &'static str,
    id: String,
    value: f64,
    item: usize,
) -> Result<(), DuplicateId> {
    let values = out
        .entry(group.to_string())
        .or_default()
        .entry(metric)
        .or_default();
    if values.insert(id.clone(), value).is_some() {
        return Err(DuplicateId {
            group: group.to_string(),
            id,
            item,
        });
    }
    Ok(())
}

/// 1 for true, 0 for false.
pub fn bit(b: bool) -> f64 {
    f64::from(u8::from(b))
}
