//! A row only ever shows the image for its current URL: results for
//! superseded URLs are cancelled or dropped, checked from the pixels.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::{Lcg, drain_until, eventually, id_of, idle, server};
use thumbpipe::{Config, Pipeline, Priority, TargetSize};

#[test]
fn a_row_whose_url_changes_50_times_gets_only_the_last_image() {
    let server = server(150);
    let mut pipeline = Pipeline::<&str>::new(Config::default()).unwrap();
    let mut last = 0;
    for id in 100..150 {
        pipeline.request(
            "row",
            &server.image_url(id),
            TargetSize::square(32),
            Priority::Visible,
        );
        last = id;
        std::thread::sleep(Duration::from_millis(2));
    }
    let done = drain_until(&mut pipeline, |all| !all.is_empty());
    // Once no load is left, every straggler there could be has arrived.
    assert!(eventually(|| idle(&pipeline)), "{:?}", pipeline.stats());
    let mut all = done;
    all.extend(pipeline.drain());
    assert_eq!(
        all.len(),
        1,
        "{:?}",
        all.iter().map(|c| &c.url).collect::<Vec<_>>()
    );
    assert_eq!(id_of(all[0].result.as_ref().unwrap()), Some(last));
    assert!(eventually(|| server.stats().in_flight == 0));
    let stats = server.stats();
    // 49 superseded requests, each either never sent (cancelled while
    // queued) or aborted on the wire; none completed.
    assert_eq!(stats.responses_completed, 1, "{stats:?}");
    assert_eq!(stats.responses_aborted, stats.requests_started - 1);
    let pipeline_stats = pipeline.stats();
    assert_eq!(
        pipeline_stats.fetches_cancelled_queued + pipeline_stats.fetches_cancelled_in_flight,
        49
    );
    assert_eq!(pipeline_stats.superseded, 49);
    assert_eq!(pipeline_stats.cancelled, 0);
}

#[test]
fn random_refreshes_over_200_rows_never_deliver_a_wrong_image() {
    let server = server(20);
    let mut pipeline = Pipeline::<u32>::new(Config::default()).unwrap();
    let mut rng = Lcg(7);
    // What each row shows now: its current image id.
    let mut current: HashMap<u32, u32> = (0..200).map(|row| (row, row)).collect();
    let mut next_id = 200;
    let mut delivered = 0;
    let check = |completions: Vec<thumbpipe::Completion<u32>>, current: &HashMap<u32, u32>| {
        for completion in &completions {
            let thumbnail = completion.result.as_ref().unwrap();
            assert_eq!(
                id_of(thumbnail),
                Some(current[&completion.row]),
                "row {} got another row's image",
                completion.row
            );
        }
        completions.len()
    };
    for step in 0..1000 {
        // Refresh a few rows: each gets a new image.
        for _ in 0..rng.below(4) {
            let row = rng.below(200) as u32;
            current.insert(row, next_id);
            next_id += 1;
        }
        for (row, id) in &current {
            pipeline.request(
                *row,
                &server.image_url(*id),
                TargetSize::square(32),
                Priority::Visible,
            );
        }
        if step % 3 == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        delivered += check(pipeline.drain(), &current);
        pipeline.end_frame();
    }
    // Let the last requests land, still checking every one.
    assert!(eventually(|| idle(&pipeline)), "{:?}", pipeline.stats());
    let rest = pipeline.drain();
    delivered += check(rest, &current);
    assert!(delivered >= 200, "only {delivered} deliveries");
    let stats = pipeline.stats();
    assert_eq!(stats.delivered, delivered as u64);
    // The refreshes did race the loads: requests were cancelled on the way.
    assert!(stats.superseded > 100, "{stats:?}");
}
