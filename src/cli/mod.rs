//! Argument parsing in two stages: clap turns the command line into plain structs (`Cli`), then
//! each subcommand turns those into library calls and checks what clap cannot (files, models).

mod bench;
mod calibrate;
mod completions;
mod decide;
mod derive;
mod jury;
mod labels;
mod levers;
mod markdown;
mod mcp;
mod models;
mod onnx;
mod pairwise;
mod profile;
mod prompts;
mod pull;
mod quality_table;
mod quantize;
mod report;
mod run;
mod score;
mod serve;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand};
use readout::engine::device::DeviceRequest;
use readout::engine::template::TemplateSource;
use readout::engine::{
    AttentionPath, CpuKernel, Engine, FusedKernels, KvCache, LoadOptions, MatmulPath, Precision, WeightsMode,
};
use std::path::PathBuf;

/// Decide rubric criteria with a small local language model by reading the answer-letter logits.
#[derive(Parser)]
#[command(name = "readout", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log more (-v: info, -vv: debug).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate a model on a labelled eval set; write a result file.
    Run(run::RunArgs),
    /// Compare two result files of one eval set (paired by row id: exact McNemar, group bootstrap intervals).
    Compare(report::CompareArgs),
    /// Fit a temperature on a result file's rows, checked on held-out folds; write a calibration file.
    Calibrate(calibrate::CalibrateArgs),
    /// Pool several judges' result files on one eval set into a jury (equal or fitted weights):
    /// each judge, the jury, the jury against the best judge, the judges' agreement.
    Jury(jury::JuryArgs),
    /// Pairwise questions: turn a pairs file into an eval set, and the systems' win rates and
    /// Bradley–Terry scores from a run of it.
    Pairwise(pairwise::PairwiseArgs),
    /// The table of every run in a results folder.
    Table(report::TableArgs),
    /// Check the judge against your own labels: draw texts to label, then agreement and
    /// corrected rates with 95 % intervals.
    Labels(labels::LabelsArgs),
    /// Decide each criterion of a rubric for one text or many.
    Score(score::ScoreArgs),
    /// Decide a System One request (TypeSafe's /v1/systemone body) and print its answer.
    Decide(decide::DecideArgs),
    /// Print the exact prompts a run would score (JSON Lines), for feeding peers.
    Prompts(prompts::PromptsArgs),
    /// Re-encode a GGUF model's weights (f32, f16, q8_0, q4_0, q4_1, q4_k, q6_k).
    Quantize(quantize::QuantizeArgs),
    /// Benchmarks that write timing files (prefill).
    Bench(bench::BenchArgs),
    /// Show what Readout reads from a model file: shape, tokenizer, chat template, letters.
    Info(InfoArgs),
    /// The seed's levers as edits of an ONNX export, for onnxruntime: trim (the head at the last
    /// position) and prune (the head cut to the answer letters).
    Onnx(onnx::OnnxArgs),
    /// DERIVED figures of a model's shape: LM-head FLOPs and bytes, trim and prune savings,
    /// KV-cache bytes, sizes per encoding (reads only the metadata).
    Derive(derive::DeriveArgs),
    /// Get a model from the Hugging Face hub into the Hugging Face cache: ORG/REPO[@REVISION][:FILE].
    Pull(pull::PullArgs),
    /// The models on this machine (Hugging Face cache, data folder, models/) and judges worth trying.
    Models(models::ModelsArgs),
    /// Serve a `score` tool over the Model Context Protocol on standard input and output, with
    /// the model loaded once.
    Mcp(mcp::McpArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(completions::CompletionsArgs),
    /// Print the man page, or write one per subcommand into a folder (-o DIR).
    Man(completions::ManArgs),
    /// Serve the model over HTTP: POST /v1/score, GET /v1/models, /health, /openapi.json.
    Serve(serve::ServeArgs),
}

/// Which eval-set rows a run scores, with which shots and orderings: shared by `run` and
/// `prompts`, so both see exactly the same prompts.
#[derive(Args, Clone)]
pub struct SelectArgs {
    /// The eval set (JSON Lines, row or request form).
    pub evalset: PathBuf,
    /// Score only the first N items (after --family); the shots still come from the whole set.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub limit: Option<usize>,
    /// Only items of this family.
    #[arg(long)]
    pub family: Option<String>,
    /// Worked examples before each scored item.
    #[arg(long, default_value_t = 0)]
    pub shots: usize,
    /// Seed for choosing the shots.
    #[arg(long, default_value_t = 0)]
    pub shot_seed: u64,
    /// none, cyclic, permutation, calibrate, pride or batch.
    #[arg(long, default_value = "none")]
    pub debias: readout::debias::DebiasMode,
    /// A calibration file (`readout calibrate`): its temperature is applied to every row's
    /// combined probabilities; recorded in the result file with the file's sha256.
    #[arg(long, value_name = "CAL.json")]
    pub calibration: Option<PathBuf>,
    /// A state whose prompt is longer than the model's context: cut it from the middle (head and
    /// tail kept, " […] " between them) instead of refusing the run; recorded in the result file.
    #[arg(long)]
    pub truncate_middle: bool,
}

impl SelectArgs {
    /// The eval set these options name (every row; a bad one is an error).
    pub fn load_set(&self) -> Result<readout::formats::evalset::EvalSet> {
        let opts = readout::formats::evalset::LoadOptions { skip_bad: false, limit: None, family: self.family.clone() };
        Ok(readout::formats::evalset::EvalSet::load(&self.evalset, &opts)?)
    }

    /// One run of `set` on `engine` with `config`, as the benchmarks make it: no progress shown,
    /// no checkpoint, no resume.
    pub fn run_quietly(
        &self,
        engine: &Engine,
        set: &readout::formats::evalset::EvalSet,
        config: readout::config::RunConfig,
        model_load_seconds: f64,
    ) -> Result<readout::formats::results::ResultFile> {
        use readout::jobs::run::{run, Control, RunInput};
        let stop = std::sync::atomic::AtomicBool::new(false);
        let mut progress = |_| {};
        let mut control = Control { progress: &mut progress, stop: &stop, checkpoint: None };
        let input = RunInput {
            engine,
            eval_set: set,
            config,
            model_load_seconds,
            resume: None,
            limit: self.limit,
            family: self.family.clone(),
        };
        Ok(run(input, &mut control)?)
    }

    /// The configuration these options set, for the subcommand to add its own and build.
    pub fn builder(&self) -> Result<readout::config::ConfigBuilder> {
        Ok(readout::config::RunConfig::builder()
            .shots(self.shots)
            .shot_seed(self.shot_seed)
            .debias(self.debias)
            .truncate(truncate(self.truncate_middle))
            .calibration(calibration(self.calibration.as_deref())?))
    }
}

/// The temperature of a `--calibration` file, as the configuration takes it.
pub fn calibration(path: Option<&std::path::Path>) -> Result<Option<readout::formats::calibration::Calibration>> {
    Ok(match path {
        Some(p) => Some(readout::formats::calibration::CalibrationFile::load(p)?.1),
        None => None,
    })
}

/// What to do with a state too long for the context (`--truncate-middle`).
pub fn truncate(middle: bool) -> readout::truncate::Truncate {
    if middle {
        readout::truncate::Truncate::Middle
    } else {
        readout::truncate::Truncate::None
    }
}

/// The model options every model-using subcommand takes.
#[derive(Args, Clone)]
pub struct ModelArgs {
    /// A GGUF file, a Hugging Face model directory, or a model on the Hugging Face hub:
    /// hf:ORG/REPO[@REVISION][:FILE] (downloaded into the Hugging Face cache once, then read from
    /// it) [default: models/SmolLM2-135M-Instruct.Q4_1.gguf]. `run` and `score` take it more
    /// than once: a jury of those models (files or folders), read one after another.
    #[arg(long, short = 'm')]
    pub model: Vec<PathBuf>,
    /// With --model hf:…: use the Hugging Face cache only, never the network (also HF_HUB_OFFLINE=1).
    #[arg(long)]
    pub offline: bool,
    /// Where to run: auto, cpu, cuda or metal.
    #[arg(long, default_value = "auto", value_parser = clap::value_parser!(DeviceRequest))]
    pub device: DeviceRequest,
    /// Matmul kernels: dense (our panels; f32 arithmetic), quantized (candle's quantised kernels), or auto (quantised for single-token steps).
    #[arg(long, default_value = "dense", value_parser = parse_matmul)]
    pub matmul: MatmulPath,
    /// How weights sit in memory: native (the file's encoding, decoded as the kernels multiply), f32 (expanded at load), or auto (native on the CPU and Metal; on CUDA when f32 would take over half the free memory).
    #[arg(long, default_value = "auto")]
    pub weights: WeightsMode,
    /// Multiply native weights with 8-bit activations (llama.cpp's choice) instead of 16-bit: faster, and the answers move (bench/README.md measures how far).
    #[arg(long)]
    pub int8_activations: bool,
    /// Precision of the KV cache: f16 (half the memory; attention sees keys and values rounded to f16, as in llama.cpp), f32, or auto (f16 on the CPU, f32 on a GPU).
    #[arg(long, default_value = "auto")]
    pub kv_cache: KvCache,
    /// Arithmetic of the dense matmuls on a CUDA GPU: f32, tf32 (tensor cores on f32 tensors, every matmul), or bf16 (the block projections' weights and inputs in bf16; attention and the head f32). bench/README.md measures speed and drift of each; the CPU takes f32 only.
    #[arg(long, default_value = "f32")]
    pub precision: Precision,
    /// Attention: matmuls (per segment: concatenation, two matmuls, mask, softmax), kernel (one kernel a layer for every segment of a pass, its prefix read in place: on a CUDA GPU faster, same answers within 1e-4; on the CPU slower, and every prompt's numbers bit for bit the same whatever else shares its pass, as the OpenAI API's clients batch them), or auto (kernel on CUDA, matmuls elsewhere).
    #[arg(long, default_value = "auto")]
    pub attention: AttentionPath,
    /// A layer's element-wise steps on a CUDA GPU: on (the residual add with the next RMSNorm, q/k's norms with RoPE and the query scale, the MLP's activation: one kernel each; same answers within 1e-4; 5-15 % faster runs on an H200), off (candle's ops, several launches each), or auto (on on CUDA). The CPU path is the same either way.
    #[arg(long, default_value = "auto")]
    pub fused_kernels: FusedKernels,
    /// CPU threads for the matmuls [default: all cores]; at most 4 a core.
    #[arg(long, value_parser = threads)]
    pub threads: Option<usize>,
    /// The integer kernel's instructions on x86-64: auto (AMX tiles where the CPU and the system allow them, else AVX-512 VNNI) or avx512. The same answers bit for bit; docs/performance.md measures both.
    #[arg(long, default_value = "auto")]
    pub cpu_kernel: CpuKernel,
    /// The chat template to render prompts with, instead of the model's own (a model without one
    /// needs it): a family as llama.cpp names it (chatml, gemma, llama2, llama3, mistral-v7,
    /// phi3, …; an unknown name lists them) or a Jinja file. Recorded in result files.
    #[arg(long, value_name = "NAME|FILE")]
    pub chat_template: Option<TemplateSource>,
}

/// The default model: `$READOUT_MODEL`, the user's data folder's `readout/models/`, then
/// `models/` here (`readout::default_model_path`).
pub fn default_model() -> PathBuf {
    let data = dirs::data_dir().map(|d| d.join("readout"));
    readout::default_model_path(std::env::var_os("READOUT_MODEL").map(PathBuf::from), data.as_deref())
}

/// `MatmulPath`'s names, and the British spelling beside `quantized`.
fn parse_matmul(s: &str) -> std::result::Result<MatmulPath, String> {
    match s {
        "quantised" => Ok(MatmulPath::Quantized),
        other => other.parse(),
    }
}

impl ModelArgs {
    /// Load the chosen model.
    pub fn load(&self) -> Result<Engine> {
        let (path, source) = self.path()?;
        let mut engine =
            Engine::load(&path, &self.load_options()).with_context(|| format!("loading model {}", path.display()))?;
        if let Some(source) = source {
            engine.set_source(source);
        }
        if let Some(why) = &engine.info().device_fallback {
            eprintln!("readout: {why}");
        }
        // The sha256 that every result file names is part of knowing the model: hashed with the
        // load (and counted in its seconds), not in the wall of the first run or score.
        engine.sha256().with_context(|| format!("hashing the model {}", path.display()))?;
        Ok(engine)
    }

    /// The model's path: the one named, or for `hf:ORG/REPO…` the file (or directory) in the
    /// Hugging Face cache, fetched when missing, and where it came from.
    pub fn path(&self) -> Result<(PathBuf, Option<readout::hub::ModelSource>)> {
        if self.model.len() > 1 {
            anyhow::bail!(
                "{} models named; this command reads one (several --model make a jury, which `readout run` and `readout score` take)",
                self.model.len()
            );
        }
        let named = self.model.first().cloned().unwrap_or_else(default_model);
        Ok(match named.to_str().and_then(readout::hub::HubSpec::from_model_arg) {
            Some(spec) => {
                let spec = spec?;
                let resolved = pull::resolve_with_bar(&spec, &pull::hub_options(self.offline)?)?;
                (resolved.path, Some(resolved.source))
            }
            None => (named, None),
        })
    }

    /// Load a jury's judge: its model file or folder with these options and its own chat
    /// template where it names one; returns the engine and the load's seconds (the sha256
    /// included).
    pub fn load_judge(
        &self,
        spec: &readout::formats::judges::JudgeSpec,
    ) -> readout::Result<(std::sync::Arc<Engine>, f64)> {
        let t0 = std::time::Instant::now();
        let mut opts = self.load_options();
        if let Some(t) = &spec.chat_template {
            opts.chat_template = Some(t.parse().map_err(readout::Error::Config)?);
        }
        let engine = Engine::load(&spec.model, &opts)?;
        if let Some(why) = &engine.info().device_fallback {
            eprintln!("readout: {why}");
        }
        engine.sha256()?;
        Ok((std::sync::Arc::new(engine), t0.elapsed().as_secs_f64()))
    }

    /// The judges of `--model A --model B …` as a score request's `judges` (`None` for one model).
    pub fn judges(&self) -> Option<serde_json::Value> {
        (self.model.len() > 1).then(|| {
            self.model.iter().map(|m| serde_json::json!({ "model": m.to_string_lossy() })).collect::<Vec<_>>().into()
        })
    }

    /// How to load it.
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            device: self.device,
            matmul: self.matmul,
            weights: self.weights,
            int8_activations: self.int8_activations,
            kv_cache: self.kv_cache,
            precision: self.precision,
            attention: self.attention,
            fused_kernels: self.fused_kernels,
            threads: self.threads,
            cpu_kernel: self.cpu_kernel,
            chat_template: self.chat_template.clone(),
        }
    }
}

#[derive(Args)]
struct InfoArgs {
    #[command(flatten)]
    model: ModelArgs,
}

/// Parse and run; returns the process exit code.
pub fn run() -> Result<i32> {
    let cli = Cli::parse();
    let filter = match cli.verbose {
        // A server logs its requests.
        0 if matches!(cli.command, Command::Serve(_) | Command::Mcp(_)) => "info",
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| filter.into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    match cli.command {
        Command::Score(a) => score::run(a),
        Command::Decide(a) => decide::run(a),
        Command::Run(a) => run::run_cmd(a),
        Command::Compare(a) => report::compare_cmd(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Jury(a) => jury::run(a),
        Command::Pairwise(a) => pairwise::run(a),
        Command::Table(a) => report::table(a),
        Command::Labels(a) => labels::run(a),
        Command::Info(a) => info(a),
        Command::Prompts(a) => prompts::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Quantize(a) => quantize::run(a),
        Command::Derive(a) => derive::run(a),
        Command::Onnx(a) => onnx::run(a),
        Command::Pull(a) => pull::run(a),
        Command::Models(a) => models::run(a),
        Command::Mcp(a) => mcp::run(a),
        Command::Completions(a) => completions::completions(a, Cli::command()),
        Command::Man(a) => completions::man(a, Cli::command()),
        Command::Serve(a) => serve::run(a),
    }
}

/// Refuse to overwrite `out` unless `--force` was given.
fn keep_existing(out: &std::path::Path, force: bool) -> Result<()> {
    if out.exists() && !force {
        return Err(readout::Error::Config(format!(
            "{} exists and is kept; pass --force to overwrite it, or another -o",
            out.display()
        ))
        .into());
    }
    Ok(())
}

fn info(a: InfoArgs) -> Result<i32> {
    let engine = a.model.load()?;
    let info = engine.info();
    let mut out = serde_json::to_value(info)?;
    // An ONNX export: its graph as read (ops, the weights' encodings, layers found).
    if let Some(graph) = readout::engine::onnx_graph(&info.path)? {
        out["onnx_graph"] = serde_json::to_value(graph)?;
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(0)
}

/// The error as the CLI prints it: the chain of messages (`{:#}`), with the advice the library
/// leaves to each shell worded here, with the CLI's flags.
pub fn describe(err: &anyhow::Error) -> String {
    use readout::Error as E;
    let text = format!("{err:#}");
    match err.chain().last().and_then(|e| e.downcast_ref::<E>()) {
        Some(E::PromptTooLong { part, without, cut_helps, .. }) => {
            let advice = if !cut_helps {
                if *part == "state" {
                    format!(
                        "without its state the prompt (system turn, shots, question and options) is still {without} tokens, so cutting the state cannot make it fit: use fewer --shots, shorter questions, or a model with a longer context"
                    )
                } else {
                    format!(
                        "without the text the prompt (system turn, question and options) is still {without} tokens, so cutting the text cannot make it fit: shorten the rubric's questions or use a model with a longer context"
                    )
                }
            } else {
                format!("shorten the {part}, or pass --truncate-middle to cut it from the middle (its head and tail are kept)")
            };
            format!("{text}: {advice}.")
        }
        _ => text,
    }
}

/// Exit codes, as the README documents them.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    use readout::Error as E;
    // The hub's errors come bare (from `hub::resolve`) or inside the library's.
    let hub = err.downcast_ref::<readout::hub::Error>().or(match err.downcast_ref::<E>() {
        Some(E::Hub(h)) => Some(h),
        _ => None,
    });
    if let Some(h) = hub {
        return hub_exit_code(h);
    }
    match err.downcast_ref::<E>() {
        Some(E::BadInput { .. } | E::BadFile { .. } | E::TooFewToCalibrate { .. }) => 3,
        Some(
            E::ModelMissing { .. }
            | E::CorruptGguf { .. }
            | E::Gguf { .. }
            | E::UnsupportedArchitecture { .. }
            | E::UnsupportedTensorType { .. }
            | E::BadTensor { .. }
            | E::BadModelConfig { .. }
            | E::Tokenizer { .. }
            | E::LetterNotSingleToken { .. }
            | E::ChatTemplate { .. }
            | E::NoChatTemplate { .. },
        ) => 4,
        Some(E::Config(_) | E::Request { .. } | E::Invalid(_)) => 2,
        Some(E::ContextOverflow { .. } | E::PromptTooLong { .. }) => 5,
        Some(E::Device { .. }) => 6,
        _ => 1,
    }
}

/// The exit code of a hub error: a spec to fix 2; a model not to be had 4; the network, a stop
/// or the cache's files 1.
fn hub_exit_code(err: &readout::hub::Error) -> i32 {
    use readout::hub::Error as H;
    match err {
        H::HubChoice { .. } | H::Config(_) => 2,
        H::HubNotFound { .. } | H::HubAccess { .. } | H::HubOffline { .. } | H::HubChecksum { .. } => 4,
        H::HubDownload { .. } | H::HubStopped { .. } | H::Io { .. } => 1,
    }
}

/// A number of threads: at least 1, at most 4 a core of this machine (more only slow the
/// matmuls down, and thousands keep a server from ever listening).
fn threads(s: &str) -> std::result::Result<usize, String> {
    let n: usize = s.trim().parse().map_err(|_| format!("`{s}` is not a number of threads"))?;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    if n == 0 || n > 4 * cores {
        return Err(format!("must be 1 to {} (4 a core; this machine has {cores}), not {n}", 4 * cores));
    }
    Ok(n)
}
