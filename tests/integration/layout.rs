//! The shape of the code: no circle of imports between the top-level
//! modules of `src/`, nor between the modules of one folder (`report::ci`
//! and `report::text`, say). Every path into the crate counts, in `use`
//! items (groups and nested groups included) and inline in code
//! (`crate::a::B::C`), whether it starts at `crate`, `super` or `self`; a
//! name a module imports and a child reaches through it (`super::Name`) is
//! followed to the module that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A module's path from the crate's root: `["report", "text"]`.
type ModPath = Vec<String>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    Colons,
    Punct(char),
}

fn at(chars: &[char], i: usize) -> char {
    chars.get(i).copied().unwrap_or('\0')
}

/// Skips a block comment (nested ones included) from `i`; counts its lines.
fn block_comment(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        if chars[i] == '/' && at(chars, i + 1) == '*' {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && at(chars, i + 1) == '/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            *line += usize::from(chars[i] == '\n');
            i += 1;
        }
    }
    i
}

/// The length of the prefix of a raw string at `i` (`r"`, `r#"`, `br#"`),
/// with its count of `#`, if one starts there.
fn raw_string(chars: &[char], i: usize) -> Option<(usize, usize)> {
    let mut j = i + usize::from(at(chars, i) == 'b');
    if at(chars, j) != 'r' {
        return None;
    }
    j += 1;
    let hashes = (j..chars.len()).take_while(|&k| chars[k] == '#').count();
    (at(chars, j + hashes) == '"').then_some((j + hashes + 1 - i, hashes))
}

/// Skips a raw string's body from `i`, after its prefix.
fn raw_body(chars: &[char], mut i: usize, hashes: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|h| at(chars, i + h) == '#') {
            return i + 1 + hashes;
        }
        *line += usize::from(chars[i] == '\n');
        i += 1;
    }
    i
}

/// Skips a string's body from `i`, after its opening quote.
fn string_body(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < chars.len() && chars[i] != '"' {
        if chars[i] == '\\' {
            i += 1;
        }
        *line += usize::from(at(chars, i) == '\n');
        i += 1;
    }
    i + 1
}

/// Skips a character literal, or a lifetime or a label, from `i`, after
/// its quote.
fn quoted(chars: &[char], start: usize) -> usize {
    if at(chars, start) == '\\' {
        // An escaped character: '\n', '\'', '\u{1F600}'.
        let mut j = start + 2;
        while j < chars.len() && chars[j] != '\'' {
            j += 1;
        }
        j + 1
    } else if at(chars, start + 1) == '\'' {
        start + 2
    } else {
        // A lifetime or a label: 'a, 'static.
        (start..chars.len())
            .find(|&k| !(chars[k].is_alphanumeric() || chars[k] == '_'))
            .unwrap_or(chars.len())
    }
}

/// The tokens of Rust source that paths are made of, with their lines:
/// comments, strings, characters and numbers are skipped, lifetimes are
/// dropped.
fn tokens(src: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = src.chars().collect();
    let word = |i: usize| at(&chars, i).is_alphanumeric() || at(&chars, i) == '_';
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = at(&chars, i + 1);
        if c.is_whitespace() {
            line += usize::from(c == '\n');
            i += 1;
        } else if c == '/' && next == '/' {
            i = (i..chars.len())
                .find(|&k| chars[k] == '\n')
                .unwrap_or(chars.len());
        } else if c == '/' && next == '*' {
            i = block_comment(&chars, i, &mut line);
        } else if let Some((prefix, hashes)) = raw_string(&chars, i) {
            i = raw_body(&chars, i + prefix, hashes, &mut line);
        } else if c == '"' {
            i = string_body(&chars, i + 1, &mut line);
        } else if matches!(c, 'b' | 'c') && next == '"' {
            i = string_body(&chars, i + 2, &mut line);
        } else if c == '\'' {
            i = quoted(&chars, i + 1);
        } else if c == 'b' && next == '\'' {
            i = quoted(&chars, i + 2);
        } else if c.is_ascii_digit() {
            while word(i) {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            if c == 'r' && next == '#' {
                i += 2;
            }
            let from = i;
            while word(i) {
                i += 1;
            }
            out.push((Token::Ident(chars[from..i].iter().collect()), line));
        } else if c == ':' && next == ':' {
            out.push((Token::Colons, line));
            i += 2;
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// One path into the crate, as written, resolved to where it points.
#[derive(Debug, Clone)]
struct Reference {
    /// The module the path is written in (an inline module included).
    from: ModPath,
    /// Where it points, from the crate's root.
    to: ModPath,
    line: usize,
    text: String,
}

/// A `use` item: `name` is `to` in module `scope`.
#[derive(Debug, Clone)]
struct Import {
    scope: ModPath,
    name: String,
    to: ModPath,
}

fn ident(t: Option<&(Token, usize)>) -> Option<&str> {
    match t {
        Some((Token::Ident(s), _)) => Some(s),
        _ => None,
    }
}

fn is(t: Option<&(Token, usize)>, want: &Token) -> bool {
    t.is_some_and(|(t, _)| t == want)
}

/// Where a path written in `module` starting with `first` starts, if it is
/// a path into the crate: `crate`, `self`, `super` (as often as written:
/// the caller gives them one at a time), or, in a `use` item, a child
/// module of `module`.
fn start(
    first: &str,
    module: &ModPath,
    modules: &BTreeSet<ModPath>,
    in_use: bool,
) -> Option<ModPath> {
    match first {
        "crate" => Some(Vec::new()),
        "self" => Some(module.clone()),
        "super" => {
            let mut m = module.clone();
            m.pop();
            Some(m)
        }
        name if in_use => {
            let mut m = module.clone();
            m.push(name.to_owned());
            modules.contains(&m).then_some(module.clone())
        }
        _ => None,
    }
}

/// Appends the segments of a path (after its start) to `base`: `super`
/// goes one level up, `self` stays.
fn extend(base: &mut ModPath, seg: &str) {
    match seg {
        "super" => {
            base.pop();
        }
        "self" => {}
        s => base.push(s.to_owned()),
    }
}

/// The leaves of a `use` tree from `toks[*i]` on, each with the name it
/// makes visible (none for a glob).
fn use_tree(
    toks: &[(Token, usize)],
    i: &mut usize,
    prefix: Vec<String>,
    leaves: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut path = prefix;
    if is(toks.get(*i), &Token::Colons) {
        *i += 1;
    }
    loop {
        match toks.get(*i) {
            Some((Token::Punct('{'), _)) => {
                *i += 1;
                loop {
                    match toks.get(*i) {
                        Some((Token::Punct('}'), _)) => {
                            *i += 1;
                            return;
                        }
                        Some((Token::Punct(','), _)) => *i += 1,
                        None => return,
                        _ => use_tree(toks, i, path.clone(), leaves),
                    }
                }
            }
            Some((Token::Punct('*'), _)) => {
                *i += 1;
                leaves.push((path, None));
                return;
            }
            Some((Token::Ident(seg), _)) => {
                path.push(seg.clone());
                *i += 1;
                if is(toks.get(*i), &Token::Colons) {
                    *i += 1;
                    continue;
                }
                let mut name = seg.clone();
                if ident(toks.get(*i)) == Some("as") {
                    ident(toks.get(*i + 1)).unwrap_or("_").clone_into(&mut name);
                    *i += 2;
                }
                if name == "self" {
                    name = path.iter().rev().nth(1).cloned().unwrap_or_default();
                }
                leaves.push((path, Some(name)));
                return;
            }
            _ => return,
        }
    }
}

/// The paths into the crate in the file of module `file_module`, and its
/// `use` items outside functions.
fn scan(
    src: &str,
    file_module: &ModPath,
    modules: &BTreeSet<ModPath>,
) -> (Vec<Reference>, Vec<Import>) {
    let toks = tokens(src);
    let mut refs = Vec::new();
    let mut imports = Vec::new();
    // The open braces: `Some(name)` for an inline module's.
    let mut braces: Vec<Option<String>> = Vec::new();
    let module_at = |braces: &[Option<String>]| {
        let mut m = file_module.clone();
        m.extend(braces.iter().flatten().cloned());
        m
    };
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = &toks[i];
        let after_colons = i > 0 && is(toks.get(i - 1), &Token::Colons);
        match tok {
            Token::Punct('{') => {
                braces.push(None);
                i += 1;
            }
            Token::Punct('}') => {
                braces.pop();
                i += 1;
            }
            Token::Ident(kw) if kw == "mod" && !after_colons => {
                match (ident(toks.get(i + 1)), toks.get(i + 2)) {
                    (Some(name), Some((Token::Punct('{'), _))) => {
                        braces.push(Some(name.to_owned()));
                        i += 3;
                    }
                    _ => i += 1,
                }
            }
            Token::Ident(kw)
                if kw == "use" && !after_colons && !is(toks.get(i + 1), &Token::Punct('<')) =>
            {
                let module = module_at(&braces);
                let item_level = braces.last().is_none_or(Option::is_some);
                let mut j = i + 1;
                let mut leaves = Vec::new();
                use_tree(&toks, &mut j, Vec::new(), &mut leaves);
                for (path, name) in leaves {
                    let Some(first) = path.first() else { continue };
                    let Some(mut to) = start(first, &module, modules, true) else {
                        continue;
                    };
                    for seg in &path[1..] {
                        extend(&mut to, seg);
                    }
                    if let (Some(name), true) = (name, item_level) {
                        imports.push(Import {
                            scope: module.clone(),
                            name,
                            to: to.clone(),
                        });
                    }
                    refs.push(Reference {
                        from: module.clone(),
                        to,
                        line: *line,
                        text: format!("use {}", path.join("::")),
                    });
                }
                i = j.max(i + 1);
            }
            Token::Ident(first)
                if matches!(first.as_str(), "crate" | "super" | "self")
                    && !after_colons
                    && is(toks.get(i + 1), &Token::Colons) =>
            {
                let module = module_at(&braces);
                let Some(mut to) = start(first, &module, modules, false) else {
                    i += 1;
                    continue;
                };
                let mut text = first.clone();
                let mut j = i + 1;
                while is(toks.get(j), &Token::Colons) {
                    let Some(seg) = ident(toks.get(j + 1)) else {
                        break;
                    };
                    extend(&mut to, seg);
                    text.push_str("::");
                    text.push_str(seg);
                    j += 2;
                }
                refs.push(Reference {
                    from: module,
                    to,
                    line: *line,
                    text,
                });
                i = j;
            }
            _ => i += 1,
        }
    }
    (refs, imports)
}

/// The module a path into the crate lands in: the longest prefix of it
/// that is a module of a file, with each name a module imports followed to
/// where it was imported from.
fn target(
    path: &ModPath,
    modules: &BTreeSet<ModPath>,
    imports: &BTreeMap<(ModPath, String), ModPath>,
) -> ModPath {
    let mut path = path.clone();
    for _ in 0..32 {
        let len = (0..=path.len())
            .rev()
            .find(|&n| modules.contains(&path[..n].to_vec()))
            .unwrap_or(0);
        let Some(next) = path.get(len) else {
            return path;
        };
        match imports.get(&(path[..len].to_vec(), next.clone())) {
            Some(to) if *to != path[..=len] => {
                let mut followed = to.clone();
                followed.extend(path[len + 1..].iter().cloned());
                path = followed;
            }
            _ => return path[..len].to_vec(),
        }
    }
    path
}

/// The module of each file under `src/`, but the binary's root.
fn files(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src/") {
            let path = entry.expect("read src/").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .expect("under src/")
                .with_extension("");
            let mut module: ModPath = rel
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            match module.as_slice() {
                [main] if main == "main" => continue,
                [lib] if lib == "lib" => module.clear(),
                [.., last] if last == "mod" => {
                    module.pop();
                }
                _ => {}
            }
            out.insert(module, path);
        }
    }
    out
}

/// An import from one module to another of the same folder, where it is
/// written.
type Edges = BTreeMap<(ModPath, String), BTreeMap<String, Vec<String>>>;

/// Every circle in each folder's graph, one line each, with the lines that
/// make it.
fn circles(src: &Path) -> Vec<String> {
    let files = files(src);
    let modules: BTreeSet<ModPath> = files.keys().cloned().collect();
    let mut refs = Vec::new();
    let mut imports = BTreeMap::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(path).expect("read a source file");
        let (r, i) = scan(&text, module, &modules);
        let shown = path
            .strip_prefix(src.parent().unwrap_or(src))
            .unwrap_or(path)
            .display()
            .to_string();
        refs.extend(r.into_iter().map(|r| (shown.clone(), r)));
        for Import { scope, name, to } in i {
            imports.insert((scope, name), to);
        }
    }
    // folder → from → to → where.
    let mut edges: Edges = BTreeMap::new();
    for (file, r) in &refs {
        let from = (0..=r.from.len())
            .rev()
            .map(|n| r.from[..n].to_vec())
            .find(|m| modules.contains(m))
            .unwrap_or_default();
        let to = target(&r.to, &modules, &imports);
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if let (Some(a), Some(b)) = (from.get(common), to.get(common)) {
            edges
                .entry((from[..common].to_vec(), a.clone()))
                .or_default()
                .entry(b.clone())
                .or_default()
                .push(format!("{file}:{}: {}", r.line, r.text));
        }
    }
    let folders: BTreeSet<ModPath> = edges.keys().map(|(f, _)| f.clone()).collect();
    let mut found = Vec::new();
    for folder in folders {
        let graph: BTreeMap<&str, Vec<&str>> = edges
            .iter()
            .filter(|((f, _), _)| *f == folder)
            .map(|((_, a), tos)| (a.as_str(), tos.keys().map(String::as_str).collect()))
            .collect();
        for (cycle, part) in cycles(&graph) {
            let name = if folder.is_empty() {
                "the top-level modules".to_owned()
            } else {
                format!("the modules of {}", folder.join("::"))
            };
            let mut text = format!("a circle between {name}: {}", cycle.join(" → "));
            if part.len() + 1 > cycle.len() {
                let all: Vec<&str> = part.into_iter().collect();
                let _ = write!(text, " ({} all reach one another)", all.join(", "));
            }
            for pair in cycle.windows(2) {
                let wheres = &edges[&(folder.clone(), pair[0].to_owned())][pair[1]];
                let _ = write!(text, "\n    {} → {}: {}", pair[0], pair[1], wheres[0]);
                if wheres.len() > 1 {
                    let _ = write!(text, " (and {} more)", wheres.len() - 1);
                }
            }
            found.push(text);
        }
    }
    found
}

/// One circle through each strongly connected part of `graph` with more
/// than one node, as the nodes it passes, the first again at the end, with
/// the nodes of that part.
fn cycles<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<(Vec<&'a str>, BTreeSet<&'a str>)> {
    let nodes: BTreeSet<&str> = graph
        .keys()
        .copied()
        .chain(graph.values().flatten().copied())
        .collect();
    let reaches = |from: &'a str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(n) = todo.pop() {
            for &m in graph.get(n).into_iter().flatten() {
                if seen.insert(m) {
                    todo.push(m);
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&str, BTreeSet<&str>> = nodes.iter().map(|&n| (n, reaches(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    if std::env::var_os("LAYOUT_DEBUG").is_some() {
        eprintln!("{graph:?}");
    }
    for &n in &nodes {
        if done.contains(n) || !reach[n].contains(n) {
            continue;
        }
        let part: BTreeSet<&str> = reach[n]
            .iter()
            .copied()
            .filter(|m| reach[m].contains(n))
            .collect();
        done.extend(part.iter().copied());
        // The shortest way from n back to n inside its part.
        let mut back: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([n]);
        'search: while let Some(a) = queue.pop_front() {
            for &b in graph.get(a).into_iter().flatten() {
                if !part.contains(b) {
                    continue;
                }
                if b == n {
                    back.insert(n, a);
                    break 'search;
                }
                if !back.contains_key(b) {
                    back.insert(b, a);
                    queue.push_back(b);
                }
            }
        }
        let mut cycle = vec![n];
        let mut at = back[n];
        while at != n {
            cycle.push(at);
            at = back[at];
        }
        cycle.push(n);
        cycle.reverse();
        out.push((cycle, part));
    }
    out
}

#[test]
fn no_module_imports_itself_through_others() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = circles(&src);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_scan_sees_every_kind_of_path() {
    let modules: BTreeSet<ModPath> = [
        vec![],
        vec!["a".into()],
        vec!["a".into(), "b".into()],
        vec!["a".into(), "c".into()],
        vec!["d".into()],
    ]
    .into_iter()
    .collect();
    let src = r##"
        use crate::{d::{X, Y as Z}, a::{self, c}};
        use super::c::W; // crate::a::c
        /* crate::nope::x */ const S: &str = "crate::nope::y"; const R: &str = r#"crate::nope"#;
        fn f<'a>(c: char) -> u8 { let _ = 'x'; crate::d::E::Variant; 0 }
        mod tests { use super::super::c; fn g() { super::super::c::f(); } }
    "##;
    let (refs, imports) = scan(src, &vec!["a".into(), "b".into()], &modules);
    let got: Vec<(String, String)> = refs
        .iter()
        .map(|r| (r.from.join("::"), r.to.join("::")))
        .collect();
    let want: Vec<(String, String)> = [
        ("a::b", "d::X"),
        ("a::b", "d::Y"),
        ("a::b", "a"),
        ("a::b", "a::c"),
        ("a::b", "a::c::W"),
        ("a::b", "d::E::Variant"),
        ("a::b::tests", "a::c"),
        ("a::b::tests", "a::c::f"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(got, want);
    assert!(imports.iter().any(|i| i.name == "Z" && i.to == ["d", "Y"]));
    // A name imported into `a` and reached through it lands where it was
    // imported from.
    let imports = BTreeMap::from([(
        (vec!["a".to_owned()], "W".to_owned()),
        vec!["d".to_owned(), "W".to_owned()],
    )]);
    assert_eq!(
        target(&vec!["a".into(), "W".into()], &modules, &imports),
        ["d"]
    );
    assert_eq!(
        target(
            &vec!["a".into(), "c".into(), "V".into()],
            &modules,
            &imports
        ),
        ["a", "c"]
    );
}

#[test]
fn the_os_layer_imports_nothing_above_it() {
    // Every path written in `sys` stays in `sys`, as written: a name of
    // another module that `sys` would reach, even one that module only
    // re-exports from `sys`, makes `sys` depend on what is built on it.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = files(&src);
    let modules: BTreeSet<ModPath> = files.keys().cloned().collect();
    let mut above = Vec::new();
    for (module, path) in files
        .iter()
        .filter(|(m, _)| m.first().is_some_and(|m| m == "sys"))
    {
        let text = std::fs::read_to_string(path).expect("read a source file");
        for r in scan(&text, module, &modules).0 {
            if r.to.first().is_none_or(|m| m != "sys") {
                above.push(format!("{}:{}: {}", path.display(), r.line, r.text));
            }
        }
    }
    assert!(above.is_empty(), "{}", above.join("\n"));
}
