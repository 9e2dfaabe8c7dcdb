//! The architecture test: every `use crate::...` / `super::...` import and every `crate::x::`
//! path in the crate's code (tests included) is held to the layer order that the crate docs
//! (`lib.rs`, section "Layers") write down, bottom up. It fails, naming the file and the import:
//! - when a module imports from a higher layer;
//! - when two modules (files), or two folders, import each other (outside unit-test modules).
//!
//! The order is read from `lib.rs` itself, so it is written down once. The same goes for the
//! modules allowed `unsafe` code: `lib.rs`'s section "`unsafe`" lists them, and the test fails
//! when a module with `unsafe` is not listed, a listed one has none, or an `unsafe` block has no
//! `// SAFETY:` comment just above it. Test-only module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One `.rs` file: its module path (`["log", "unified_log", "cleaning"]`; `[]` for `lib.rs`) and
/// its source.
struct SourceFile {
    display: String,
    module: Vec<String>,
    text: String,
}

/// The layers named in `lib.rs`'s "Layers" section: the numbered doc lines `//! N. [`name`]...`,
/// bottom up. Each name is a top-level module.
fn layers_from_crate_doc(lib_rs: &str) -> Vec<String> {
    let section = lib_rs.lines().skip_while(|l| !l.starts_with("//! ## Layers")).skip(1);
    let mut layers = Vec::new();
    for line in section.take_while(|l| l.starts_with("//!") && !l.starts_with("//! ## ")) {
        let body = line.trim_start_matches("//!").trim_start();
        let Some((number, rest)) = body.split_once(". ") else { continue };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // `[`a`], [`b`] and [`c`]: ...` names several modules of one layer; only the part
        // before the colon names modules.
        let names = rest.split_once(':').map_or(rest, |(names, _)| names);
        for name in names.split('`').skip(1).step_by(2) {
            layers.push(format!("{}:{number}", name.trim_start_matches("crate::")));
        }
    }
    layers
}

/// The text with comments, string and char literals blanked out (line breaks kept), so only
/// code remains.
fn strip_comments_and_literals(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(rest).filter(|_| i == 0 || !is_ident(b[i - 1])) {
            let open = 2 + hashes + usize::from(rest[0] == b'b');
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            out.extend(std::iter::repeat_n(b' ', open));
            i += open;
            while i < b.len() && !b[i..].starts_with(&close) {
                blank(&mut out, b[i]);
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', close.len().min(b.len() - i)));
            i += close.len();
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                let step = if b[i] == b'\\' { 2 } else { 1 };
                for k in 0..step.min(b.len() - i) {
                    blank(&mut out, b[i + k]);
                }
                i += step;
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' && char_literal_len(rest).is_some() {
            let len = char_literal_len(rest).unwrap_or(1);
            out.extend(std::iter::repeat_n(b' ', len));
            i += len;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out.truncate(src.len());
    String::from_utf8_lossy(&out).into_owned()
}

/// `r"`, `r#"`, `br"`, ...: the number of `#`s when `s` starts a raw string.
fn raw_string_start(s: &[u8]) -> Option<usize> {
    let s = s.strip_prefix(b"b").unwrap_or(s);
    let s = s.strip_prefix(b"r")?;
    let hashes = s.iter().take_while(|&&c| c == b'#').count();
    (s.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// The length of a char literal at the start of `s` (`'a'`, `'\n'`, `'\u{1F600}'`, `'é'`);
/// `None` for a lifetime (`'a`).
fn char_literal_len(s: &[u8]) -> Option<usize> {
    if s.get(1) == Some(&b'\\') {
        return s.iter().skip(2).position(|&c| c == b'\'').map(|p| p + 3);
    }
    let ch = std::str::from_utf8(&s[1..s.len().min(5)])
        .ok()
        .or_else(|| (2..=4).rev().find_map(|n| s.get(1..=n).and_then(|t| std::str::from_utf8(t).ok())))?;
    let len = ch.chars().next()?.len_utf8();
    (s.get(1 + len) == Some(&b'\'')).then_some(len + 2)
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Expands the path tree at the start of `s` (`a::b::{c, d::{e, self}}`) into full paths.
fn expand_tree(s: &[u8], prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    let mut i = 0;
    loop {
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if s.get(i) == Some(&b'{') {
            i += 1;
            loop {
                while i < s.len() && (s[i].is_ascii_whitespace() || s[i] == b',') {
                    i += 1;
                }
                if i >= s.len() || s[i] == b'}' {
                    return i + 1;
                }
                i += expand_tree(&s[i..], &path, out);
            }
        }
        let start = i;
        while i < s.len() && is_ident(s[i]) {
            i += 1;
        }
        let ident = String::from_utf8_lossy(&s[start..i]).into_owned();
        if !ident.is_empty() && ident != "self" {
            path.push(ident);
        }
        if s[i..].starts_with(b"::") && s.get(i + 2).is_some_and(|&c| is_ident(c) || c == b'{') {
            i += 2;
        } else {
            out.push(path);
            return i;
        }
    }
}

/// Every crate path `code` (comment-free) names: `crate::...`, and `super::...` resolved against
/// `module`; each with whether it sits in an inline `mod name { ... }` block (the unit tests),
/// where `super` refers to the file's own module.
fn referenced_paths(module: &[String], code: &str) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    let mut inline_mod = false;
    for line in code.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if indent == 0 && trimmed.trim_end().ends_with('{') && trimmed.split_whitespace().any(|w| w == "mod") {
            inline_mod = true;
        } else if indent == 0 && trimmed.starts_with('}') {
            inline_mod = false;
        }
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let at_word_start = i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':');
            let (skip, base): (usize, Option<Vec<String>>) = if at_word_start && b[i..].starts_with(b"crate::") {
                (7, Some(Vec::new()))
            } else if at_word_start && b[i..].starts_with(b"super::") {
                let mut base = module.to_vec();
                let mut j = i;
                if !inline_mod {
                    base.pop();
                }
                j += 7;
                while b[j..].starts_with(b"super::") {
                    base.pop();
                    j += 7;
                }
                (j - i, Some(base))
            } else {
                (1, None)
            };
            i += skip;
            if let Some(base) = base {
                let mut paths = Vec::new();
                i += expand_tree(&b[i..], &base, &mut paths);
                out.extend(paths.into_iter().map(|p| (p, inline_mod)));
            }
        }
    }
    out
}

/// The layer violations and mutual imports among `files`, one message each.
fn check(files: &[SourceFile], layers: &[String]) -> Vec<String> {
    let rank_of = |top: &str| {
        layers.iter().find_map(|l| {
            let (name, rank) = l.split_once(':')?;
            (name == top).then(|| rank.parse::<u32>().unwrap_or(u32::MAX))
        })
    };
    let modules: BTreeSet<&[String]> = files.iter().map(|f| f.module.as_slice()).collect();
    let mut problems = Vec::new();
    // (importer module, imported module) -> the first import seen, for the cycle checks.
    let mut edges: BTreeMap<(Vec<String>, Vec<String>), String> = BTreeMap::new();
    for f in files {
        let Some(top) = f.module.first() else { continue }; // lib.rs declares and re-exports
        let Some(rank) = rank_of(top) else {
            problems.push(format!("{}: module `{top}` is in no layer of lib.rs's list", f.display));
            continue;
        };
        for (path, in_tests) in referenced_paths(&f.module, &strip_comments_and_literals(&f.text)) {
            let import = format!("crate::{}", path.join("::"));
            let target = (1..=path.len()).rev().map(|n| &path[..n]).find(|p| modules.contains(p));
            let Some(target) = target else { continue }; // an item of lib.rs, or an external path
            let target_rank = rank_of(&target[0]);
            if target_rank.is_some_and(|r| r > rank) {
                problems.push(format!("{} imports {import}: layer `{}` is above layer `{top}`", f.display, target[0]));
            }
            // A unit test may use the sibling that builds its input (`batch`'s tests use the
            // `builder`, which imports `batch`): test modules are held to the layers, not to
            // the cycle rule, which is about what the built crate depends on.
            if target != f.module.as_slice() && !in_tests {
                edges.entry((f.module.clone(), target.to_vec())).or_insert(format!("{}: {import}", f.display));
            }
        }
    }
    let mut folder_edges: BTreeMap<(String, String), String> = BTreeMap::new();
    for ((from, to), why) in &edges {
        if from < to {
            if let Some(back) = edges.get(&(to.clone(), from.clone())) {
                problems.push(format!("modules import each other: {why} and {back}"));
            }
        }
        // Where the two paths part, the side that is a folder (not the module itself) makes a
        // folder edge: `low::a -> high::b` is the edge `low -> high`.
        let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
        if common < from.len() && common < to.len() && (from.len() > common + 1 || to.len() > common + 1) {
            let key = (from[..=common].join("::"), to[..=common].join("::"));
            folder_edges.entry(key).or_insert(why.clone());
        }
    }
    for ((from, to), why) in &folder_edges {
        if from < to {
            if let Some(back) = folder_edges.get(&(to.clone(), from.clone())) {
                problems.push(format!("folders `{from}` and `{to}` import each other: {why} and {back}"));
            }
        }
    }
    problems
}

/// The files `lib.rs`'s "`unsafe`" section lists (`//! - `path`: ...`), relative to `rust/`.
fn unsafe_modules_from_crate_doc(lib_rs: &str) -> BTreeSet<String> {
    let section = lib_rs.lines().skip_while(|l| !l.starts_with("//! ## `unsafe`")).skip(1);
    section
        .take_while(|l| l.starts_with("//!") && !l.starts_with("//! ## "))
        .filter_map(|l| l.trim_start_matches("//!").trim_start().strip_prefix("- `"))
        .filter_map(|l| l.split_once('`').map(|(path, _)| path.to_string()))
        .collect()
}

/// The unsafe-code problems of `files` against the list `allowed` (paths relative to `rust/`).
fn check_unsafe(files: &[SourceFile], allowed: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for f in files {
        let code = strip_comments_and_literals(&f.text);
        let original: Vec<&str> = f.text.lines().collect();
        let mut any = false;
        for (n, line) in code.lines().enumerate() {
            let b = line.as_bytes();
            for (i, _) in line.match_indices("unsafe") {
                let before_ok = i == 0 || !is_ident(b[i - 1]);
                let rest = line[i + 6..].trim_start();
                let after_ok = rest.is_empty() || rest.starts_with('{') || rest.starts_with("fn ");
                if !(before_ok && after_ok && b.get(i + 6).is_none_or(|c| !is_ident(*c))) {
                    continue;
                }
                any = true;
                if rest.starts_with("fn ") {
                    continue; // an unsafe fn: its `# Safety` doc is clippy's to check
                }
                let comment_above = original[..n]
                    .iter()
                    .rev()
                    .map(|l| l.trim_start())
                    .take_while(|l| l.starts_with("//") || l.starts_with("#["))
                    .any(|l| l.contains("SAFETY:"));
                if !comment_above {
                    problems.push(format!(
                        "{}:{}: an unsafe block without a `// SAFETY:` comment above it",
                        f.display,
                        n + 1
                    ));
                }
            }
        }
        let relative = f.display.trim_start_matches("rust/").to_string();
        if any {
            seen.insert(relative.clone());
            if !allowed.contains(&relative) {
                problems.push(format!("{}: unsafe code in a module lib.rs does not list under `unsafe`", f.display));
            }
        }
    }
    for listed in allowed.difference(&seen) {
        problems.push(format!("rust/{listed}: listed under `unsafe` in lib.rs but has no unsafe code"));
    }
    problems
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect::<Vec<_>>();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// Every `.rs` file of the crate but this one.
fn crate_files() -> Vec<SourceFile> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("rust");
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    paths.retain(|p| !p.ends_with("architecture.rs")); // this test
    paths
        .iter()
        .map(|p| {
            let relative = p.strip_prefix(&root).unwrap();
            SourceFile {
                display: format!("rust/{}", relative.display()),
                module: module_path(relative),
                text: std::fs::read_to_string(p).unwrap(),
            }
        })
        .collect()
}

#[test]
fn no_module_imports_from_a_higher_layer_or_from_a_module_that_imports_it() {
    let files = crate_files();
    let lib = files.iter().find(|f| f.module.is_empty()).expect("rust/lib.rs");
    let layers = layers_from_crate_doc(&lib.text);
    assert!(layers.len() >= 10, "lib.rs's \"## Layers\" section names too few layers: {layers:?}");
    let problems = check(&files, &layers);
    assert!(problems.is_empty(), "{} layer problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn unsafe_code_only_in_the_modules_lib_rs_lists_each_block_with_a_safety_comment() {
    let files = crate_files();
    let lib = files.iter().find(|f| f.module.is_empty()).expect("rust/lib.rs");
    let allowed = unsafe_modules_from_crate_doc(&lib.text);
    assert!(!allowed.is_empty(), "lib.rs's \"## `unsafe`\" section lists no module");
    let problems = check_unsafe(&files, &allowed);
    assert!(problems.is_empty(), "{} unsafe problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(display: &str, module: &str, text: &str) -> SourceFile {
        let module = module.split("::").filter(|p| !p.is_empty()).map(String::from).collect();
        SourceFile { display: display.into(), module, text: text.into() }
    }

    const LIB: &str = "//! ## Layers\n//! 1. [`low`]: the bottom.\n//! 2. [`mid`] and [`side`]: one layer.\n\
                       //! 3. [`high`]: the top.\n//!\n//! ## Other\n//! 4. [`not_a_layer`]: ignored.\n";

    fn layers() -> Vec<String> {
        layers_from_crate_doc(LIB)
    }

    #[test]
    fn the_order_is_read_from_the_crate_doc() {
        assert_eq!(layers(), ["low:1", "mid:2", "side:2", "high:3"]);
    }

    #[test]
    fn an_upward_import_is_named_with_its_file() {
        let files = [
            file("rust/low/a.rs", "low::a", "use crate::high::b::Thing;\n"),
            file("rust/high/b.rs", "high::b", "use crate::low::a;\npub struct Thing;\n"),
        ];
        let problems = check(&files, &layers());
        assert!(
            problems
                .iter()
                .any(|p| p == "rust/low/a.rs imports crate::high::b::Thing: layer `high` is above layer `low`"),
            "{problems:?}"
        );
        // The same pair also imports each other, as modules and as folders.
        assert!(problems.iter().any(|p| p.starts_with("modules import each other")), "{problems:?}");
        assert!(problems.iter().any(|p| p.starts_with("folders `high` and `low` import each other")), "{problems:?}");
    }

    #[test]
    fn mutual_imports_in_one_layer_fail_and_downward_ones_pass() {
        let ok = [
            file("rust/low.rs", "low", "pub struct L;\n"),
            file("rust/mid/x.rs", "mid::x", "use crate::low::L;\nfn f() { crate::low::L; }\n"),
            file("rust/high/y.rs", "high::y", "use crate::{low::L, mid::{x, self}};\n"),
        ];
        assert_eq!(check(&ok, &layers()), Vec::<String>::new());
        let cycle = [
            file("rust/mid/x.rs", "mid::x", "use super::y::Y;\npub struct X;\n"),
            file("rust/mid/y.rs", "mid::y", "pub struct Y;\nfn g() -> crate::mid::x::X { crate::mid::x::X }\n"),
            file("rust/side/z.rs", "side::z", "use crate::mid::x::X;\n"),
            file("rust/mid/w.rs", "mid::w", "use crate::side::z;\n"),
        ];
        let problems = check(&cycle, &layers());
        assert!(
            problems.iter().any(|p| p
                == "modules import each other: rust/mid/x.rs: crate::mid::y::Y and rust/mid/y.rs: crate::mid::x::X"),
            "{problems:?}"
        );
        assert!(problems.iter().any(|p| p.starts_with("folders `mid` and `side` import each other")), "{problems:?}");
    }

    #[test]
    fn comments_strings_and_test_modules_do_not_count() {
        let files = [
            file("rust/high.rs", "high", "pub struct H;\n"),
            file(
                "rust/low/a.rs",
                "low::a",
                "//! See [`crate::high`].\nconst S: &str = \"crate::high::H\";\nconst R: &str = r#\"crate::high\"#;\n\
                 const C: char = '\"'; fn f<'a>(x: &'a str) {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
            ),
        ];
        assert_eq!(check(&files, &layers()), Vec::<String>::new());
        let unknown = [file("rust/elsewhere.rs", "elsewhere", "")];
        assert_eq!(
            check(&unknown, &layers()),
            ["rust/elsewhere.rs: module `elsewhere` is in no layer of lib.rs's list"]
        );
    }

    #[test]
    fn unit_tests_are_held_to_the_layers_but_may_use_a_sibling_that_imports_them() {
        let files = [
            file(
                "rust/mid/batch.rs",
                "mid::batch",
                "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::mid::builder::W;\n}\n",
            ),
            file("rust/mid/builder.rs", "mid::builder", "use super::batch::B;\npub struct W;\n"),
            file("rust/high.rs", "high", "pub struct H;\n"),
            file("rust/low.rs", "low", "#[cfg(test)]\nmod tests {\n    use crate::high::H;\n}\n"),
        ];
        assert_eq!(check(&files, &layers()), ["rust/low.rs imports crate::high::H: layer `high` is above layer `low`"]);
    }

    #[test]
    fn unsafe_outside_the_list_or_without_a_safety_comment_fails() {
        let doc = "//! ## `unsafe`\n//!\n//! - `a.rs`: a map;\n//! - `gone.rs`: nothing left.\n//!\n//! ## Next\n";
        let allowed = unsafe_modules_from_crate_doc(doc);
        assert_eq!(allowed, BTreeSet::from(["a.rs".to_string(), "gone.rs".to_string()]));
        let files = [
            file("rust/a.rs", "a", "fn f() {\n    // SAFETY: fine.\n    let x = unsafe { g() };\n    #[cfg(x)]\n    // SAFETY: also fine.\n    unsafe {\n        h();\n    }\n}\n"),
            file("rust/b.rs", "b", "fn f() {\n    // no reason given\n    let x = unsafe { g() };\n}\n/// # Safety\n/// None.\npub unsafe fn k() {}\n"),
            file("rust/c.rs", "c", "// unsafe { in a comment }\nconst S: &str = \"unsafe { }\";\nfn not_unsafe_code() {}\n"),
        ];
        assert_eq!(
            check_unsafe(&files, &allowed),
            [
                "rust/b.rs:3: an unsafe block without a `// SAFETY:` comment above it",
                "rust/b.rs: unsafe code in a module lib.rs does not list under `unsafe`",
                "rust/gone.rs: listed under `unsafe` in lib.rs but has no unsafe code",
            ]
        );
    }
}
