//! `cache-designs`: four ways to share an LRU cache of thumbnails between
//! threads, timed per operation: an actor answering one message per
//! operation, the same actor answering batches of 100, one
//! `Mutex<LruCache>`, and 16 mutex-guarded shards.
//!
//! ```text
//! cargo run --release -p thumbpipe-benches --bin cache-designs
//! ```
//!
//! 1, 2 and 4 client threads; 98% reads / 2% writes and 50/50; keys drawn
//! from 10,000 with a 4,096-entry cache (about 40% hits). Each client times
//! every operation (every batch, for the batched actor, divided by its
//! size); the table gives wall time per operation over all clients, and
//! the median and p99 of the per-operation times. Reading the clock costs
//! about 20-40 ns per operation in every design alike.

use std::num::NonZeroUsize;
use std::sync::{Arc, Barrier, Mutex};
use std::time::Instant;

use anyhow::Context as _;
use clap::Parser;
use lru::LruCache;
use thumbpipe_benches::machine;
use tokio::sync::{mpsc, oneshot};

#[derive(Debug, Parser)]
#[command(about = "An actor, a batched actor, a mutex and a sharded mutex around an LRU cache")]
struct Args {
    /// Operations per client thread.
    #[arg(long, default_value_t = 200_000)]
    ops: usize,
}

const KEYS: u64 = 10_000;
const CAPACITY: usize = 4096;
const SHARDS: usize = 16;
const BATCH: usize = 100;

type Value = Arc<[u8]>;

#[derive(Clone, Copy)]
enum Op {
    Get(u64),
    Put(u64),
}

/// A request to the actor: operations and where to send what the reads found.
type Request = (Vec<Op>, oneshot::Sender<usize>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Design {
    Actor,
    ActorBatched,
    Mutex,
    Sharded,
}

impl Design {
    const ALL: [Design; 4] = [
        Design::Actor,
        Design::ActorBatched,
        Design::Mutex,
        Design::Sharded,
    ];

    fn name(self) -> &'static str {
        match self {
            Design::Actor => "actor, a message per op",
            Design::ActorBatched => "actor, batches of 100",
            Design::Mutex => "Mutex<LruCache>",
            Design::Sharded => "16 mutex shards",
        }
    }
}

fn main() {
    if let Err(error) = run(Args::parse()) {
        eprintln!("cache-designs: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    println!(
        "cache-designs: {} ops per client thread, {KEYS} keys, {CAPACITY} entries, on {}",
        args.ops,
        machine()
    );
    println!();
    println!("| design | clients | reads | ns per op (wall, all clients) | median ns | p99 ns |");
    println!("|---|---:|---:|---:|---:|---:|");
    for read_percent in [98u64, 50] {
        for clients in [1usize, 2, 4] {
            for design in Design::ALL {
                let (wall_ns, median, p99) = measure(design, clients, read_percent, args.ops)?;
                println!(
                    "| {} | {clients} | {read_percent}% | {wall_ns:.0} | {median:.0} | {p99:.0} |",
                    design.name()
                );
            }
        }
    }
    Ok(())
}

fn value() -> Value {
    Arc::from(vec![0u8; 64])
}

fn cache() -> LruCache<u64, Value> {
    LruCache::new(NonZeroUsize::new(CAPACITY).unwrap_or(NonZeroUsize::MIN))
}

fn apply(cache: &mut LruCache<u64, Value>, op: Op, value: &Value) -> bool {
    match op {
        Op::Get(key) => cache.get(&key).is_some(),
        Op::Put(key) => {
            cache.put(key, Arc::clone(value));
            false
        }
    }
}

/// The operations of one client: a deterministic mix.
fn ops(client: usize, count: usize, read_percent: u64) -> Vec<Op> {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ (client as u64 + 1);
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let key = state % KEYS;
            if (state >> 32) % 100 < read_percent {
                Op::Get(key)
            } else {
                Op::Put(key)
            }
        })
        .collect()
}

/// Runs `clients` threads of `ops` operations each; returns wall ns per
/// operation, and the median and p99 of per-operation times.
fn measure(
    design: Design,
    clients: usize,
    read_percent: u64,
    ops_per_client: usize,
) -> anyhow::Result<(f64, f64, f64)> {
    let ops_per_client = match design {
        // A round trip per operation is slow: fewer of them.
        Design::Actor => ops_per_client / 10,
        _ => ops_per_client,
    };
    let single = Arc::new(Mutex::new(cache()));
    let shards: Arc<Vec<Mutex<LruCache<u64, Value>>>> =
        Arc::new((0..SHARDS).map(|_| Mutex::new(cache())).collect());
    let (requests, inbox) = mpsc::unbounded_channel::<Request>();
    let actor = match design {
        Design::Actor | Design::ActorBatched => Some(start_actor(inbox)?),
        _ => None,
    };
    let barrier = Arc::new(Barrier::new(clients + 1));
    let workers: Vec<_> = (0..clients)
        .map(|client| {
            let (single, shards, requests, barrier) = (
                Arc::clone(&single),
                Arc::clone(&shards),
                requests.clone(),
                Arc::clone(&barrier),
            );
            let work = ops(client, ops_per_client, read_percent);
            std::thread::Builder::new()
                .name(format!("client-{client}"))
                .spawn(move || {
                    let value = value();
                    let mut times = Vec::with_capacity(work.len());
                    barrier.wait();
                    match design {
                        Design::Mutex => {
                            for op in work {
                                let started = Instant::now();
                                if let Ok(mut cache) = single.lock() {
                                    apply(&mut cache, op, &value);
                                }
                                times.push(started.elapsed().as_nanos() as f64);
                            }
                        }
                        Design::Sharded => {
                            for op in work {
                                let started = Instant::now();
                                let (Op::Get(key) | Op::Put(key)) = op;
                                if let Ok(mut cache) = shards[(key as usize) % SHARDS].lock() {
                                    apply(&mut cache, op, &value);
                                }
                                times.push(started.elapsed().as_nanos() as f64);
                            }
                        }
                        Design::Actor | Design::ActorBatched => {
                            let size = if design == Design::Actor { 1 } else { BATCH };
                            for chunk in work.chunks(size) {
                                let started = Instant::now();
                                let (reply, found) = oneshot::channel();
                                if requests.send((chunk.to_vec(), reply)).is_ok() {
                                    let _ = found.blocking_recv();
                                }
                                let each = started.elapsed().as_nanos() as f64 / chunk.len() as f64;
                                times.extend(std::iter::repeat_n(each, chunk.len()));
                            }
                        }
                    }
                    times
                })
        })
        .collect::<Result<_, _>>()
        .context("could not start the client threads")?;
    drop(requests);
    barrier.wait();
    let started = Instant::now();
    let mut times = Vec::new();
    for worker in workers {
        times.extend(worker.join().unwrap_or_default());
    }
    let wall = started.elapsed().as_nanos() as f64;
    if let Some(actor) = actor {
        let _ = actor.join();
    }
    let total = times.len().max(1);
    times.sort_by(f64::total_cmp);
    let at = |p: f64| {
        times
            .get(((total as f64 * p) as usize).min(total - 1))
            .copied()
            .unwrap_or(0.0)
    };
    Ok((wall / total as f64, at(0.5), at(0.99)))
}

/// The actor: one thread with a current-thread runtime, owning the cache,
/// answering each request after applying its operations. Ends when every
/// sender is gone.
fn start_actor(
    mut inbox: mpsc::UnboundedReceiver<Request>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    Ok(std::thread::Builder::new()
        .name("cache-actor".into())
        .spawn(move || {
            runtime.block_on(async move {
                let mut cache = cache();
                let value = value();
                let mut batch = Vec::with_capacity(64);
                while inbox.recv_many(&mut batch, 64).await > 0 {
                    for (ops, reply) in batch.drain(..) {
                        let found = ops
                            .into_iter()
                            .filter(|op| apply(&mut cache, *op, &value))
                            .count();
                        let _ = reply.send(found);
                    }
                }
            });
        })?)
}
