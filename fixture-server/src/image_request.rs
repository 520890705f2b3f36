//! An image request: the file and query of `GET /img/{file}` read into what
//! the image handler answers (the image's key, latency, fault, caching), or
//! a message for a 400 that says what is wrong. Plain data, parsed once per
//! request on the connection's task.

use std::time::Duration;

use crate::caching::CachingAsked;
use crate::config::{MAX_LATENCY, MAX_SIDE};
use crate::images::{Format, ImageKey};
use crate::picture::MAX_ID;
use crate::{Config, FaultKind};

/// What an image request asks for.
#[derive(Debug)]
pub(crate) struct ImageRequest {
    pub(crate) key: ImageKey,
    pub(crate) latency: Option<Duration>,
    /// `None`: the server's random mix decides; `Some(None)`: `?fault=none`.
    pub(crate) fault: Option<Option<FaultKind>>,
    hop: u32,
    pub(crate) caching: CachingAsked,
}

/// A request the server cannot answer, with the message it gets back.
#[derive(Debug)]
pub(crate) struct BadRequest(pub(crate) String);

impl ImageRequest {
    pub(crate) fn parse(
        file: &str,
        query: &[(String, String)],
        config: &Config,
    ) -> Result<Self, BadRequest> {
        let bad = |message: String| Err(BadRequest(message));
        let Some((stem, extension)) = file.rsplit_once('.') else {
            return bad(format!("'{file}' is not ID.jpg, ID.png or ID.gif"));
        };
        let Some(format) = Format::from_extension(extension) else {
            return bad(format!(
                "unknown image format '.{extension}' in '{file}' (use .jpg, .png or .gif)"
            ));
        };
        let id = match stem.parse::<u32>() {
            Ok(id) if stem.bytes().all(|b| b.is_ascii_digit()) && id <= MAX_ID => id,
            _ => {
                return bad(format!(
                    "'{stem}' in '{file}' is not an image id (a number from 0 to {MAX_ID})"
                ));
            }
        };
        let (mut width, mut height) = config.default_size;
        let mut request = ImageRequest {
            key: ImageKey {
                id,
                width,
                height,
                format,
            },
            latency: None,
            fault: None,
            hop: 0,
            caching: CachingAsked::default(),
        };
        // A camera photo's thumbnail width and scan order.
        let (mut camera, mut progressive) = (None, false);
        for (name, value) in query {
            match name.as_str() {
                "w" => width = parse_side(name, value)?,
                "h" => height = parse_side(name, value)?,
                "latency_ms" => {
                    let latency = value
                        .parse::<u64>()
                        .ok()
                        .map(Duration::from_millis)
                        .filter(|latency| *latency <= MAX_LATENCY);
                    match latency {
                        Some(latency) => request.latency = Some(latency),
                        None => {
                            return bad(format!(
                                "latency_ms='{value}' is not a number of milliseconds up to {}",
                                MAX_LATENCY.as_millis()
                            ));
                        }
                    }
                }
                "fault" if value == "none" => request.fault = Some(None),
                "fault" => match value.parse::<FaultKind>() {
                    Ok(kind) => request.fault = Some(Some(kind)),
                    Err(unknown) => return bad(unknown.to_string()),
                },
                "hop" => match value.parse::<u32>() {
                    Ok(hop) => request.hop = hop,
                    Err(_) => return bad(format!("hop='{value}' is not a number")),
                },
                "max_age" => match value.parse::<u64>() {
                    Ok(seconds) => request.caching.max_age = Some(Duration::from_secs(seconds)),
                    Err(_) => {
                        return bad(format!("max_age='{value}' is not a number of seconds"));
                    }
                },
                "exif" if format == Format::Jpeg => match value.parse::<u32>() {
                    Ok(width @ 0..=640) => camera = Some(width),
                    _ => {
                        return bad(format!(
                            "exif='{value}' is not a thumbnail width from 0 (none) to 640"
                        ));
                    }
                },
                "progressive" => match value.as_str() {
                    "1" | "true" => progressive = true,
                    "0" | "false" => progressive = false,
                    _ => return bad(format!("progressive='{value}' is not 1 or 0")),
                },
                "no_store" => match value.as_str() {
                    "1" | "true" => request.caching.no_store = true,
                    "0" | "false" => request.caching.no_store = false,
                    _ => return bad(format!("no_store='{value}' is not 1 or 0")),
                },
                _ => {
                    return bad(format!(
                        "unknown parameter '{name}' (known: w, h, latency_ms, fault, hop, \
                         max_age, no_store, exif and progressive for a .jpg)"
                    ));
                }
            }
        }
        match (camera, progressive) {
            (Some(thumbnail_width), progressive) => {
                request.key.format = Format::Camera {
                    thumbnail_width,
                    progressive,
                };
            }
            (None, true) => return bad("progressive=1 is for a camera photo (exif=W)".into()),
            (None, false) => {}
        }
        request.key.width = width;
        request.key.height = height;
        Ok(request)
    }

    /// The same request, one redirect further.
    pub(crate) fn next_hop(&self) -> String {
        let extension = self.key.format.extension();
        let mut location = format!(
            "/img/{}.{extension}?fault=redirect-loop&hop={}&w={}&h={}",
            self.key.id,
            self.hop.saturating_add(1),
            self.key.width,
            self.key.height,
        );
        if let Some(latency) = self.latency {
            location.push_str(&format!("&latency_ms={}", latency.as_millis()));
        }
        location
    }
}

fn parse_side(name: &str, value: &str) -> Result<u32, BadRequest> {
    match value.parse::<u32>() {
        Ok(side) if (1..=MAX_SIDE).contains(&side) => Ok(side),
        _ => Err(BadRequest(format!(
            "{name}='{value}' is not a size from 1 to {MAX_SIDE}"
        ))),
    }
}
