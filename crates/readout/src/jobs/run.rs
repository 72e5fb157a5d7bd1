//! `readout run` and the app's Evaluate page: an eval set through the pipeline — input (rows
//! with gold, shots) → plan (the prompt tree) → exec and combine ([`crate::pipeline`]) → metrics
//! → the result file. This module only sequences those stages, keeps the partial result file
//! while the run goes ([`Checkpoints`]), and resumes one: a resumed run plans every row again and
//! computes the units an uninterrupted run computes, skipping those with nothing left to read, so
//! the rows it adds are bit for bit the uninterrupted run's.

use crate::config::RunConfig;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::formats::evalset::EvalSet;
use crate::formats::results::{
    now_utc, EvalSetRecord, Machine, ModelRecord, PlanRecord, Program, ResultFile, RowRecord, ShotRecord, Status,
    Timing, SCHEMA, SCHEMA_VERSION,
};
use crate::pipeline::input::Job;
use crate::pipeline::plan::{self, RenderedPrompt};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use crate::config::Mode;

/// Progress as rows finish.
#[derive(Debug, Clone, Copy, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub elapsed_seconds: f64,
}

/// What the caller watches and controls while a run goes.
pub struct Control<'a> {
    /// Called after each finished row.
    pub progress: &'a mut dyn FnMut(Progress),
    /// Set to stop between passes; the run returns a partial result.
    pub stop: &'a AtomicBool,
    /// Keep a partial result file here while the run goes: rewritten as rows finish, at most
    /// once per the given interval (see `Checkpoints` for the policy), and when stopped.
    pub checkpoint: Option<(&'a Path, Duration)>,
}

/// Everything the run was asked to do.
pub struct RunInput<'a> {
    pub engine: &'a Engine,
    pub eval_set: &'a EvalSet,
    pub config: RunConfig,
    pub model_load_seconds: f64,
    /// A partial result to complete; its configuration is the run's ([`resume_config`]).
    pub resume: Option<ResultFile>,
    /// Score only the first this many items (`--limit`); the shots come from the whole set.
    /// Load the set without a limit.
    pub limit: Option<usize>,
    /// The `--family` the eval set was read with, for the record.
    pub family: Option<String>,
}

/// Check what a run of `eval_set` with `config` needs from the set alone (rows with a gold
/// answer, enough groups for the shots, the limit): what a shell calls before loading a model,
/// so that a bad input is refused at once.
pub fn check_input(eval_set: &EvalSet, config: &RunConfig, limit: Option<usize>) -> Result<()> {
    refuse_abstaining(config)?;
    Job::from_eval_set(eval_set, config, limit).map(|_| ())
}

/// A run answers every row: abstaining is for scoring texts.
fn refuse_abstaining(config: &RunConfig) -> Result<()> {
    if config.abstain_below.is_some() || config.abstain_letter_mass.is_some() {
        return Err(Error::Config(
            "a run answers every row; abstaining is for `score` (a run's metrics hold the risk–coverage curve and the coverage at 1 %, 5 % and 10 % error instead)".into(),
        ));
    }
    Ok(())
}

/// How often a shell's run rewrites its partial result file unless told otherwise (`readout run
/// --checkpoint-every`, the app's runs): a crash loses about this much work.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The partial run kept in `path`, and the configuration that completes it on `engine`
/// ([`resume_config`]): what every shell resumes a run with.
pub fn resume(engine: &Engine, path: &Path) -> Result<(ResultFile, RunConfig)> {
    let partial = ResultFile::load(path)?;
    let config = resume_config(engine, &partial, path)?;
    Ok((partial, config))
}

/// The configuration to complete `partial` with on `engine`: the file's own, once the file is
/// known to be partial and made with the kernels, weights and activations the engine has (the
/// rows it adds must be the rows an uninterrupted run gives). `path` names it in messages.
pub fn resume_config(engine: &Engine, partial: &ResultFile, path: &Path) -> Result<RunConfig> {
    if partial.status == Status::Complete {
        return Err(Error::Config(format!(
            "{} is already complete; nothing to resume (run again with --out and --force to redo it)",
            path.display()
        )));
    }
    let info = engine.info();
    if partial.config.levers.matmul != info.matmul {
        let m = partial.config.levers.matmul.as_str();
        return Err(Error::Config(format!(
            "{} was run with --matmul {m}; resume it with --matmul {m}",
            path.display()
        )));
    }
    let (w, a) = (&partial.model.weights, &partial.model.activations);
    if (w.as_str(), a.as_str()) != (info.weights.as_str(), info.activations) {
        let int8 = if a == "int8" { " --int8-activations" } else { "" };
        return Err(Error::Config(format!(
            "{} was run with {w} weights and {a} activations; resume it with --weights {w}{int8}",
            path.display()
        )));
    }
    if partial.model.sha256 != engine.sha256()? {
        return Err(Error::Config(format!(
            "{} was run with another model ({}); resume it with that model",
            path.display(),
            partial.model.file
        )));
    }
    // The prompts are the template's: rows added under another one would not be this run's.
    if let Some(want) = partial.model.chat_template_sha256.as_ref().filter(|w| **w != info.chat_template_sha256) {
        let name = partial.model.chat_template.as_deref().unwrap_or("unnamed");
        let how = if name == "model" {
            "without --chat-template (the model's own template)".to_string()
        } else {
            format!("with --chat-template {name}")
        };
        return Err(Error::Config(format!(
            "{} was run with another chat template ({name}, sha256 {}…; now {}); resume it {how}",
            path.display(),
            &want[..want.len().min(12)],
            info.chat_template
        )));
    }
    Ok(partial.config.clone())
}

/// Every prompt a run with `config` scores, in order (PriDe: the sample rows' permutations and
/// every other row's one ordering), with states fitted to the context as the run fits them.
/// `limit`: only the first items' prompts (the shots still come from the whole set).
pub fn prompt_texts(
    engine: &Engine,
    eval_set: &EvalSet,
    config: &RunConfig,
    limit: Option<usize>,
) -> Result<Vec<RenderedPrompt>> {
    let job = Job::from_eval_set(eval_set, config, limit)?;
    Ok(plan::plan(engine, &job, config)?.rendered(&job))
}

/// Run an evaluation. Returns the result (partial when stopped).
pub fn run(input: RunInput<'_>, control: &mut Control<'_>) -> Result<ResultFile> {
    run_selected(input, None, control)
}

/// Run an evaluation of only the rows of `groups` (item groups; [`crate::jobs::shard`]): the whole
/// run is planned (its shots, its prompt tree) and only the units on the way to these rows are
/// computed, as a resumed run computes only what it lacks, so every row gets the bits a whole run
/// gives it. The result is a partial file of the whole run holding these rows; the shards of a
/// run merge into the whole run's file ([`crate::jobs::shard::merge`]).
pub fn run_groups(input: RunInput<'_>, groups: &HashSet<String>, control: &mut Control<'_>) -> Result<ResultFile> {
    crate::jobs::shard::check_config(&input.config)?;
    run_selected(input, Some(groups), control)
}

fn run_selected(
    input: RunInput<'_>,
    groups: Option<&HashSet<String>>,
    control: &mut Control<'_>,
) -> Result<ResultFile> {
    let RunInput { engine, eval_set, config, model_load_seconds, resume, limit, family } = input;
    let start = Instant::now();
    // Checked here too: a caller may build the configuration by hand.
    let config = config.to_builder().build()?.resolve(engine);
    refuse_abstaining(&config)?;
    crate::formats::calibration::check_model(config.calibration.as_ref(), &engine.sha256()?)?;
    // 1. Input: the rows and shots; what a partial file has done already.
    let job = Job::from_eval_set(eval_set, &config, limit)?;
    // A shard: the rows of other groups are planned (the tree, and so every number, is the whole
    // run's) but not read, as a resumed run skips the rows it has.
    let outside: HashSet<usize> = match groups {
        Some(groups) => {
            let outside: HashSet<usize> =
                (0..job.rows.len()).filter(|&i| !groups.contains(&job.rows[i].group_id)).collect();
            if outside.len() == job.rows.len() {
                return Err(Error::Config("none of the groups asked for has a row to score in this eval set".into()));
            }
            outside
        }
        None => HashSet::new(),
    };
    let mut done: BTreeMap<usize, RowRecord> = BTreeMap::new();
    let (debias_state, computed_before) = match &resume {
        Some(prev) => {
            if prev.config.clone().resolve(engine) != config {
                return Err(Error::Config(
                    "the partial result was made with a different configuration; resume it with the same options"
                        .into(),
                ));
            }
            let index: HashMap<&str, usize> = job.rows.iter().enumerate().map(|(i, r)| (r.id.as_str(), i)).collect();
            for rec in &prev.rows {
                if let Some(&i) = index.get(rec.id.as_str()) {
                    done.insert(i, rec.clone());
                }
            }
            (prev.debias_state.clone(), prev.plan.computed_tokens)
        }
        None => (serde_json::json!({}), 0),
    };
    // 2. Plan: every row's prompts, done or not, as one tree.
    let planned = plan::plan(engine, &job, &config)?;
    tracing::info!(
        "{} prompts rendered and tokenized in {:.3} s",
        planned.prompts.len(),
        start.elapsed().as_secs_f64()
    );
    let plan_record = |computed: usize, unique: usize| PlanRecord {
        prompts: planned.prompts.len(),
        prompt_tokens: planned.prompt_tokens(),
        unique_tokens: unique,
        computed_tokens: computed_before + computed,
        truncated_rows: 0,
    };
    // 3. Exec and combine, the rows recorded as they finish.
    let header = Header::new(engine, eval_set, &job, &config, model_load_seconds, limit, family)?;
    let total = job.rows.len();
    let before: HashSet<usize> = done.keys().chain(&outside).copied().collect();
    let ids: Vec<String> = job.rows.iter().map(|r| r.id.clone()).collect();
    let mut checkpoints = control.checkpoint.map(|(path, every)| Checkpoints::new(path, every));
    let opts = config.pass_options(engine.pass_defaults().group_units);
    let tally = crate::pipeline::execute(
        engine,
        opts,
        &planned,
        crate::pipeline::exec::Shape::Trie,
        &config,
        &ids,
        &before,
        debias_state,
        &mut |finished, so_far| {
            let any = !finished.is_empty();
            for (ri, c) in finished {
                let r = &job.rows[ri];
                if let Some(rec) = row_record(r, c, job.shots.for_row(r).1.to_vec()) {
                    done.insert(ri, rec);
                }
                (control.progress)(Progress {
                    done: done.len(),
                    total,
                    elapsed_seconds: start.elapsed().as_secs_f64(),
                });
            }
            if let Some(cp) = checkpoints.as_mut().filter(|cp| any && cp.due()) {
                let w = so_far.work;
                cp.save(|| {
                    let plan = plan_record(w.computed, w.unique);
                    let wall = start.elapsed().as_secs_f64();
                    header.assemble(&done, Status::Partial, &so_far.debias_state, wall, plan)
                })?;
            }
            Ok(!control.stop.load(Ordering::Relaxed))
        },
    )?;
    // 4. Metrics and the result file.
    let status = if tally.work.stopped || done.len() < total { Status::Partial } else { Status::Complete };
    let plan = plan_record(tally.work.computed, tally.work.unique);
    let result = header.assemble(&done, status, &tally.debias_state, start.elapsed().as_secs_f64(), plan);
    if let Some((path, _)) = control.checkpoint {
        if status == Status::Partial {
            result.write(path)?;
        }
    }
    Ok(result)
}

/// How often a running evaluation rewrites its partial result file. The file is rewritten
/// (atomically: a temporary file, then a rename) after a forward pass that finished at least
/// one row, once `every` has passed since the last write, and no sooner than 20 times what the
/// last write took, so that writing costs at most about 5 % of the run however large the file.
/// A run killed at any moment leaves no file or a valid partial one, holding every row finished
/// before the last write: with the CLI's one second, a kill loses the pass in flight and at
/// most a second more.
struct Checkpoints<'p> {
    path: &'p Path,
    every: Duration,
    last: Instant,
    cost: Duration,
}

impl<'p> Checkpoints<'p> {
    fn new(path: &'p Path, every: Duration) -> Self {
        Checkpoints { path, every, last: Instant::now(), cost: Duration::ZERO }
    }

    fn due(&self) -> bool {
        self.last.elapsed() >= self.every.max(self.cost * 20)
    }

    /// Build the partial result and write it, timing both.
    fn save(&mut self, make: impl FnOnce() -> ResultFile) -> Result<()> {
        let t = Instant::now();
        make().write(self.path)?;
        self.cost = t.elapsed();
        self.last = Instant::now();
        tracing::debug!(path = %self.path.display(), seconds = self.cost.as_secs_f64(), "checkpoint written");
        Ok(())
    }
}
/// The parts of a result file fixed before scoring.
struct Header {
    program: Program,
    machine: Machine,
    model: ModelRecord,
    eval_set: EvalSetRecord,
    config: RunConfig,
    shots: ShotRecord,
    model_load_seconds: f64,
    /// The engine's device, for its peak memory.
    device: candle_core::Device,
}

impl Header {
    /// What a run records before its first row: the program, the machine, the model, the eval
    /// set (`rows` selected, with the `limit` and `family` it was read with), the configuration.
    fn new(
        engine: &Engine,
        set: &EvalSet,
        job: &Job<'_>,
        config: &RunConfig,
        model_load_seconds: f64,
        limit: Option<usize>,
        family: Option<String>,
    ) -> Result<Header> {
        let info = engine.info();
        Ok(Header {
            program: Program { name: "readout".into(), version: env!("CARGO_PKG_VERSION").into() },
            machine: Machine {
                os: std::env::consts::OS.into(),
                arch: std::env::consts::ARCH.into(),
                cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
                device: info.device.clone(),
            },
            model: model_record(engine)?,
            eval_set: EvalSetRecord {
                name: set.name.clone(),
                path: set.path.display().to_string(),
                sha256: set.sha256.clone(),
                rows: job.rows.len(),
                limit,
                family,
                skipped: set.skipped.clone(),
            },
            config: config.clone(),
            shots: ShotRecord { primary: job.shots.primary_ids.clone(), alternate: job.shots.alternate_ids.clone() },
            model_load_seconds,
            device: engine.device().clone(),
        })
    }

    /// The result file of the rows done so far, metrics included.
    fn assemble(
        &self,
        done: &std::collections::BTreeMap<usize, RowRecord>,
        status: Status,
        debias_state: &serde_json::Value,
        wall_seconds: f64,
        plan: PlanRecord,
    ) -> ResultFile {
        let wall = wall_seconds;
        let n = done.len();
        let mut file = ResultFile {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            status,
            created: now_utc(),
            program: self.program.clone(),
            machine: self.machine.clone(),
            model: self.model.clone(),
            eval_set: self.eval_set.clone(),
            config: self.config.clone(),
            shots: self.shots.clone(),
            debias_state: debias_state.clone(),
            plan: PlanRecord { truncated_rows: done.values().filter(|r| r.truncated_tokens.is_some()).count(), ..plan },
            metrics: None,
            timing: Timing {
                wall_seconds: wall,
                model_load_seconds: self.model_load_seconds,
                rows_per_second: if wall > 0.0 { n as f64 / wall } else { 0.0 },
                mean_row_seconds: if n > 0 { wall / n as f64 } else { 0.0 },
                peak_rss_bytes: crate::memory::peak_rss(),
                peak_device_bytes: crate::engine::device::peak_memory(&self.device),
            },
            rows: done.values().cloned().collect(),
        };
        file.summarize();
        file
    }
}

/// A row of an eval set as decided; `None` for a row without gold (a text to score).
fn row_record(
    row: &crate::pipeline::input::Row<'_>,
    c: crate::pipeline::combine::Combined,
    shots: Vec<String>,
) -> Option<RowRecord> {
    let gold = row.gold?;
    let option_ids: Vec<String> = row.criterion.options.iter().map(|o| o.id.clone()).collect();
    Some(RowRecord {
        id: row.id.clone(),
        family: row.family.clone(),
        group_id: row.group_id.clone(),
        gold,
        gold_id: option_ids.get(gold)?.clone(),
        predicted_id: c.predicted.and_then(|p| option_ids.get(p).cloned()),
        option_ids,
        shots,
        orderings: c.orderings,
        correct: c.predicted == Some(gold),
        invalid: c.predicted.is_none(),
        order_unstable: c.order_unstable,
        probs: c.probs,
        predicted: c.predicted,
        truncated_tokens: c.truncated_tokens,
    })
}
/// What a result or scored file records of the model that made it: its name as Readout shows
/// it, its file and checksum, and how its weights, activations and cache were held.
pub fn model_record(engine: &Engine) -> Result<ModelRecord> {
    let info = engine.info();
    Ok(ModelRecord {
        name: crate::models::name_of(&info.path),
        file: info.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        sha256: engine.sha256()?,
        architecture: info.architecture.as_str().into(),
        quantisation: info.quantisation.clone(),
        parameters: info.parameters,
        weights: info.weights.as_str().into(),
        activations: info.activations.into(),
        kv_cache: info.kv_cache.as_str().into(),
        precision: info.precision.as_str().into(),
        attention: info.attention.as_str().into(),
        fused_kernels: info.fused_kernels.as_str().into(),
        source: info.source.clone(),
        chat_template: Some(info.chat_template.clone()),
        chat_template_sha256: Some(info.chat_template_sha256.clone()),
    })
}
