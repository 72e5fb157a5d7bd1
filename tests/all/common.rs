//! Shared helpers for the integration tests: the repository root, the default model, the CLI.
#![allow(dead_code)]

use readout::device::DeviceRequest;
use readout::engine::{Engine, LoadOptions, MatmulPath};
use std::path::PathBuf;
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

/// The result file at `path`, checked against `schema/result.schema.json` (every error listed)
/// and read back by the library's own reader.
pub fn validate(path: &std::path::Path) -> serde_json::Value {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("schema/result.schema.json")).unwrap()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{} does not match the schema:\n{}", path.display(), errors.join("\n"));
    readout::results::ResultFile::load(path).unwrap_or_else(|e| panic!("{e}"));
    doc
}
