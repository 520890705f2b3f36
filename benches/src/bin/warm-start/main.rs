//! `warm-start`: what the disk cache gives a restarted app, what a disk hit
//! costs, and whether the directory keeps its budget and survives a kill.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin warm-start
//! cargo run --release -p thumbpipe-benches --bin warm-start -- --runs 1 --soak-requests 20000
//! ```
//!
//! 1. **Launches.** The demo's 200-row list (`demo-app --headless --script
//!    browse --json`, default config) against `fixture-server` processes at
//!    `--latency-ms`, each launch a fresh process. For 600x600 originals
//!    (the demo's) and 3000x3000 ones: without a disk cache; cold (an empty
//!    directory) then warm (the same directory, images fresh by
//!    `max-age=3600`), with the decoded thumbnails kept on disk (the
//!    default) and with the responses only. Then against a server whose
//!    images are stale at once (`max-age=0`), cold then warm, which
//!    revalidates. For each: the time from the first frame to the first
//!    frame in which every visible row shows its image, what the server was
//!    asked and sent, and the bytes left on disk.
//! 2. **One thumbnail.** One image at a time, in this process, against an
//!    in-process server at 0 ms: a network fetch and decode (no disk cache),
//!    a disk hit (read, check, decode), and a memory hit, for the demo's
//!    600x600 JPEGs and for 4000x3000 ones; and the decode alone.
//! 3. **Soak.** `--soak-requests` requests over `--soak-urls` images
//!    (160x160) with a `--soak-budget-mib` disk budget, from a child
//!    process killed with SIGKILL halfway and started again on the same
//!    directory. The directory's bytes are summed every 100 ms: they must
//!    stay within the budget and one entry. The second child must open the
//!    cache, deliver every image with its own id, and not panic.
//!
//! Writes `warm-start.md` to `--out` and prints it. Exits with status 1 if
//! a target is missed. Each part is its own file: `launches.rs`,
//! `singles.rs`, `soak.rs`.

mod launches;
mod singles;
mod soak;

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;
use thumbpipe_benches::{Targets, machine};

#[derive(Debug, Parser)]
#[command(about = "The disk cache: warm launches, the cost of a disk hit, and a soak with a kill")]
struct Args {
    /// Launches of each kind.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Rows in the demo's list.
    #[arg(long, default_value_t = 200)]
    rows: usize,
    /// The fixture server's latency for the launches.
    #[arg(long, default_value_t = 250)]
    latency_ms: u64,
    /// Images timed one at a time, per kind.
    #[arg(long, default_value_t = 60)]
    singles: u32,
    /// Requests of the soak (0 skips it).
    #[arg(long, default_value_t = 100_000)]
    soak_requests: u64,
    /// Distinct images the soak asks for.
    #[arg(long, default_value_t = 20_000)]
    soak_urls: u32,
    /// The soak's disk budget.
    #[arg(long, default_value_t = 64)]
    soak_budget_mib: u64,
    /// Where to write warm-start.md.
    #[arg(long, default_value = "benches/results")]
    out: PathBuf,
    /// Internal: run as the soak's child, loading into this directory.
    #[arg(long, hide = true)]
    soak_child: Option<PathBuf>,
    /// Internal: the soak child's server.
    #[arg(long, hide = true)]
    soak_server: Option<String>,
    /// Internal: the soak child's first request number (its random seed).
    #[arg(long, hide = true, default_value_t = 0)]
    soak_from: u64,
}

fn main() {
    let args = Args::parse();
    let result = match &args.soak_child {
        Some(dir) => soak::soak_child(&args, dir),
        None => run(&args),
    };
    if let Err(error) = result {
        eprintln!("warm-start: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    let scratch = std::env::temp_dir().join(format!("thumbpipe-warm-start-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).context("cannot create a scratch directory")?;
    let mut report = String::new();
    writeln!(report, "# warm-start: the disk cache\n")?;
    writeln!(
        report,
        "Machine: {}. Command: `cargo run --release -p thumbpipe-benches --bin warm-start`. \
         Default config unless a line says otherwise.\n",
        machine()
    )?;
    let mut targets = Targets::default();
    launches::launches(args, &scratch, &mut report, &mut targets)?;
    singles::singles(args, &scratch, &mut report)?;
    if args.soak_requests > 0 {
        soak::soak(args, &scratch, &mut report, &mut targets)?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    write!(report, "\n{}", targets.summary())?;
    print!("{report}");
    std::fs::create_dir_all(&args.out)?;
    let path = args.out.join("warm-start.md");
    std::fs::write(&path, &report).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    if !targets.all_met() {
        std::process::exit(1);
    }
    Ok(())
}
