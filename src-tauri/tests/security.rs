//! The app's Content-Security-Policy and capabilities against their documentation: every CSP
//! directive in `tauri.conf.json` and every permission a capability file grants must be listed,
//! with its reason, in the Security section of `src-tauri/README.md`, and nothing may be listed
//! there that the configuration does not have. The UI tests' policy (`ui/vite.config.ts`) must be
//! the app's. Adding a permission or loosening the policy therefore means saying why.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A policy as directive → sources.
fn directives(csp: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for d in csp.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let mut words = d.split_whitespace().map(str::to_string);
        let name = words.next().unwrap();
        assert!(out.insert(name.clone(), words.collect()).is_none(), "`{name}` is given twice in: {csp}");
    }
    out
}

/// The first cells (in backticks) of the table under the README heading `### {heading}`.
fn documented(heading: &str) -> Vec<String> {
    let readme = read(&here().join("README.md"));
    let start =
        readme.find(&format!("\n### {heading}\n")).unwrap_or_else(|| panic!("README.md has no `### {heading}`"));
    let section = &readme[start + heading.len() + 6..];
    let section = &section[..section.find("\n#").unwrap_or(section.len())];
    let mut out = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(cells.len() >= 4 && cells[2].len() > 10, "README.md, {heading}: no reason given in: {line}");
        out.push(cells[1].trim_matches('`').to_string());
    }
    out
}

fn config() -> Value {
    serde_json::from_str(&read(&here().join("../tauri.conf.json"))).unwrap()
}

#[test]
fn the_csp_is_the_documented_one() {
    let conf = config();
    let csp = conf["app"]["security"]["csp"].as_str().expect("tauri.conf.json sets app.security.csp as a string");
    let actual = directives(csp);
    let listed = directives(&documented("Content-Security-Policy").join("; "));
    assert_eq!(actual, listed, "tauri.conf.json's CSP differs from the table in src-tauri/README.md");
    for (name, sources) in &actual {
        for risky in ["'unsafe-inline'", "'unsafe-eval'", "*", "http:", "https:", "blob:"] {
            assert!(!sources.iter().any(|s| s == risky), "`{name}` allows {risky}");
        }
    }
    assert_eq!(actual["default-src"], ["'none'"]);
    // The UI's tests run the bundle under the same policy.
    let vite = read(&here().join("../ui/vite.config.ts"));
    let start = vite.find("export const CSP = [").expect("ui/vite.config.ts exports CSP");
    let body = &vite[start..start + vite[start..].find("].join").unwrap()];
    let parts: Vec<&str> = body.lines().skip(1).map(|l| l.trim().trim_end_matches(',').trim_matches('"')).collect();
    assert_eq!(directives(&parts.join("; ")), actual, "ui/vite.config.ts's CSP is not the app's");
}

#[test]
fn capabilities_grant_only_documented_permissions() {
    let listed: BTreeSet<String> = documented("Permissions").into_iter().collect();
    let mut granted = BTreeSet::new();
    let dir = here().join("capabilities");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = entry.path();
        let cap: Value = serde_json::from_str(&read(&p)).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        files += 1;
        let name = p.display();
        assert_eq!(cap["windows"], serde_json::json!(["main"]), "{name}: only the main window");
        assert!(
            cap.get("webviews").is_none() && cap.get("remote").is_none(),
            "{name}: no other webviews, no remote URLs"
        );
        assert_ne!(cap["local"], Value::Bool(false), "{name}");
        for perm in cap["permissions"].as_array().unwrap_or_else(|| panic!("{name}: `permissions` is a list")) {
            // A permission with a scope is an object with an `identifier`.
            let id = perm.as_str().or_else(|| perm["identifier"].as_str()).unwrap().to_string();
            assert!(
                listed.contains(&id),
                "{name} grants `{id}`, which src-tauri/README.md (Permissions) does not list with its reason"
            );
            granted.insert(id);
        }
    }
    assert!(files > 0, "no capability file in {}", dir.display());
    let stale: Vec<&String> = listed.difference(&granted).collect();
    assert!(stale.is_empty(), "src-tauri/README.md lists {stale:?}, which no capability grants");
}

#[test]
fn nothing_else_widens_what_the_page_can_reach() {
    let conf = config();
    let app = &conf["app"];
    assert_ne!(app["withGlobalTauri"], Value::Bool(true), "withGlobalTauri puts the whole API on window");
    assert_ne!(app["security"]["assetProtocol"]["enable"], Value::Bool(true), "the asset protocol serves local files");
    assert!(app["security"].get("dangerousDisableAssetCspModification").is_none());
    assert!(app["security"].get("devCsp").is_none(), "the dev server gets the same policy");
    assert!(conf.get("plugins").is_none_or(|p| p.as_object().is_some_and(|o| o.is_empty())), "no plugin configuration");
}
