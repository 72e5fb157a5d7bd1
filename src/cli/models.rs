//! `readout models`: the models on this machine (the Hugging Face cache, the user's data folder,
//! a checkout's `models/`) and the catalogue of judges worth trying (`readout::models`).

use super::pull::{hub_options, human_bytes};
use anyhow::Result;
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use readout::models::{find, ModelForm, Place, Places, CATALOGUE};
use std::path::PathBuf;

#[derive(Args)]
pub struct ModelsArgs {
    /// Print JSON (`found` and `catalogue`) instead of tables.
    #[arg(long)]
    json: bool,
}

pub fn run(a: ModelsArgs) -> Result<i32> {
    let cache = hub_options(true).ok().map(|o| o.cache_dir);
    let mut folders: Vec<(String, PathBuf)> = Vec::new();
    if let Some(d) = dirs::data_dir() {
        folders.push(("data folder".into(), d.join("readout").join("models")));
    }
    folders.push(("models/".into(), PathBuf::from("models")));
    let places = Places { hub_cache: cache.clone(), folders };
    let found = find(&places);
    let default = super::default_model();
    let default = std::fs::canonicalize(&default).unwrap_or(default);
    let is_default = |p: &std::path::Path| std::fs::canonicalize(p).is_ok_and(|c| c == default);
    if a.json {
        let found: Vec<serde_json::Value> = found
            .iter()
            .map(|m| {
                let mut v = serde_json::to_value(m).unwrap_or_default();
                v["model_arg"] = m.model_arg().into();
                v["default"] = is_default(&m.path).into();
                v
            })
            .collect();
        let catalogue: Vec<serde_json::Value> = CATALOGUE
            .iter()
            .map(|e| {
                let mut v = serde_json::to_value(e).unwrap_or_default();
                v["model_arg"] = e.spec().into();
                v["runs_here"] = e.runs_here().into();
                v
            })
            .collect();
        println!("{}", serde_json::json!({"found": found, "catalogue": catalogue}));
        return Ok(0);
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(["model", "size", "where", "--model"]);
    for m in &found {
        let name = if is_default(&m.path) { format!("{} (default)", m.name) } else { m.name.clone() };
        let form = match m.form {
            ModelForm::Gguf => "",
            ModelForm::Directory => ", directory",
        };
        let place = match &m.place {
            Place::HubCache { .. } => "Hugging Face cache".to_string(),
            Place::Folder { label } => label.clone(),
        };
        t.add_row([name, human_bytes(m.size_bytes), format!("{place}{form}"), m.model_arg()]);
    }
    if found.is_empty() {
        println!("No models found.");
    } else {
        println!("{t}");
    }
    let where_ = cache.map(|c| c.display().to_string()).unwrap_or_else(|| "(no cache folder)".into());
    println!("Looked in the Hugging Face cache ({where_}), the data folder's readout/models/ and ./models/.\n");
    let mut c = Table::new();
    c.load_preset(UTF8_FULL_CONDENSED);
    c.set_header(["judge worth trying", "file size (≈)", "licence", "get it with"]);
    for e in CATALOGUE {
        let how = if e.runs_here() {
            format!("readout pull {}:{}", e.hub, e.file)
        } else {
            format!("(architecture {} is not in this build) {}:{}", e.architecture, e.hub, e.file)
        };
        c.add_row([e.name.to_string(), human_bytes(e.size_bytes), e.licence.to_string(), how]);
    }
    println!("{c}");
    println!(
        "Sizes are approximate: the hub files' sizes as public references give them, each checked against parameters × bits per weight (`readout models --json` says how for each). No accuracy is claimed for them; run `readout run` on your eval set to measure."
    );
    Ok(0)
}
