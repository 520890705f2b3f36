//! Part 2, one thumbnail: one image at a time, in this process, from the
//! network, from the disk cache and from memory, and its decode alone.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use fixture_server::FixtureServer;
use thumbpipe::{Config, Pipeline, Priority, TargetSize};
use thumbpipe_benches::median_and_range;

use crate::Args;

/// Times one image at a time through `pipeline`: request, then wait for
/// the pipeline's waker (as a UI's next frame would) and drain. Returns
/// the times in milliseconds.
fn one_at_a_time(pipeline: &mut Pipeline<u32>, urls: &[String]) -> anyhow::Result<Vec<f64>> {
    let (wake, woken) = std::sync::mpsc::channel();
    let wake = std::sync::Mutex::new(wake);
    pipeline.set_waker(move || {
        if let Ok(wake) = wake.lock() {
            let _ = wake.send(());
        }
    });
    let mut times = Vec::with_capacity(urls.len());
    for url in urls {
        while woken.try_recv().is_ok() {}
        let started = Instant::now();
        pipeline.request(0, url, TargetSize::square(64), Priority::Visible);
        let deadline = started + Duration::from_secs(30);
        let done = loop {
            if let Some(done) = pipeline.drain().pop() {
                break done;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("{url} did not arrive in 30 s");
            }
            let _ = woken.recv_timeout(left);
        };
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        done.result.with_context(|| format!("loading {url}"))?;
        // A new request each time, not the row's current one.
        pipeline.cancel_row(&0);
    }
    Ok(times)
}

pub(crate) fn singles(args: &Args, scratch: &Path, report: &mut String) -> anyhow::Result<()> {
    let server = FixtureServer::start_dedicated(fixture_server::Config {
        latency: Duration::ZERO,
        max_age: Some(Duration::from_secs(3600)),
        ..fixture_server::Config::default()
    })?;
    writeln!(
        report,
        "## One thumbnail: network, disk, memory\n\n\
         One image at a time to 64x64 (request, then drain until it arrives; the pipeline's \
         own threads do the work), {} images of each size, against an in-process server at \
         0 ms. Milliseconds, median (range).\n",
        args.singles
    )?;
    writeln!(
        report,
        "| original | network at 0 ms: fetch + decode | disk, responses only: read + check + decode | disk, thumbnail kept: read + check | memory hit | decode alone | original bytes |"
    )?;
    writeln!(report, "|---|---|---|---|---|---|---|")?;
    for (label, query, offset) in [
        ("600x600 JPEG (the demo's)", "", 0),
        ("4000x3000 JPEG", "?w=4000&h=3000", 1000),
    ] {
        eprintln!("one thumbnail: {label}");
        let urls: Vec<String> = (0..args.singles)
            .map(|i| format!("{}{query}", server.image_url(offset + i)))
            .collect();
        let other: Vec<String> = (0..args.singles)
            .map(|i| format!("{}{query}", server.image_url(offset + 500 + i)))
            .collect();
        // The server draws an image the first time it is asked and keeps
        // it, up to 1 megapixel: ask once before timing, so that drawing
        // the small ones is not counted. Larger ones are drawn for every
        // request, and the network column includes it.
        for url in urls.iter().chain(&other) {
            fixture_server::blocking_client::get(url).map_err(anyhow::Error::msg)?;
        }
        let mut network = Pipeline::<u32>::new(Config::default())?;
        one_at_a_time(&mut network, &other[..2])?; // a connection, warm code
        let mut network_ms = one_at_a_time(&mut network, &urls)?;
        drop(network);

        let dir = scratch.join(format!("singles-{offset}"));
        let mut config = Config::default();
        config.disk.dir = Some(dir.clone());
        let mut filling = Pipeline::<u32>::new(config.clone())?;
        one_at_a_time(&mut filling, &urls)?;
        one_at_a_time(&mut filling, &other[..2])?;
        // Each image's response and its thumbnail.
        let written = || filling.stats().disk.written >= 2 * (u64::from(args.singles) + 2);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !written() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(filling);
        let mut responses = config.clone();
        responses.disk.thumbnails = false;
        let mut warm = Pipeline::<u32>::new(responses)?;
        one_at_a_time(&mut warm, &other[..2])?;
        let mut disk_ms = one_at_a_time(&mut warm, &urls)?;
        let hits = warm.stats().disk.hits;
        if hits < u64::from(args.singles) {
            bail!("only {hits} of {} disk reads were hits", args.singles);
        }
        drop(warm);
        let mut warm = Pipeline::<u32>::new(config)?;
        one_at_a_time(&mut warm, &other[..2])?;
        let mut thumbnail_ms = one_at_a_time(&mut warm, &urls)?;
        let hits = warm.stats().disk.thumbnail_hits;
        if hits < u64::from(args.singles) {
            bail!("only {hits} of {} thumbnail reads were hits", args.singles);
        }
        let mut memory_ms = one_at_a_time(&mut warm, &urls)?;
        drop(warm);

        let mut decode_ms = Vec::new();
        let mut sizes = Vec::new();
        for url in &urls {
            let bytes = fixture_server::blocking_client::get(url).map_err(anyhow::Error::msg)?;
            sizes.push(bytes.len() as f64);
            let started = Instant::now();
            thumbpipe::thumbnail_from_bytes(
                url,
                &bytes,
                TargetSize::square(64),
                &Config::default().decode,
            )?;
            decode_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let cell = |values: &mut Vec<f64>| {
            median_and_range(values).map_or("-".to_owned(), |(m, lo, hi)| {
                format!("{m:.3} ({lo:.3}-{hi:.3})")
            })
        };
        let size = median_and_range(&mut sizes).map_or(0.0, |(m, _, _)| m);
        writeln!(
            report,
            "| {label} | {} | {} | {} | {} | {} | {:.0} KB |",
            cell(&mut network_ms),
            cell(&mut disk_ms),
            cell(&mut thumbnail_ms),
            cell(&mut memory_ms),
            cell(&mut decode_ms),
            size / 1000.0
        )?;
    }
    writeln!(report)?;
    Ok(())
}
