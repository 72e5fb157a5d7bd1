//! The coalescing queue: one thread owns the model's time. It takes every request waiting,
//! groups the score requests by configuration and reads each group in one batch with
//! [`readout::jobs::score::score_requests`] (shared passes; every answer bit for bit the request's
//! answer alone), answering each request as its last text is decided; the completion requests
//! (the OpenAI-compatible API's) waiting together are one prompt trie for
//! [`readout::analysis::complete::complete`]. A request whose client is gone (its deadline
//! passed, its connection closed, its MCP call cancelled) is not started, and a batch stops after
//! the pass in flight once all its requests are gone. The HTTP API and the MCP server submit to
//! the same queue, so all of them coalesce alike.

use readout::analysis::complete::{self, Completion};
use readout::config::RunConfig;
use readout::debias::DebiasMode;
use readout::engine::Engine;
use readout::jobs::request::ScoreJob;
use readout::jobs::score::{Request as Scored, TextResult};
use readout::jobs::systemone::{SystemOneRequest, SystemOneResponse};
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

/// What a request asks of the model.
pub enum Job {
    /// Decide a rubric's criteria for texts (`POST /v1/score`, MCP's `score`).
    Score(Box<ScoreJob>),
    /// Complete prompts (`POST /v1/completions`, `/v1/chat/completions`).
    Complete(Vec<complete::Request>),
    /// Ask a decision model a System One request by its contract (`POST /v1/systemone` on a
    /// decision GGUF), with the server's default debias mode.
    Decide(Box<SystemOneRequest>, DebiasMode),
}

/// What the model answered, by the kind of [`Job`].
#[derive(Debug)]
pub enum Answer {
    Score(Vec<TextResult>),
    Complete(Vec<Completion>),
    Decided(Box<SystemOneResponse>),
}

struct Queued {
    job: Job,
    reply: oneshot::Sender<Result<Answer, Failed>>,
    /// Set when the client is gone: not read if not started, and its batch stops when all are.
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
    rx: oneshot::Receiver<Result<Answer, Failed>>,
    gone: Arc<AtomicBool>,
}

impl Pending {
    /// The request's answer (a score request's results in its texts' order).
    pub async fn answer(mut self) -> Result<Answer, Failed> {
        (&mut self.rx).await.unwrap_or(Err(Failed::Dropped))
    }

    /// A score request's results, in its texts' order.
    pub async fn scored(self) -> Result<Vec<TextResult>, Failed> {
        match self.answer().await? {
            Answer::Score(r) => Ok(r),
            _ => Err(Failed::Batch("a score request was answered with something else".into())),
        }
    }

    /// A System One request's answer by the model's contract.
    pub async fn decided(self) -> Result<SystemOneResponse, Failed> {
        match self.answer().await? {
            Answer::Decided(r) => Ok(*r),
            _ => Err(Failed::Batch("a decision request was answered with something else".into())),
        }
    }

    /// A completion request's completions, in its prompts' order.
    pub async fn completed(self) -> Result<Vec<Completion>, Failed> {
        match self.answer().await? {
            Answer::Complete(c) => Ok(c),
            _ => Err(Failed::Batch("a completion request was answered with something else".into())),
        }
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
    pub fn submit(&self, job: Job) -> Result<Pending, Refused> {
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

/// The queue's thread: every request waiting, the score requests grouped by configuration (one
/// batch a group), the completion requests one batch.
fn schedule(engine: &Engine, mut rx: mpsc::Receiver<Queued>, queued: &AtomicUsize, last_ms: &AtomicU64) {
    while let Some(first) = rx.blocking_recv() {
        let mut jobs = vec![first];
        while let Ok(j) = rx.try_recv() {
            jobs.push(j);
        }
        queued.fetch_sub(jobs.len(), Ordering::SeqCst);
        jobs.retain(|j| !j.gone.load(Ordering::SeqCst) && !j.reply.is_closed());
        let mut groups: Vec<(RunConfig, Vec<Scoring>)> = Vec::new();
        let mut completions: Vec<Completing> = Vec::new();
        for j in jobs {
            match j.job {
                Job::Score(job) => {
                    let s = Scoring { job, reply: Some(j.reply), gone: j.gone };
                    match groups.iter_mut().find(|(c, _)| *c == s.job.config) {
                        Some((_, g)) => g.push(s),
                        None => groups.push((s.job.config.clone(), vec![s])),
                    }
                }
                Job::Complete(requests) => completions.push(Completing { requests, reply: j.reply, gone: j.gone }),
                Job::Decide(request, debias) => {
                    // One at a time: each request's renderings share its own state.
                    let start = Instant::now();
                    let out = readout::jobs::decide::by_contract(engine, &request, debias);
                    last_ms.store(start.elapsed().as_millis() as u64, Ordering::SeqCst);
                    let _ = j.reply.send(out.map(|r| Answer::Decided(Box::new(r))).map_err(Failed::Request));
                }
            }
        }
        for (config, group) in groups {
            let start = Instant::now();
            score(engine, &config, group);
            last_ms.store(start.elapsed().as_millis() as u64, Ordering::SeqCst);
        }
        if !completions.is_empty() {
            let start = Instant::now();
            complete_all(engine, completions);
            last_ms.store(start.elapsed().as_millis() as u64, Ordering::SeqCst);
        }
        // Idle: what the batches freed goes back to the system, so that the server's resident
        // memory after a burst of long states is what it was before (docs/serve.md).
        if queued.load(Ordering::SeqCst) == 0 {
            readout::memory::give_back();
        }
    }
}

/// A score request taken from the queue.
struct Scoring {
    job: Box<ScoreJob>,
    reply: Option<oneshot::Sender<Result<Answer, Failed>>>,
    gone: Arc<AtomicBool>,
}

/// A completion request taken from the queue.
struct Completing {
    requests: Vec<complete::Request>,
    reply: oneshot::Sender<Result<Answer, Failed>>,
    gone: Arc<AtomicBool>,
}

/// One group of score requests in one batch; each answered as its last text is decided.
fn score(engine: &Engine, config: &RunConfig, mut group: Vec<Scoring>) {
    let start = Instant::now();
    let mut replies: Vec<Option<_>> = group.iter_mut().map(|b| b.reply.take()).collect();
    let requests: Vec<Scored<'_>> =
        group.iter().map(|b| Scored { rubric: &b.job.rubric, texts: &b.job.texts }).collect();
    let lens: Vec<usize> = group.iter().map(|b| b.job.texts.len()).collect();
    let gone: Vec<Arc<AtomicBool>> = group.iter().map(|b| b.gone.clone()).collect();
    let mut got: Vec<Vec<TextResult>> = group.iter().map(|_| Vec::new()).collect();
    let all_gone = || gone.iter().all(|g| g.load(Ordering::SeqCst));
    let out = readout::jobs::score::score_requests(
        engine,
        &requests,
        config,
        &mut |k, r| {
            got[k].push(r.clone());
            if got[k].len() == lens[k] {
                let mut done = std::mem::take(&mut got[k]);
                done.sort_by_key(|r| r.index);
                if let Some(tx) = replies[k].take() {
                    let _ = tx.send(Ok(Answer::Score(done)));
                }
            }
            true
        },
        &|| !all_gone(),
    );
    let stopped = all_gone();
    tracing::info!(
        requests = requests.len(),
        texts = lens.iter().sum::<usize>(),
        ms = start.elapsed().as_millis() as u64,
        stopped,
        "batch read"
    );
    match out {
        Ok(results) => {
            for (tx, r) in replies.iter_mut().zip(results) {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(r.map(Answer::Score).map_err(Failed::Request));
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

/// Every waiting completion request's prompts as one trie; each request answered with its own.
fn complete_all(engine: &Engine, jobs: Vec<Completing>) {
    let start = Instant::now();
    let mut owner = Vec::new();
    let mut all = Vec::new();
    for (k, j) in jobs.iter().enumerate() {
        owner.extend(std::iter::repeat_n(k, j.requests.len()));
        all.extend(j.requests.iter().cloned());
    }
    let wanted = |i: usize| !jobs[owner[i]].gone.load(Ordering::SeqCst);
    let out = complete::complete(engine, &all, engine.pass_defaults(), &wanted);
    match out {
        Ok((completions, work)) => {
            tracing::info!(
                requests = jobs.len(),
                prompts = all.len(),
                prompt_tokens = work.prompt_tokens,
                computed_tokens = work.computed_tokens,
                generated_tokens = work.generated_tokens,
                passes = work.passes,
                ms = start.elapsed().as_millis() as u64,
                "completions read"
            );
            let mut each: Vec<Vec<Completion>> = jobs.iter().map(|_| Vec::new()).collect();
            for (c, &k) in completions.into_iter().zip(&owner) {
                each[k].push(c);
            }
            for (j, c) in jobs.into_iter().zip(each) {
                let _ = j.reply.send(Ok(Answer::Complete(c)));
            }
        }
        Err(e) => {
            // A request the library refuses (a prompt too long, say) is checked before it is
            // queued; what fails here fails the batch.
            tracing::error!("a completion batch failed: {e}");
            for j in jobs {
                let _ = j.reply.send(Err(Failed::Batch(format!("the batch this request was read in failed: {e}"))));
            }
        }
    }
}
