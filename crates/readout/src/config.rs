//! The one configuration of a job: everything that decides its numbers, built once through
//! [`ConfigBuilder`] (which checks the combination), then read-only. `run` and `score` take the
//! same [`RunConfig`]; a run records it whole in its result file, so every field is typed and
//! every setting that changes a number is here — the engine's switches included, as [`Levers`].
//!
//! Two levers depend on the device (`group_units`, `side_by_side`): a configuration may leave
//! them to it (`None`), and [`RunConfig::resolve`] fills them in once the engine is loaded, as
//! the result file records them.

use crate::debias::{self, DebiasMode};
use crate::engine::{DeviceProfile, Engine, MatmulPath, PassOptions};
use crate::error::{Error, Result};
use crate::truncate::Truncate;
use serde::{Deserialize, Serialize};

/// How an answer is read from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Softmax over the letter logits at the answer position.
    #[default]
    Readout,
    /// Greedy decoding of a few tokens; the first valid letter is the answer.
    Generate,
}

option_names!(Mode, "mode", "readout or generate", { Readout => "readout", Generate => "generate" });

/// The name of the default prompt layout; result files record it.
pub const PROMPT_VERSION: &str = "readout-v1";

/// The prompt layouts on offer. `readout-terse-v1` puts fewer tokens between the state and the
/// answer letter (no "Question:"/"Options:" labels, no closing instruction), so each criterion and
/// each ordering costs fewer tokens; the system message and the state are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(into = "&'static str", try_from = "String")]
// Written as its name (`as_str`), which TypeScript sees as a string.
#[cfg_attr(feature = "ts", ts(type = "string"))]
pub enum PromptVersion {
    #[default]
    V1,
    TerseV1,
}

impl PromptVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            PromptVersion::V1 => PROMPT_VERSION,
            PromptVersion::TerseV1 => "readout-terse-v1",
        }
    }
}

impl std::str::FromStr for PromptVersion {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "readout-v1" | "v1" | "default" => Ok(PromptVersion::V1),
            "readout-terse-v1" | "terse" => Ok(PromptVersion::TerseV1),
            other => {
                Err(format!("unknown prompt version `{other}`; use default (readout-v1) or terse (readout-terse-v1)"))
            }
        }
    }
}

impl From<PromptVersion> for &'static str {
    fn from(v: PromptVersion) -> &'static str {
        v.as_str()
    }
}

impl TryFrom<String> for PromptVersion {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        s.parse()
    }
}

/// The temperature a job applies: what `RunConfig::calibration` holds and the result file records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Calibration {
    pub temperature: f64,
    /// Hex sha256 of the calibration file's bytes.
    pub sha256: String,
    /// The calibration file's name, for people.
    pub file: String,
    /// The debias mode of the run it was fitted on; a job must use the same.
    pub debias: DebiasMode,
    /// Hex sha256 of the model of the run it was fitted on; a job must use the same.
    pub model_sha256: String,
}

/// `p_i^β / Σ_j p_j^β` with `β = 1/temperature`, in log space; a zero stays zero. A vector with
/// no positive entry comes back as it was.
pub fn apply_temperature(probs: &[f64], temperature: f64) -> Vec<f64> {
    let beta = 1.0 / temperature;
    let logs: Vec<f64> = probs.iter().map(|&p| if p > 0.0 { beta * p.ln() } else { f64::NEG_INFINITY }).collect();
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return probs.to_vec();
    }
    let e: Vec<f64> = logs.iter().map(|l| (l - top).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|v| v / s).collect()
}

/// The speed levers in force.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Levers {
    /// Shared prefixes computed once (the prompt tree).
    pub prefix_tree: bool,
    /// All suffixes of one prefix in one forward pass.
    pub batched_suffixes: bool,
    /// Logits only at the answer position.
    pub trim: bool,
    /// LM head cut to the answer letters.
    pub prune_head: bool,
    /// `dense`, `quantized` or `auto`: the kernels the model was loaded with.
    pub matmul: MatmulPath,
    /// Most new tokens per forward pass when units of the prompt tree are batched together.
    #[serde(default = "default_pass_tokens")]
    pub pass_tokens: usize,
    /// Whether `pass_tokens` was chosen (`--pass-tokens`, a recorded file) or is still the
    /// device's to decide ([`RunConfig::resolve_for`]); not recorded.
    #[serde(skip, default = "chosen")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub pass_tokens_chosen: bool,
    /// Units of one pass on the same parent share one attention (`--group-units`; the
    /// device's default, on for a GPU, when not given). Absent in files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_units: Option<bool>,
    /// Two passes at a time (`--side-by-side`; the default: on for a CPU of several threads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_by_side: Option<bool>,
}

pub use crate::engine::DEFAULT_PASS_TOKENS;

/// The engine's [`DEFAULT_PASS_TOKENS`]: the pass size of files written before the lever was
/// recorded, for serde's defaults.
pub fn default_pass_tokens() -> usize {
    DEFAULT_PASS_TOKENS
}

fn chosen() -> bool {
    true
}

impl Default for Levers {
    fn default() -> Self {
        Levers {
            prefix_tree: true,
            batched_suffixes: true,
            trim: true,
            prune_head: false,
            matmul: MatmulPath::Dense,
            pass_tokens: DEFAULT_PASS_TOKENS,
            pass_tokens_chosen: false,
            group_units: None,
            side_by_side: None,
        }
    }
}

/// Everything that decides a job's numbers. Make one with [`RunConfig::builder`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RunConfig {
    pub mode: Mode,
    pub shots: usize,
    pub shot_seed: u64,
    pub debias: DebiasMode,
    pub prompt_version: PromptVersion,
    pub max_new_tokens: usize,
    pub pride_share: f64,
    pub pride_seed: u64,
    /// A state too long for the model's context: refused (`none`, and in files written before
    /// the field) or cut from the middle (`middle`).
    #[serde(default)]
    pub truncate: Truncate,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    pub levers: Levers,
    /// A temperature fitted by `readout calibrate`, applied to each row's combined
    /// probabilities (`--calibration FILE`); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub calibration: Option<Calibration>,
    /// Scoring texts: answer "no answer" when the chosen option's probability is below this
    /// (`score --abstain-below P`). Not for `run`, whose metrics hold the risk–coverage curve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub abstain_below: Option<f64>,
    /// Scoring texts: answer "no answer" when the letters' share of the model's next-token
    /// distribution is below this (`score --abstain-letter-mass M`: none of the options fits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub abstain_letter_mass: Option<f64>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            mode: Mode::Readout,
            shots: 0,
            shot_seed: 0,
            debias: DebiasMode::None,
            prompt_version: PromptVersion::V1,
            max_new_tokens: 4,
            pride_share: debias::PRIDE_SHARE,
            pride_seed: 0,
            truncate: Truncate::None,
            bootstrap_resamples: crate::metrics::DEFAULT_RESAMPLES,
            bootstrap_seed: crate::metrics::DEFAULT_SEED,
            levers: Levers::default(),
            calibration: None,
            abstain_below: None,
            abstain_letter_mass: None,
        }
    }
}

impl RunConfig {
    /// The defaults a user expects, to change and then [`ConfigBuilder::build`].
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder { cfg: RunConfig::default() }
    }

    /// A builder starting from this configuration (a variant of it).
    pub fn to_builder(&self) -> ConfigBuilder {
        ConfigBuilder { cfg: self.clone() }
    }

    /// This configuration with the levers the device decides made concrete, as the result file
    /// records them, and the matmul kernels the engine was loaded with.
    pub fn resolve(self, engine: &Engine) -> RunConfig {
        let mut c = self.resolve_for(&engine.profile());
        c.levers.matmul = engine.info().matmul;
        c
    }

    /// The one place where a device's defaults are decided, for every shell alike: the pass size
    /// (larger on a GPU), units grouped on one parent (a GPU), two passes side by side (a CPU of
    /// several threads). What the job chose is kept.
    pub fn resolve_for(mut self, device: &DeviceProfile) -> RunConfig {
        let defaults = device.pass_defaults();
        if !self.levers.pass_tokens_chosen {
            self.levers.pass_tokens = defaults.pass_tokens;
            self.levers.pass_tokens_chosen = true;
        }
        self.levers.group_units = Some(self.levers.group_units.unwrap_or(defaults.group_units));
        self.levers.side_by_side = Some(self.levers.side_by_side.unwrap_or(!device.gpu && device.threads > 1));
        self
    }

    /// The engine's pass options as the levers set them (the device's grouping when unresolved).
    pub fn pass_options(&self, engine_default_group_units: bool) -> PassOptions {
        let l = &self.levers;
        PassOptions {
            prune_head: l.prune_head,
            trim: l.trim,
            pass_tokens: l.pass_tokens,
            group_units: l.group_units.unwrap_or(engine_default_group_units),
        }
    }
}

/// Builds a [`RunConfig`], checking the combination once, in [`ConfigBuilder::build`].
#[derive(Debug, Clone)]
pub struct ConfigBuilder {
    cfg: RunConfig,
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty => $($field:ident).+;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, v: $ty) -> Self {
                self.cfg.$($field).+ = v;
                self
            }
        )*
    };
}

impl ConfigBuilder {
    /// Most new tokens per forward pass; unset, the device's ([`RunConfig::resolve_for`]).
    pub fn pass_tokens(mut self, v: usize) -> Self {
        self.cfg.levers.pass_tokens = v;
        self.cfg.levers.pass_tokens_chosen = true;
        self
    }

    setters! {
        /// Readout (letter logits) or generate (greedy decoding).
        mode: Mode => mode;
        /// Worked examples before each scored item.
        shots: usize => shots;
        /// Seed for choosing the shots.
        shot_seed: u64 => shot_seed;
        /// How orderings are scored and combined.
        debias: DebiasMode => debias;
        /// The prompt layout.
        prompt_version: PromptVersion => prompt_version;
        /// Tokens generated at most per prompt (generate mode).
        max_new_tokens: usize => max_new_tokens;
        /// Share of rows PriDe scores in every ordering to estimate its prior.
        pride_share: f64 => pride_share;
        /// Seed for PriDe's sample.
        pride_seed: u64 => pride_seed;
        /// A state too long for the context: refused or cut from the middle.
        truncate: Truncate => truncate;
        /// Bootstrap resamples for the accuracy interval.
        bootstrap_resamples: usize => bootstrap_resamples;
        /// Seed for the bootstrap.
        bootstrap_seed: u64 => bootstrap_seed;
        /// Every lever at once.
        levers: Levers => levers;
        /// Shared prefixes computed once.
        prefix_tree: bool => levers.prefix_tree;
        /// All suffixes of a prefix in one pass.
        batched_suffixes: bool => levers.batched_suffixes;
        /// Logits only at the answer position.
        trim: bool => levers.trim;
        /// The LM head cut to the answer letters.
        prune_head: bool => levers.prune_head;
        /// The matmul kernels the model is loaded with (recorded; the engine applies them).
        matmul: MatmulPath => levers.matmul;
        /// Units on one parent share one attention (`None`: the device's default).
        group_units: Option<bool> => levers.group_units;
        /// Two passes at a time (`None`: the device's default).
        side_by_side: Option<bool> => levers.side_by_side;
        /// A fitted temperature to apply (`None`: none).
        calibration: Option<Calibration> => calibration;
        /// Scoring texts: no answer below this top probability.
        abstain_below: Option<f64> => abstain_below;
        /// Scoring texts: no answer below this letter mass.
        abstain_letter_mass: Option<f64> => abstain_letter_mass;
    }

    /// The configuration, or what is wrong with the combination and how to fix it.
    pub fn build(self) -> Result<RunConfig> {
        let c = self.cfg;
        let bad = |m: String| Err(Error::Config(m));
        if c.mode == Mode::Generate && c.debias != DebiasMode::None {
            return bad("generate mode reads one ordering; use --debias none with --mode generate".into());
        }
        if c.mode == Mode::Generate && c.max_new_tokens == 0 {
            return bad("generate mode needs at least one new token".into());
        }
        if c.levers.pass_tokens == 0 {
            return bad("tokens per pass (--pass-tokens) must be at least 1".into());
        }
        if !(c.pride_share > 0.0 && c.pride_share <= 1.0) {
            return bad(format!("the PriDe share must be in (0, 1], not {}", c.pride_share));
        }
        if c.bootstrap_resamples == 0 {
            return bad("the bootstrap needs at least one resample".into());
        }
        if let Some(cal) = &c.calibration {
            if c.mode == Mode::Generate {
                return bad(
                    "generate mode has no probabilities to calibrate; drop --calibration with --mode generate".into()
                );
            }
            if !(cal.temperature.is_finite() && cal.temperature > 0.0) {
                return bad(format!(
                    "{}: the temperature must be a positive number, not {}",
                    cal.file, cal.temperature
                ));
            }
            if cal.debias != c.debias {
                return bad(format!(
                    "{} was fitted on a run with --debias {}; use --debias {} with it, or fit one on a run with --debias {}",
                    cal.file, cal.debias, cal.debias, c.debias
                ));
            }
        }
        for (name, v) in [("--abstain-below", c.abstain_below), ("--abstain-letter-mass", c.abstain_letter_mass)] {
            if let Some(v) = v.filter(|v| !(0.0..=1.0).contains(v)) {
                return bad(format!("{name} takes a probability from 0 to 1, not {v}"));
            }
        }
        if c.abstain_letter_mass.is_some() && c.levers.prune_head {
            return bad(
                "--abstain-letter-mass needs the letters' share of the whole head, which --prune-head does not compute"
                    .into(),
            );
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_refuses_what_cannot_run() {
        let e = RunConfig::builder().mode(Mode::Generate).debias(DebiasMode::Cyclic).build().unwrap_err();
        assert!(e.to_string().contains("--debias none"), "{e}");
        assert!(RunConfig::builder().pass_tokens(0).build().is_err());
        assert!(RunConfig::builder().pride_share(0.0).build().is_err());
        let c = RunConfig::builder().shots(3).debias(DebiasMode::Cyclic).prune_head(true).build().unwrap();
        assert_eq!((c.shots, c.debias, c.levers.prune_head, c.levers.pass_tokens), (3, DebiasMode::Cyclic, true, 1024));
    }

    #[test]
    fn the_device_decides_what_the_job_left_open() {
        let gpu = DeviceProfile { gpu: true, threads: 16 };
        let cpu = DeviceProfile { gpu: false, threads: 2 };
        let open = RunConfig::builder().build().unwrap();
        let l = open.clone().resolve_for(&gpu).levers;
        assert_eq!((l.pass_tokens, l.group_units, l.side_by_side), (16384, Some(true), Some(false)));
        let l = open.resolve_for(&cpu).levers;
        assert_eq!((l.pass_tokens, l.group_units, l.side_by_side), (512, Some(false), Some(true)));
        let chosen = RunConfig::builder().pass_tokens(640).group_units(Some(false)).build().unwrap();
        let l = chosen.resolve_for(&gpu).levers;
        assert_eq!((l.pass_tokens, l.group_units), (640, Some(false)));
        // A recorded file's pass size is its own, on any device.
        let recorded: Levers =
            serde_json::from_value(serde_json::json!({"prefix_tree": true, "batched_suffixes": true,
            "trim": true, "prune_head": false, "matmul": "dense", "pass_tokens": 1024}))
            .unwrap();
        let c = RunConfig::builder().levers(recorded).build().unwrap().resolve_for(&gpu);
        assert_eq!(c.levers.pass_tokens, 1024);
    }

    #[test]
    fn prompt_version_is_written_as_its_name() {
        // As a result file records it: resolved for its device.
        let cpu = DeviceProfile { gpu: false, threads: 1 };
        let c = RunConfig::builder().prompt_version(PromptVersion::TerseV1).build().unwrap().resolve_for(&cpu);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["prompt_version"], "readout-terse-v1");
        let back: RunConfig = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
    }
}
