//! Small measures that the tests, the demo and the benchmarks share: a
//! percentile of samples, this process's resident memory and its peak.
//!
//! Plain functions; the memory is read from `/proc/self/status`.

/// The `p`th percentile (0-100) of `values`, by nearest rank: the smallest
/// sample with at least `p`% of the samples at or below it. 0 for no
/// samples.
///
/// ```
/// let samples: Vec<f64> = (1..=100).map(f64::from).collect();
/// assert_eq!(fixture_server::percentile(&samples, 99.0), 99.0);
/// ```
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// This process's resident memory in MiB (`VmRSS`), or `None` where
/// `/proc/self/status` cannot be read.
pub fn resident_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?;
    let kb: f64 = kb.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb / 1024.0)
}

/// The growth of this process's resident memory at its peak while `work`
/// runs, in bytes: what `work` touched, whoever allocated it (Rust's
/// allocator or a C library's `malloc`, which a Rust global allocator does
/// not see). `None` where Linux's peak reset (`/proc/self/clear_refs`,
/// Linux 4.0) or `/proc/self/status` is not available.
///
/// Run it in a process of its own that does little else: the figure is the
/// whole process's, so another thread's allocations count too, and memory
/// freed earlier and still held by the allocator can be reused without
/// growing. Code pages run for the first time count, so run `work` once
/// before on a small input.
pub fn peak_resident_growth<T>(work: impl FnOnce() -> T) -> Option<(T, u64)> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    let before = status_kb("VmRSS")?;
    let out = work();
    let peak = status_kb("VmHWM")?;
    Some((out, peak.saturating_sub(before) * 1024))
}

/// A `kB` field of `/proc/self/status`.
fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = status.lines().find_map(|line| {
        line.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix(':'))
    })?;
    kb.trim().trim_end_matches("kB").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let values: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), 50.0);
        assert_eq!(percentile(&values, 99.0), 99.0);
        assert_eq!(percentile(&values, 100.0), 100.0);
        assert_eq!(percentile(&values, 0.0), 1.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn the_peak_growth_counts_what_the_work_touched() {
        if !std::path::Path::new("/proc/self/clear_refs").exists() {
            return;
        }
        let (sum, grew) = peak_resident_growth(|| {
            let block = vec![1u8; 64 << 20];
            block.iter().map(|&b| u64::from(b)).sum::<u64>()
        })
        .unwrap();
        assert_eq!(sum, 64 << 20);
        assert!(grew >= 60 << 20, "{grew}");
    }

    #[test]
    fn resident_memory_is_read_on_linux() {
        if std::path::Path::new("/proc/self/status").exists() {
            let mb = resident_mb().unwrap();
            assert!(mb > 0.1 && mb < 1e6, "{mb}");
        }
    }
}
