//! `--shard I/N`: a deterministic split of items for job arrays, stable across runs and machines.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (0-based, as Slurm's `$SLURM_ARRAY_TASK_ID` with `--array=0-(N-1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// This shard, in `0..count`.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
}

impl Shard {
    /// The whole input as one shard.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Whether the item with this key belongs to this shard.
    ///
    /// The key is the item's own id (never its position), hashed with FNV-1a 64, so adding or
    /// reordering lines in an input does not move other items between shards.
    pub fn contains(&self, key: &str) -> bool {
        self.count <= 1 || (fnv1a64(key.as_bytes()) % u64::from(self.count)) as u32 == self.index
    }

    /// [`Shard::contains`] of a key built only when the run is sharded: a suite whose key is a
    /// new string per item (GRASP's, MINT's) builds none in an unsharded run.
    pub fn contains_with<K: AsRef<str>>(&self, key: impl FnOnce() -> K) -> bool {
        self.count <= 1 || self.contains(key().as_ref())
    }
}

impl FromStr for Shard {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::usage(format!(
                "--shard {s:?}: expected I/N with 0 <= I < N, e.g. 0/4"
            ))
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// FNV-1a, 64 bit: tiny, fixed forever, the same on every platform.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_built_only_for_a_sharded_run() {
        let all: Shard = "0/1".parse().unwrap();
        assert!(all.contains_with(|| -> String { panic!("no key needed") }));
        let half: Shard = "1/2".parse().unwrap();
        for key in ["a", "b", "c", "d"] {
            assert_eq!(
                half.contains_with(|| key.to_string()),
                half.contains(key),
                "{key}"
            );
        }
    }

    #[test]
    fn parses_and_rejects() {
        assert_eq!(
            "1/4".parse::<Shard>().unwrap(),
            Shard { index: 1, count: 4 }
        );
        for bad in ["4/4", "1", "a/4", "0/0", "-1/4"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn every_key_lands_in_exactly_one_shard_and_the_split_is_stable() {
        let keys: Vec<String> = (0..1000).map(|i| format!("q{i}")).collect();
        let mut sizes = [0usize; 4];
        for k in &keys {
            let owners: Vec<u32> = (0..4)
                .filter(|&i| Shard { index: i, count: 4 }.contains(k))
                .collect();
            assert_eq!(owners.len(), 1);
            sizes[owners[0] as usize] += 1;
        }
        assert!(sizes.iter().all(|&s| s > 200), "{sizes:?}");
        // Pinned: the split must never change between versions or machines.
        assert_eq!(fnv1a64(b"q0"), 0x08d2_1207_b572_d2e4);
    }
}
