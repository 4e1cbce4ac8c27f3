//! Gradients computed outside candle's graph walk (the weights of a fused layer), handed to the
//! trainer beside candle's `GradStore`.

use candle_core::Tensor;
use std::sync::{Arc, Mutex};

/// Gradients of variables that are not inputs of candle's graph nodes (the weights inside a
/// fused layer), gathered during a backward pass: (variable, gradient) pairs.
#[derive(Clone, Default)]
pub struct GradSink(Arc<Mutex<Vec<(Tensor, Tensor)>>>);

impl std::fmt::Debug for GradSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GradSink")
    }
}

impl PartialEq for GradSink {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl GradSink {
    /// Record `grad` as (a part of) the gradient of `var`.
    pub fn push(&self, var: &Tensor, grad: Tensor) {
        self.lock().push((var.clone(), grad));
    }

    /// Everything recorded since the last call.
    pub fn take(&self) -> Vec<(Tensor, Tensor)> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Tensor, Tensor)>> {
        // A panic while pushing leaves a consistent Vec; go on with it.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
