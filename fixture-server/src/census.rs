//! Census: this process's threads, from `/proc/self/task`, by name and by
//! what they are blocked in.
//!
//! A plain function of `/proc`, for tests, the demo and the benchmarks; it
//! returns [`CensusError`] where `/proc` is missing or unreadable instead of
//! a wrong number.

use std::collections::BTreeMap;
use std::path::Path;

/// The threads of this process at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadCensus {
    /// All threads.
    pub total: usize,
    /// Threads by name (`/proc/self/task/N/comm`, at most 15 bytes).
    pub names: BTreeMap<String, usize>,
    /// Threads parked in a blocking network call: asleep in a read or
    /// receive on a socket, a connect, or a poll/select. (A thread caught
    /// running a non-blocking call is not parked.)
    pub blocked_in_network_io: usize,
    /// The names of those threads.
    pub blocked_names: Vec<String>,
}

/// Why a census could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CensusError {
    /// `/proc/self/task` is missing: not Linux, or `/proc` not mounted.
    #[error("no thread census here: /proc/self/task is not available ({0})")]
    Unavailable(std::io::Error),
    /// The syscall table of this CPU architecture is not known.
    #[error("no thread census here: syscall numbers of '{0}' are not known")]
    UnknownArchitecture(&'static str),
}

/// Syscall numbers that mean "waiting on the network", per architecture.
struct Syscalls {
    /// Reads and receives: first argument is the file descriptor.
    reads: &'static [i64],
    /// connect: first argument is the file descriptor.
    connects: &'static [i64],
    /// poll and select: they wait whatever their descriptors are.
    waits: &'static [i64],
}

const fn syscalls() -> Option<Syscalls> {
    if cfg!(target_arch = "x86_64") {
        // read, readv, recvfrom, recvmsg, recvmmsg; connect; poll, select,
        // pselect6, ppoll.
        Some(Syscalls {
            reads: &[0, 19, 45, 47, 299],
            connects: &[42],
            waits: &[7, 23, 270, 271],
        })
    } else if cfg!(target_arch = "aarch64") {
        // read, readv, recvfrom, recvmsg, recvmmsg; connect; pselect6, ppoll.
        Some(Syscalls {
            reads: &[63, 65, 207, 212, 243],
            connects: &[203],
            waits: &[72, 73],
        })
    } else {
        None
    }
}

impl ThreadCensus {
    /// Counts this process's threads now.
    ///
    /// ```
    /// # if std::path::Path::new("/proc/self/task").exists() {
    /// let census = fixture_server::ThreadCensus::take()?;
    /// assert!(census.total >= 1);
    /// assert_eq!(census.total, census.names.values().sum::<usize>());
    /// # }
    /// # Ok::<(), fixture_server::CensusError>(())
    /// ```
    pub fn take() -> Result<Self, CensusError> {
        let table = syscalls().ok_or(CensusError::UnknownArchitecture(std::env::consts::ARCH))?;
        let tasks = std::fs::read_dir("/proc/self/task").map_err(CensusError::Unavailable)?;
        let mut census = ThreadCensus::default();
        for task in tasks.flatten() {
            let dir = task.path();
            // A thread that ended since the listing has no files left.
            let Ok(name) = std::fs::read_to_string(dir.join("comm")) else {
                continue;
            };
            let name = name.trim().to_owned();
            census.total += 1;
            if blocked_in_network_io(&dir, &table) {
                census.blocked_in_network_io += 1;
                census.blocked_names.push(name.clone());
            }
            *census.names.entry(name).or_default() += 1;
        }
        Ok(census)
    }

    /// Threads whose name starts with `prefix`.
    pub fn with_prefix(&self, prefix: &str) -> usize {
        self.names
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(_, count)| count)
            .sum()
    }
}

fn blocked_in_network_io(task: &Path, table: &Syscalls) -> bool {
    let Ok(syscall) = std::fs::read_to_string(task.join("syscall")) else {
        return false;
    };
    let mut fields = syscall.split_whitespace();
    let Some(Ok(number)) = fields.next().map(str::parse::<i64>) else {
        // "running" or "-1": not in a syscall.
        return false;
    };
    if table.waits.contains(&number) {
        return true;
    }
    if !table.reads.contains(&number) && !table.connects.contains(&number) {
        return false;
    }
    // A read or connect parks the thread only on a blocking socket: an async
    // runtime's threads pass through the same calls on non-blocking sockets
    // without waiting.
    let Some(fd) = fields
        .next()
        .and_then(|arg| i64::from_str_radix(arg.trim_start_matches("0x"), 16).ok())
    else {
        return false;
    };
    let is_socket = std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
    is_socket && !non_blocking(fd)
}

/// Whether file descriptor `fd` has `O_NONBLOCK` set, from `fdinfo`.
fn non_blocking(fd: i64) -> bool {
    const O_NONBLOCK: u32 = 0o4000;
    std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}"))
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("flags:"))
                .and_then(|flags| u32::from_str_radix(flags.trim(), 8).ok())
        })
        .is_some_and(|flags| flags & O_NONBLOCK != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    #[test]
    fn a_thread_blocked_reading_a_socket_is_counted_and_named() {
        if !Path::new("/proc/self/task").exists() {
            return;
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = std::thread::Builder::new()
            .name("census-reader".into())
            .spawn(move || {
                let mut stream = TcpStream::connect(addr).unwrap();
                let mut byte = [0u8; 1];
                let _ = stream.read(&mut byte);
            })
            .unwrap();
        let (mut server_side, _) = listener.accept().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut census = ThreadCensus::take().unwrap();
        while census.blocked_in_network_io == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            census = ThreadCensus::take().unwrap();
        }
        assert_eq!(census.with_prefix("census-reader"), 1);
        assert!(census.blocked_in_network_io >= 1, "{census:?}");
        use std::io::Write;
        server_side.write_all(b"x").unwrap();
        reader.join().unwrap();
    }
}
