//! Requests an app shapes: its headers and thumbpipe's defaults on the
//! wire, a hook's headers per request, an explicit proxy, and responses to
//! requests with credentials kept on disk only when they may be shared.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use thumbpipe::http::{HeaderValue, header};
use thumbpipe::{BuildError, Config, HeaderHook, Pipeline, Proxy};

use crate::common::{Scratch, eventually, idle};
use crate::disk::{load, png, scripted_server};

/// An image server answering every request with a PNG of id 1 and
/// `cache_control`.
fn image_server(
    cache_control: &'static str,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    scripted_server(move |_, _| {
        (
            format!("HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncache-control: {cache_control}"),
            png(1),
        )
    })
}

#[test]
fn the_apps_headers_and_the_hooks_reach_the_server_with_thumbpipes_accept() {
    let (base, heads) = image_server("no-store");
    let mut config = Config::default();
    config
        .fetch
        .headers
        .insert(header::USER_AGENT, HeaderValue::from_static("gallery/2.0"));
    config
        .fetch
        .headers
        .insert("x-api-key", HeaderValue::from_static("k-123"));
    config.fetch.header_hook = Some(HeaderHook::new(|url, headers| {
        let signature = format!("sig{}", url.path());
        headers.insert("x-signature", HeaderValue::from_str(&signature).unwrap());
    }));
    let mut pipeline = Pipeline::new(config).unwrap();
    let urls = [format!("{base}/a.png"), format!("{base}/b.png")];
    assert_eq!(load(&mut pipeline, &urls), [Ok(1), Ok(1)]);
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 2);
    for head in &heads {
        assert!(head.contains("user-agent: gallery/2.0\r\n"), "{head}");
        assert!(head.contains("x-api-key: k-123\r\n"), "{head}");
        // The formats this build decodes, and no others.
        let accept = head
            .lines()
            .find_map(|line| line.strip_prefix("accept: "))
            .unwrap_or_else(|| panic!("no accept: {head}"));
        assert!(
            accept.starts_with("image/webp,image/png,image/jpeg,image/gif"),
            "{accept}"
        );
        assert_eq!(
            accept.contains("image/tiff"),
            cfg!(feature = "tiff"),
            "{accept}"
        );
        assert_eq!(
            accept.contains("image/bmp"),
            cfg!(feature = "bmp"),
            "{accept}"
        );
        assert_eq!(
            accept.contains("image/avif"),
            cfg!(feature = "avif"),
            "{accept}"
        );
        // Sent once, though the pipeline and the client both hold it.
        assert_eq!(head.matches("x-api-key").count(), 1, "{head}");
    }
    let signed: Vec<bool> = ["/a.png", "/b.png"]
        .iter()
        .map(|path| {
            heads
                .iter()
                .any(|h| h.contains(&format!("x-signature: sig{path}\r\n")))
        })
        .collect();
    assert_eq!(signed, [true, true]);
}

#[test]
fn without_headers_of_its_own_a_request_says_it_is_thumbpipe() {
    let (base, heads) = image_server("no-store");
    let mut pipeline = Pipeline::new(Config::default()).unwrap();
    assert_eq!(load(&mut pipeline, &[format!("{base}/a.png")]), [Ok(1)]);
    let head = heads.lock().unwrap()[0].clone();
    let agent = format!("user-agent: thumbpipe/{}\r\n", env!("CARGO_PKG_VERSION"));
    assert!(head.contains(&agent), "{head}");
}

#[test]
fn an_explicit_proxy_carries_every_request_and_a_bad_one_is_refused() {
    // The scripted server is the proxy: it gets the absolute URL of a host
    // that does not resolve, and answers for it.
    let (proxy, heads) = image_server("no-store");
    let mut config = Config::default();
    config.fetch.proxy = Proxy::Url(proxy);
    let mut pipeline = Pipeline::new(config).unwrap();
    let url = "http://images.invalid/1.png".to_owned();
    assert_eq!(load(&mut pipeline, &[url]), [Ok(1)]);
    let head = heads.lock().unwrap()[0].clone();
    assert!(
        head.starts_with("get http://images.invalid/1.png http/1.1\r\n"),
        "{head}"
    );

    let mut bad = Config::default();
    bad.fetch.proxy = Proxy::Url("not a proxy".into());
    match Pipeline::<usize>::new(bad) {
        Err(BuildError::Config(message)) => assert!(message.contains("fetch.proxy"), "{message}"),
        other => panic!("expected a config error, got {:?}", other.map(|_| ())),
    }
}

/// Loads `url` as alice, then, its memory cache forgotten, as bob, through
/// one pipeline with a disk cache in `dir`. Where the response is `kept`,
/// bob asks once alice's copy is written, and his lookup may take its
/// time: on a loaded machine a write can land after a quick second load,
/// and a read can pass the default timeout, either sending bob to the
/// network. Returns the requests the server received.
fn alice_then_bob(dir: &std::path::Path, cache_control: &'static str, kept: bool) -> Vec<String> {
    let (base, heads) = image_server(cache_control);
    let url = format!("{base}/img.png");
    let account = Arc::new(AtomicBool::new(false));
    let bob = Arc::clone(&account);
    let mut config = Config::default();
    config.disk.dir = Some(dir.to_path_buf());
    config.disk.thumbnails = false;
    config.disk.read_timeout = Duration::from_secs(10);
    config.fetch.header_hook = Some(HeaderHook::new(move |_, headers| {
        let token = if bob.load(Ordering::SeqCst) {
            "Bearer bob"
        } else {
            "Bearer alice"
        };
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static(token));
    }));
    let mut pipeline = Pipeline::new(config).unwrap();
    assert_eq!(load(&mut pipeline, std::slice::from_ref(&url)), [Ok(1)]);
    // A response is written to disk after it is delivered: where it is
    // to be kept, bob asks once it has been.
    if kept {
        assert!(
            eventually(|| pipeline.stats().disk.written == 1),
            "{:?}",
            pipeline.stats().disk
        );
    }
    account.store(true, Ordering::SeqCst);
    pipeline.forget(&url);
    assert_eq!(load(&mut pipeline, std::slice::from_ref(&url)), [Ok(1)]);
    assert!(eventually(|| idle(&pipeline)));
    heads.lock().unwrap().clone()
}

#[test]
fn a_private_response_to_a_request_with_credentials_is_never_kept() {
    let scratch = Scratch::new("credentials-private");
    // Fresh for an hour, but not said to be shareable: bob's request goes
    // to the server, with bob's token.
    let heads = alice_then_bob(&scratch.0, "max-age=3600", false);
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert!(
        heads[0].contains("authorization: bearer alice\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        heads[1].contains("authorization: bearer bob\r\n"),
        "{}",
        heads[1]
    );
}

#[test]
fn a_public_response_to_a_request_with_credentials_is_kept_and_served() {
    let scratch = Scratch::new("credentials-public");
    let heads = alice_then_bob(&scratch.0, "public, max-age=3600", true);
    assert_eq!(heads.len(), 1, "bob's copy came from the disk: {heads:?}");
}

#[test]
fn a_panicking_hook_fails_its_load_and_the_pipeline_goes_on() {
    let (base, _) = image_server("no-store");
    let mut config = Config::default();
    config.fetch.header_hook = Some(HeaderHook::new(|url, _| {
        assert!(!url.path().ends_with("bad.png"), "no header for this one");
    }));
    let mut pipeline = Pipeline::new(config).unwrap();
    let urls = [format!("{base}/bad.png"), format!("{base}/good.png")];
    let done = load(&mut pipeline, &urls);
    match &done[0] {
        Err(message) => assert!(
            message.contains("panicked") && message.contains("fetch.header_hook"),
            "{message}"
        ),
        Ok(id) => panic!("loaded {id} though its hook panicked"),
    }
    assert_eq!(done[1], Ok(1));
    // The actor lives on: a new request after the panic loads.
    assert_eq!(load(&mut pipeline, &[format!("{base}/later.png")]), [Ok(1)]);
}

/// Regression: the app's headers were also the client's defaults, which
/// reqwest adds to every request that lacks them: a header the hook took
/// away was sent anyway (and the disk cache, seeing none, could keep the
/// response of a request that carried a cookie).
#[test]
fn a_header_the_hook_removes_is_not_sent() {
    let (base, heads) = image_server("no-store");
    let mut config = Config::default();
    config
        .fetch
        .headers
        .insert(header::COOKIE, HeaderValue::from_static("session=1"));
    config.fetch.header_hook = Some(HeaderHook::new(|url, headers| {
        if url.path().starts_with("/public/") {
            headers.remove(header::COOKIE);
        }
    }));
    let mut pipeline = Pipeline::new(config).unwrap();
    let urls = [format!("{base}/public/a.png"), format!("{base}/mine/b.png")];
    assert_eq!(load(&mut pipeline, &urls), [Ok(1), Ok(1)]);
    let heads = heads.lock().unwrap().clone();
    let sent = |path: &str| {
        let head = heads.iter().find(|h| h.contains(path)).unwrap();
        head.contains("cookie: session=1\r\n")
    };
    assert_eq!((sent("/public/a.png"), sent("/mine/b.png")), (false, true));
}
