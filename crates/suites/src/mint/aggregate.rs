//! Everything the tables, metrics and re-check report need, accumulated one item at a time in
//! the single-run order, so that a run never holds its items: per configuration the counts
//! ([`ConfigStats`]) and the 0/1 verdicts in order (what the bootstrap resamples), duplicate
//! marking, and the re-check summary.
//!
//! `scorekit mint` feeds it while it reads; `scorekit merge` feeds it the parts' items. Both
//! then render from it, so a merge recomputes the single run exactly.

use super::layout::{ConfigKey, FileKey};
use super::tables::{add, fill_missing, ConfigStats};
use super::Item;
pub use scorekit_report::mint::RecheckRow;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The 0/1 verdicts of one configuration's non-duplicate items, in item order, per group.
#[derive(Debug, Clone, Default)]
pub struct Verdicts {
    /// By task type.
    pub by_type: BTreeMap<String, Vec<bool>>,
    /// All of the configuration's items.
    pub micro: Vec<bool>,
    /// By task.
    pub by_task: BTreeMap<String, Vec<bool>>,
}

impl Verdicts {
    /// The bootstrap groups in name order: task types, `micro`, `task:<task>`.
    pub fn groups(&self) -> BTreeMap<String, &[bool]> {
        let mut g: BTreeMap<String, &[bool]> = BTreeMap::new();
        for (t, v) in &self.by_type {
            g.insert(t.clone(), v);
        }
        g.insert("micro".into(), &self.micro);
        for (t, v) in &self.by_task {
            g.insert(format!("task:{t}"), v);
        }
        g
    }
}

/// Re-check counts of one task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecheckCounts {
    /// Items with a re-check verdict.
    pub checked: usize,
    /// Of those, verdicts that differ from the stored flag.
    pub differ: usize,
    /// Stored false, re-checked true.
    pub gained: usize,
    /// Stored true, re-checked false.
    pub lost: usize,
    /// Items without a verdict but with a note saying why.
    pub unchecked: usize,
}

struct ConfigAgg {
    stats: ConfigStats,
    verdicts: Verdicts,
    /// task type -> task -> ids seen; dropped once no more files of that task can come.
    seen: HashMap<String, HashMap<String, HashSet<String>>>,
}

/// The accumulator.
pub struct Aggregate {
    use_recheck: bool,
    configs: Vec<ConfigAgg>,
    index: HashMap<ConfigKey, usize>,
    last: Option<usize>,
    trajectories: usize,
    duplicates: usize,
    recheck: BTreeMap<String, RecheckCounts>,
    recheck_rows: Vec<RecheckRow>,
}

/// What an [`Aggregate`] ends with.
pub struct Totals {
    /// Per configuration, in configuration order, `missing` filled.
    pub stats: Vec<ConfigStats>,
    /// The verdicts of each configuration of `stats`, same order.
    pub verdicts: Vec<Verdicts>,
    /// Items seen, duplicates included.
    pub trajectories: usize,
    /// Items marked duplicate.
    pub duplicates: usize,
    /// Re-check counts per task (every task seen, in name order).
    pub recheck: BTreeMap<String, RecheckCounts>,
    /// Differing or unverifiable items, in item order.
    pub recheck_rows: Vec<RecheckRow>,
}

fn slot<'a, V: Default>(m: &'a mut BTreeMap<String, V>, k: &str) -> &'a mut V {
    if !m.contains_key(k) {
        m.insert(k.to_string(), V::default());
    }
    m.get_mut(k).expect("inserted above")
}

impl Aggregate {
    /// An empty accumulator; `use_recheck` picks the verdict the tables count.
    pub fn new(use_recheck: bool) -> Self {
        Aggregate {
            use_recheck,
            configs: Vec::new(),
            index: HashMap::new(),
            last: None,
            trajectories: 0,
            duplicates: 0,
            recheck: BTreeMap::new(),
            recheck_rows: Vec::new(),
        }
    }

    fn config(&mut self, key: &ConfigKey) -> usize {
        if let Some(i) = self.last.filter(|&i| &self.configs[i].stats.key == key) {
            return i;
        }
        let i = match self.index.get(key) {
            Some(&i) => i,
            None => {
                self.configs.push(ConfigAgg {
                    stats: ConfigStats {
                        key: key.clone(),
                        by_type: BTreeMap::new(),
                        by_task: BTreeMap::new(),
                        missing: Vec::new(),
                    },
                    verdicts: Verdicts::default(),
                    seen: HashMap::new(),
                });
                self.index.insert(key.clone(), self.configs.len() - 1);
                self.configs.len() - 1
            }
        };
        self.last = Some(i);
        i
    }

    /// Count one item, the next in the single-run order (files by path, then lines), and
    /// mark it duplicate when its (configuration, task type, task, task id) came before, as
    /// the notebook's `drop_duplicates` keeps the first.
    pub fn add(&mut self, it: &mut Item) {
        let ci = self.config(&it.config);
        let c = &mut self.configs[ci];
        // Keys copied only when new (an `entry` would copy them for every item).
        if !c.seen.contains_key(&it.task_type) {
            c.seen.insert(it.task_type.clone(), HashMap::new());
        }
        let tasks = c.seen.get_mut(&it.task_type).expect("inserted above");
        if !tasks.contains_key(&it.task) {
            tasks.insert(it.task.clone(), HashSet::new());
        }
        let ids = tasks.get_mut(&it.task).expect("inserted above");
        it.duplicate = ids.contains(&it.task_id) || !ids.insert(it.task_id.clone());
        self.trajectories += 1;
        if it.duplicate {
            self.duplicates += 1;
            return;
        }
        let ok = it.verdict(self.use_recheck);
        add(slot(&mut c.stats.by_type, &it.task_type), it, ok);
        add(slot(&mut c.stats.by_type, "micro"), it, ok);
        add(slot(&mut c.stats.by_task, &it.task), it, ok);
        slot(&mut c.verdicts.by_type, &it.task_type).push(ok);
        c.verdicts.micro.push(ok);
        slot(&mut c.verdicts.by_task, &it.task).push(ok);

        let t = slot(&mut self.recheck, &it.task);
        let row = match it.rechecked {
            Some(r) => {
                t.checked += 1;
                if r != it.success {
                    t.differ += 1;
                    if r {
                        t.gained += 1;
                    } else {
                        t.lost += 1;
                    }
                }
                r != it.success
            }
            None if it.recheck_note.is_some() => {
                t.unchecked += 1;
                true
            }
            None => false,
        };
        if row {
            self.recheck_rows.push(RecheckRow {
                config: it.config.label(),
                task: it.task.clone(),
                task_id: it.task_id.clone(),
                file: it.file.clone(),
                line: it.line,
                stored: it.success,
                rechecked: it.rechecked,
                note: it.recheck_note.clone().unwrap_or_default(),
            });
        }
    }

    /// Forget the task ids seen for `key`: call once the last file of that configuration and
    /// task has been added, so that memory does not grow with the archive.
    pub fn release(&mut self, key: &FileKey) {
        if let Some(&i) = self.index.get(&key.config) {
            if let Some(tasks) = self.configs[i].seen.get_mut(&key.task_type) {
                tasks.remove(&key.task);
            }
        }
    }

    /// Items added so far.
    pub fn trajectories(&self) -> usize {
        self.trajectories
    }

    /// The totals, configurations in order.
    pub fn finish(self) -> Totals {
        let mut configs = self.configs;
        configs.sort_by(|a, b| a.stats.key.cmp(&b.stats.key));
        let mut stats = Vec::with_capacity(configs.len());
        let mut verdicts = Vec::with_capacity(configs.len());
        for mut c in configs {
            fill_missing(&mut c.stats);
            stats.push(c.stats);
            verdicts.push(c.verdicts);
        }
        Totals {
            stats,
            verdicts,
            trajectories: self.trajectories,
            duplicates: self.duplicates,
            recheck: self.recheck,
            recheck_rows: self.recheck_rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mint::{layout, tables};
    use std::path::Path;

    fn item(config: &str, task: &str, id: &str, success: bool, rechecked: Option<bool>) -> Item {
        let key = layout::parse_path(Path::new(&format!(
            "{config}/reasoning/{task}/results.jsonl"
        )))
        .unwrap();
        Item {
            file: format!("{config}/reasoning/{task}/results.jsonl"),
            line: 1,
            row: 1,
            config: key.config,
            task_type: key.task_type,
            task: key.task,
            task_id: id.into(),
            success,
            rechecked,
            recheck_note: None,
            invalid_actions: 2,
            turns: 3,
            escaped_underscore: false,
            python_tag: true,
            terminate_reason: None,
            duplicate: false,
        }
    }

    #[test]
    fn agrees_with_the_whole_list_computation() {
        let mut items = vec![
            item("a/F=None/max5_p2+tool+cd", "gsm8k", "1", true, Some(false)),
            item("a/F=None/max5_p2+tool+cd", "gsm8k", "2", false, Some(false)),
            item("a/F=None/max5_p2+tool+cd", "gsm8k", "1", false, Some(true)),
            item("a/F=None/max5_p2+tool+cd", "math", "1", false, Some(true)),
            item("b/F=None/max1_p1+tool+cd", "math", "9", true, None),
        ];
        let mut agg = Aggregate::new(true);
        for it in items.iter_mut() {
            agg.add(it);
        }
        let t = agg.finish();
        assert_eq!(
            items.iter().map(|i| i.duplicate).collect::<Vec<_>>(),
            [false, false, true, false, false]
        );
        let mut marked = items.clone();
        crate::mint::mark_duplicates(&mut marked);
        assert_eq!(marked, items);
        let want = tables::config_stats(&items, true);
        assert_eq!(t.stats.len(), 2);
        for (a, b) in t.stats.iter().zip(&want) {
            assert_eq!(a.key, b.key);
            assert_eq!(a.by_type, b.by_type);
            assert_eq!(a.by_task, b.by_task);
            assert_eq!(a.missing, b.missing);
        }
        assert_eq!((t.trajectories, t.duplicates), (5, 1));
        assert_eq!(t.verdicts[0].micro, [false, false, true]);
        let g = t.verdicts[0].groups();
        assert_eq!(
            g.keys().collect::<Vec<_>>(),
            ["micro", "reasoning", "task:gsm8k", "task:math"]
        );
        assert_eq!(t.recheck["gsm8k"].differ, 1);
        assert_eq!(t.recheck["math"].gained, 1);
        assert_eq!(t.recheck_rows.len(), 2);
    }

    #[test]
    fn released_keys_forget_their_ids() {
        let mut agg = Aggregate::new(false);
        let mut a = item("a/F=None/max5_p2+tool+cd", "gsm8k", "1", true, None);
        agg.add(&mut a.clone());
        let key = layout::parse_path(Path::new(&a.file)).unwrap();
        agg.release(&key);
        agg.add(&mut a);
        assert!(!a.duplicate, "released ids are not remembered");
    }
}
