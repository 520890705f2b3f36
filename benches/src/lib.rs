//! Shared parts of thumbpipe's report binaries: finding and starting the
//! workspace's own programs as separate processes, another process's thread
//! count, the open-file limit and the machine from `/proc`, and medians of
//! runs. (This process's threads, memory and percentiles are in
//! `fixture_server`, which the tests and the demo share.)
//!
//! The directory fuzzer of the disk cache is [`disk_fuzz`]; [`Rng`] is the
//! fuzzers' source of numbers, and [`mutate`] their mutations (of bytes,
//! ISO BMFF boxes, PNG chunks). [`Targets`] is how a report checks its
//! figures against thumbpipe's targets and says which it missed.
//!
//! [`overhead`] is the per-request overhead measurement that the criterion
//! bench and `overhead-report` share.
//!
//! Nothing here runs on its own. A [`ServerProcess`] is killed when dropped,
//! so a report that fails half-way leaves no server behind.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, bail};

pub mod disk_fuzz;
pub mod mutate;
pub mod overhead;
pub mod runs;
pub mod targets;

pub use targets::Targets;

/// This process's resident memory, sampled through a long run: whether it
/// stays flat (a fuzzer's inputs leave nothing behind) or grows.
#[derive(Debug, Default)]
pub struct ResidentTrace {
    samples: Vec<f64>,
}

impl ResidentTrace {
    /// Takes a sample now (none where `/proc/self/status` is missing).
    pub fn sample(&mut self) {
        if let Some(mb) = fixture_server::resident_mb() {
            self.samples.push(mb);
        }
    }

    /// "resident X MB after the first tenth of the run, Y at the end, Z at
    /// most", or that there were no samples.
    pub fn summary(&self) -> String {
        let (Some(&last), Some(max)) = (
            self.samples.last(),
            self.samples.iter().copied().reduce(f64::max),
        ) else {
            return "resident memory not sampled".to_owned();
        };
        let early = self.samples[self.samples.len() / 10];
        format!(
            "resident {early:.1} MB after the first tenth of the run, {last:.1} MB at its end, \
             {max:.1} MB at most ({} samples)",
            self.samples.len()
        )
    }
}

/// The path of binary `bin` of workspace package `package`, built in the same
/// profile as the running program. Builds it with cargo when it is missing.
pub fn workspace_binary(package: &str, bin: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the running program's path")?;
    let dir = exe
        .parent()
        .context("the running program has no directory")?;
    let path = dir.join(bin);
    if path.exists() {
        return Ok(path);
    }
    let release = dir.ends_with("release");
    eprintln!(
        "building {bin} ({})...",
        if release { "release" } else { "debug" }
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "-p", package, "--bin", bin]);
    if release {
        build.arg("--release");
    }
    let status = build.status().context("could not run cargo")?;
    if !status.success() || !path.exists() {
        bail!(
            "could not build {bin}: run `cargo build --release -p {package}` and look at its errors"
        );
    }
    Ok(path)
}

/// A workspace server running as a child process, killed on drop.
pub struct ServerProcess {
    child: Child,
    base_url: String,
}

impl ServerProcess {
    /// Starts the `fixture-server` binary with `args` (on port 0 unless
    /// given) and waits for its `listening on URL` line.
    pub fn fixture_server(args: &[String]) -> anyhow::Result<Self> {
        let path = workspace_binary("fixture-server", "fixture-server")?;
        Self::start(&path, args)
    }

    fn start(path: &Path, args: &[String]) -> anyhow::Result<Self> {
        let mut child = Command::new(path)
            .args(args)
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| format!("could not start {}", path.display()))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .context("server printed nothing")?;
        let Some(base_url) = first.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            bail!(
                "{} printed {first:?} instead of its address",
                path.display()
            );
        };
        Ok(Self {
            base_url: base_url.to_owned(),
            child,
        })
    }

    /// `http://IP:PORT`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How many threads process `pid` has now (`/proc/PID/task`), or `None`
/// where there is no `/proc`.
pub fn thread_count(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.count())
}

/// Median and range of `values` (sorted in place).
pub fn median_and_range(values: &mut [f64]) -> Option<(f64, f64, f64)> {
    values.sort_by(f64::total_cmp);
    let (first, last) = (values.first()?, values.last()?);
    let mid = values.len() / 2;
    let median = if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    };
    Some((median, *first, *last))
}

/// Fails with what to do when `requests` sockets would not fit under
/// this process's open-file limit.
pub fn check_file_limit(requests: usize) -> anyhow::Result<()> {
    let Ok(limits) = std::fs::read_to_string("/proc/self/limits") else {
        return Ok(());
    };
    let soft = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|soft| soft.parse::<usize>().ok());
    match soft {
        Some(soft) if soft < requests + 256 => anyhow::bail!(
            "{requests} connections need {} open files, the limit is {soft} (raise it with `ulimit -n {}`)",
            requests + 256,
            requests + 256
        ),
        _ => Ok(()),
    }
}

/// The CPU model and core count, for the header of every report.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|model| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores, {model}")
}

/// SplitMix64 ([`fixture_server::splitmix64`]): small, fast, and enough to
/// spread a fuzzer's mutations. Round or input `index` of a run seeded
/// `seed` always draws the same numbers, so it can be replayed alone.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The numbers of input `index` of the run seeded `seed`.
    pub fn new(seed: u64, index: u64) -> Self {
        let mut rng = Self(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        rng.next_u64();
        rng
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        fixture_server::splitmix64(&mut self.0)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// A position, half the time in the first 512 bytes, where the headers are.
    pub fn position(&mut self, len: usize) -> usize {
        if self.below(2) == 0 {
            self.below(len.min(512))
        } else {
            self.below(len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_range_of_odd_and_even_counts() {
        assert_eq!(
            median_and_range(&mut [3.0, 1.0, 2.0]),
            Some((2.0, 1.0, 3.0))
        );
        assert_eq!(
            median_and_range(&mut [4.0, 1.0, 2.0, 3.0]),
            Some((2.5, 1.0, 4.0))
        );
        assert_eq!(median_and_range(&mut []), None);
    }

    #[test]
    fn this_process_has_threads() {
        if Path::new("/proc/self/task").exists() {
            assert!(thread_count(std::process::id()).unwrap_or(0) >= 1);
        }
    }
}
