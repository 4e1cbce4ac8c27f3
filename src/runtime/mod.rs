//! Everything that touches a model: device, resolution, batching, embedder, judge.
