//! The coalescing queue: one thread owns the model's time. It takes every request waiting,
//! groups them by configuration, reads each group in one batch with
//! [`readout::jobs::score::score_requests`] (shared passes; every answer bit for bit the request's
//! answer alone), and answers each request as its last text is decided. The HTTP API and the
//! MCP server submit to the same queue type, so both coalesce alike.

use readout::config::RunConfig;
use readout::engine::Engine;
use readout::jobs::request::ScoreJob;
use readout::jobs::score::{Request as Scored, TextResult};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// Why a request got no answer from the queue.
#[derive(Debug)]
pub enum Failed {
    /// The request itself cannot be decided (a text too long for the context, say).
    Request(readout::Error),
    /// The batch it was read in failed.
    Batch(String),
    /// The queue dropped the request (its thread ended).
    Dropped,
}

/// Why a request was not queued.
#[derive(Debug)]
pub enum Refused {
    /// The queue holds its capacity; try again after this many seconds.
    Full { retry_after_s: u64 },
    /// The queue is stopping.
    Closed,
}

struct Queued {
    job: ScoreJob,
    reply: oneshot::Sender<Result<Vec<TextResult>, Failed>>,
    /// Set when the client's time ran out: not read if not started.
    gone: Arc<AtomicBool>,
}

/// The sending side of the queue; cheap to clone.
#[derive(Clone)]
pub struct Queue {
    tx: mpsc::Sender<Queued>,
    /// Requests submitted and not yet taken into a batch.
    queued: Arc<AtomicUsize>,
    /// How long the last batch took, in ms (for Retry-After).
    last_batch_ms: Arc<AtomicU64>,
}

/// A request in the queue: await [`Pending::answer`]; dropping it before the answer marks the
/// request gone, so it is not read if it has not started.
pub struct Pending {
    rx: oneshot::Receiver<Result<Vec<TextResult>, Failed>>,
    gone: Arc<AtomicBool>,
}

impl Pending {
    /// The request's results, in its texts' order.
    pub async fn answer(mut self) -> Result<Vec<TextResult>, Failed> {
        (&mut self.rx).await.unwrap_or(Err(Failed::Dropped))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.gone.store(true, Ordering::SeqCst);
    }
}

impl Queue {
    /// Start the queue's thread on `engine`, holding at most `capacity` waiting requests. The
    /// thread ends when every [`Queue`] is dropped and the last batch is answered.
    pub fn start(engine: Arc<Engine>, capacity: usize) -> std::io::Result<(Queue, std::thread::JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel::<Queued>(capacity.max(1));
        let queue = Queue { tx, queued: Arc::new(AtomicUsize::new(0)), last_batch_ms: Arc::new(AtomicU64::new(0)) };
        let (queued, last) = (queue.queued.clone(), queue.last_batch_ms.clone());
        let thread = std::thread::Builder::new()
            .name("readout-queue".into())
            .spawn(move || schedule(&engine, rx, &queued, &last))?;
        Ok((queue, thread))
    }

    /// Queue a validated job, or say why not (full, stopping) at once.
    pub fn submit(&self, job: ScoreJob) -> Result<Pending, Refused> {
        let (reply, rx) = oneshot::channel();
        let gone = Arc::new(AtomicBool::new(false));
        self.queued.fetch_add(1, Ordering::SeqCst);
        match self.tx.try_send(Queued { job, reply, gone: gone.clone() }) {
            Ok(()) => Ok(Pending { rx, gone }),
            Err(e) => {
                self.queued.fetch_sub(1, Ordering::SeqCst);
                Err(match e {
                    mpsc::error::TrySendError::Full(_) => {
                        Refused::Full { retry_after_s: self.last_batch_ms.load(Ordering::SeqCst).div_ceil(1000).max(1) }
                    }
                    mpsc::error::TrySendError::Closed(_) => Refused::Closed,
                })
            }
        }
    }

    /// Requests waiting for the model.
    pub fn waiting(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }
}

/// The queue's thread: every request waiting, grouped by configuration, one batch a group.
fn schedule(engine: &Engine, mut rx: mpsc::Receiver<Queued>, queued: &AtomicUsize, last_ms: &AtomicU64) {
    while let Some(first) = rx.blocking_recv() {
        let mut jobs = vec![first];
        while let Ok(j) = rx.try_recv() {
            jobs.push(j);
        }
        queued.fetch_sub(jobs.len(), Ordering::SeqCst);
        jobs.retain(|j| !j.gone.load(Ordering::SeqCst) && !j.reply.is_closed());
        let mut groups: Vec<(RunConfig, Vec<Queued>)> = Vec::new();
        for j in jobs {
            match groups.iter_mut().find(|(c, _)| *c == j.job.config) {
                Some((_, g)) => g.push(j),
                None => groups.push((j.job.config.clone(), vec![j])),
            }
        }
        for (config, group) in groups {
            let start = Instant::now();
            let (bodies, replies): (Vec<ScoreJob>, Vec<_>) = group.into_iter().map(|j| (j.job, j.reply)).unzip();
            let mut replies: Vec<Option<_>> = replies.into_iter().map(Some).collect();
            let requests: Vec<Scored<'_>> =
                bodies.iter().map(|b| Scored { rubric: &b.rubric, texts: &b.texts }).collect();
            let mut got: Vec<Vec<TextResult>> = bodies.iter().map(|_| Vec::new()).collect();
            let out = readout::jobs::score::score_requests(engine, &requests, &config, &mut |k, r| {
                got[k].push(r.clone());
                if got[k].len() == bodies[k].texts.len() {
                    let mut done = std::mem::take(&mut got[k]);
                    done.sort_by_key(|r| r.index);
                    if let Some(tx) = replies[k].take() {
                        let _ = tx.send(Ok(done));
                    }
                }
                true
            });
            tracing::info!(
                requests = requests.len(),
                texts = bodies.iter().map(|b| b.texts.len()).sum::<usize>(),
                ms = start.elapsed().as_millis() as u64,
                "batch read"
            );
            last_ms.store(start.elapsed().as_millis() as u64, Ordering::SeqCst);
            match out {
                Ok(results) => {
                    for (tx, r) in replies.iter_mut().zip(results) {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(r.map_err(Failed::Request));
                        }
                    }
                }
                Err(e) => {
                    tracing::error!("a batch failed: {e}");
                    for tx in replies.iter_mut().filter_map(Option::take) {
                        let _ = tx.send(Err(Failed::Batch(format!("the batch this request was read in failed: {e}"))));
                    }
                }
            }
        }
    }
}
