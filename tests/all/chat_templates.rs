//! Which chat template a model is read with: its own (GGUF metadata; an HF directory's
//! `chat_template.jinja` before `tokenizer_config.json`'s), or one named with `--chat-template`
//! (a family or a file); what the engine, `readout info` and result files say about it.

use crate::common;

use readout::engine::device::DeviceRequest;
use readout::engine::synthetic::{tiny_config, write_hf_dir};
use readout::engine::template::{builtin, TemplateSource};
use readout::engine::{Architecture, Engine, LoadOptions};
use readout::hash::sha256_bytes;
use readout::pipeline::prompt::{messages, Message};

fn load(path: &std::path::Path, chat_template: Option<TemplateSource>) -> readout::Result<Engine> {
    Engine::load(path, &LoadOptions { device: DeviceRequest::Cpu, chat_template, ..Default::default() })
}

#[test]
fn an_hf_directorys_chat_template_jinja_wins_over_tokenizer_config() {
    let dir = tempfile::tempdir().unwrap();
    let hf = dir.path().join("hf");
    write_hf_dir(&hf, &tiny_config(Architecture::Qwen3), 3, None).unwrap();
    // tokenizer_config.json's ChatML first.
    let e = load(&hf, None).unwrap();
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(hf.join("tokenizer_config.json")).unwrap()).unwrap();
    let chatml = config["chat_template"].as_str().unwrap();
    assert_eq!(
        (e.info().chat_template.as_str(), e.info().chat_template_sha256.clone()),
        ("model", sha256_bytes(chatml.as_bytes()))
    );
    // Then the file beside it, as transformers reads it.
    let own = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}> ";
    std::fs::write(hf.join("chat_template.jinja"), own).unwrap();
    let e = load(&hf, None).unwrap();
    assert_eq!(e.info().chat_template_sha256, sha256_bytes(own.as_bytes()));
    let text = e.template().render(&[Message::new("user", "hi")]).unwrap();
    assert_eq!(text, "[user] hi\n> ");
    // A named family wins over both.
    let e = load(&hf, Some(TemplateSource::Name("gemma".into()))).unwrap();
    assert_eq!(e.info().chat_template, "gemma");
    assert_eq!(e.info().chat_template_sha256, sha256_bytes(builtin("gemma").unwrap().as_bytes()));
}

#[test]
fn the_default_model_keeps_its_own_template_and_a_family_replaces_it() {
    let e = common::default_engine();
    assert_eq!(e.info().chat_template, "model");
    let own = e.template().render(&messages(&[], "x".into())).unwrap();
    assert!(own.starts_with("<|im_start|>system\n") && own.ends_with("<|im_start|>assistant\n"), "{own}");
    let gemma = load(&common::default_model(), Some(TemplateSource::Name("gemma".into()))).unwrap();
    let text = gemma.template().render(&messages(&[], "x".into())).unwrap();
    assert!(
        text.starts_with("<start_of_turn>user\nYou judge texts.")
            && text.ends_with("x<end_of_turn>\n<start_of_turn>model\n")
    );
}

#[test]
fn the_cli_names_the_template_and_refuses_an_unknown_one() {
    let model = common::default_model();
    let m = model.display().to_string();
    let out = common::readout(&["info", "--device", "cpu", "--model", &m, "--chat-template", "llama3"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["chat_template"], "llama3");
    assert_eq!(info["chat_template_sha256"], sha256_bytes(builtin("llama3").unwrap().as_bytes()));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.jinja");
    std::fs::write(&file, builtin("phi3").unwrap()).unwrap();
    let f = file.display().to_string();
    let out = common::readout(&["info", "--device", "cpu", "--model", &m, "--chat-template", &f]);
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["chat_template"], "file:mine.jinja");
    let out = common::readout(&["info", "--device", "cpu", "--model", &m, "--chat-template", "gemma4"]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`gemma4` is neither a chat template Readout knows nor a readable file"), "{err}");
    assert!(err.contains("chatml, gemma, llama2"), "{err}");
}

#[test]
fn a_result_file_records_the_template() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = out.display().to_string();
    let m = common::default_model().display().to_string();
    let run = common::readout(&[
        "run",
        "bench/evalsets/authored144.jsonl",
        "--limit",
        "2",
        "--device",
        "cpu",
        "--model",
        &m,
        "--chat-template",
        "chatml",
        "--out",
        &o,
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let doc = common::validate(&out);
    assert_eq!(doc["model"]["chat_template"], "chatml");
    assert_eq!(doc["model"]["chat_template_sha256"], sha256_bytes(builtin("chatml").unwrap().as_bytes()));
}
