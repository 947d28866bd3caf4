//! The architecture's layering, checked from the code's own imports.
//!
//! Every `src/**/*.rs` file of the root package belongs to a room (its first module under `src/`)
//! and every room stands on a floor. A room may import from its own floor and the floors below;
//! an import to a higher floor is an upward import, and only the few in `ALLOWED_UP` may exist.
//! The rooms form no cycle, neither do the submodules of a folder room, `http` and `dashboard`
//! stay apart, and files and functions stay under their size limits (functions of `benches/`
//! too).
//!
//! The test reads the sources itself (a small Rust lexer, std only) instead of linking the crate,
//! so it judges the code as written even when the crate does not build.
//! `cargo test --test layers -- --nocapture` prints each check's report;
//! `cargo test --test layers print_graph -- --ignored --nocapture` prints the whole room graph.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The floors, highest first. A room may import rooms on its own floor or below.
const FLOORS: &[(u8, &str, &[&str])] = &[
    (7, "composition", &["main", "lib", "startup", "demo"]),
    (6, "front ends", &["http", "dashboard"]),
    (5, "web and background", &["web", "background"]),
    (4, "services", &["services"]),
    (3, "actors and publishing", &["actors", "publish"]),
    (
        2,
        "platforms and identity",
        &[
            "platforms",
            "insights",
            "cluster",
            "oauth",
            "oidc",
            "media",
            "webhook_sender",
        ],
    ),
    (1, "store", &["store"]),
    (
        0,
        "ground",
        &[
            "error", "config", "clock", "crypto", "tokens", "usage", "metrics", "logging", "domain",
        ],
    ),
];

/// Names re-exported at the crate root (`crate::AppState`), mapped to the room that defines them:
/// an import of a root item is an import of that room.
const ROOT_ITEMS: &[(&str, &str)] = &[
    ("AppState", "web"),
    ("Application", "startup"),
    ("BuildOptions", "startup"),
    ("StartupError", "startup"),
    ("stop_on_signal", "startup"),
];

/// The upward imports that are accepted: (from room, to room, why).
const ALLOWED_UP: &[(&str, &str, &str)] = &[];
/// An allow-list longer than this is a layering that no longer holds.
const MAX_ALLOWED_UP: usize = 5;

const MAX_FILE_LINES: usize = 900;
const MAX_FN_LINES: usize = 150;

// ---------------------------------------------------------------------------------------------
// Lexer: identifiers, punctuation (`::` as one token) and literals, each with its line. Comments
// vanish; string, char and number literals become opaque `Lit` tokens, so a "crate::x" inside a
// string is not a path.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Ident,
    Punct,
    Lit,
}

#[derive(Clone, Debug)]
struct Token {
    kind: Kind,
    text: String,
    line: usize,
}

fn lex(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut push = |kind: Kind, text: &str, line: usize| {
        out.push(Token {
            kind,
            text: text.to_string(),
            line,
        })
    };
    let (mut i, mut line) = (0usize, 1usize);
    while i < c.len() {
        let ch = c[i];
        let start_line = line;
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            // Block comments nest in Rust.
            let mut depth = 0usize;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(&c, i + 1, &mut line);
            push(Kind::Lit, "<lit>", start_line);
        } else if ch == '\'' {
            i = skip_quote(&c, i);
            push(Kind::Lit, "<lit>", start_line);
        } else if ch.is_alphabetic() || ch == '_' {
            let begin = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[begin..i].iter().collect();
            let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
            if matches!(word.as_str(), "r" | "br" | "cr") && at(i + hashes) == '"' {
                i = skip_raw_string(&c, i + hashes + 1, hashes, &mut line);
                push(Kind::Lit, "<lit>", start_line);
            } else if word == "r" && hashes == 1 && (at(i + 1).is_alphabetic() || at(i + 1) == '_')
            {
                // A raw identifier, `r#type`.
                let begin = i + 1;
                i = begin;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                let name: String = c[begin..i].iter().collect();
                push(Kind::Ident, &name, start_line);
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                i = skip_string(&c, i + 1, &mut line);
                push(Kind::Lit, "<lit>", start_line);
            } else if word == "b" && at(i) == '\'' {
                i = skip_quote(&c, i);
                push(Kind::Lit, "<lit>", start_line);
            } else {
                push(Kind::Ident, &word, start_line);
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            push(Kind::Lit, "<lit>", start_line);
        } else if ch == ':' && at(i + 1) == ':' {
            push(Kind::Punct, "::", start_line);
            i += 2;
        } else {
            push(Kind::Punct, &ch.to_string(), start_line);
            i += 1;
        }
    }
    out
}

/// From just after an opening `"`, past the closing one.
fn skip_string(c: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => {
                if c.get(i + 1) == Some(&'\n') {
                    *line += 1;
                }
                i += 2;
            }
            '"' => return i + 1,
            ch => {
                if ch == '\n' {
                    *line += 1;
                }
                i += 1;
            }
        }
    }
    i
}

/// From just after `r##"`, past the `"##` that closes it.
fn skip_raw_string(c: &[char], mut i: usize, hashes: usize, line: &mut usize) -> usize {
    while i < c.len() {
        if c[i] == '"'
            && c[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == '#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        if c[i] == '\n' {
            *line += 1;
        }
        i += 1;
    }
    i
}

/// From a `'`: past a char literal (`'a'`, `'\''`, `'\u{1F600}'`) or a lifetime (`'a`).
fn skip_quote(c: &[char], i: usize) -> usize {
    let at = |k: usize| c.get(k).copied().unwrap_or('\0');
    if at(i + 1) == '\\' {
        let mut j = i + 3;
        while j < c.len() && c[j] != '\'' && c[j] != '\n' {
            j += 1;
        }
        return j + 1;
    }
    if at(i + 2) == '\'' {
        return i + 3;
    }
    let mut j = i + 1;
    while j < c.len() && (c[j].is_alphanumeric() || c[j] == '_') {
        j += 1;
    }
    j
}

fn is(t: &[Token], i: usize, text: &str) -> bool {
    t.get(i)
        .is_some_and(|t| t.text == text && t.kind != Kind::Lit)
}

fn ident_at(t: &[Token], i: usize) -> Option<&str> {
    t.get(i)
        .filter(|t| t.kind == Kind::Ident)
        .map(|t| t.text.as_str())
}

/// `t[open]` is `(`, `[` or `{`: the index just past its matching closer.
fn skip_group(t: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, tok) in t.iter().enumerate().skip(open) {
        if tok.kind != Kind::Punct {
            continue;
        }
        match tok.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// If `#[cfg(test)]` at `i` opens a test module (`mod name { … }` or `mod name;`, possibly with
/// more attributes and a visibility between), the index just past that module.
fn test_module_end(t: &[Token], i: usize) -> Option<usize> {
    let attribute = ["#", "[", "cfg", "(", "test", ")", "]"];
    if !attribute.iter().enumerate().all(|(k, s)| is(t, i + k, s)) {
        return None;
    }
    let mut j = i + attribute.len();
    while is(t, j, "#") && is(t, j + 1, "[") {
        j = skip_group(t, j + 1)?;
    }
    if is(t, j, "pub") {
        j += 1;
        if is(t, j, "(") {
            j = skip_group(t, j)?;
        }
    }
    if !is(t, j, "mod") || ident_at(t, j + 1).is_none() {
        return None;
    }
    match t.get(j + 2).map(|t| t.text.as_str()) {
        Some(";") => Some(j + 3),
        Some("{") => skip_group(t, j + 2),
        _ => None,
    }
}

/// The tokens without the `#[cfg(test)]` modules: test code may import anything.
fn strip_test_modules(t: Vec<Token>) -> Vec<Token> {
    let mut out = Vec::with_capacity(t.len());
    let mut i = 0;
    while i < t.len() {
        match test_module_end(&t, i) {
            Some(end) => i = end,
            None => {
                out.push(t[i].clone());
                i += 1;
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Parser: `use` trees, inline paths and function spans of one file.
// ---------------------------------------------------------------------------------------------

/// One leaf of a `use` tree: its path as written, its `as` name, and the line of its last segment.
#[derive(Debug)]
struct UseLeaf {
    path: Vec<String>,
    alias: Option<String>,
    line: usize,
}

/// Parses the use tree starting at `i` (after `use` or inside a `{}` group) under `prefix`;
/// returns the index just past it.
fn parse_use_tree(t: &[Token], mut i: usize, prefix: &[String], out: &mut Vec<UseLeaf>) -> usize {
    let mut path = prefix.to_vec();
    if is(t, i, "::") {
        // `use ::name` names an external crate.
        path.push("::".to_string());
        i += 1;
    }
    loop {
        if is(t, i, "{") {
            i += 1;
            while i < t.len() && !is(t, i, "}") {
                let next = parse_use_tree(t, i, &path, out);
                i = if next == i { i + 1 } else { next };
                if is(t, i, ",") {
                    i += 1;
                }
            }
            return i + 1;
        }
        if is(t, i, "*") {
            path.push("*".to_string());
            out.push(UseLeaf {
                path,
                alias: None,
                line: t[i].line,
            });
            return i + 1;
        }
        // `use $crate::a` in a macro: `$crate` is this crate.
        if is(t, i, "$") && ident_at(t, i + 1) == Some("crate") {
            i += 1;
        }
        let Some(name) = ident_at(t, i) else {
            return i;
        };
        let line = t[i].line;
        path.push(name.to_string());
        i += 1;
        if is(t, i, "::") {
            i += 1;
            continue;
        }
        let mut alias = None;
        if is(t, i, "as") {
            alias = ident_at(t, i + 1).map(str::to_string);
            i += 2;
        }
        // `a::{self, b}`: the `self` leaf names `a` itself.
        if path.len() > 1 && path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
        out.push(UseLeaf { path, alias, line });
        return i;
    }
}

/// What the crate paths of a file are relative to.
struct Ctx<'a> {
    /// The library's name, which a binary's paths start with (`social_service::store`).
    lib_name: &'a str,
    /// A binary root (`src/main.rs`): its `crate::` is the binary, not the library.
    bin: bool,
}

/// A path into the library crate that the file names.
#[derive(Debug, Clone, PartialEq)]
struct Found {
    line: usize,
    /// The module the path is written in (inline `mod`s included).
    module: Vec<String>,
    /// Absolute within the crate, without `crate`.
    path: Vec<String>,
}

#[derive(Debug)]
struct FnSpan {
    name: String,
    line: usize,
    lines: usize,
}

#[derive(Debug, Default)]
struct Parsed {
    found: Vec<Found>,
    /// `pub use` names of each module: (module, name, absolute path).
    reexports: Vec<(Vec<String>, String, Vec<String>)>,
    fns: Vec<FnSpan>,
}

/// Resolves a path as written in `module` to one absolute in the library crate; `None` for
/// paths into other crates (and into the binary crate).
fn resolve(
    path: &[String],
    module: &[String],
    children: &BTreeSet<String>,
    ctx: &Ctx,
) -> Option<Vec<String>> {
    let first = path.first()?.as_str();
    if first == ctx.lib_name {
        return Some(path[1..].to_vec());
    }
    let relative = matches!(first, "crate" | "self" | "super") || children.contains(first);
    if ctx.bin && relative {
        return None;
    }
    if first == "crate" {
        return Some(path[1..].to_vec());
    }
    let mut current = module.to_vec();
    let mut k = 0;
    while let Some(seg) = path.get(k) {
        match seg.as_str() {
            "self" => {}
            "super" => {
                current.pop();
            }
            _ => break,
        }
        k += 1;
    }
    if k == 0 && !children.contains(first) {
        return None;
    }
    current.extend(path[k..].iter().cloned());
    Some(current)
}

/// Index just past the `fn` body starting at `i` (`fn name …{ … }`), or `None` for a body-less
/// declaration.
fn fn_body_end(t: &[Token], i: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = i + 2;
    while let Some(tok) = t.get(j) {
        if tok.kind == Kind::Punct {
            match tok.text.as_str() {
                "(" | "[" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                ";" if depth == 0 => return None,
                "{" if depth == 0 => return skip_group(t, j),
                _ => {}
            }
        }
        j += 1;
    }
    None
}

fn is_pub_before(t: &[Token], i: usize) -> bool {
    let Some(mut j) = i.checked_sub(1) else {
        return false;
    };
    if is(t, j, ")") {
        while j > 0 && !is(t, j, "(") {
            j -= 1;
        }
        j = j.saturating_sub(1);
    }
    is(t, j, "pub")
}

/// Whether `t[i]` (the identifier `word`) starts a path into this crate written in the code,
/// such as `crate::store::Store::open(…)`.
fn starts_inline_path(
    t: &[Token],
    i: usize,
    word: &str,
    children: &BTreeSet<String>,
    ctx: &Ctx,
) -> bool {
    let continues_a_path = i > 0 && (is(t, i - 1, "::") || is(t, i - 1, "."));
    // `pub(in crate::a)` is a visibility, not a use of `a`.
    let visibility = i > 1 && is(t, i - 1, "in") && is(t, i - 2, "(");
    is(t, i + 1, "::")
        && !continues_a_path
        && !visibility
        && (matches!(word, "crate" | "self" | "super")
            || word == ctx.lib_name
            || children.contains(word))
}

fn parse_source(text: &str, file_module: &[String], ctx: &Ctx) -> Parsed {
    let t = strip_test_modules(lex(text));
    // Child modules: a path starting with one of their names is relative to this module.
    let children: BTreeSet<String> = (0..t.len())
        .filter(|&i| is(&t, i, "mod"))
        .filter_map(|i| ident_at(&t, i + 1).map(str::to_string))
        .collect();
    let mut parsed = Parsed::default();
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < t.len() {
        let mut module = file_module.to_vec();
        module.extend(inline.iter().map(|(_, name)| name.clone()));
        let word = ident_at(&t, i);
        if is(&t, i, "{") {
            depth += 1;
        } else if is(&t, i, "}") {
            if inline.last().is_some_and(|(d, _)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
        } else if word == Some("mod") && ident_at(&t, i + 1).is_some() && is(&t, i + 2, "{") {
            inline.push((depth + 1, t[i + 1].text.clone()));
            i += 2;
            continue;
        } else if word == Some("use") && !is(&t, i + 1, "<") {
            let mut leaves = Vec::new();
            let mut end = parse_use_tree(&t, i + 1, &[], &mut leaves);
            while end < t.len() && !is(&t, end, ";") {
                end += 1;
            }
            let public = is_pub_before(&t, i);
            for leaf in leaves {
                let Some(path) = resolve(&leaf.path, &module, &children, ctx) else {
                    continue;
                };
                let name = leaf.alias.or_else(|| leaf.path.last().cloned());
                if let Some(name) = name.filter(|n| public && n != "*" && n != "_") {
                    parsed.reexports.push((module.clone(), name, path.clone()));
                }
                parsed.found.push(Found {
                    line: leaf.line,
                    module: module.clone(),
                    path,
                });
            }
            i = end + 1;
            continue;
        } else if word == Some("fn") && ident_at(&t, i + 1).is_some() {
            if let Some(end) = fn_body_end(&t, i) {
                parsed.fns.push(FnSpan {
                    name: t[i + 1].text.clone(),
                    line: t[i].line,
                    lines: t[end - 1].line - t[i].line + 1,
                });
            }
        } else if let Some(first) = word.filter(|w| starts_inline_path(&t, i, w, &children, ctx)) {
            // An inline path, `crate::store::Store::open(…)`.
            let mut path = vec![first.to_string()];
            let mut j = i;
            while is(&t, j + 1, "::") {
                let Some(seg) = ident_at(&t, j + 2) else {
                    break;
                };
                path.push(seg.to_string());
                j += 2;
            }
            if let Some(path) = resolve(&path, &module, &children, ctx) {
                parsed.found.push(Found {
                    line: t[i].line,
                    module,
                    path,
                });
            }
            i = j + 1;
            continue;
        }
        i += 1;
    }
    parsed
}

// ---------------------------------------------------------------------------------------------
// The crate: files, rooms, imports.
// ---------------------------------------------------------------------------------------------

struct SourceFile {
    /// Relative to the package root, `/`-separated: `src/http/auth/origin.rs`.
    rel: String,
    module: Vec<String>,
    room: String,
    lines: usize,
    parsed: Parsed,
}

/// An import from one module to a path in the crate, resolved to rooms.
struct Import {
    at: String,
    from_module: Vec<String>,
    from_room: String,
    target: Vec<String>,
    to_room: String,
}

struct Crate {
    files: Vec<SourceFile>,
    /// Every import of a crate path outside test modules, including those within a room.
    imports: Vec<Import>,
    /// Root items missing from `ROOT_ITEMS`: (name, file:line).
    unknown_root_items: Vec<(String, String)>,
    /// Every module that has a file, with its ancestors.
    modules: BTreeSet<Vec<String>>,
    /// `pub use` names per module: module → name → absolute path.
    reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
}

fn package_root() -> PathBuf {
    option_env!("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The library's crate name: `[lib] name`, else the package name with `-` as `_`.
fn lib_name(manifest: &str) -> String {
    let mut section = "";
    let mut package = None;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let Some(value) = line.strip_prefix("name").map(str::trim_start) else {
            continue;
        };
        let Some(value) = value.strip_prefix('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"').replace('-', "_");
        match section {
            "[lib]" => return value,
            "[package]" => package = Some(value),
            _ => {}
        }
    }
    package.unwrap_or_default()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file given its components under `src/`: `http/auth/origin.rs` →
/// `http::auth::origin`; `mod.rs` is its folder's module; `lib.rs`/`main.rs` are the root.
fn module_of(components: &[String]) -> Vec<String> {
    if components.len() == 1 && (components[0] == "lib.rs" || components[0] == "main.rs") {
        return Vec::new();
    }
    let mut module = components.to_vec();
    if let Some(last) = module.last_mut() {
        *last = last.trim_end_matches(".rs").to_string();
    }
    if module.last().is_some_and(|m| m == "mod") {
        module.pop();
    }
    module
}

fn root_item_room(name: &str) -> Option<&'static str> {
    ROOT_ITEMS
        .iter()
        .find(|(item, _)| *item == name)
        .map(|(_, room)| *room)
}

fn load_crate(root: &Path) -> Crate {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("cannot read {}/Cargo.toml: {e}", root.display()));
    let lib = lib_name(&manifest);
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let components: Vec<String> = path
            .strip_prefix(root.join("src"))
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let rel = format!("src/{}", components.join("/"));
        let module = module_of(&components);
        let bin = rel == "src/main.rs";
        let room = match module.first() {
            Some(first) => first.clone(),
            None if bin => "main".to_string(),
            None => "lib".to_string(),
        };
        // Test files may import anything.
        let test_file = components.last().is_some_and(|f| f == "tests.rs")
            || components[..components.len() - 1]
                .iter()
                .any(|c| c == "tests");
        let ctx = Ctx {
            lib_name: &lib,
            bin,
        };
        let parsed = if test_file {
            Parsed::default()
        } else {
            parse_source(&text, &module, &ctx)
        };
        files.push(SourceFile {
            rel,
            module,
            room,
            lines: text.lines().count(),
            parsed,
        });
    }
    resolve_crate(files)
}

fn resolve_crate(files: Vec<SourceFile>) -> Crate {
    let mut modules = BTreeSet::new();
    for file in &files {
        for k in 1..=file.module.len() {
            modules.insert(file.module[..k].to_vec());
        }
    }
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut imports = Vec::new();
    let mut unknown_root_items = Vec::new();
    for file in &files {
        for (module, name, path) in &file.parsed.reexports {
            reexports
                .entry(module.clone())
                .or_default()
                .insert(name.clone(), path.clone());
        }
        for found in &file.parsed.found {
            let at = format!("{}:{}", file.rel, found.line);
            let to_room = match found.path.first() {
                None => "lib".to_string(),
                Some(first) if first == "*" => "lib".to_string(),
                Some(first) if modules.contains(std::slice::from_ref(first)) => first.clone(),
                Some(first) => match root_item_room(first) {
                    Some(room) => room.to_string(),
                    None => {
                        // Its room is unknown: every_root_item_has_a_room reports it, and it
                        // stays out of the graph rather than count as an import of `lib`.
                        unknown_root_items.push((first.clone(), at));
                        continue;
                    }
                },
            };
            imports.push(Import {
                at,
                from_module: found.module.clone(),
                from_room: file.room.clone(),
                target: found.path.clone(),
                to_room,
            });
        }
    }
    Crate {
        files,
        imports,
        unknown_root_items,
        modules,
        reexports,
    }
}

/// The functions (outside test modules) of every `.rs` file under `dir`, a folder of the package
/// at `root`, each with its file relative to `root`. Each file is read as the root of a binary
/// that links the library, as a benchmark is; only the functions' spans are used.
fn functions_under(root: &Path, dir: &str) -> Vec<(String, FnSpan)> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("cannot read {}/Cargo.toml: {e}", root.display()));
    let lib = lib_name(&manifest);
    let ctx = Ctx {
        lib_name: &lib,
        bin: true,
    };
    let mut paths = Vec::new();
    rust_files(&root.join(dir), &mut paths);
    paths.sort();
    let mut fns = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let rel: Vec<String> = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let rel = rel.join("/");
        for f in parse_source(&text, &[], &ctx).fns {
            fns.push((rel.clone(), f));
        }
    }
    fns
}

fn the_crate() -> &'static Crate {
    static CRATE: OnceLock<Crate> = OnceLock::new();
    CRATE.get_or_init(|| load_crate(&package_root()))
}

fn floor(room: &str) -> Option<u8> {
    FLOORS
        .iter()
        .find(|(_, _, rooms)| rooms.contains(&room))
        .map(|(floor, _, _)| *floor)
}

type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

impl Crate {
    fn rooms(&self) -> BTreeSet<&str> {
        self.files.iter().map(|f| f.room.as_str()).collect()
    }

    /// Imports between different rooms.
    fn crossing(&self) -> impl Iterator<Item = &Import> {
        self.imports.iter().filter(|i| i.from_room != i.to_room)
    }

    /// from room → to room → the file:line of each import.
    fn room_graph(&self) -> Graph {
        let mut graph = Graph::new();
        for import in self.crossing() {
            graph
                .entry(import.from_room.clone())
                .or_default()
                .entry(import.to_room.clone())
                .or_default()
                .push(import.at.clone());
        }
        graph
    }

    /// Within the folder room `room`: the unit of a module is `room` itself (its `mod.rs`) or
    /// `room::child` for anything in a child's file or folder.
    fn unit(room: &str, module: &[String]) -> String {
        match module.get(1) {
            Some(child) => format!("{room}::{child}"),
            None => room.to_string(),
        }
    }

    /// The unit an import within `room` lands on; a name the room's `mod.rs` re-exports from a
    /// child lands on that child.
    fn target_unit(&self, room: &str, target: &[String]) -> String {
        let child = target.get(1).filter(|c| {
            self.modules
                .contains(&vec![room.to_string(), c.to_string()])
        });
        if let Some(child) = child {
            return format!("{room}::{child}");
        }
        let reexported = target.get(1).and_then(|name| {
            self.reexports
                .get(std::slice::from_ref(&room.to_string()))
                .and_then(|names| names.get(name))
        });
        match reexported {
            Some(path) if path.first().is_some_and(|r| r == room) && path.len() > 2 => {
                Self::unit(room, path)
            }
            _ => room.to_string(),
        }
    }

    /// The graph of the children of each folder room (the room's own `mod.rs` left out: a
    /// parent and its child may import each other).
    fn sibling_graphs(&self) -> BTreeMap<String, Graph> {
        let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
        for import in self.imports.iter().filter(|i| i.from_room == i.to_room) {
            let room = import.from_room.as_str();
            if import.from_module.is_empty() {
                continue;
            }
            let from = Self::unit(room, &import.from_module);
            let to = self.target_unit(room, &import.target);
            if from == to || from == room || to == room {
                continue;
            }
            graphs
                .entry(room.to_string())
                .or_default()
                .entry(from)
                .or_default()
                .entry(to)
                .or_default()
                .push(import.at.clone());
        }
        graphs
    }
}

// ---------------------------------------------------------------------------------------------
// Cycles: strongly connected components (Tarjan), each shown as cycles through its members.
// ---------------------------------------------------------------------------------------------

fn components(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flat_map(|e| e.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.found.push(component);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    let mut found: Vec<_> = s.found.into_iter().filter(|c| c.len() > 1).collect();
    found.sort();
    found
}

/// The shortest cycle from `start` back to itself, staying inside `component`.
fn shortest_cycle(graph: &Graph, component: &[String], start: &String) -> Option<Vec<String>> {
    let inside: BTreeSet<&String> = component.iter().collect();
    let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph.get(v).into_iter().flat_map(|e| e.keys()) {
            if w == start {
                let mut cycle = vec![start.clone()];
                let mut at = v;
                while at != start {
                    cycle.push(at.clone());
                    at = came_from[at];
                }
                cycle.push(start.clone());
                cycle.reverse();
                return Some(cycle);
            }
            if inside.contains(w) && !came_from.contains_key(w) {
                came_from.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    None
}

/// Cycles that together pass through every member of the component: the shortest one through
/// each member, each cycle listed once.
fn cycles_of(graph: &Graph, component: &[String]) -> Vec<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut cycles = Vec::new();
    for start in component {
        let Some(cycle) = shortest_cycle(graph, component, start) else {
            continue;
        };
        // The same cycle found from another member is a rotation of this one.
        let mut key = cycle[1..].to_vec();
        let smallest = (0..key.len()).min_by_key(|&k| &key[k]).unwrap_or(0);
        key.rotate_left(smallest);
        if seen.insert(key) {
            cycles.push(cycle);
        }
    }
    cycles
}

/// Writes each strongly connected component and its cycles to `report`; returns how many
/// components there are.
fn describe_cycles(graph: &Graph, floors: bool, report: &mut String) -> usize {
    let found = components(graph);
    for component in &found {
        let _ = writeln!(report, "  members: {}", component.join(", "));
        for cycle in cycles_of(graph, component) {
            let _ = writeln!(report, "  cycle: {}", cycle.join(" → "));
            for pair in cycle.windows(2) {
                let sites = &graph[&pair[0]][&pair[1]];
                let up = match (floor(&pair[0]), floor(&pair[1])) {
                    (Some(f), Some(t)) if floors && t > f => " (upward)",
                    _ => "",
                };
                let _ = writeln!(
                    report,
                    "    {} → {}{up}: {} import(s), e.g. {}",
                    pair[0],
                    pair[1],
                    sites.len(),
                    examples(sites, 3)
                );
            }
        }
    }
    found.len()
}

/// The first `n` distinct sites (a grouped `use` names several paths on one line).
fn examples(sites: &[String], n: usize) -> String {
    let mut distinct: Vec<&str> = sites.iter().map(String::as_str).collect();
    distinct.dedup();
    let mut shown: Vec<&str> = distinct.iter().take(n).copied().collect();
    if distinct.len() > n {
        shown.push("…");
    }
    shown.join(", ")
}

fn summary(c: &Crate) -> String {
    let graph = c.room_graph();
    format!(
        "{} files, {} rooms, {} crate imports ({} between rooms, {} distinct room edges)",
        c.files.len(),
        c.rooms().len(),
        c.imports.len(),
        c.crossing().count(),
        graph.values().map(BTreeMap::len).sum::<usize>()
    )
}

// ---------------------------------------------------------------------------------------------
// The checks.
// ---------------------------------------------------------------------------------------------

#[test]
fn every_room_stands_on_a_floor() {
    let c = the_crate();
    let rooms = c.rooms();
    let files = |room: &str| c.files.iter().filter(|f| f.room == room).count();
    let mut report = format!("{}\n", summary(c));
    for (number, name, members) in FLOORS {
        let present: Vec<String> = members
            .iter()
            .filter(|r| rooms.contains(*r))
            .map(|r| format!("{r} ({} files)", files(r)))
            .collect();
        let _ = writeln!(report, "  floor {number} {name}: {}", present.join(", "));
    }
    let missing: Vec<&str> = rooms.into_iter().filter(|r| floor(r).is_none()).collect();
    let listed: Vec<String> = missing
        .iter()
        .map(|r| format!("{r} ({} files)", files(r)))
        .collect();
    let _ = writeln!(report, "  no floor: {}", listed.join(", "));
    println!("{report}");
    assert!(
        missing.is_empty(),
        "rooms with no floor in FLOORS (tests/layers.rs), give each one: {}",
        missing.join(", ")
    );
}

#[test]
fn every_root_item_has_a_room() {
    let c = the_crate();
    let mut by_item: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (item, at) in &c.unknown_root_items {
        by_item.entry(item).or_default().push(at.clone());
    }
    let mut report = String::new();
    for (item, sites) in &by_item {
        let _ = writeln!(
            report,
            "  crate::{item} is not in ROOT_ITEMS; used at {}",
            examples(sites, 5)
        );
    }
    println!(
        "root items: {} known, {} unknown\n{report}",
        ROOT_ITEMS.len(),
        by_item.len()
    );
    assert!(
        by_item.is_empty(),
        "names imported from the crate root that ROOT_ITEMS (tests/layers.rs) does not map to \
         their room:\n{report}"
    );
}

#[test]
fn imports_go_to_the_same_floor_or_below() {
    let c = the_crate();
    let mut problems = Vec::new();
    if ALLOWED_UP.len() > MAX_ALLOWED_UP {
        problems.push(format!(
            "ALLOWED_UP has {} entries, at most {MAX_ALLOWED_UP} are allowed",
            ALLOWED_UP.len()
        ));
    }
    for (from, to, why) in ALLOWED_UP {
        match (floor(from), floor(to)) {
            (Some(f), Some(t)) if t > f => {}
            _ => problems.push(format!(
                "ALLOWED_UP entry {from} → {to} ({why}) is not an upward import between rooms \
                 with floors: remove it"
            )),
        }
        if !c
            .crossing()
            .any(|i| i.from_room == *from && i.to_room == *to)
        {
            problems.push(format!(
                "ALLOWED_UP entry {from} → {to} ({why}) is no longer used: remove it"
            ));
        }
    }
    let mut upward: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    let mut unjudged = 0;
    for import in c.crossing() {
        let (from, to) = (import.from_room.as_str(), import.to_room.as_str());
        let (Some(f), Some(t)) = (floor(from), floor(to)) else {
            unjudged += 1;
            continue;
        };
        let allowed = ALLOWED_UP.iter().any(|(a, b, _)| *a == from && *b == to);
        if t > f && !allowed {
            upward.entry((from, to)).or_default().push(format!(
                "{}: {from} → {to} (crate::{})",
                import.at,
                import.target.join("::")
            ));
        }
    }
    let mut report = format!(
        "{}\n{} upward imports in {} room pairs; {} imports touch a room with no floor (see \
         every_room_stands_on_a_floor)\n",
        summary(c),
        upward.values().map(Vec::len).sum::<usize>(),
        upward.len(),
        unjudged
    );
    for ((from, to), sites) in &upward {
        let _ = writeln!(
            report,
            "  {from} (floor {}) → {to} (floor {}): {} import(s)",
            floor(from).unwrap_or_default(),
            floor(to).unwrap_or_default(),
            sites.len()
        );
        for site in sites {
            let _ = writeln!(report, "    {site}");
        }
    }
    println!("{report}");
    if !upward.is_empty() {
        problems.push(format!("upward imports:\n{report}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn rooms_form_no_cycle() {
    let c = the_crate();
    let graph = c.room_graph();
    let mut report = String::new();
    let cycles = describe_cycles(&graph, true, &mut report);
    println!(
        "{}\n{cycles} group(s) of rooms in a cycle\n{report}",
        summary(c)
    );
    assert_eq!(cycles, 0, "rooms that import each other:\n{report}");
}

#[test]
fn submodules_of_a_folder_room_form_no_cycle() {
    let c = the_crate();
    let mut report = String::new();
    let mut cycles = 0;
    let graphs = c.sibling_graphs();
    for (room, graph) in &graphs {
        let mut room_report = String::new();
        let found = describe_cycles(graph, false, &mut room_report);
        if found > 0 {
            let _ = write!(report, "{room}:\n{room_report}");
        }
        cycles += found;
    }
    println!(
        "{} folder rooms with imports between their submodules; {cycles} group(s) of siblings in \
         a cycle\n{report}",
        graphs.len()
    );
    assert_eq!(cycles, 0, "submodules that import each other:\n{report}");
}

#[test]
fn http_and_dashboard_never_import_each_other() {
    let c = the_crate();
    let sites: Vec<String> = c
        .crossing()
        .filter(|i| {
            matches!(
                (i.from_room.as_str(), i.to_room.as_str()),
                ("http", "dashboard") | ("dashboard", "http")
            )
        })
        .map(|i| {
            let target = i.target.join("::");
            format!(
                "  {}: {} → {} (crate::{target})",
                i.at, i.from_room, i.to_room
            )
        })
        .collect();
    println!(
        "{} import(s) between http and dashboard\n{}",
        sites.len(),
        sites.join("\n")
    );
    assert!(
        sites.is_empty(),
        "http and dashboard import each other:\n{}",
        sites.join("\n")
    );
}

#[test]
fn no_source_file_over_900_lines() {
    let c = the_crate();
    let long: Vec<String> = c
        .files
        .iter()
        .filter(|f| f.lines > MAX_FILE_LINES)
        .map(|f| format!("  {}: {} lines", f.rel, f.lines))
        .collect();
    println!(
        "{} files under src/, {} over {MAX_FILE_LINES} lines\n{}",
        c.files.len(),
        long.len(),
        long.join("\n")
    );
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn no_function_over_150_lines() {
    let c = the_crate();
    let src = c
        .files
        .iter()
        .flat_map(|file| file.parsed.fns.iter().map(|f| (file.rel.as_str(), f)));
    // The benchmarks are read and changed like the service's code, so their functions are held
    // to the same limit. `migration/` is not scanned: an old migration never changes, so
    // splitting its functions would help no one.
    let benches = functions_under(&package_root(), "benches");
    let benches = benches.iter().map(|(rel, f)| (rel.as_str(), f));
    let mut long = Vec::new();
    let mut count = 0;
    for (rel, f) in src.chain(benches) {
        count += 1;
        if f.lines > MAX_FN_LINES {
            long.push(format!(
                "  {rel}:{}: fn {} is {} lines",
                f.line, f.name, f.lines
            ));
        }
    }
    println!(
        "{count} functions outside test modules, {} over {MAX_FN_LINES} lines\n{}",
        long.len(),
        long.join("\n")
    );
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// Every room edge with its count and examples: `cargo test --test layers print_graph --
/// --ignored --nocapture`.
#[test]
#[ignore]
fn print_graph() {
    let c = the_crate();
    println!("{}", summary(c));
    for (from, edges) in c.room_graph() {
        for (to, sites) in edges {
            let mark = match (floor(&from), floor(&to)) {
                (Some(f), Some(t)) if t > f => "  UP",
                (Some(_), Some(_)) => "",
                _ => "  (no floor)",
            };
            println!(
                "{from:>12} → {to:<12} {:>4}  {}{mark}",
                sites.len(),
                examples(&sites, 2)
            );
        }
    }
    for (room, graph) in c.sibling_graphs() {
        println!("\n{room}: imports between its submodules");
        for (from, edges) in graph {
            for (to, sites) in edges {
                println!(
                    "  {from} → {to} {:>4}  {}",
                    sites.len(),
                    examples(&sites, 2)
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The parser's own tests.
// ---------------------------------------------------------------------------------------------

fn module(path: &str) -> Vec<String> {
    path.split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The crate paths `src` names, as `line:a::b`, when written in module `at`.
fn paths_in(src: &str, at: &str) -> Vec<String> {
    let ctx = Ctx {
        lib_name: "social_service",
        bin: false,
    };
    parse_source(src, &module(at), &ctx)
        .found
        .iter()
        .map(|f| format!("{}:{}", f.line, f.path.join("::")))
        .collect()
}

#[test]
fn parser_expands_nested_use_groups() {
    let src = "pub(crate) use crate::{a::b, c::{d, e as f, self}, g::*};\n\
               use crate::{\n    h::{\n        i::{j, k},\n    },\n};\nuse std::{fmt, io};\n\
               macro_rules! m { () => { use $crate::l::M; } }";
    assert_eq!(
        paths_in(src, "x"),
        [
            "1:a::b",
            "1:c::d",
            "1:c::e",
            "1:c",
            "1:g::*",
            "4:h::i::j",
            "4:h::i::k",
            "8:l::M"
        ]
    );
}

#[test]
fn parser_resolves_super_and_self() {
    let src = "use super::super::store::Store;\nuse super::Guard;\nuse self::inner::X;\n\
               use super::{super::config, sibling};";
    assert_eq!(
        paths_in(src, "http::auth::origin"),
        [
            "1:http::store::Store",
            "2:http::auth::Guard",
            "3:http::auth::origin::inner::X",
            "4:http::config",
            "4:http::auth::sibling",
        ]
    );
    // `src/http/mod.rs` is module `http`: its `super` is the crate root.
    assert_eq!(
        paths_in("use super::config::Config;", "http"),
        ["1:config::Config"]
    );
}

#[test]
fn parser_finds_inline_paths() {
    let src = "fn f() {\n    let s = crate::store::Store::open::<u8>();\n    \
               super::metrics::count(); $crate::clock::now();\n    x.crate_like::y();\n}";
    assert_eq!(
        paths_in(src, "http::ops"),
        [
            "2:store::Store::open",
            "3:http::metrics::count",
            "3:clock::now"
        ]
    );
}

#[test]
fn parser_ignores_comments_and_literals() {
    let src = "// use crate::a;\n/// crate::b::C\n//! crate::c\n/* crate::d /* nested */ \
               crate::e */\nconst S: &str = \"crate::f\";\nconst R: &str = r#\"use crate::g;\"#;\n\
               const C: char = '\"'; fn x<'a>(_: &'a str) { crate::h::i(); }";
    assert_eq!(paths_in(src, "x"), ["7:h::i"]);
}

#[test]
fn parser_skips_test_modules_but_not_other_test_items() {
    let src = "use crate::a::A;\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n\
               #[cfg(test)]\n#[allow(dead_code)]\nmod more_tests { fn f() { crate::c::d(); } }\n\
               #[cfg(test)]\nfn helper() { crate::e::f(); }";
    assert_eq!(paths_in(src, "x"), ["1:a::A", "10:e::f"]);
}

#[test]
fn parser_resolves_child_modules_and_inline_modules() {
    // In `src/lib.rs`, `store::Store` is the `store` module; in an inline `mod`, `super` is the
    // file's own module.
    let src = "pub mod store;\nfn f() { store::Store::open(); std::mem::drop(1); }\n\
               mod inner { use super::Thing; }\nfn g() { self::Thing::new(); }";
    assert_eq!(
        paths_in(src, ""),
        ["2:store::Store::open", "3:Thing", "4:Thing::new"]
    );
}

#[test]
fn parser_reads_the_library_name_in_a_binary() {
    let ctx = Ctx {
        lib_name: "social_service",
        bin: true,
    };
    let src = "use social_service::{store::Store, stop_on_signal};\nuse crate::cli::Args;";
    let found: Vec<String> = parse_source(src, &[], &ctx)
        .found
        .iter()
        .map(|f| f.path.join("::"))
        .collect();
    assert_eq!(found, ["store::Store", "stop_on_signal"]);
}

#[test]
fn parser_records_reexports() {
    let src = "pub use self::origin::{Origin as Source, check};\nuse self::private::Hidden;";
    let ctx = Ctx {
        lib_name: "social_service",
        bin: false,
    };
    let names: Vec<String> = parse_source(src, &module("http::auth"), &ctx)
        .reexports
        .iter()
        .map(|(m, name, path)| format!("{}:{name}={}", m.join("::"), path.join("::")))
        .collect();
    assert_eq!(
        names,
        [
            "http::auth:Source=http::auth::origin::Origin",
            "http::auth:check=http::auth::origin::check"
        ]
    );
}

#[test]
fn parser_measures_functions() {
    let src = "fn short() {\n}\ntrait T { fn decl(&self) -> u8; }\n\
               fn long(x: [u8; 2]) -> Result<(), ()>\nwhere\n    u8: Copy,\n{\n    let _ = '}';\n    \
               let _ = \"}\";\n    Ok(())\n}";
    let spans: Vec<String> = parse_source(
        src,
        &[],
        &Ctx {
            lib_name: "x",
            bin: false,
        },
    )
    .fns
    .iter()
    .map(|f| format!("{}@{}:{}", f.name, f.line, f.lines))
    .collect();
    assert_eq!(spans, ["short@1:2", "long@4:8"]);
}

#[test]
fn parser_finds_cycles() {
    let mut graph = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e")] {
        graph
            .entry(a.to_string())
            .or_default()
            .insert(b.to_string(), vec![format!("{a}.rs:1")]);
    }
    let found = components(&graph);
    assert_eq!(found, [["a", "b", "c"]]);
    assert_eq!(cycles_of(&graph, &found[0]), [["a", "b", "c", "a"]]);
}

#[test]
fn module_paths_follow_the_files() {
    let m = |p: &str| module_of(&p.split('/').map(str::to_string).collect::<Vec<_>>()).join("::");
    assert_eq!(m("http/auth/origin.rs"), "http::auth::origin");
    assert_eq!(m("http/mod.rs"), "http");
    assert_eq!(m("config.rs"), "config");
    assert_eq!(m("lib.rs"), "");
    assert_eq!(
        lib_name("[package]\nname = \"social-service\"\n"),
        "social_service"
    );
    assert_eq!(
        lib_name("[package]\nname = \"a-b\"\n[lib]\nname = \"c\"\npath = \"x\""),
        "c"
    );
}
