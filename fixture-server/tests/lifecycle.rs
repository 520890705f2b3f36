//! Starting and stopping: the dedicated runtime's threads are named and
//! joined, shutdown does not wait on hung requests forever, and the binary
//! prints its address first.

// Test helpers outside #[test] functions unwrap too: a failure is a test failure.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::client;
use fixture_server::{Config, FixtureServer, THREAD_PREFIX};

/// Names of this process's threads, from `/proc/self/task/*/comm`.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
                .map(|name| name.trim().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn fixture_threads() -> usize {
    thread_names()
        .iter()
        .filter(|name| name.starts_with(THREAD_PREFIX))
        .count()
}

// No other test in this file starts a dedicated server, so the census sees
// only this one.
#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "counts threads by name: needs Linux's /proc/self/task"
)]
fn a_dedicated_server_names_its_threads_and_joins_them_on_drop() {
    assert_eq!(fixture_threads(), 0);
    let server = FixtureServer::start_dedicated(Config {
        latency: Duration::from_millis(10),
        ..Config::default()
    })
    .unwrap();
    let url = server.image_url(12);
    let body = std::thread::Builder::new()
        .name("test-client".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async { client().get(url).send().await?.bytes().await })
        })
        .unwrap()
        .join()
        .unwrap()
        .unwrap();
    assert_eq!(common::id_in(&body), Some(12));
    let running = fixture_threads();
    assert!(
        (fixture_server::DEDICATED_WORKERS
            ..=fixture_server::DEDICATED_WORKERS + fixture_server::DEDICATED_BLOCKING)
            .contains(&running),
        "{running} fixture threads: {:?}",
        thread_names()
    );
    drop(server);
    assert_eq!(fixture_threads(), 0, "left behind: {:?}", thread_names());
}

#[tokio::test]
async fn shutdown_closes_hung_requests_after_the_grace_period() {
    let server = FixtureServer::start(Config {
        latency: Duration::ZERO,
        shutdown_grace: Duration::from_millis(200),
        ..Config::default()
    })
    .await
    .unwrap();
    let url = format!("{}?fault=hang", server.image_url(1));
    let hung = tokio::spawn(async move { client().get(url).send().await });
    common::stats_when(&server, |s| s.in_flight == 1).await;
    let stopping = std::time::Instant::now();
    server.shutdown().await;
    // The request in flight was given the grace period, no less.
    let took = stopping.elapsed();
    assert!(took >= Duration::from_millis(200), "{took:?}");
    // Then its connection was closed: its client sees an error, not a
    // response and not a hang.
    let outcome = tokio::time::timeout(Duration::from_secs(5), hung)
        .await
        .unwrap()
        .unwrap();
    assert!(outcome.is_err(), "{outcome:?}");
}

#[tokio::test]
async fn shutdown_finishes_requests_already_waiting() {
    let server = common::server_with_latency(Duration::from_millis(50)).await;
    let url = server.image_url(8);
    let waiting = tokio::spawn(async move { client().get(url).send().await?.bytes().await });
    common::stats_when(&server, |s| s.in_flight == 1).await;
    server.shutdown().await;
    let body = waiting
        .await
        .unwrap()
        .expect("a request within the grace period completes");
    assert_eq!(common::id_in(&body), Some(8));
}

#[test]
fn the_binary_prints_its_address_first_and_serves() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fixture-server"))
        .args(["--port", "0", "--latency-ms", "5", "--fault", "404:0.0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let base = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{first}"));
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = runtime.block_on(async {
        client()
            .get(format!("{base}/img/77.jpg"))
            .send()
            .await?
            .bytes()
            .await
    });
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(common::id_in(&body.unwrap()), Some(77));
}

#[test]
fn the_binary_documents_every_option_and_refuses_bad_ones() {
    let help = Command::new(env!("CARGO_BIN_EXE_fixture-server"))
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8(help.stdout).unwrap();
    for option in [
        "--port",
        "--bind",
        "--latency-ms",
        "--jitter-ms",
        "--fault",
        "--size",
        "--jpeg-quality",
        "--seed",
        "--workers",
    ] {
        assert!(text.contains(option), "--help lacks {option}:\n{text}");
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_fixture-server"))
        .args(["--fault", "teapot:0.5"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown fault 'teapot'"));
    let too_much = Command::new(env!("CARGO_BIN_EXE_fixture-server"))
        .args(["--fault", "500:0.7", "--fault", "404:0.7"])
        .output()
        .unwrap();
    assert!(!too_much.status.success());
    assert!(String::from_utf8_lossy(&too_much.stderr).contains("add up to"));
}
