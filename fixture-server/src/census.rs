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
    /// A thread's `syscall` file exists but cannot be read (reading it needs
    /// ptrace access to the process, which some sandboxes deny): whether
    /// the thread is blocked cannot be told, and a census that said "not
    /// blocked" would be a guess.
    #[error(
        "no thread census here: cannot read {path} ({source}); allow ptrace reads of this process"
    )]
    SyscallUnreadable {
        /// The file.
        path: String,
        /// Why it could not be read.
        source: std::io::Error,
    },
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
        Self::take_from(Path::new("/proc/self/task"))
    }

    /// The census of the task directory `tasks` (`/proc/self/task`, or a
    /// copy of its layout in a test).
    fn take_from(tasks: &Path) -> Result<Self, CensusError> {
        let table = syscalls().ok_or(CensusError::UnknownArchitecture(std::env::consts::ARCH))?;
        let entries = std::fs::read_dir(tasks).map_err(CensusError::Unavailable)?;
        let mut census = ThreadCensus::default();
        for task in entries.flatten() {
            let dir = task.path();
            // A thread that ended since the listing has no files left.
            let Ok(name) = std::fs::read_to_string(dir.join("comm")) else {
                continue;
            };
            let Some(blocked) = blocked_in_network_io(&dir, &table)? else {
                continue;
            };
            let name = name.trim().to_owned();
            census.total += 1;
            if blocked {
                census.blocked_in_network_io += 1;
                census.blocked_names.push(name.clone());
            }
            *census.names.entry(name).or_default() += 1;
        }
        Ok(census)
    }

    /// Threads whose name starts with `prefix`, compared as the kernel keeps
    /// names: cut to their first 15 bytes, so `"thumbpipe-decode-"` finds
    /// `thumbpipe-decod`.
    pub fn with_prefix(&self, prefix: &str) -> usize {
        let mut end = prefix.len().min(MAX_NAME_BYTES);
        while !prefix.is_char_boundary(end) {
            end -= 1;
        }
        let prefix = &prefix[..end];
        self.names
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(_, count)| count)
            .sum()
    }
}

/// The bytes of a thread's name that the kernel keeps (`TASK_COMM_LEN` - 1).
const MAX_NAME_BYTES: usize = 15;

/// Whether the thread in `task` is parked in a blocking network call;
/// `None` if it ended while being looked at, an error if its `syscall` file
/// cannot be read.
fn blocked_in_network_io(task: &Path, table: &Syscalls) -> Result<Option<bool>, CensusError> {
    let path = task.join("syscall");
    let syscall = match std::fs::read_to_string(&path) {
        Ok(syscall) => syscall,
        Err(error) if thread_ended(&error) => return Ok(None),
        Err(source) => {
            return Err(CensusError::SyscallUnreadable {
                path: path.display().to_string(),
                source,
            });
        }
    };
    Ok(Some(blocked_in(&syscall, table)))
}

/// Whether reading a thread's file failed because the thread ended while
/// being looked at: its directory is gone (`ENOENT`), or it is still listed
/// but the thread has exited (`ESRCH`, "No such process").
fn thread_ended(error: &std::io::Error) -> bool {
    const ESRCH: i32 = 3;
    error.kind() == std::io::ErrorKind::NotFound || error.raw_os_error() == Some(ESRCH)
}

/// Whether a thread whose `syscall` file reads `syscall` is parked in a
/// blocking network call.
fn blocked_in(syscall: &str, table: &Syscalls) -> bool {
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

    /// A copy of `/proc/self/task`'s layout: thread `n` with `comm`, and a
    /// `syscall` that is a file with `content`, a directory (which cannot
    /// be read as a file), or missing.
    fn fake_tasks(threads: &[(&str, Option<Option<&str>>)]) -> std::path::PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "census-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        for (n, (name, syscall)) in threads.iter().enumerate() {
            let dir = root.join(n.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("comm"), format!("{name}\n")).unwrap();
            match syscall {
                Some(Some(content)) => std::fs::write(dir.join("syscall"), content).unwrap(),
                Some(None) => std::fs::create_dir(dir.join("syscall")).unwrap(),
                None => {}
            }
        }
        root
    }

    /// Regression: an unreadable `syscall` file counted as "not blocked",
    /// so a test of parked threads passed where it could see nothing.
    #[test]
    fn an_unreadable_syscall_file_is_an_error_not_a_guess() {
        if syscalls().is_none() {
            return;
        }
        let readable = fake_tasks(&[("worker", Some(Some("running"))), ("gone", None)]);
        let census = ThreadCensus::take_from(&readable).unwrap();
        // The thread whose files vanished mid-census is not counted.
        assert_eq!((census.total, census.blocked_in_network_io), (1, 0));
        let unreadable = fake_tasks(&[("worker", Some(Some("running"))), ("hidden", Some(None))]);
        let error = ThreadCensus::take_from(&unreadable).unwrap_err();
        assert!(
            matches!(error, CensusError::SyscallUnreadable { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("syscall"), "{error}");
        for dir in [readable, unreadable] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    /// Regression: names are cut to 15 bytes by the kernel, so a prefix
    /// longer than that never matched.
    #[test]
    fn a_long_name_is_found_by_its_whole_prefix() {
        if !Path::new("/proc/self/task").exists() {
            return;
        }
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let (started, running) = std::sync::mpsc::channel::<()>();
        let parked = std::thread::Builder::new()
            .name("census-a-very-long-thread-name".into())
            .spawn(move || {
                // The name is set as the thread starts, before this runs.
                started.send(()).unwrap();
                let _ = stopped.recv();
            })
            .unwrap();
        running.recv().unwrap();
        let census = ThreadCensus::take().unwrap();
        assert_eq!(
            census.with_prefix("census-a-very-long-thread-name"),
            1,
            "{census:?}"
        );
        assert_eq!(census.with_prefix("census-a-very-l"), 1);
        stop.send(()).unwrap();
        parked.join().unwrap();
    }

    /// Regression: a thread that exited between the listing and the read of
    /// its `syscall` file gives "No such process", which was reported as an
    /// unreadable file, so a census taken while threads end failed.
    #[test]
    fn threads_ending_during_a_census_are_skipped_not_errors() {
        if !Path::new("/proc/self/task").exists() || syscalls().is_none() {
            return;
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn = {
            let stop = stop.clone();
            let named = |name: &str| std::thread::Builder::new().name(name.to_owned());
            named("census-churn")
                .spawn(move || {
                    let mut spawned = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let batch: Vec<_> = (0..8)
                            .map(|_| named("census-brief").spawn(|| ()).unwrap())
                            .collect();
                        for thread in batch {
                            thread.join().unwrap();
                        }
                        spawned += 8;
                    }
                    spawned
                })
                .unwrap()
        };
        let deadline = Instant::now() + Duration::from_millis(1500);
        let mut censuses = 0;
        while Instant::now() < deadline {
            if let Err(error) = ThreadCensus::take() {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                panic!("census {censuses} failed while threads ended: {error}");
            }
            censuses += 1;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let spawned = churn.join().unwrap();
        assert!(
            spawned > 0 && censuses > 0,
            "{spawned} threads, {censuses} censuses"
        );
    }

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
