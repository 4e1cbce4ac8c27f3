//! Which weights a judge training run keeps and when it stops: the weights of the best dev
//! accuracy so far (the first of equal ones), and a stop after `patience` evaluations in a row
//! without a better one.

use serde::{Deserialize, Serialize};

/// The keep-the-best state, saved in checkpoints so that a resumed run decides as an
/// uninterrupted one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeepBest {
    /// (step, accuracy) of the kept weights.
    pub best: Option<(u64, f64)>,
    /// Evaluations since the best.
    pub since_best: u64,
}

/// What one evaluation decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The evaluated weights are the best so far: keep them.
    pub keep: bool,
    /// Stop training (patience spent).
    pub stop: bool,
}

impl KeepBest {
    /// Record the dev accuracy of the weights after `step`.
    pub fn observe(&mut self, step: u64, accuracy: f64, patience: u64) -> Decision {
        let keep = self.best.is_none_or(|(_, b)| accuracy > b);
        if keep {
            self.best = Some((step, accuracy));
            self.since_best = 0;
        } else {
            self.since_best += 1;
        }
        Decision {
            keep,
            stop: self.since_best >= patience,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_best_and_stops_after_patience_evaluations_without_one() {
        let mut k = KeepBest::default();
        let d = |keep, stop| Decision { keep, stop };
        assert_eq!(k.observe(10, 0.5, 2), d(true, false));
        assert_eq!(
            k.observe(20, 0.5, 2),
            d(false, false),
            "a tie keeps the first"
        );
        assert_eq!(k.observe(30, 0.6, 2), d(true, false));
        assert_eq!(k.best, Some((30, 0.6)));
        assert_eq!(k.observe(40, 0.55, 2), d(false, false));
        assert_eq!(k.observe(50, 0.59, 2), d(false, true));
        assert_eq!(k.best, Some((30, 0.6)));
    }
}
