//! The scripted flick, headless, in each mode that proves something: the
//! pipeline shows no wrong image and parks no thread; the naive loader does
//! show wrong images, so the detector sees real mismatches.

// A failure anywhere here is a test failure.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use serde_json::Value;

const KEYS: [&str; 26] = [
    "mode",
    "rows",
    "latency_ms",
    "refresh_ms",
    "flick_s",
    "frames",
    "frame_ms_p50",
    "frame_ms_p99",
    "frame_ms_max",
    "stalls_over_50ms",
    "stall_total_ms",
    "baseline_threads",
    "peak_threads",
    "peak_blocked_io_threads",
    "rss_start_mb",
    "rss_peak_mb",
    "requests_completed",
    "requests_cancelled",
    "requests_failed",
    "requests_abandoned",
    "server_completed",
    "server_aborted",
    "images_shown",
    "wrong_row_images",
    "tail_after_stop_ms",
    "frame_ms",
];

/// Runs a headless flick over 40 rows at 50 ms with a 400 ms refresh and
/// returns its report, the last line of stdout.
fn flick(mode: &str) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_demo-app"))
        .args([
            "--headless",
            "--script",
            "flick",
            "--json",
            "--rows",
            "40",
            "--latency-ms",
            "50",
            "--refresh-ms",
            "400",
            "--mode",
            mode,
        ])
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
fn pipeline_shows_no_wrong_image_cancels_and_parks_no_thread() {
    let report = flick("pipeline");
    for key in KEYS {
        assert!(report.get(key).is_some(), "report lacks {key}: {report}");
    }
    assert_eq!(report["mode"], "pipeline");
    assert_eq!(report["rows"], 40);
    assert_eq!(report["frames"], 88);
    assert_eq!(report["frame_ms"].as_array().map(Vec::len), Some(88));
    assert!(report["images_shown"].as_u64().unwrap() >= 40, "{report}");
    assert_eq!(report["wrong_row_images"], 0, "{report}");
    assert!(
        report["requests_cancelled"].as_u64().unwrap() > 0,
        "{report}"
    );
    assert_eq!(report["peak_blocked_io_threads"], 0, "{report}");
}

#[test]
fn naive_shows_wrong_images_and_parks_threads() {
    let report = flick("naive");
    assert_eq!(report["mode"], "naive");
    assert!(report["wrong_row_images"].as_u64().unwrap() > 0, "{report}");
    assert!(
        report["peak_blocked_io_threads"].as_u64().unwrap() > 0,
        "{report}"
    );
    assert_eq!(report["requests_cancelled"], 0);
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
