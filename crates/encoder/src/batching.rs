//! Token-budget batching: sort inputs by length, pack batches whose padded size fits the budget.
//!
//! Sorting keeps padding small (neighbours have similar lengths); counting padding keeps the
//! memory of one forward pass bounded, whatever the mix of lengths.

/// One batch: positions into the caller's list, and the length every row is padded to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchPlan {
    /// Indices into the input list, longest first.
    pub indices: Vec<usize>,
    /// The longest length in the batch; `indices.len() * padded_len` is its cost in tokens.
    pub padded_len: usize,
}

/// Plan batches over inputs of the given token lengths, each costing at most `batch_tokens`
/// tokens with padding counted (`rows × longest row`).
///
/// Longest inputs come first, so a batch too big for the device fails at once rather than at the
/// end of a long run. An input longer than the budget still gets a batch of its own. Every index
/// appears exactly once.
pub fn plan_batches(lengths: &[usize], batch_tokens: usize) -> Vec<BatchPlan> {
    let budget = batch_tokens.max(1);
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    // Stable: equal lengths keep input order, so plans are deterministic.
    order.sort_by_key(|&i| std::cmp::Reverse(lengths[i]));
    let mut batches = Vec::new();
    let mut current = BatchPlan {
        indices: Vec::new(),
        padded_len: 0,
    };
    for i in order {
        let len = lengths[i].max(1);
        let padded = current.padded_len.max(len);
        if !current.indices.is_empty() && (current.indices.len() + 1) * padded > budget {
            batches.push(std::mem::replace(
                &mut current,
                BatchPlan {
                    indices: Vec::new(),
                    padded_len: 0,
                },
            ));
        }
        current.padded_len = current.padded_len.max(len);
        current.indices.push(i);
    }
    if !current.indices.is_empty() {
        batches.push(current);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_under_budget_with_padding_counted() {
        let lengths = [5, 30, 7, 30, 6, 100, 2];
        let plan = plan_batches(&lengths, 64);
        let mut seen: Vec<usize> = plan.iter().flat_map(|b| b.indices.clone()).collect();
        seen.sort();
        assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>());
        for b in &plan {
            let longest = b.indices.iter().map(|&i| lengths[i]).max().unwrap();
            assert_eq!(b.padded_len, longest);
            assert!(
                b.indices.len() == 1 || b.indices.len() * b.padded_len <= 64,
                "{b:?}"
            );
        }
        // The over-long input runs alone, first.
        assert_eq!(plan[0].indices, vec![5]);
        // Two 30s fit together (60 ≤ 64); the short ones share one batch.
        assert_eq!(plan[1].indices, vec![1, 3]);
        assert_eq!(plan[2].indices, vec![2, 4, 0, 6]);
    }

    #[test]
    fn empty_and_tiny_budgets() {
        assert!(plan_batches(&[], 10).is_empty());
        let plan = plan_batches(&[3, 3, 3], 0);
        assert_eq!(plan.len(), 3);
    }
}
