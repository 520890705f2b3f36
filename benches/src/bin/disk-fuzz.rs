//! `disk-fuzz`: a cache directory damaged at random, opened and loaded
//! from, round after round (see `thumbpipe_benches::disk_fuzz`).
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin disk-fuzz -- --rounds 10000
//! ```
//!
//! Prints the mutations applied, the loads and where they were served
//! from, the most the directory held against its budget, and every
//! failure; exits with status 1 if there was one. `--from` starts at a
//! round (`--from 4711 --rounds 1`: its mutations alone; the pristine
//! directory is made anew each run, on a server of another port, so its
//! files, and which one a mutation hits, differ from run to run).

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use thumbpipe_benches::disk_fuzz::{self, Options};
use thumbpipe_benches::machine;

#[derive(Debug, Parser)]
#[command(about = "Random damage to thumbpipe's disk cache directory")]
struct Args {
    /// Rounds to run.
    #[arg(long, default_value_t = 10_000)]
    rounds: u64,
    /// Seed of the mutations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The first round (with `--rounds 1`, one round replayed alone).
    #[arg(long, default_value_t = 0)]
    from: u64,
    /// Images in the directory.
    #[arg(long, default_value_t = 24)]
    images: u32,
    /// Loads in each round.
    #[arg(long, default_value_t = 8)]
    loads: usize,
    /// Where the directories are made (removed at the end).
    #[arg(long)]
    work: Option<PathBuf>,
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("disk-fuzz: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let options = Options {
        rounds: args.rounds,
        first: args.from,
        seed: args.seed,
        images: args.images,
        loads: args.loads,
        budget_slack: 0,
        work: args.work.unwrap_or_else(|| {
            std::env::temp_dir().join(format!("thumbpipe-disk-fuzz-{}", std::process::id()))
        }),
    };
    println!(
        "{} rounds of {} loads over {} images, seed {}, on {}",
        options.rounds,
        options.loads,
        options.images,
        options.seed,
        machine()
    );
    let bar = ProgressBar::new(options.rounds).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} rounds, {per_sec}, eta {eta} {msg}")
            .context("progress bar template")?,
    );
    let started = std::time::Instant::now();
    let outcome = disk_fuzz::run(&options, |so_far| {
        bar.set_position(so_far.rounds);
        bar.set_message(format!("{} failures", so_far.failures.len()));
    })?;
    bar.finish_and_clear();
    println!("{} rounds in {:.0?}", outcome.rounds, started.elapsed());
    println!("mutations:");
    for (name, count) in &outcome.mutations {
        println!("  {count:>6}  {name}");
    }
    println!(
        "loads: {} asked, {} right; {} from disk, {} from the network; {} damaged entries found",
        outcome.loads,
        outcome.loads_right,
        outcome.from_disk,
        outcome.from_network,
        outcome.corrupt_found
    );
    println!(
        "directory: at most {} bytes after a round, budget {} bytes",
        outcome.peak_bytes, outcome.budget
    );
    for failure in &outcome.failures {
        println!("FAILED {failure}");
    }
    println!("{} failures", outcome.failures.len());
    if !outcome.failures.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}
