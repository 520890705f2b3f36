//! Part 3, the soak: a child process loads many images into a disk cache
//! with a small budget, is killed halfway and started again on the same
//! directory; the directory's bytes are watched throughout.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use thumbpipe::{Config, Pipeline, Priority, TargetSize};
use thumbpipe_benches::{ServerProcess, Targets};

use crate::Args;

/// What a soak child prints, one JSON object a line.
#[derive(Debug, Serialize, Deserialize)]
struct Progress {
    done: u64,
    wrong: u64,
    failed: u64,
    disk_thumbnail_hits: u64,
    disk_hits: u64,
    disk_misses: u64,
    disk_corrupt: u64,
    disk_errors: u64,
    disk_evicted: u64,
    disk_bytes: u64,
    largest_body: u64,
}

/// The soak's child: loads `--soak-requests` random images (from
/// `--soak-urls`) into the cache at `dir`, 64 rows at a time, checking
/// every image's id, and prints its progress every 1,000 requests.
pub(crate) fn soak_child(args: &Args, dir: &Path) -> anyhow::Result<()> {
    let base = args.soak_server.as_deref().context("--soak-server")?;
    let mut config = Config::default();
    config.disk.dir = Some(dir.to_path_buf());
    config.disk.max_bytes = args.soak_budget_mib << 20;
    // A small memory cache, so that repeats go to the disk.
    config.cache.max_entries = 16;
    let mut pipeline = Pipeline::<u32>::new(config)?;
    let mut state = args.soak_from.wrapping_add(1);
    let mut progress = Progress {
        done: 0,
        wrong: 0,
        failed: 0,
        disk_thumbnail_hits: 0,
        disk_hits: 0,
        disk_misses: 0,
        disk_corrupt: 0,
        disk_errors: 0,
        disk_evicted: 0,
        disk_bytes: 0,
        largest_body: 0,
    };
    let mut ids = std::collections::HashMap::new();
    while progress.done < args.soak_requests {
        let batch = (args.soak_requests - progress.done).min(64) as u32;
        for row in 0..batch {
            let id = (fixture_server::splitmix64(&mut state) % u64::from(args.soak_urls)) as u32;
            let url = format!("{base}/img/{id}.jpg?w=160&h=160");
            pipeline.request(row, &url, TargetSize::square(64), Priority::Visible);
            ids.insert(row, id);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut arrived = 0;
        while arrived < batch {
            for done in pipeline.drain() {
                arrived += 1;
                match done.result {
                    Ok(thumbnail) => {
                        let id = fixture_server::decode_id(
                            &thumbnail.pixels,
                            thumbnail.width,
                            thumbnail.height,
                        );
                        if id != ids.get(&done.row).copied() {
                            progress.wrong += 1;
                        }
                    }
                    Err(_) => progress.failed += 1,
                }
            }
            if Instant::now() > deadline {
                bail!("a batch did not finish in 60 s");
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        pipeline.end_frame();
        pipeline.end_frame();
        let before = progress.done;
        progress.done += u64::from(batch);
        if progress.done / 1000 != before / 1000 || progress.done == args.soak_requests {
            let disk = pipeline.stats().disk;
            progress.disk_thumbnail_hits = disk.thumbnail_hits;
            progress.disk_hits = disk.hits;
            progress.disk_misses = disk.misses;
            progress.disk_corrupt = disk.corrupt;
            progress.disk_errors = disk.errors;
            progress.disk_evicted = disk.evicted;
            progress.disk_bytes = disk.bytes;
            println!("{}", serde_json::to_string(&progress)?);
        }
    }
    Ok(())
}

/// Bytes of the files under `dir` (apparent sizes), and the largest.
pub(crate) fn bytes_under(dir: &Path) -> (u64, u64) {
    let (mut total, mut largest) = (0, 0);
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                total += metadata.len();
                largest = largest.max(metadata.len());
            }
        }
    }
    (total, largest)
}

pub(crate) fn soak(
    args: &Args,
    scratch: &Path,
    report: &mut String,
    targets: &mut Targets,
) -> anyhow::Result<()> {
    let server = ServerProcess::fixture_server(&[
        "--latency-ms".into(),
        "0".into(),
        "--max-age".into(),
        "3600".into(),
    ])?;
    let dir = scratch.join("soak");
    let budget = args.soak_budget_mib << 20;
    // Sums the directory every 100 ms while the children run, each time
    // with the child stopped (SIGSTOP), so that the sum is of one moment:
    // summed while files are renamed and removed, a walk counts some twice.
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let largest = Arc::new(AtomicU64::new(0));
    let running = Arc::new(AtomicU32::new(0));
    let samples = Arc::new(AtomicU64::new(0));
    let watcher = {
        let (dir, stop, peak, largest, running, samples) = (
            dir.clone(),
            Arc::clone(&stop),
            Arc::clone(&peak),
            Arc::clone(&largest),
            Arc::clone(&running),
            Arc::clone(&samples),
        );
        std::thread::Builder::new()
            .name("soak-watcher".into())
            .spawn(move || {
                let signal = |signal: &str, pid: u32| {
                    Command::new("kill")
                        .args([signal, &pid.to_string()])
                        .status()
                        .is_ok_and(|status| status.success())
                };
                while !stop.load(Ordering::Relaxed) {
                    let pid = running.load(Ordering::Relaxed);
                    if pid != 0 && signal("-STOP", pid) {
                        let (total, big) = bytes_under(&dir);
                        signal("-CONT", pid);
                        peak.fetch_max(total, Ordering::Relaxed);
                        largest.fetch_max(big, Ordering::Relaxed);
                        samples.fetch_add(1, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })?
    };
    let exe = std::env::current_exe()?;
    let child = |from: u64, requests: u64| -> anyhow::Result<std::process::Child> {
        Command::new(&exe)
            .arg("--soak-child")
            .arg(&dir)
            .args(["--soak-server", server.base_url()])
            .args(["--soak-from", &from.to_string()])
            .args(["--soak-requests", &requests.to_string()])
            .args(["--soak-urls", &args.soak_urls.to_string()])
            .args(["--soak-budget-mib", &args.soak_budget_mib.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .context("could not start the soak child")
    };
    let read_progress = |line: std::io::Result<String>| -> Option<Progress> {
        serde_json::from_str(&line.ok()?).ok()
    };

    let half = args.soak_requests / 2;
    eprintln!("soak: first child, killed after {half} requests");
    let started = Instant::now();
    let mut first = child(0, args.soak_requests)?;
    running.store(first.id(), Ordering::Relaxed);
    let mut killed_at = None;
    let stdout = first.stdout.take().context("no stdout")?;
    for progress in BufReader::new(stdout).lines().map_while(&read_progress) {
        if progress.done >= half {
            running.store(0, Ordering::Relaxed);
            first.kill()?; // SIGKILL
            killed_at = Some(progress);
            break;
        }
    }
    let status = first.wait()?;
    let first_took = started.elapsed();
    let killed_at = killed_at.context("the first soak child ended before it was killed")?;
    let (at_kill, _) = bytes_under(&dir);

    let rest = args.soak_requests - killed_at.done;
    eprintln!("soak: second child, {rest} requests on the same directory");
    let started = Instant::now();
    let mut second = child(killed_at.done, rest)?;
    running.store(second.id(), Ordering::Relaxed);
    let stdout = second.stdout.take().context("no stdout")?;
    let last = BufReader::new(stdout)
        .lines()
        .map_while(&read_progress)
        .last();
    running.store(0, Ordering::Relaxed);
    let second_status = second.wait()?;
    let second_took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    let (at_end, _) = bytes_under(&dir);
    let peak = peak.load(Ordering::Relaxed);
    let largest = largest.load(Ordering::Relaxed);
    let last = last.context("the second soak child printed nothing")?;

    writeln!(
        report,
        "## Soak: {} requests over {} images, {} MiB budget, killed halfway\n\n\
         Images 160x160 JPEG at 0 ms, to 64x64 thumbnails (kept on disk too: 16 KB of RGBA \
         each, beside the 5-6 KB response), 64 rows at a time, ids checked. Non-default: the memory \
         cache holds 16 thumbnails (`cache.max_entries = 16`), so that repeats go to the disk. \
         The directory's bytes (apparent sizes of every file: bodies, index, temporary files) \
         summed every 100 ms with the child stopped (SIGSTOP), so that each sum is of one \
         moment.\n",
        args.soak_requests, args.soak_urls, args.soak_budget_mib
    )?;
    writeln!(
        report,
        "| child | requests | took | wrong ids | failed | thumbnails from disk | images from disk | from the network | evicted | corrupt | errors | exit |"
    )?;
    writeln!(report, "|---|---|---|---|---|---|---|---|---|---|---|---|")?;
    for (name, progress, took, status) in [
        (
            "first (SIGKILL)",
            &killed_at,
            first_took,
            status.to_string(),
        ),
        (
            "second (reopened)",
            &last,
            second_took,
            second_status.to_string(),
        ),
    ] {
        writeln!(
            report,
            "| {name} | {} | {:.1} s | {} | {} | {} | {} | {} | {} | {} | {} | {status} |",
            progress.done,
            took.as_secs_f64(),
            progress.wrong,
            progress.failed,
            progress.disk_thumbnail_hits,
            progress.disk_hits,
            progress.disk_misses,
            progress.disk_evicted,
            progress.disk_corrupt,
            progress.disk_errors,
        )?;
    }
    let mib = |bytes: u64| bytes as f64 / f64::from(1 << 20);
    // One entry: its body and an index file of a few lines.
    let allowed = budget + largest + 4096;
    writeln!(
        report,
        "\nDirectory: peak {:.2} MiB over {} samples (budget {} MiB, largest file {:.1} KiB), \
         {:.2} MiB at the kill, {:.2} MiB at the end; the ledger's count at the end: {:.2} MiB. \
         Peak {peak} bytes against {budget} + one entry = {allowed}.\n",
        mib(peak),
        samples.load(Ordering::Relaxed),
        args.soak_budget_mib,
        largest as f64 / 1024.0,
        mib(at_kill),
        mib(at_end),
        mib(last.disk_bytes),
    )?;
    targets.group(format!(
        "Targets for the soak ({} requests, a {} MiB budget, a kill halfway)",
        args.soak_requests, args.soak_budget_mib
    ));
    targets.check(
        "the directory stays within the budget and one entry",
        peak <= allowed,
        format!("peak {:.2} MiB against {:.2} MiB", mib(peak), mib(allowed)),
    );
    targets.check(
        "the reopened child opens the cache and finishes every request",
        second_status.success() && last.done == rest,
        format!("{second_status} after {} of {rest} requests", last.done),
    );
    let wrong = killed_at.wrong + last.wrong;
    targets.check("0 images with another id", wrong == 0, format!("{wrong}"));
    writeln!(report, "{}", targets.table("##"))?;
    Ok(())
}
