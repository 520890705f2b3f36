//! `naive` mode: the classic broken loader, reproduced faithfully.
//!
//! It is the shape of `.onAppear(perform: load)` with `Data(contentsOf:)`
//! on a global queue:
//!
//! - When a row appears and its URL is not cached, a job goes to a pool that
//!   grows a thread per waiting job up to 64 (as GCD does). A row whose URL
//!   changes while on screen does not load again until it reappears.
//! - The job fetches with a blocking call that, like `Data(contentsOf:)`
//!   going through the platform's HTTP stack, opens at most 4 connections to
//!   a host (URLSession's `httpMaximumConnectionsPerHost` on iOS); a call
//!   past that waits inside, holding its thread.
//! - The bytes go into an unbounded cache keyed by URL, and the result is
//!   written to the row index that asked, whatever that row shows by then.
//! - Images are decoded at full size the first time a row draws them: the UI
//!   thread hands the decode to the same pool (first in line, as a
//!   user-interactive job) and waits for it, as SwiftUI does at commit time;
//!   with every thread parked in a fetch, the UI waits for one to come back.
//! - Nothing is ever cancelled.
//!
//! The pool's threads live until the loader is dropped; they finish the
//! fetch they are in and exit (they are not joined, so switching modes never
//! waits for them).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};

use super::{Counts, Loader, RowState, draw_placeholder, draw_texture};
use crate::measure::{Measurements, read_id};

/// The pool stops growing here, like GCD's thread limit.
const MAX_THREADS: usize = 64;

/// Connections the blocking HTTP call opens to one host at once.
const CONNECTIONS_PER_HOST: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct PoolState {
    queue: VecDeque<Job>,
    idle: usize,
    threads: usize,
}

/// A pool that starts a thread whenever a job arrives and none is idle.
struct GrowingPool {
    state: Arc<(Mutex<PoolState>, Condvar)>,
    closed: Arc<AtomicBool>,
}

impl GrowingPool {
    fn new() -> Self {
        Self {
            state: Arc::new((Mutex::new(PoolState::default()), Condvar::new())),
            closed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Queues `job` behind the others.
    fn submit(&self, job: Job) {
        self.enqueue(job, false);
    }

    /// Queues `job` ahead of the others: the UI's own work.
    fn submit_first(&self, job: Job) {
        self.enqueue(job, true);
    }

    fn enqueue(&self, job: Job, first: bool) {
        let (lock, ready) = &*self.state;
        let Ok(mut state) = lock.lock() else { return };
        if first {
            state.queue.push_front(job);
        } else {
            state.queue.push_back(job);
        }
        if state.idle == 0 && state.threads < MAX_THREADS {
            let number = state.threads;
            let (shared, closed) = (Arc::clone(&self.state), Arc::clone(&self.closed));
            let spawned = std::thread::Builder::new()
                .name(format!("naive-pool-{number}"))
                .spawn(move || worker(&shared, &closed));
            if spawned.is_ok() {
                state.threads += 1;
            }
        } else {
            ready.notify_one();
        }
    }
}

fn worker(state: &(Mutex<PoolState>, Condvar), closed: &AtomicBool) {
    let (lock, ready) = state;
    loop {
        let job = {
            let Ok(mut state) = lock.lock() else { return };
            loop {
                if closed.load(Relaxed) {
                    return;
                }
                if let Some(job) = state.queue.pop_front() {
                    break job;
                }
                state.idle += 1;
                state = match ready.wait(state) {
                    Ok(state) => state,
                    Err(_) => return,
                };
                state.idle -= 1;
            }
        };
        job();
    }
}

impl Drop for GrowingPool {
    fn drop(&mut self) {
        self.closed.store(true, Relaxed);
        self.state.1.notify_all();
    }
}

/// The HTTP stack's connections to the server: a blocking fetch takes one
/// or waits for one, holding its thread either way.
#[derive(Default)]
struct Connections {
    open: Mutex<usize>,
    freed: Condvar,
    /// Threads waiting for a connection now.
    waiting: AtomicU64,
}

impl Connections {
    /// Blocks until a connection is free; it is given back when the guard
    /// drops.
    fn take(&self) -> Option<ConnectionGuard<'_>> {
        let mut open = self.open.lock().ok()?;
        if *open >= CONNECTIONS_PER_HOST {
            self.waiting.fetch_add(1, Relaxed);
            while *open >= CONNECTIONS_PER_HOST {
                open = match self.freed.wait(open) {
                    Ok(open) => open,
                    Err(_) => {
                        self.waiting.fetch_sub(1, Relaxed);
                        return None;
                    }
                };
            }
            self.waiting.fetch_sub(1, Relaxed);
        }
        *open += 1;
        Some(ConnectionGuard(self))
    }
}

struct ConnectionGuard<'a>(&'a Connections);

impl Drop for ConnectionGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut open) = self.0.open.lock() {
            *open -= 1;
        }
        self.0.freed.notify_one();
    }
}

/// What the pool's jobs write.
#[derive(Default)]
struct Shared {
    connections: Connections,
    /// Downloaded bytes by URL, never evicted.
    bytes: Mutex<HashMap<String, Arc<Vec<u8>>>>,
    /// The URL whose bytes each row's last finished job fetched.
    row_results: Mutex<HashMap<usize, String>>,
    in_flight: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    cached_bytes: AtomicU64,
}

pub struct NaiveLoader {
    pool: GrowingPool,
    shared: Arc<Shared>,
    /// Full-size textures by URL, never evicted, with the id their pixels
    /// carry (read once, at decode time).
    decoded: HashMap<String, (egui::TextureHandle, Option<u32>)>,
    visible_before: HashSet<usize>,
    visible_now: HashSet<usize>,
    shown: HashMap<usize, String>,
    ctx: Option<egui::Context>,
}

impl NaiveLoader {
    pub fn new() -> Self {
        Self {
            pool: GrowingPool::new(),
            shared: Arc::new(Shared::default()),
            decoded: HashMap::new(),
            visible_before: HashSet::new(),
            visible_now: HashSet::new(),
            shown: HashMap::new(),
            ctx: None,
        }
    }

    fn start_fetch(&mut self, row: usize, url: &str) {
        let shared = Arc::clone(&self.shared);
        let ctx = self.ctx.clone();
        let url = url.to_owned();
        shared.in_flight.fetch_add(1, Relaxed);
        self.pool.submit(Box::new(move || {
            let fetched = match shared.connections.take() {
                Some(_connection) => fixture_server::blocking_client::get(&url),
                None => Err("the connection pool is poisoned".to_owned()),
            };
            shared.in_flight.fetch_sub(1, Relaxed);
            match fetched {
                Ok(body) => {
                    shared.completed.fetch_add(1, Relaxed);
                    shared.cached_bytes.fetch_add(body.len() as u64, Relaxed);
                    if let Ok(mut bytes) = shared.bytes.lock() {
                        bytes.insert(url.clone(), Arc::new(body));
                    }
                    // The bug: written to the row that asked, whatever it
                    // shows now.
                    if let Ok(mut rows) = shared.row_results.lock() {
                        rows.insert(row, url);
                    }
                }
                Err(_) => {
                    shared.failed.fetch_add(1, Relaxed);
                }
            }
            if let Some(ctx) = ctx {
                ctx.request_repaint();
            }
        }));
    }

    /// The texture for `url`'s bytes, decoded at full size the first time:
    /// on a pool thread, with this (the UI) thread waiting for it.
    fn texture(
        &mut self,
        url: &str,
        measurements: &mut Measurements,
    ) -> Option<&(egui::TextureHandle, Option<u32>)> {
        if !self.decoded.contains_key(url) {
            let bytes = self.shared.bytes.lock().ok()?.get(url).cloned()?;
            let (done, decoded) = std::sync::mpsc::channel();
            self.pool.submit_first(Box::new(move || {
                let rgba = image::load_from_memory(&bytes).map(|image| image.into_rgba8());
                let _ = done.send(rgba);
            }));
            // The bug: the UI thread blocks until a pool thread is free.
            let rgba = decoded.recv().ok()?.ok()?;
            let (width, height) = (rgba.width(), rgba.height());
            // The detector's reading, made here where the pixels are; its
            // time is not the naive loader's and is not counted.
            let reading = std::time::Instant::now();
            let read = read_id(rgba.as_raw(), width, height);
            measurements.exclude(reading.elapsed().as_secs_f64() * 1000.0);
            let image = egui::ColorImage::from_rgba_unmultiplied(
                [width as usize, height as usize],
                rgba.as_raw(),
            );
            let ctx = self.ctx.as_ref()?;
            let texture = ctx.load_texture(url, image, egui::TextureOptions::LINEAR);
            self.decoded.insert(url.to_owned(), (texture, read));
        }
        self.decoded.get(url)
    }
}

impl Loader for NaiveLoader {
    fn begin_frame(&mut self, ctx: &egui::Context) {
        self.ctx = Some(ctx.clone());
    }

    fn show_row(
        &mut self,
        ui: &mut egui::Ui,
        row: usize,
        id: Option<u32>,
        url: &str,
        measurements: &mut Measurements,
    ) -> RowState {
        self.visible_now.insert(row);
        let appeared = !self.visible_before.contains(&row);
        let cached = self
            .shared
            .bytes
            .lock()
            .is_ok_and(|bytes| bytes.contains_key(url));
        // As `.onAppear(perform: load)`: a row loads when it appears, not
        // when its URL changes while it is on screen.
        if appeared && !cached {
            self.start_fetch(row, url);
        }
        // The row shows its URL's image if cached; otherwise whatever the
        // last job for this row wrote.
        let source = if cached {
            Some(url.to_owned())
        } else {
            self.shared
                .row_results
                .lock()
                .ok()
                .and_then(|rows| rows.get(&row).cloned())
        };
        let Some(source) = source else {
            draw_placeholder(ui, false);
            return RowState::Loading;
        };
        let first_show = self.shown.get(&row) != Some(&source);
        match self.texture(&source, measurements) {
            Some((texture, read)) => {
                let (texture, read) = (texture.clone(), *read);
                draw_texture(ui, &texture);
                if first_show {
                    measurements.image_shown(id, || read);
                    self.shown.insert(row, source);
                }
                RowState::Shown
            }
            None => {
                draw_placeholder(ui, true);
                RowState::Failed(format!("could not decode {source}"))
            }
        }
    }

    fn end_frame(&mut self) {
        self.visible_before = std::mem::take(&mut self.visible_now);
    }

    fn counts(&self) -> Counts {
        Counts {
            in_flight: self.shared.in_flight.load(Relaxed),
            completed: self.shared.completed.load(Relaxed),
            cancelled: 0,
            failed: self.shared.failed.load(Relaxed),
            waiting_for_connection: self.shared.connections.waiting.load(Relaxed),
            abandoned: None,
            disk: None,
            local: None,
            cache_bytes: self.shared.cached_bytes.load(Relaxed),
            texture_bytes: Some(
                self.decoded
                    .values()
                    .map(|(texture, _)| texture.byte_size() as u64)
                    .sum(),
            ),
        }
    }
}
