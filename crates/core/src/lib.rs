//! The bottom layer of scorekit: error kinds with file, line and field ([`error`]), `--shard`
//! ([`shard`]), progress bars ([`progress`]), ordered parallel work ([`ordered`]) and plain HTTP
//! GETs ([`net`]); files written atomically ([`fs`]); the peak memory of this process ([`process`]). Every other crate of the workspace may use it; it uses none of them.

pub mod error;
pub mod fs;
pub mod net;
pub mod ordered;
pub mod process;
pub mod progress;
pub mod shard;

pub use error::{Error, InputError, Result};
