//! Every request ends exactly once, as delivered, failed with the right
//! typed error, cancelled or superseded, while a third of the server's
//! answers are faults of every kind and the list scrolls, pauses, refreshes
//! and cancels rows at random.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{FAULTS, Lcg, census_once_gone, eventually, id_of, is_error_for_fault, server};
use fixture_server::ThreadCensus;
use thumbpipe::{Completion, Config, Pipeline, Priority, RequestId, TargetSize};

const ROWS: u32 = 200;
const VISIBLE: u32 = 30;
const REQUESTS: usize = 500;

/// What a row shows: an image id and, for about 30% of them, a fault.
#[derive(Clone)]
struct Content {
    id: u32,
    fault: Option<&'static str>,
    url: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Outcome {
    Pending,
    Delivered,
    Failed,
    Cancelled,
    Superseded,
}

/// One request as the test saw it made.
struct Made {
    row: u32,
    content: Content,
    outcome: Outcome,
}

/// The test's own account of every request, kept beside the pipeline's.
#[derive(Default)]
struct Ledger {
    made: HashMap<RequestId, Made>,
    /// The request each row holds in the pipeline, until `end_frame`
    /// drops the row.
    rows: HashMap<u32, RequestId>,
}

impl Ledger {
    fn requested(&mut self, row: u32, content: &Content, request: RequestId) {
        match self.rows.insert(row, request) {
            Some(previous) if previous == request => return,
            Some(previous) => self.end(previous, Outcome::Superseded),
            None => {}
        }
        let made = Made {
            row,
            content: content.clone(),
            outcome: Outcome::Pending,
        };
        assert!(self.made.insert(request, made).is_none());
    }

    /// Ends `request` unless it has ended already.
    fn end(&mut self, request: RequestId, outcome: Outcome) {
        let made = self.made.get_mut(&request).unwrap();
        if made.outcome == Outcome::Pending {
            made.outcome = outcome;
        }
    }

    fn completed(&mut self, completion: &Completion<u32>) {
        let made = self
            .made
            .get_mut(&completion.request)
            .unwrap_or_else(|| panic!("unknown {}", completion.request));
        assert_eq!(made.row, completion.row);
        assert_eq!(*completion.url, made.content.url);
        assert_eq!(
            made.outcome,
            Outcome::Pending,
            "a second outcome for {}",
            made.content.url
        );
        match (&completion.result, made.content.fault) {
            (Ok(thumbnail), None) => {
                assert_eq!(id_of(thumbnail), Some(made.content.id), "wrong image");
                made.outcome = Outcome::Delivered;
            }
            (Err(error), Some(fault)) => {
                assert!(is_error_for_fault(fault, error), "{fault}: {error:?}");
                made.outcome = Outcome::Failed;
            }
            (result, fault) => panic!("fault {fault:?} gave {result:?}"),
        }
    }

    /// Asks for every visible row's image, as a UI frame does.
    fn request_rows(&mut self, pipeline: &mut Pipeline<u32>, rows: &[Content], visible: &[u32]) {
        for &row in visible {
            let shown = &rows[row as usize];
            let request =
                pipeline.request(row, &shown.url, TargetSize::square(32), Priority::Visible);
            self.requested(row, shown, request);
        }
    }

    /// Drains and ends the frame, in the pipeline and in the ledger.
    fn finish_frame(&mut self, pipeline: &mut Pipeline<u32>, visible: &[u32]) {
        for completion in pipeline.drain() {
            self.completed(&completion);
        }
        pipeline.end_frame();
        self.end_frame(visible);
    }

    /// Rows the pipeline drops at `end_frame`: those not requested.
    fn end_frame(&mut self, requested: &[u32]) {
        let gone: Vec<(u32, RequestId)> = self
            .rows
            .iter()
            .filter(|(row, _)| !requested.contains(row))
            .map(|(row, request)| (*row, *request))
            .collect();
        for (row, request) in gone {
            self.rows.remove(&row);
            self.end(request, Outcome::Cancelled);
        }
    }

    fn cancel_row(&mut self, row: u32) {
        if let Some(request) = self.rows.remove(&row) {
            self.end(request, Outcome::Cancelled);
        }
    }

    fn count(&self, outcome: Outcome) -> u64 {
        self.made.values().filter(|m| m.outcome == outcome).count() as u64
    }
}

static PANICS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn every_request_ends_exactly_once_under_faults() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::Relaxed);
        default_hook(info);
    }));
    let census = ThreadCensus::take().is_ok();
    let server = server(10);
    let mut config = Config::default();
    config.fetch.connect_timeout = Duration::from_millis(500);
    config.fetch.total_timeout = Duration::from_millis(600);
    config.fetch.max_body_bytes = 1024 * 1024;
    config.fetch.max_per_host = 12;
    let mut pipeline = Pipeline::<u32>::new(config).unwrap();
    let mut rng = Lcg(2026);
    let mut next_id = 0;
    let mut content = |rng: &mut Lcg| {
        next_id += 1;
        let fault = (rng.below(100) < 30).then(|| FAULTS[rng.below(12) as usize]);
        let mut url = format!("{}/img/{next_id}.jpg?w=96&h=96", server.base_url());
        if let Some(fault) = fault {
            url.push_str("&fault=");
            url.push_str(fault);
        }
        Content {
            id: next_id,
            fault,
            url,
        }
    };
    let mut rows: Vec<Content> = (0..ROWS).map(|_| content(&mut rng)).collect();
    let mut ledger = Ledger::default();
    let mut top = 0u32;
    let mut velocity = 0i64;
    let mut phase_left = 0;
    let started = Instant::now();
    let mut threads_peak = 0;

    // Scroll in phases: moving (rows pass faster than they load) and still
    // (long enough for `slow` and `hang` to reach the timeout).
    while ledger.made.len() < REQUESTS {
        if phase_left == 0 {
            phase_left = 50 + rng.below(150);
            velocity = if velocity == 0 {
                rng.below(5) as i64 - 1
            } else {
                0
            };
        }
        phase_left -= 1;
        top = (top as i64 + velocity).clamp(0, (ROWS - VISIBLE) as i64) as u32;
        if rng.below(4) == 0 {
            let row = rng.below(ROWS as u64) as usize;
            rows[row] = content(&mut rng);
        }
        let visible: Vec<u32> = (top..top + VISIBLE).collect();
        ledger.request_rows(&mut pipeline, &rows, &visible);
        if rng.below(10) == 0 {
            let row = visible[rng.below(VISIBLE as u64) as usize];
            pipeline.cancel_row(&row);
            ledger.cancel_row(row);
        }
        ledger.finish_frame(&mut pipeline, &visible);
        if census && rng.below(20) == 0 {
            let threads = ThreadCensus::take().unwrap().with_prefix("thumbpipe-");
            threads_peak = threads_peak.max(threads);
        }
        std::thread::sleep(Duration::from_millis(4));
    }

    // Stop scrolling; keep asking for the rows in view until they are done.
    let deadline = Instant::now() + Duration::from_secs(20);
    while ledger.count(Outcome::Pending) > 0 && Instant::now() < deadline {
        let visible: Vec<u32> = (top..top + VISIBLE).collect();
        ledger.request_rows(&mut pipeline, &rows, &visible);
        ledger.finish_frame(&mut pipeline, &visible);
        std::thread::sleep(Duration::from_millis(4));
    }

    let counts: HashMap<Outcome, u64> = [
        Outcome::Pending,
        Outcome::Delivered,
        Outcome::Failed,
        Outcome::Cancelled,
        Outcome::Superseded,
    ]
    .into_iter()
    .map(|outcome| (outcome, ledger.count(outcome)))
    .collect();
    let made = ledger.made.len() as u64;
    eprintln!("{made} requests in {:?}: {counts:?}", started.elapsed());
    assert_eq!(counts[&Outcome::Pending], 0, "requests never ended");
    assert_eq!(counts.values().sum::<u64>(), made);
    for outcome in [
        Outcome::Delivered,
        Outcome::Failed,
        Outcome::Cancelled,
        Outcome::Superseded,
    ] {
        assert!(counts[&outcome] > 0, "no request was {outcome:?}");
    }
    // Every kind of fault reached its typed error at least once.
    let failed_kinds: std::collections::BTreeSet<&str> = ledger
        .made
        .values()
        .filter(|m| m.outcome == Outcome::Failed)
        .filter_map(|m| m.content.fault)
        .collect();
    assert_eq!(failed_kinds.len(), FAULTS.len(), "{failed_kinds:?}");

    // The pipeline's own counts agree with the test's, one for one.
    let stats = pipeline.stats();
    assert_eq!(stats.requested, made);
    assert_eq!(stats.delivered, counts[&Outcome::Delivered]);
    assert_eq!(stats.failed, counts[&Outcome::Failed]);
    assert_eq!(stats.cancelled, counts[&Outcome::Cancelled]);
    assert_eq!(stats.superseded, counts[&Outcome::Superseded]);
    assert!(
        eventually(|| {
            let stats = pipeline.stats();
            (stats.in_flight, stats.queued, stats.decoding) == (0, 0, 0)
        }),
        "{:?}",
        pipeline.stats()
    );
    assert!(
        eventually(|| server.stats().in_flight == 0),
        "{:?}",
        server.stats()
    );

    if census {
        // io workers + one blocking thread + decode threads, never more.
        let config = Config::default();
        assert!(threads_peak >= 1);
        assert!(
            threads_peak <= config.io_threads + 1 + config.decode.threads,
            "{threads_peak} pipeline threads"
        );
        drop(pipeline);
        let after = census_once_gone("thumbpipe-");
        assert_eq!(after.with_prefix("thumbpipe-"), 0, "{:?}", after.names);
    }
    assert_eq!(PANICS.load(Ordering::Relaxed), 0, "something panicked");
}
