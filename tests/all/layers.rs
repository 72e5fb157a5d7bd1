//! The layers hold: no circle of modules in any crate of the project. A module may use what is
//! below it; two siblings that use each other (directly or around a longer circle) are one
//! layer that the layout pretends is two. Read from the sources' `crate::` paths (`use` lines
//! and paths in code, comments left out); a child using its ancestors' items is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The module paths of a crate's source folder: `engine/model.rs` is `engine::model`,
/// `engine/mod.rs` is `engine`, `lib.rs` / `main.rs` the root.
fn modules(root: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(root).unwrap().with_extension("");
                let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
                if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                    parts.pop();
                }
                out.insert(parts, p);
            }
        }
    }
    out
}

/// The source without comments (line comments, doc comments and block comments).
fn code(src: &str) -> String {
    let mut out = String::new();
    let mut rest = src;
    while let Some(i) = rest.find("/*") {
        out.push_str(&rest[..i]);
        rest = rest[i..].find("*/").map_or("", |j| &rest[i + j + 2..]);
    }
    out.push_str(rest);
    out.lines()
        .map(|l| match (l.find("//"), l.find('"')) {
            (Some(c), q) if q.is_none_or(|q| q > c) => &l[..c],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every `super::a::b…` path of module `m`, as a path from the crate's root.
fn super_paths(code: &str, m: &[String]) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (i, _) in code.match_indices("super::") {
        if code[..i].chars().next_back().is_some_and(|c| ident(c) || c == ':') {
            continue; // the second `super` of `super::super::`, counted below
        }
        let mut rest = &code[i..];
        let mut up = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            up += 1;
            rest = r;
        }
        let Some(base) = m.len().checked_sub(up) else { continue };
        let mut path = m[..base].to_vec();
        loop {
            let n = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
            if n == 0 {
                break;
            }
            path.push(rest[..n].to_string());
            match rest[n..].strip_prefix("::") {
                Some(next) => rest = next,
                None => break,
            }
        }
        paths.push(path);
    }
    paths
}

/// Every `crate::a::b…` path in the code, and the names in `use crate::{a, b::c}` lists.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if code[..i].chars().next_back().is_some_and(ident) {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(list) = rest.strip_prefix('{') {
            let end = list.find("};").unwrap_or(list.len());
            let mut depth = 0;
            let mut start = true;
            let mut name = String::new();
            for c in list[..end].chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !name.is_empty() {
                            paths.push(vec![std::mem::take(&mut name)]);
                        }
                        start = true;
                    }
                    c if start && ident(c) => name.push(c),
                    _ if start && !name.is_empty() => {
                        paths.push(vec![std::mem::take(&mut name)]);
                        start = false;
                    }
                    _ => {}
                }
            }
            if !name.is_empty() {
                paths.push(vec![name]);
            }
            continue;
        }
        let mut path = Vec::new();
        let mut seg = rest;
        loop {
            let n = seg.find(|c: char| !ident(c)).unwrap_or(seg.len());
            if n == 0 {
                break;
            }
            path.push(seg[..n].to_string());
            match seg[n..].strip_prefix("::") {
                Some(next) => seg = next,
                None => break,
            }
        }
        paths.push(path);
    }
    paths
}

/// The circles among sibling modules of a crate (Tarjan's strongly connected components of more
/// than one module), each as its modules' paths.
fn circles(root: &Path) -> Vec<Vec<String>> {
    let mods = modules(root);
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, file) in &mods {
        let src = code(&std::fs::read_to_string(file).unwrap());
        for path in crate_paths(&src).into_iter().chain(super_paths(&src, m)) {
            let Some(t) = (1..=path.len()).rev().map(|k| path[..k].to_vec()).find(|p| mods.contains_key(p)) else {
                continue;
            };
            let common = m.iter().zip(&t).take_while(|(a, b)| a == b).count();
            if common == m.len() || common == t.len() {
                continue; // the module itself, an ancestor or a descendant
            }
            edges.entry(m[..=common].to_vec()).or_default().insert(t[..=common].to_vec());
        }
    }
    // Tarjan, iteratively small enough to recurse: a crate has tens of modules.
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.stack.contains(&w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                comp.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.found.push(comp);
            }
        }
    }
    let mut s =
        State { edges: &edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// Every crate's source folder in the repository: the workspace's crates, the CLI, the app's
/// shell and the Python package.
fn source_folders() -> Vec<PathBuf> {
    let repo = crate::common::repo();
    let mut folders = vec![repo.join("src"), repo.join("src-tauri/src"), repo.join("python/src")];
    for entry in std::fs::read_dir(repo.join("crates")).unwrap().flatten() {
        folders.push(entry.path().join("src"));
    }
    folders.sort();
    folders
}

#[test]
fn no_crate_has_a_circle_of_modules() {
    let mut bad = Vec::new();
    for folder in source_folders() {
        for circle in circles(&folder) {
            bad.push(format!("{}: {}", folder.display(), circle.join(" ↔ ")));
        }
    }
    assert!(bad.is_empty(), "modules that use each other (move the shared part below both):\n{}", bad.join("\n"));
}

#[test]
fn the_check_sees_a_circle_and_ignores_comments_and_ancestors() {
    let dir = tempfile::tempdir().unwrap();
    let w = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("lib.rs", "pub mod a; pub mod b; pub mod c; pub mod d;");
    w("a.rs", "use crate::b::X;\n/// [`crate::d`] in a comment is no edge\nfn f() {}");
    w("b/mod.rs", "pub mod inner; pub struct X;");
    w("b/inner.rs", "use crate::{c,b::X}; // crate::d\nfn g() { super::X; }");
    w("c.rs", "fn h() { crate::a::f(); }");
    w("d.rs", "use crate::a;");
    assert_eq!(circles(dir.path()), [vec!["a".to_string(), "b".into(), "c".into()]]);
    w("c.rs", "fn h() {}");
    assert!(circles(dir.path()).is_empty());
    // Siblings reached through `super::` are siblings too.
    w("b/other.rs", "use super::inner::Y;");
    w("b/inner.rs", "fn g() { super::super::b::other::Z; }");
    assert_eq!(circles(dir.path()), [vec!["b::inner".to_string(), "b::other".into()]]);
}
