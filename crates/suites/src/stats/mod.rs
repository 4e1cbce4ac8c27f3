//! Small statistics the suites report beside their scores, as pure functions over slices and
//! counts (no I/O): the power-tuned prediction-powered mean (PPI++), which combines a few gold
//! labels with many judge predictions; Fisher's exact test on a 2x2 table; Cohen's and Fleiss'
//! kappa for agreement between raters.
//!
//! Each one reproduces a public implementation (ppi-python 0.2.3, scipy's `fisher_exact`,
//! statsmodels' kappas) so that a number reported here can be checked against the tool a reader
//! already trusts: `scripts/reference/ppi_reference.py` writes their values to
//! `tests/data/story/ppi_reference.json` and the tests compare every case to 1e-9. Where the
//! reference gives NaN or raises (degenerate inputs), the functions here define a value instead;
//! each such deviation is documented on the function.

pub mod fisher;
pub mod kappa;
pub mod ppi;

#[cfg(test)]
mod tests;
