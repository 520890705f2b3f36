//! Requests the server cannot answer get a 400 with a message that says why;
//! nothing a client sends makes it panic.

use std::time::Duration;

use crate::common::{client, server_with_latency};

#[tokio::test]
async fn malformed_image_requests_get_400_with_a_reason() {
    let server = server_with_latency(Duration::from_secs(5)).await;
    let cases = [
        ("/img/abc.jpg", "not an image id"),
        ("/img/-1.jpg", "not an image id"),
        ("/img/+7.jpg", "not an image id"),
        ("/img/99999999.jpg", "not an image id"),
        ("/img/7", "is not ID.jpg"),
        ("/img/7.bmp", "unknown image format '.bmp'"),
        ("/img/7.jpg?w=0", "w='0'"),
        ("/img/7.jpg?h=5000", "h='5000'"),
        ("/img/7.jpg?w=big", "w='big'"),
        ("/img/7.jpg?latency_ms=soon", "latency_ms='soon'"),
        ("/img/7.jpg?latency_ms=99999999", "latency_ms='99999999'"),
        ("/img/7.jpg?fault=teapot", "unknown fault 'teapot'"),
        ("/img/7.jpg?latency=5", "unknown parameter 'latency'"),
        ("/img/7.jpg?hop=x", "hop='x'"),
        ("/img/7.jpg?exif=641", "exif='641'"),
        (
            "/img/7.jpg?progressive=1",
            "progressive=1 is for a camera photo",
        ),
        ("/img/7.jpg?exif=0&progressive=yes", "progressive='yes'"),
    ];
    for (path, reason) in cases {
        // The server's 5 s latency is not waited for: a bad request is
        // refused before it.
        let response = client()
            .get(format!("{}{path}", server.base_url()))
            .timeout(Duration::from_secs(3))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(response.status(), 400, "{path}");
        let text = response.text().await.unwrap();
        assert!(text.contains(reason), "{path}: {text}");
    }
    let stats = server.stats();
    assert_eq!(stats.requests_started, cases.len() as u64);
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_paths_are_404_and_the_root_lists_the_endpoints() {
    let server = server_with_latency(Duration::ZERO).await;
    let response = client()
        .get(format!("{}/nope", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let help = client()
        .get(server.base_url())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for word in ["/img/{id}.jpg", "/stats", "redirect-loop"] {
        assert!(help.contains(word), "{help}");
    }
    server.shutdown().await;
}
