//! The scripts, headless, in each mode that proves something: thumbpipe's
//! two modes show no wrong image, park no thread, and bring rows already
//! seen back without a placeholder; the naive loader does show wrong
//! images, so the detector sees real mismatches.

// A failure anywhere here is a test failure.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use fixture_server::RunReport;

/// Runs a headless flick over 40 rows at 50 ms with a 400 ms refresh and
/// returns its report, the last line of stdout.
fn flick(mode: &str) -> RunReport {
    demo(&["--script", "flick", "--refresh-ms", "400", "--mode", mode])
}

/// Runs the demo headless over 40 rows at 50 ms with `args`; returns its
/// report.
fn demo(args: &[&str]) -> RunReport {
    demo_over(40, args)
}

/// Runs the demo headless over `rows` rows at 50 ms with `args`; returns
/// its report, read as the report binaries read it.
fn demo_over(rows: usize, args: &[&str]) -> RunReport {
    let output = Command::new(env!("CARGO_BIN_EXE_demo-app"))
        .args(["--headless", "--json", "--latency-ms", "50"])
        .args(["--rows", &rows.to_string()])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "demo-app failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last:?}"))
}

#[test]
fn thumbpipes_modes_show_no_wrong_image_cancel_and_park_no_thread() {
    for mode in ["pipeline", "egui-image"] {
        let report = flick(mode);
        assert_eq!(report.mode, mode);
        assert_eq!(report.rows, 40);
        assert_eq!(report.frames, 88);
        assert_eq!(report.frame_ms.len(), 88);
        assert!(report.images_shown >= 40, "{report:?}");
        assert_eq!(report.wrong_row_images, Some(0), "{report:?}");
        assert!(report.requests_cancelled > 0, "{report:?}");
        assert_eq!(report.peak_blocked_io_threads, 0, "{report:?}");
        assert!(report.texture_bytes_peak.unwrap() <= 32 * 1024 * 1024);
    }
}

/// 30 s of flings in real time, the longest test of the workspace: CI
/// leaves it to `scroll-report --fling-only`, which runs the same script
/// in release and fails on a wrong row or a late settle. `cargo test -p
/// demo-app -- --ignored` runs it.
#[test]
#[ignore = "30 s in real time; scroll-report --fling-only checks the same"]
fn flinging_coasts_four_times_through_egui_and_every_resting_row_shows_its_image() {
    // 200 rows, so that no fling reaches an end of the list.
    let report = demo_over(200, &["--script", "fling", "--mode", "pipeline"]);
    assert_eq!(report.script, "fling");
    assert_eq!(report.coast_prediction, Some(true));
    assert_eq!(report.wrong_row_images, Some(0), "{report:?}");
    let flings = report.flings.as_deref().unwrap();
    let speeds = [2500.0, 5000.0, 12_000.0, -9000.0];
    assert_eq!(flings.len(), speeds.len(), "{report:?}");
    for (fling, speed) in flings.iter().zip(speeds) {
        assert_eq!(fling.drag_speed, speed);
        // egui measured the drag's speed: the pointer follows its clock.
        let velocity = fling.release_velocity;
        assert!((velocity / speed - 1.0).abs() < 0.1, "{fling:?}");
        // It coasted: half a second of velocity, in the drag's direction.
        let expected = velocity * 0.5;
        assert!((fling.distance / expected - 1.0).abs() < 0.05, "{fling:?}");
        assert!(fling.coast_ms > 2000.0, "{fling:?}");
        assert_eq!(fling.settle_ms, Some(0.0), "{fling:?}");
        if speed > 0.0 {
            assert!(fling.requests > 0, "rows never seen: {fling:?}");
        }
    }
}

#[test]
fn browsing_back_shows_every_row_already_seen_without_a_placeholder() {
    // A browse runs 18 s of real time, mostly waiting: both modes at once.
    let reports = std::thread::scope(|scope| {
        let runs: Vec<_> = ["egui-image", "pipeline"]
            .map(|mode| scope.spawn(move || demo(&["--script", "browse", "--mode", mode])))
            .into_iter()
            .collect();
        runs.into_iter()
            .map(|run| run.join().unwrap())
            .collect::<Vec<_>>()
    });
    for report in reports {
        assert_eq!(report.script, "browse");
        assert_eq!(report.placeholder_row_frames_back, Some(0), "{report:?}");
        assert!(report.settle_ms.is_some(), "{report:?}");
        assert_eq!(report.wrong_row_images, Some(0), "{report:?}");
    }
}

#[test]
fn a_url_list_of_the_users_is_loaded_and_wrong_rows_are_unknown() {
    let server = fixture_server::FixtureServer::start_dedicated(Default::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("demo-urls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let list = dir.join("urls.txt");
    let urls: Vec<String> = (0..3).map(|id| server.image_url(id)).collect();
    std::fs::write(&list, format!("# mine\n{}\n\n", urls.join("\n"))).unwrap();
    let report = demo(&[
        "--script",
        "flick",
        "--mode",
        "pipeline",
        "--urls",
        list.to_str().unwrap(),
    ]);
    assert!(report.images_shown > 0, "{report:?}");
    assert_eq!(report.wrong_row_images, None, "{report:?}");
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "\n# nothing\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_demo-app"))
        .args([
            "--headless",
            "--script",
            "flick",
            "--urls",
            empty.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("has no URLs"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn naive_shows_wrong_images_and_parks_threads() {
    let report = flick("naive");
    assert_eq!(report.mode, "naive");
    assert!(report.wrong_row_images.unwrap() > 0, "{report:?}");
    assert!(report.peak_blocked_io_threads > 0, "{report:?}");
    assert_eq!(report.requests_cancelled, 0);
}

#[test]
fn bad_arguments_are_refused_with_a_reason() {
    let output = Command::new(env!("CARGO_BIN_EXE_demo-app"))
        .args(["--headless", "--json"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--script flick"));
    let output = Command::new(env!("CARGO_BIN_EXE_demo-app"))
        .args(["--headless", "--script", "flick", "--screenshot", "x.png"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("needs a window"));
}
