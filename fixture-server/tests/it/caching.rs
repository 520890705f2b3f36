//! Caching headers: ETag, Last-Modified, Cache-Control, and 304s counted.

use std::time::Duration;

use fixture_server::{Config, FixtureServer};
use reqwest::StatusCode;
use reqwest::header::{CACHE_CONTROL, ETAG, IF_NONE_MATCH, LAST_MODIFIED};

use crate::common::client;

#[tokio::test]
async fn a_matching_if_none_match_gets_a_304_without_a_body() {
    let server = FixtureServer::start(Config {
        latency: Duration::ZERO,
        max_age: Some(Duration::from_secs(60)),
        ..Config::default()
    })
    .await
    .unwrap();
    let client = client();
    let url = format!("{}?w=64&h=64", server.image_url(5));
    let first = client.get(&url).send().await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let etag = first.headers()[ETAG].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && !etag.starts_with("W/"), "{etag}");
    assert!(first.headers().contains_key(LAST_MODIFIED));
    assert_eq!(first.headers()[CACHE_CONTROL], "max-age=60");
    let size = first.bytes().await.unwrap().len() as u64;

    let again = client
        .get(&url)
        .header(IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()[ETAG], etag.as_str());
    assert!(again.bytes().await.unwrap().is_empty());

    // Another size is another image, with another ETag.
    let other = client
        .get(format!("{}?w=65&h=64", server.image_url(5)))
        .header(IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    assert_ne!(other.headers()[ETAG], etag.as_str());
    let other_size = other.bytes().await.unwrap().len() as u64;

    let stats = server.stats();
    assert_eq!((stats.image_bodies, stats.not_modified), (2, 1));
    assert_eq!(stats.bytes_sent, size + other_size);
}

#[tokio::test]
async fn max_age_and_no_store_are_asked_per_request() {
    let server = FixtureServer::start(Config {
        latency: Duration::ZERO,
        ..Config::default()
    })
    .await
    .unwrap();
    let client = client();
    let get = |query: &'static str| {
        let url = format!("{}?w=32&h=32{query}", server.image_url(1));
        let client = client.clone();
        async move { client.get(url).send().await.unwrap() }
    };
    assert!(!get("").await.headers().contains_key(CACHE_CONTROL));
    assert_eq!(
        get("&max_age=9").await.headers()[CACHE_CONTROL],
        "max-age=9"
    );
    assert_eq!(
        get("&no_store=1").await.headers()[CACHE_CONTROL],
        "no-store"
    );
    assert_eq!(get("&no_store=2").await.status(), StatusCode::BAD_REQUEST);
    assert_eq!(get("&max_age=x").await.status(), StatusCode::BAD_REQUEST);
}
