//! What the app keeps between commands: settings (persisted as JSON), the loaded model, the
//! cancel flags of the running evaluation and of the download from the hub, the last result,
//! the review open (a person checking the judge on their own labels), and where the hub and its
//! cache are. The Score page's own files (My rubrics, recent files, the last session) live in the
//! data folder too, named here and kept by `commands::library`.

use crate::error::AppError;
use readout::engine::device::DeviceRequest;
use readout::engine::template::TemplateSource;
use readout::engine::{Engine, LoadOptions, MatmulPath};
use readout::formats::results::ResultFile;
use readout::hub::HubOptions;
use readout::jobs::review::Review;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Settings that persist between launches.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// Where result files are saved and listed.
    pub bench_dir: PathBuf,
    /// The model used when a command names none.
    pub default_model: Option<PathBuf>,
    /// auto, cpu, cuda or metal.
    pub device: String,
    /// CPU threads; all cores when unset.
    pub threads: Option<usize>,
    /// Models added through the dialog or downloaded from the hub.
    pub models: Vec<PathBuf>,
    /// The chat template each model is read with, when it is not the model's own: a family's
    /// name (`gemma`, `chatml`, …: `readout::engine::template::NAMES`) or a Jinja file's path, as the
    /// CLI's `--chat-template` takes it.
    pub chat_templates: BTreeMap<PathBuf, String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            bench_dir: default_bench_dir(),
            default_model: None,
            device: "auto".into(),
            threads: None,
            models: vec![],
            chat_templates: BTreeMap::new(),
        }
    }
}

/// Where result files go when the settings name no folder. From a checkout it is the
/// repository's `bench/results` (where the CLI writes, so the app's files sit beside the CLI's);
/// an installed app uses `Readout/results` in the user's documents folder.
pub fn default_bench_dir() -> PathBuf {
    let candidates = [
        std::env::current_dir().ok().map(|d| d.join("bench").join("results")),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("bench").join("results")),
    ];
    for dir in candidates.into_iter().flatten() {
        if dir.is_dir() {
            return dir.canonicalize().unwrap_or(dir);
        }
    }
    home_dir().unwrap_or_else(std::env::temp_dir).join("Documents").join("Readout").join("results")
}

/// The user's home folder.
fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")).map(PathBuf::from)
}

/// What an engine was loaded with: the model's path, the device asked for, the thread count and
/// the chat template named for it.
pub type EngineKey = (PathBuf, DeviceRequest, Option<usize>, Option<String>);

/// The app's state, shared by every command.
pub struct AppState {
    pub settings_path: PathBuf,
    /// The app's own data folder (the bundled eval set is written here): the platform's app data
    /// folder in the app, a temporary one in tests.
    pub data_dir: PathBuf,
    pub settings: Mutex<Settings>,
    /// The model held: its path, device and thread count, and the engine.
    pub engine: Mutex<Option<(EngineKey, Arc<Engine>)>>,
    pub cancel: Arc<AtomicBool>,
    /// Set by `cancel_pull`: the download from the hub stops at its next chunk.
    pub pull_cancel: Arc<AtomicBool>,
    /// The hub and its cache (from the hub's environment variables, as the CLI reads them);
    /// `None` when no cache folder can be named.
    pub hub: Option<HubOptions>,
    pub last_result: Mutex<Option<ResultFile>>,
    /// Paths a save dialog returned since the app started: with the results folder, the only
    /// places the shell writes a file the page names (`AppState::check_writable`).
    pub picked: Mutex<std::collections::HashSet<PathBuf>>,
    /// The review open, if any: its labels file is rewritten at every label.
    pub review: Mutex<Option<OpenReview>>,
}

/// A review the app holds open: the library's review (answers, texts, labels) and what the window
/// names it by.
#[derive(Debug)]
pub struct OpenReview {
    /// The folder it lives in: one of `reviews/` in the app's data folder, or the folder of an
    /// answers file opened from a dialog.
    pub dir: PathBuf,
    /// The rubric's name.
    pub name: String,
    pub review: Review,
}

impl AppState {
    /// Read the settings file, or start from the defaults; `data_dir` is where the app keeps its
    /// own files.
    pub fn new(settings_path: PathBuf, data_dir: PathBuf) -> Self {
        let settings = std::fs::read_to_string(&settings_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        AppState {
            settings_path,
            data_dir,
            settings: Mutex::new(settings),
            engine: Mutex::new(None),
            cancel: Arc::new(AtomicBool::new(false)),
            pull_cancel: Arc::new(AtomicBool::new(false)),
            hub: HubOptions::from_vars(&|name| std::env::var(name).ok(), home_dir()),
            last_result: Mutex::new(None),
            picked: Mutex::new(Default::default()),
            review: Mutex::new(None),
        }
    }

    /// Where the app keeps its review folders (`reviews/<UTC time>-<rubric name>/`).
    pub fn reviews_dir(&self) -> PathBuf {
        self.data_dir.join("reviews")
    }

    /// "My rubrics": the rubric files a person keeps in the app (`commands::library`).
    pub fn rubrics_dir(&self) -> PathBuf {
        self.data_dir.join("rubrics")
    }

    /// The texts, rubric and export files opened lately (`commands::library::Recent`).
    pub fn recent_path(&self) -> PathBuf {
        self.data_dir.join("recent.json")
    }

    /// The Score page as it was left, put back at the next start (`commands::library::Session`).
    pub fn session_path(&self) -> PathBuf {
        self.data_dir.join("session.json")
    }

    /// Whether `path` is a path a file dialog returned since the app started: the shell writes a
    /// review's labels beside an answers file only when the person chose that file.
    pub fn was_picked(&self, path: &Path) -> bool {
        self.picked.lock().map(|p| p.contains(path)).unwrap_or(false)
    }

    /// The same state with the hub and its cache given (tests: a hub on loopback).
    pub fn with_hub(self, hub: HubOptions) -> Self {
        AppState { hub: Some(hub), ..self }
    }

    /// Remember a path the user chose in a dialog.
    pub fn allow(&self, path: &Path) {
        if let Ok(mut p) = self.picked.lock() {
            p.insert(path.to_path_buf());
        }
    }

    /// Whether the page may have the shell write `path`: a path a dialog returned since the app
    /// started, or a file inside the results folder. A page (or a script that got into it) can
    /// name any path; the shell writes only where the user pointed it.
    pub fn check_writable(&self, path: &Path) -> Result<(), AppError> {
        if self.was_picked(path) {
            return Ok(());
        }
        let bench = self.settings().bench_dir;
        let inside = match (path.parent().map(std::fs::canonicalize), std::fs::canonicalize(&bench)) {
            (Some(Ok(dir)), Ok(bench)) => dir.starts_with(&bench),
            _ => false,
        };
        if inside && path.file_name().is_some() {
            return Ok(());
        }
        Err(AppError::new("The app saves only where you choose in a save dialog, or in the results folder: choose the place with Save as….")
            .details(format!(
                "{}: the app writes only where you chose in a save dialog or inside the results folder ({})",
                path.display(),
                bench.display()
            )))
    }

    pub fn settings(&self) -> Settings {
        self.settings.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Replace and persist the settings.
    pub fn save_settings(&self, s: Settings) -> Result<(), AppError> {
        let unsaved = |e: AppError| AppError { message: "The settings could not be saved.".into(), ..e };
        if let Some(dir) = self.settings_path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| unsaved(AppError::io(dir, &e)))?;
        }
        let text = serde_json::to_string_pretty(&s)?;
        readout::atomic::write(&self.settings_path, text.as_bytes()).map_err(|e| unsaved(e.into()))?;
        if let Ok(mut cur) = self.settings.lock() {
            *cur = s;
        }
        Ok(())
    }

    /// The default model: the one the settings name, else `$READOUT_MODEL`, the app's data
    /// folder's `models/`, then `models/` of the current folder (`readout::default_model_path`).
    pub fn default_model(&self) -> PathBuf {
        self.settings().default_model.unwrap_or_else(|| {
            readout::default_model_path(std::env::var_os("READOUT_MODEL").map(PathBuf::from), Some(&self.data_dir))
        })
    }

    /// The engine for `model` (or the default model), loading it when it is not the one held
    /// (another file, or the same one with another device or thread count).
    pub fn engine(&self, model: Option<&Path>) -> Result<Arc<Engine>, AppError> {
        let path = model.map(Path::to_path_buf).unwrap_or_else(|| self.default_model());
        let (key, opts) = self.load_options(path)?;
        let mut held = self.engine.lock()?;
        if let Some((k, e)) = held.as_ref() {
            if *k == key {
                return Ok(e.clone());
            }
        }
        let engine = Arc::new(Engine::load(&key.0, &opts).map_err(load_error)?);
        *held = Some((key, engine.clone()));
        Ok(engine)
    }

    /// How the settings load the model at `path` (device, threads, the chat template named for
    /// it), and the key an engine so loaded is held by.
    pub fn load_options(&self, path: PathBuf) -> Result<(EngineKey, LoadOptions), AppError> {
        let settings = self.settings();
        let device: DeviceRequest = settings.device.parse().unwrap_or(DeviceRequest::Auto);
        let template = settings.chat_templates.get(&path).cloned();
        let chat_template = template.as_deref().map(str::parse::<TemplateSource>).transpose()?;
        let opts = LoadOptions {
            device,
            matmul: MatmulPath::Dense,
            threads: settings.threads,
            chat_template,
            ..Default::default()
        };
        Ok(((path, device, settings.threads, template), opts))
    }

    /// Let the model held go (a jury loads its judges one after another, each alone in memory).
    pub fn release_engine(&self) {
        if let Ok(mut held) = self.engine.lock() {
            *held = None;
        }
    }

    /// Hold `engine`, loaded with `key` (a jury's judge: the last one stays loaded after it).
    pub fn hold(&self, key: EngineKey, engine: Arc<Engine>) {
        if let Ok(mut held) = self.engine.lock() {
            *held = Some((key, engine));
        }
    }

    /// A jury's loader: each judge's model loaded with the settings' options and held in place
    /// of the one before (already let go by the jury), so that one model is in memory at a time
    /// and the last judge stays loaded. `keys[i]`: judge i's key and options.
    pub fn judge_loader(
        &self,
        keys: Vec<(EngineKey, LoadOptions)>,
    ) -> impl FnMut(usize, &readout::formats::judges::JudgeSpec) -> readout::Result<(Arc<Engine>, f64)> + '_ {
        move |i, spec| {
            self.release_engine();
            let t0 = std::time::Instant::now();
            let (key, opts) = &keys[i];
            let engine = Arc::new(Engine::load(&spec.model, opts)?);
            self.hold(key.clone(), engine.clone());
            Ok((engine, t0.elapsed().as_secs_f64()))
        }
    }
}

/// A model that cannot be loaded, in the app's words; one without a chat template is offered the
/// family its architecture most likely expects (`crate::error::no_template`).
pub fn load_error(e: readout::Error) -> AppError {
    crate::error::no_template(e)
}
