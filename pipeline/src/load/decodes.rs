//! Decodes: the decode job the actor sends for a load's body, and what its
//! end does on the decode thread before the actor hears of it. A thumbnail
//! tier that keeps the URL is offered the thumbnail, decoded at the size
//! the tier keeps (the desktop's size classes) and scaled down to the
//! target, or decoded again at the target where that size falls short (a
//! cover crop of a panorama, a body cut short at an embedded thumbnail
//! that holds the target's size but not the class's); a body the decoder
//! refuses is told to it. A panic in that work is the load's error, never
//! a lost completion.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use url::Url;

use super::registry::Stage;
use super::{Event, LoadActor, ThumbnailTier};
use crate::body::Body;
use crate::decode::{Decode, DecodeJob, DecodeOutcome, catch_panic, refit};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::request::{TargetSize, TaskId};
use crate::thumbnail::Thumbnail;

impl LoadActor {
    /// Sends `task_id`'s body, whole or cut short, to the decode pool.
    pub(super) fn decode(&mut self, task_id: TaskId, body: Body) {
        let Some(task) = self.registry.advance(task_id, Stage::Decoding) else {
            return;
        };
        Metrics::add(&self.parts.metrics.decodes_started, 1);
        let events = self.events.clone();
        let size = body.len() as u64;
        self.awaiting_decode += size;
        let target = task.key.target;
        let tier = self
            .parts
            .thumbnails
            .clone()
            .filter(|tier| tier.keeps(&task.url, target));
        let widened = tier
            .as_ref()
            .map(|tier| tier.widen(&task.url, target))
            .filter(|widened| *widened != target);
        let keep = tier.map(|tier| Keep {
            tier,
            url: task.url.clone(),
            key_url: Arc::clone(&task.key.url),
            body: body.clone(),
            target,
            widened: widened.map(|_| self.parts.decode_pool.decoder()),
        });
        self.decodes.push(DecodeJob {
            task: task_id,
            priority: task.priority(),
            url: Arc::clone(&task.key.url),
            body,
            target: widened.unwrap_or(target),
            cancel: task.cancel.clone(),
            done: Box::new(move |outcome| {
                let outcome = match keep {
                    Some(keep) => keep.finish(outcome),
                    None => outcome,
                };
                let _ = events.send(Event::Decoded(task_id, size, outcome));
            }),
        });
    }
}

/// A decode whose thumbnail goes to the thumbnail tier.
struct Keep {
    tier: Arc<dyn ThumbnailTier>,
    url: Url,
    /// The URL as the load's key holds it.
    key_url: Arc<str>,
    body: Body,
    /// The load's target.
    target: TargetSize,
    /// When the decode is at the tier's larger size: the decoder, to decode
    /// again at the target where that size falls short.
    widened: Option<Arc<dyn Decode>>,
}

impl Keep {
    /// The load's outcome, once the tier has been offered the thumbnail
    /// or told of the refusal. Runs on the decode thread.
    fn finish(self, outcome: DecodeOutcome) -> DecodeOutcome {
        let DecodeOutcome::Done(result) = outcome else {
            return outcome;
        };
        let key_url = Arc::clone(&self.key_url);
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| self.keep(result)))
            .unwrap_or_else(|_| {
                Err(Error::Decode {
                    url: key_url.to_string(),
                    reason: "keeping the thumbnail panicked".into(),
                })
            });
        DecodeOutcome::Done(result)
    }

    fn keep(self, result: Result<Thumbnail, Error>) -> Result<Thumbnail, Error> {
        let result = match (result, &self.widened) {
            (Ok(thumbnail), None) => {
                self.tier
                    .offer(&self.url, self.target, &self.body, &thumbnail);
                Ok(thumbnail)
            }
            (Ok(kept), Some(decoder)) => {
                self.tier.offer(&self.url, self.target, &self.body, &kept);
                match refit(&kept, self.target) {
                    Ok(Some(thumbnail)) => Ok(thumbnail),
                    Ok(None) | Err(_) => self.decode_at_target(&**decoder),
                }
            }
            (Err(_), Some(decoder)) => self.decode_at_target(&**decoder),
            (Err(error), None) => Err(error),
        };
        if matches!(result, Err(Error::Decode { .. })) && self.body.complete {
            self.tier.failed(&self.url, self.target, &self.body);
        }
        result
    }

    fn decode_at_target(&self, decoder: &dyn Decode) -> Result<Thumbnail, Error> {
        catch_panic(&self.key_url, || {
            decoder.decode(&self.key_url, &self.body, self.target)
        })
    }
}
