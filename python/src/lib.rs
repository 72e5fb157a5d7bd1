//! `readout._readout`: the native half of the `readout` Python package, a thin shell over the
//! library as the CLI is. It parses what Python passes into the library's typed options, runs
//! the library with the GIL released, and hands back the library's own JSON (the `--json` lines
//! of `score`, the result file of `run`, a comparison), which `readout/__init__.py` turns into
//! dicts. Like every shell it, not the library, reads the environment: `READOUT_MODEL` and the
//! user's data folder, to find the default model the way the CLI does, and the Hugging Face
//! hub's variables (`HF_HOME`, `HF_HUB_CACHE`, `HF_ENDPOINT`, `HF_TOKEN`, `HF_HUB_OFFLINE`) for a
//! model named `hf:ORG/REPO[@REVISION][:FILE]`, as the CLI reads them. Library errors become
//! `readout.ReadoutError` with the library's message and its kind (the error's variant name).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use readout::analysis::loglik::Request;
use readout::config::{Mode, RunConfig};
use readout::debias::DebiasMode;
use readout::engine::device::DeviceRequest;
use readout::engine::template::TemplateSource;
use readout::engine::{AttentionPath, Engine, FusedKernels, KvCache, LoadOptions, MatmulPath, Precision, WeightsMode};
use readout::formats::evalset::EvalSet;
use readout::formats::results::ResultFile;
use readout::hub::{resolve, HubOptions, HubSpec};
use readout::jobs::request::{Policy, ScoreJob, ScoreRequest};
use readout::jobs::run::{Control, RunInput};
use readout::jobs::score::Text;
use readout::truncate::Truncate;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

create_exception!(_readout, ReadoutError, PyException, "An error of the Readout library; `kind` names it.");

/// A library error as `ReadoutError(message)` with `kind` set to the variant's name (a hub
/// error's own: `HubStopped`, `HubOffline`, …).
fn lib_err(e: readout::Error) -> PyErr {
    let debug = match &e {
        readout::Error::Hub(h) => format!("{h:?}"),
        other => format!("{other:?}"),
    };
    let kind = debug.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("Error").to_string();
    raise(&kind, e.to_string())
}

/// A `ReadoutError` of `kind` raised by this shell (a bad argument).
fn raise(kind: &str, message: String) -> PyErr {
    Python::with_gil(|py| {
        let err = ReadoutError::new_err(message);
        // Setting an attribute on a fresh exception cannot fail short of memory; the message stands.
        let _ = err.value(py).setattr("kind", kind);
        err
    })
}

/// An option's value parsed with its `FromStr` (the CLI's names), or `ReadoutError("Config")`.
fn parse<T: std::str::FromStr<Err = String>>(value: &str) -> PyResult<T> {
    value.parse::<T>().map_err(|e| raise("Config", e))
}

fn to_json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| raise("Json", format!("serialising the answer: {e}")))
}

/// The default model, as the CLI finds it: `$READOUT_MODEL`, the user's data folder's
/// `readout/models/`, then `models/` of the current folder.
#[pyfunction]
fn default_model() -> String {
    let data = dirs::data_dir().map(|d| d.join("readout"));
    readout::default_model_path(std::env::var_os("READOUT_MODEL").map(PathBuf::from), data.as_deref())
        .display()
        .to_string()
}

/// A loaded model: loaded once, used for any number of calls (from any thread).
#[pyclass(frozen, module = "readout._readout")]
struct Judge {
    engine: Engine,
    load_seconds: f64,
}

#[pymethods]
impl Judge {
    #[new]
    #[pyo3(signature = (model=None, device="auto", chat_template=None, threads=None, weights="auto", kv_cache="auto", int8_activations=false, matmul="dense", offline=false, precision="f32", attention="auto", fused_kernels="auto", progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        model: Option<PathBuf>,
        device: &str,
        chat_template: Option<&str>,
        threads: Option<usize>,
        weights: &str,
        kv_cache: &str,
        int8_activations: bool,
        matmul: &str,
        offline: bool,
        precision: &str,
        attention: &str,
        fused_kernels: &str,
        progress: Option<PyObject>,
    ) -> PyResult<Self> {
        let named = model.unwrap_or_else(|| PathBuf::from(default_model()));
        let (path, source) = match named.to_str().and_then(HubSpec::from_model_arg) {
            Some(spec) => {
                let spec = spec.map_err(|e| lib_err(e.into()))?;
                let mut hub =
                    HubOptions::from_vars(&|name| std::env::var(name).ok(), dirs::home_dir()).ok_or_else(|| {
                        raise("Config", "no folder for the Hugging Face cache: set HF_HUB_CACHE or HF_HOME".into())
                    })?;
                hub.offline |= offline;
                // Each downloaded chunk: Ctrl-C (a pending signal) stops the download, and so does
                // `progress(file, done, total)` returning False or raising; the partial file stays
                // for the next call to resume.
                let mut failure: Option<PyErr> = None;
                let resolved = py.allow_threads(|| {
                    resolve(&spec, &hub, &mut |p| {
                        Python::with_gil(|py| {
                            let go = py.check_signals().and_then(|()| match &progress {
                                Some(f) => {
                                    let r = f.call1(py, (p.file, p.done, p.total))?;
                                    let r = r.bind(py);
                                    Ok(r.is_none() || r.is_truthy()?)
                                }
                                None => Ok(true),
                            });
                            go.unwrap_or_else(|e| {
                                failure = Some(e);
                                false
                            })
                        })
                    })
                });
                if let Some(e) = failure {
                    return Err(e);
                }
                let resolved = resolved.map_err(|e| lib_err(e.into()))?;
                (resolved.path, Some(resolved.source))
            }
            None => (named, None),
        };
        let opts = LoadOptions {
            device: parse::<DeviceRequest>(device)?,
            matmul: parse::<MatmulPath>(matmul)?,
            weights: parse::<WeightsMode>(weights)?,
            int8_activations,
            kv_cache: parse::<KvCache>(kv_cache)?,
            precision: parse::<Precision>(precision)?,
            attention: parse::<AttentionPath>(attention)?,
            fused_kernels: parse::<FusedKernels>(fused_kernels)?,
            threads,
            cpu_kernel: readout::engine::CpuKernel::Auto,
            chat_template: chat_template.map(parse::<TemplateSource>).transpose()?,
        };
        let t0 = Instant::now();
        let mut engine = py.allow_threads(|| Engine::load(&path, &opts)).map_err(lib_err)?;
        if let Some(source) = source {
            engine.set_source(source);
        }
        Ok(Judge { engine, load_seconds: t0.elapsed().as_secs_f64() })
    }

    /// What the library reads from the model (`readout info`), as JSON.
    fn info(&self) -> PyResult<String> {
        to_json(self.engine.info())
    }

    /// Seconds the model took to load.
    #[getter]
    fn load_seconds(&self) -> f64 {
        self.load_seconds
    }

    /// Token ids of `text` as the model's tokenizer gives them (BOS first where the model adds it).
    fn tokenize(&self, text: &str) -> PyResult<Vec<u32>> {
        self.engine.tokenizer().encode(text).map_err(lib_err)
    }

    /// Text of token ids.
    fn detokenize(&self, ids: Vec<u32>) -> PyResult<String> {
        self.engine.tokenizer().decode(&ids).map_err(lib_err)
    }

    /// Decide every criterion of a rubric for each text: one JSON line a text, as
    /// `readout score --json` prints them. `texts`: (id or None, text); `rubric_json`: the
    /// rubric object as JSON, or a JSON string naming a rubric file; `rubric_name`: the name it
    /// is reported under.
    #[pyo3(signature = (texts, rubric_json, rubric_name, debias="none", truncate_middle=false))]
    fn score(
        &self,
        py: Python<'_>,
        texts: Vec<(Option<String>, String)>,
        rubric_json: &str,
        rubric_name: &str,
        debias: &str,
        truncate_middle: bool,
    ) -> PyResult<Vec<String>> {
        let rubric: serde_json::Value = serde_json::from_str(rubric_json)
            .map_err(|e| ReadoutError::new_err(format!("{rubric_name}: the rubric is not JSON: {e}")))?;
        // The one request every shell builds; its validation is the library's.
        let request = ScoreRequest {
            rubric: Some(rubric),
            texts: texts.into_iter().map(|(id, text)| Text { id, text }.into()).collect(),
            debias: Some(debias.to_string()),
            truncate_middle,
            ..ScoreRequest::default()
        };
        let ScoreJob { rubric, texts, config, .. } = request.validate(Policy::LOCAL).map_err(lib_err)?;
        let results = py
            .allow_threads(|| {
                readout::jobs::score::score_texts(
                    &self.engine,
                    &rubric,
                    &texts,
                    &config,
                    &HashSet::new(),
                    &mut |_, _, _| true,
                )
            })
            .map_err(lib_err)?;
        results.iter().map(to_json).collect()
    }

    /// Decide a System One request (TypeSafe's `/v1/systemone` body, as JSON): its answer as
    /// JSON, as `readout decide` prints it and `readout serve` answers it. `debias`: the mode of a
    /// request that names no `x_debias`.
    #[pyo3(signature = (request_json, debias="cyclic"))]
    fn decide(&self, py: Python<'_>, request_json: &str, debias: &str) -> PyResult<String> {
        let request =
            readout::jobs::systemone::SystemOneRequest::from_json(request_json.as_bytes()).map_err(lib_err)?;
        let default: readout::debias::DebiasMode =
            debias.parse().map_err(|e: String| ReadoutError::new_err(format!("debias: {e}")))?;
        let config = readout::config::RunConfig::builder().build().map_err(lib_err)?;
        let answer = py
            .allow_threads(|| readout::jobs::decide::decide(&self.engine, &request, config, default))
            .map_err(lib_err)?;
        to_json(&answer)
    }

    /// Evaluate the model on an eval set: the result file's JSON, as `readout run` writes it
    /// (written to `out` too when given). `groups`: score only the rows of these item groups
    /// (a shard; the shots still come from the whole set).
    #[pyo3(signature = (evalset, shots=0, shot_seed=0, debias="none", mode="readout", limit=None, family=None, skip_bad=false, truncate_middle=false, prompt="default", pass_tokens=None, groups=None, out=None))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        evalset: PathBuf,
        shots: usize,
        shot_seed: u64,
        debias: &str,
        mode: &str,
        limit: Option<usize>,
        family: Option<String>,
        skip_bad: bool,
        truncate_middle: bool,
        prompt: &str,
        pass_tokens: Option<usize>,
        groups: Option<Vec<String>>,
        out: Option<PathBuf>,
    ) -> PyResult<String> {
        let set = load_set(&evalset, skip_bad, family.clone())?;
        let mut builder = RunConfig::builder()
            .shots(shots)
            .shot_seed(shot_seed)
            .debias(parse::<DebiasMode>(debias)?)
            .mode(parse::<Mode>(mode)?)
            .prompt_version(parse(prompt)?)
            .truncate(if truncate_middle { Truncate::Middle } else { Truncate::None })
            .matmul(self.engine.info().matmul);
        if let Some(n) = pass_tokens {
            builder = builder.pass_tokens(n);
        }
        let config = builder.build().map_err(lib_err)?;
        let groups: Option<HashSet<String>> = groups.map(|g| g.into_iter().collect());
        let result = py
            .allow_threads(|| {
                let stop = AtomicBool::new(false);
                let mut control = Control { progress: &mut |_| {}, stop: &stop, checkpoint: None };
                let input = RunInput {
                    engine: &self.engine,
                    eval_set: &set,
                    config,
                    model_load_seconds: self.load_seconds,
                    resume: None,
                    limit,
                    family,
                };
                let result = match &groups {
                    Some(g) => readout::jobs::run::run_groups(input, g, &mut control),
                    None => readout::jobs::run::run(input, &mut control),
                }?;
                if let Some(p) = &out {
                    result.write(p)?;
                }
                Ok(result)
            })
            .map_err(lib_err)?;
        to_json(&result)
    }

    /// Log-likelihood of each (context ids, continuation ids): (Σ log p, every token greedy),
    /// all planned as one prefix tree ([`readout::analysis::loglik`]); `plain`: one request at a time,
    /// nothing shared (the reference). Also what went through the model, as JSON.
    #[pyo3(signature = (requests, plain=false, pass_tokens=None))]
    fn loglikelihood(
        &self,
        py: Python<'_>,
        requests: Vec<(Vec<u32>, Vec<u32>)>,
        plain: bool,
        pass_tokens: Option<usize>,
    ) -> PyResult<(Vec<(f64, bool)>, String)> {
        let requests: Vec<Request> =
            requests.into_iter().map(|(context, continuation)| Request { context, continuation }).collect();
        let mut opts = self.engine.pass_defaults();
        if let Some(n) = pass_tokens {
            opts.pass_tokens = n.max(1);
        }
        let (answers, work) = py
            .allow_threads(|| {
                if plain {
                    Ok((readout::analysis::loglik::loglikelihood_plain(&self.engine, &requests)?, Default::default()))
                } else {
                    readout::analysis::loglik::loglikelihood(&self.engine, &requests, opts)
                }
            })
            .map_err(lib_err)?;
        Ok((answers.iter().map(|a| (a.logprob, a.greedy)).collect(), to_json(&work)?))
    }
}

fn load_set(path: &Path, skip_bad: bool, family: Option<String>) -> PyResult<EvalSet> {
    EvalSet::load(path, &readout::formats::evalset::LoadOptions { skip_bad, limit: None, family }).map_err(lib_err)
}

fn result_file(json: &str, name: &str) -> PyResult<ResultFile> {
    ResultFile::from_bytes(json.as_bytes(), Path::new(name)).map_err(lib_err)
}

/// Compare two result files (their JSON) of one eval set, paired by row id: `readout compare --json`.
#[pyfunction]
fn compare(a_json: &str, b_json: &str) -> PyResult<String> {
    let (a, b) = (result_file(a_json, "a")?, result_file(b_json, "b")?);
    if a.eval_set.sha256 != b.eval_set.sha256 {
        return Err(raise(
            "BadFile",
            format!(
                "b scored a different eval set ({}) from a ({}); compare runs of one eval set",
                b.eval_set.name, a.eval_set.name
            ),
        ));
    }
    to_json(&readout::metrics::compare(&a.scored_rows(), &b.scored_rows()))
}

/// The item groups of a run's rows split into at most `n` shards of about equal rows.
#[pyfunction]
#[pyo3(signature = (evalset, n, shots=0, shot_seed=0, debias="none", limit=None, family=None, skip_bad=false))]
#[allow(clippy::too_many_arguments)]
fn shard_groups(
    evalset: PathBuf,
    n: usize,
    shots: usize,
    shot_seed: u64,
    debias: &str,
    limit: Option<usize>,
    family: Option<String>,
    skip_bad: bool,
) -> PyResult<Vec<Vec<String>>> {
    let set = load_set(&evalset, skip_bad, family)?;
    let config = RunConfig::builder()
        .shots(shots)
        .shot_seed(shot_seed)
        .debias(parse::<DebiasMode>(debias)?)
        .build()
        .map_err(lib_err)?;
    readout::jobs::shard::split_groups(&set, &config, limit, n).map_err(lib_err)
}

/// The shards' result files (their JSON) merged into the one a single run writes.
#[pyfunction]
#[pyo3(signature = (parts, evalset, family=None, skip_bad=false))]
fn merge(parts: Vec<String>, evalset: PathBuf, family: Option<String>, skip_bad: bool) -> PyResult<String> {
    let set = load_set(&evalset, skip_bad, family)?;
    let parts =
        parts.iter().enumerate().map(|(i, p)| result_file(p, &format!("shard {i}"))).collect::<PyResult<Vec<_>>>()?;
    to_json(&readout::jobs::shard::merge(&parts, &set).map_err(lib_err)?)
}

#[pymodule]
fn _readout(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ReadoutError", m.py().get_type::<ReadoutError>())?;
    m.add_class::<Judge>()?;
    m.add_function(wrap_pyfunction!(default_model, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(shard_groups, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
