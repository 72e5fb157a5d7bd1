//! Shared helpers for the integration tests: the repository root, the default model, the CLI.
#![allow(dead_code)]

use readout::engine::device::DeviceRequest;
use readout::engine::{Engine, LoadOptions, MatmulPath};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The default model's path; fails with the command to run when it is missing.
pub fn default_model() -> PathBuf {
    if let Some(p) = std::env::var_os("READOUT_TEST_MODEL") {
        return p.into();
    }
    let p = repo().join("models").join(readout::DEFAULT_MODEL_FILE);
    assert!(p.exists(), "the default model is missing: run `models/fetch` first ({} not found)", p.display());
    p
}

pub fn default_engine() -> Engine {
    engine_with(MatmulPath::Dense)
}

pub fn engine_with(matmul: MatmulPath) -> Engine {
    Engine::load(&default_model(), &LoadOptions { device: DeviceRequest::Cpu, matmul, ..Default::default() }).unwrap()
}

pub fn engine_at(path: &std::path::Path) -> Engine {
    Engine::load(path, &LoadOptions { device: DeviceRequest::Cpu, matmul: MatmulPath::Dense, ..Default::default() })
        .unwrap()
}

/// Run the built `readout` binary from the repository root.
pub fn readout(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_readout")).args(args).current_dir(repo()).output().expect("readout runs")
}

/// `readout ARGS` from the repository root with `input` on its standard input.
pub fn readout_piped(args: &[&str], input: &str) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_readout"))
        .args(args)
        .current_dir(repo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("readout runs");
    let mut stdin = child.stdin.take().expect("a piped standard input");
    stdin.write_all(input.as_bytes()).expect("readout reads its standard input");
    drop(stdin);
    child.wait_with_output().expect("readout runs")
}

/// The result file at `path`, checked against `schema/result.schema.json` (every error listed)
/// and read back by the library's own reader.
pub fn validate(path: &std::path::Path) -> serde_json::Value {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("schema/result.schema.json")).unwrap()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{} does not match the schema:\n{}", path.display(), errors.join("\n"));
    readout::formats::results::ResultFile::load(path).unwrap_or_else(|e| panic!("{e}"));
    doc
}

/// The device the engine tests on tiny models run on: the CPU, or the one `READOUT_TEST_DEVICE`
/// names.
pub fn test_device() -> DeviceRequest {
    match std::env::var("READOUT_TEST_DEVICE") {
        Ok(d) => d.parse().unwrap_or_else(|e| panic!("READOUT_TEST_DEVICE: {e}")),
        Err(_) => DeviceRequest::Cpu,
    }
}

/// A tiny random-weights model of `cfg` (seed `seed`) in `dir`: a Hugging Face directory for
/// `hf`, else a GGUF with matrices in `format` (`f32`, `q5_0`, `q8_0`, `q4_k`, `q6_k`).
pub fn write_tiny(cfg: &readout::engine::ModelConfig, format: &str, dir: &Path, name: &str, seed: u64) -> PathBuf {
    use candle_core::quantized::GgmlDType;
    let path = dir.join(format!("{name}-{format}"));
    let ty = match format {
        "hf" => {
            readout::engine::synthetic::write_hf_dir(&path, cfg, seed, None).unwrap();
            return path;
        }
        "f32" => GgmlDType::F32,
        "q5_0" => GgmlDType::Q5_0,
        "q8_0" => GgmlDType::Q8_0,
        "q4_k" => GgmlDType::Q4K,
        "q6_k" => GgmlDType::Q6K,
        other => panic!("no format {other}"),
    };
    let path = path.with_extension("gguf");
    readout::engine::synthetic::write_gguf(&path, cfg, seed, ty).unwrap();
    path
}

/// A model on [`test_device`] with `weights`.
pub fn load_on_test_device(path: &Path, weights: readout::engine::WeightsMode) -> Engine {
    Engine::load(path, &LoadOptions { device: test_device(), weights, ..Default::default() }).unwrap()
}

/// The largest |Δlogit| between two ways of computing the same logits, as a share of the
/// largest |logit| of `b`.
pub fn rel_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let top = b.iter().fold(1f32, |m, x| m.max(x.abs()));
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max) / top
}
