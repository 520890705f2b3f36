//! Part 1, the launches: the demo's list in fresh processes, without a
//! disk cache, cold and warm, with thumbnails on disk or not, and against
//! a server whose images are stale at once.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use fixture_server::{DiskReport, RunReport};
use thumbpipe_benches::runs::demo_report;
use thumbpipe_benches::{ServerProcess, Targets, median_and_range, workspace_binary};

use crate::Args;
use crate::soak::bytes_under;

/// One kind of launch, and what its runs measured.
struct Launch {
    name: String,
    /// Which server: an index into the run's servers.
    server: usize,
    /// The disk cache's directory, by name; `None` runs without one.
    dir: Option<String>,
    thumbnails: bool,
    reports: Vec<RunReport>,
}

/// The servers a run starts: (max-age, image side).
const SERVERS: [(u64, u32); 3] = [(3600, 600), (3600, 3000), (0, 600)];

/// The launch kinds, in the order they run (each cold launch before the
/// warm one on its directory), and which of them the targets are about.
struct Kinds {
    all: Vec<Launch>,
    /// The demo's list, default config, warm and fresh.
    warm_fresh: usize,
    /// The warm launch against the server whose images are stale at once.
    warm_stale: usize,
}

fn launch_kinds() -> Kinds {
    let mut all = Vec::new();
    let mut add = |name: String, server: usize, dir: Option<String>, thumbnails: bool| {
        all.push(Launch {
            name,
            server,
            dir,
            thumbnails,
            reports: Vec::new(),
        });
        all.len() - 1
    };
    let mut warm_fresh = 0;
    for (server, side) in [(0, 600), (1, 3000)] {
        add(format!("{side}²: no disk cache"), server, None, true);
        for (thumbnails, what) in [
            (true, "with thumbnails (default)"),
            (false, "responses only"),
        ] {
            let dir = Some(format!("{side}-{thumbnails}"));
            add(
                format!("{side}²: cold, {what}"),
                server,
                dir.clone(),
                thumbnails,
            );
            let warm = add(
                format!("{side}²: **warm**, {what}"),
                server,
                dir,
                thumbnails,
            );
            if side == 600 && thumbnails {
                warm_fresh = warm;
            }
        }
    }
    let dir = Some("stale".to_owned());
    add("600², max-age=0: cold".into(), 2, dir.clone(), true);
    let warm_stale = add(
        "600², max-age=0: **warm, revalidated**".into(),
        2,
        dir,
        true,
    );
    Kinds {
        all,
        warm_fresh,
        warm_stale,
    }
}

pub(crate) fn launches(
    args: &Args,
    scratch: &Path,
    report: &mut String,
    targets: &mut Targets,
) -> anyhow::Result<()> {
    let demo = workspace_binary("demo-app", "demo-app")?;
    let run_demo = |server: &ServerProcess, launch: &Launch, dir: Option<&Path>| {
        let mut command = Command::new(&demo);
        command.args([
            "--headless",
            "--script",
            "browse",
            "--json",
            "--mode",
            "pipeline",
            "--rows",
            &args.rows.to_string(),
            "--server",
            server.base_url(),
            "--disk-thumbnails",
            if launch.thumbnails { "on" } else { "off" },
        ]);
        if let Some(dir) = dir {
            command.arg("--disk-cache").arg(dir);
        }
        demo_report(&mut command, "demo-app")
    };
    let Kinds {
        all: mut kinds,
        warm_fresh,
        warm_stale,
    } = launch_kinds();
    let mut bytes_on_disk = std::collections::BTreeMap::new();
    for run in 0..args.runs {
        eprintln!("launches: run {} of {}", run + 1, args.runs);
        let servers = SERVERS
            .iter()
            .map(|(max_age, side)| {
                ServerProcess::fixture_server(&[
                    "--latency-ms".into(),
                    args.latency_ms.to_string(),
                    "--max-age".into(),
                    max_age.to_string(),
                    "--size".into(),
                    side.to_string(),
                ])
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        for kind in &mut kinds {
            let dir = kind
                .dir
                .as_ref()
                .map(|dir| scratch.join(format!("launch-{run}-{dir}")));
            let launched = run_demo(&servers[kind.server], kind, dir.as_deref())?;
            kind.reports.push(launched);
            if let Some(dir) = &dir {
                bytes_on_disk.insert(kind.name.clone(), bytes_under(dir).0);
            }
        }
    }

    writeln!(
        report,
        "## Launches: the demo's {}-row list at {} ms\n\n\
         `demo-app --headless --script browse --json --mode pipeline --server URL [--disk-cache DIR] \
         [--disk-thumbnails off]`, {} runs of each, each a fresh process; the whole run (first \
         screen, three screens down at a row every 250 ms, back) is counted at the server. The \
         server's images are 600x600 JPEGs (the demo's; 21-25 KB) or 3000x3000 ones (`--size \
         3000`; about 300 KB, a photo library's originals). First screen: from the first frame \
         that drew the list to the first in which every visible row showed its image. Counts \
         are per run, separated by `/`; bytes on disk after the last run.\n",
        args.rows, args.latency_ms, args.runs
    )?;
    writeln!(
        report,
        "| launch | first screen, ms: median (range) | requests by then | requests in all | 304s | image bodies | thumbnails from disk | images from disk | revalidated | from the network | bytes on disk |"
    )?;
    writeln!(report, "|---|---|---|---|---|---|---|---|---|---|---|")?;
    for kind in &kinds {
        let mut first: Vec<f64> = kind
            .reports
            .iter()
            .filter_map(|r| r.first_screen_ms)
            .collect();
        let never = kind.reports.len() - first.len();
        let mut first = median_and_range(&mut first).map_or("never".to_owned(), |(m, lo, hi)| {
            format!("{m:.0} ({lo:.0}-{hi:.0})")
        });
        if never > 0 && first != "never" {
            write!(first, "; never in {never} runs")?;
        }
        let per_run = |f: &dyn Fn(&RunReport) -> u64| -> String {
            let values: Vec<String> = kind.reports.iter().map(|r| f(r).to_string()).collect();
            values.join(" / ")
        };
        let disk = |f: &dyn Fn(&DiskReport) -> u64| -> String {
            let values: Vec<String> = kind
                .reports
                .iter()
                .map(|r| r.disk.as_ref().map_or("-".to_owned(), |d| f(d).to_string()))
                .collect();
            values.join(" / ")
        };
        let bytes = bytes_on_disk
            .get(&kind.name)
            .map_or("-".to_owned(), |b| format!("{:.2} MB", *b as f64 / 1e6));
        writeln!(
            report,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            kind.name,
            first,
            per_run(&|r| r.server_requests_at_first_screen.unwrap_or(0)),
            per_run(&|r| r.server_requests),
            per_run(&|r| r.server_not_modified),
            per_run(&|r| r.server_image_bodies),
            disk(&|d| d.thumbnail_hits),
            disk(&|d| d.hits),
            disk(&|d| d.revalidated),
            disk(&|d| d.misses),
            bytes,
        )?;
    }
    let wrong: u64 = kinds
        .iter()
        .flat_map(|kind| &kind.reports)
        // The fixture's images carry ids: an unknown count cannot pass
        // for zero.
        .map(|r| r.wrong_row_images.unwrap_or(u64::MAX))
        .fold(0, u64::saturating_add);
    writeln!(
        report,
        "\nWrong-row images in every launch together: {wrong}.\n"
    )?;

    let warm = &kinds[warm_fresh].reports;
    let worst_first = warm
        .iter()
        .map(|r| r.first_screen_ms.unwrap_or(f64::INFINITY))
        .fold(0.0, f64::max);
    // Requests for images the cold launch left on disk: by the first
    // screen, and image bodies and disk misses over the whole run (a row
    // whose cold load was cancelled while scrolling is not on disk, and is
    // requested).
    let early: u64 = warm
        .iter()
        .map(|r| r.server_requests_at_first_screen.unwrap_or(u64::MAX))
        .fold(0, u64::saturating_add);
    let fetched_again: u64 = warm
        .iter()
        .map(|r| r.server_image_bodies + r.disk.as_ref().map_or(0, |d| d.misses))
        .sum();
    let requests: u64 = warm.iter().map(|r| r.server_requests).sum();
    let bodies: u64 = kinds[warm_stale]
        .reports
        .iter()
        .map(|r| r.server_image_bodies)
        .sum();
    targets.group("Targets for the launches (the demo's 600x600 list, default config)");
    targets.check(
        "a warm launch with fresh entries asks for none of them by its first screen",
        early == 0,
        format!("{early} requests by the first screen"),
    );
    targets.check(
        "a warm launch with fresh entries fetches none of them again",
        fetched_again == 0,
        format!(
            "{fetched_again} image bodies or disk misses; {requests} requests in all, for rows \
             whose cold load was cancelled while scrolling and so never written"
        ),
    );
    targets.check(
        "a warm launch shows its first screen within 50 ms",
        worst_first <= 50.0,
        format!("slowest {worst_first:.0} ms"),
    );
    targets.check(
        "a stale warm launch gets 304s only",
        bodies == 0,
        format!("{bodies} image bodies sent"),
    );
    targets.check("0 wrong-row images", wrong == 0, format!("{wrong}"));
    writeln!(report, "{}", targets.table("##"))?;
    Ok(())
}
