//! Facts about this process that reports state (peak memory).

/// Peak resident memory of this process (VmHWM), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Reset the peak resident memory (VmHWM) to the current RSS, so that [`peak_rss_bytes`] reads
/// the peak of what follows (Linux 4.0+, `/proc/self/clear_refs`); false where it cannot.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The CPU's model name (`/proc/cpuinfo`'s first `model name`), where the system says.
pub fn cpu_model_name() -> Option<String> {
    let s = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_rss_resets_to_current() {
        let Some(_) = peak_rss_bytes() else { return };
        // Touch 64 MiB, free it, reset: the new peak is below the old one.
        let v = vec![1u8; 64 << 20];
        std::hint::black_box(&v);
        let before = peak_rss_bytes().unwrap();
        drop(v);
        if reset_peak_rss() {
            let after = peak_rss_bytes().unwrap();
            assert!(after + (32 << 20) < before, "{after} vs {before}");
        }
    }
}
