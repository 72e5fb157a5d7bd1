//! `readout pull ORG/REPO[@REVISION][:FILE]`: get a model from the Hugging Face hub into the
//! Hugging Face cache (asking the hub which commit the revision is now), with a progress bar; and
//! the shell's side of the hub for `--model hf:…`: the settings from the environment
//! (`HF_ENDPOINT`, `HF_HOME`, `HF_HUB_CACHE`, `HF_TOKEN`, `HF_HUB_OFFLINE`), the bar, the notes.

use anyhow::{Context, Result};
use clap::Args;
use readout::hub::{resolve, DownloadProgress, Fetched, HubOptions, HubSpec, Resolved};

#[derive(Args)]
pub struct PullArgs {
    /// The model: ORG/REPO, with @REVISION (branch, tag or commit; default main) and :FILE (a GGUF
    /// file; without it, the only GGUF, else the Q4_K_M one, else the model directory's files).
    spec: String,
    /// Check the Hugging Face cache only; download nothing (also HF_HUB_OFFLINE=1).
    #[arg(long)]
    offline: bool,
    /// Print what was resolved as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: PullArgs) -> Result<i32> {
    let spec = HubSpec::parse(&a.spec)?;
    let mut opts = hub_options(a.offline)?;
    opts.refresh = true;
    let resolved = resolve_with_bar(&spec, &opts)?;
    let pinned = resolved.source.pinned();
    if a.json {
        let files: Vec<serde_json::Value> = resolved
            .files
            .iter()
            .map(|f| serde_json::json!({"name": f.name, "bytes": f.size, "fetched": fetched_name(f.fetched)}))
            .collect();
        let v = serde_json::json!({
            "path": resolved.path,
            "source": resolved.source,
            "model": pinned.to_string(),
            "files": files,
        });
        println!("{v}");
    } else {
        for f in &resolved.files {
            println!("{:>10}  {}  {}", human_bytes(f.size), fetched_name(f.fetched), f.name);
        }
        println!("{}", resolved.path.display());
        println!("use it with --model {spec} (this commit exactly: --model {pinned})");
    }
    Ok(0)
}

fn fetched_name(f: Fetched) -> &'static str {
    match f {
        Fetched::Cached => "cached",
        Fetched::Linked => "linked",
        Fetched::Downloaded { resumed_from: 0 } => "downloaded",
        Fetched::Downloaded { .. } => "resumed",
    }
}

/// Bytes as people read them (1000s, one decimal).
pub fn human_bytes(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[i])
    }
}

/// The hub settings from the environment (`HubOptions::from_vars`); `offline` from the command
/// line (or `HF_HUB_OFFLINE`).
pub fn hub_options(offline: bool) -> Result<HubOptions> {
    let mut opts = HubOptions::from_vars(&|name| std::env::var(name).ok(), dirs::home_dir())
        .context("no folder for the Hugging Face cache: set HF_HUB_CACHE or HF_HOME")?;
    opts.offline |= offline;
    Ok(opts)
}

/// Resolve a spec, drawing a progress bar per downloaded file on stderr (hidden when stderr is
/// not a terminal) and saying on stderr which file was chosen and what was downloaded.
pub fn resolve_with_bar(spec: &HubSpec, opts: &HubOptions) -> Result<Resolved> {
    let mut bar: Option<(String, indicatif::ProgressBar)> = None;
    let mut draw = |p: &DownloadProgress<'_>| {
        if bar.as_ref().is_none_or(|(f, _)| f != p.file) {
            if let Some((_, b)) = bar.take() {
                b.finish_and_clear();
            }
            let b = indicatif::ProgressBar::new(p.total);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg} {bar:30} {bytes}/{total_bytes}  {bytes_per_sec}  eta {eta}",
                )
                .expect("static template"),
            );
            b.set_message(p.file.to_string());
            bar = Some((p.file.to_string(), b));
        }
        if let Some((_, b)) = &bar {
            b.set_length(p.total);
            b.set_position(p.done);
        }
        true
    };
    let resolved = resolve(spec, opts, &mut draw);
    if let Some((_, b)) = bar.take() {
        b.finish_and_clear();
    }
    let resolved = resolved?;
    if let Some(note) = &resolved.chosen {
        eprintln!("readout: {note}");
    }
    for f in &resolved.files {
        if let Fetched::Downloaded { resumed_from } = f.fetched {
            let resumed =
                if resumed_from > 0 { format!(", resumed after {}", human_bytes(resumed_from)) } else { String::new() };
            eprintln!(
                "readout: downloaded {} ({}{resumed}) from {}@{}, checksum ok",
                f.name,
                human_bytes(f.size),
                resolved.source.hub,
                &resolved.source.revision[..12]
            );
        }
    }
    Ok(resolved)
}
