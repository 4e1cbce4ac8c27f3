//! Network policy and plain HTTP downloads, shared by model and data resolution.
//!
//! Models come through hf-hub (which speaks the Hub's protocol); benchmark data comes as plain
//! files from raw.githubusercontent.com or a mirror, through the same ureq client hf-hub uses.

use std::io::{Read, Write};
use std::time::Duration;

/// Whether `HF_HUB_OFFLINE` forbids the network (1, true, yes, on), as Python's huggingface_hub
/// reads it; `--offline` flags add to it.
pub fn offline_from_env() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .map(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        })
        .unwrap_or(false)
}

/// Why a GET failed, sorted by what the user can do about it.
#[derive(Debug)]
pub enum GetError {
    /// The URL is not an http(s) URL ureq can use.
    BadUrl(String),
    /// The server answered with an error status.
    Status(u16),
    /// No connection could be made (host unknown, refused, TLS, timeout before the answer).
    Unreachable(String),
    /// The transfer broke after it started (connection closed mid-body, read timeout).
    Interrupted {
        /// Bytes received before the break.
        received: u64,
        /// What broke.
        why: String,
    },
    /// Writing the received bytes failed (disk full, permissions).
    Write(std::io::Error),
}

impl std::fmt::Display for GetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GetError::BadUrl(why) => write!(f, "not a usable http(s) URL: {why}"),
            GetError::Status(code) => write!(f, "HTTP {code}"),
            GetError::Unreachable(why) => write!(f, "cannot connect: {why}"),
            GetError::Interrupted { received, why } => {
                write!(f, "transfer interrupted after {received} bytes: {why}")
            }
            GetError::Write(e) => write!(f, "cannot write the download: {e}"),
        }
    }
}

/// Seconds without progress after which a connection or a read is abandoned.
const STALL_SECS: u64 = 60;

/// GET `url` into `out`, calling `progress` with each chunk's length; returns the bytes written
/// and the Content-Length the server announced. ureq reports a body cut short of its
/// Content-Length as an error, so a closed connection is an interrupted transfer, never a success.
pub fn get(
    url: &str,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<(u64, Option<u64>), GetError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(GetError::BadUrl(format!(
            "{url} (expected http:// or https://)"
        )));
    }
    let config = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(STALL_SECS)))
        .timeout_per_read(Some(Duration::from_secs(STALL_SECS)))
        .user_agent(concat!("scorekit/", env!("CARGO_PKG_VERSION")))
        .build();
    let agent: ureq::Agent = config.into();
    let response = agent.get(url).call().map_err(|e| match e {
        ureq::Error::StatusCode(code) => GetError::Status(code),
        ureq::Error::BadUri(why) => GetError::BadUrl(why),
        ureq::Error::Http(e) => GetError::BadUrl(e.to_string()),
        other => GetError::Unreachable(other.to_string()),
    })?;
    let announced = response.body().content_length();
    let mut reader = response.into_body().into_reader();
    let mut buf = vec![0u8; 1 << 16];
    let mut received = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(GetError::Interrupted {
                    received,
                    why: e.to_string(),
                })
            }
        };
        out.write_all(&buf[..n]).map_err(GetError::Write)?;
        received += n as u64;
        progress(n as u64);
    }
    out.flush().map_err(GetError::Write)?;
    Ok((received, announced))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_urls_that_are_not_http() {
        let mut sink = Vec::new();
        let e = get("ftp://example.org/x", &mut sink, &mut |_| {}).unwrap_err();
        assert!(matches!(e, GetError::BadUrl(_)), "{e}");
        let e = get("/some/folder/x", &mut sink, &mut |_| {}).unwrap_err();
        assert!(matches!(e, GetError::BadUrl(_)), "{e}");
    }
}
