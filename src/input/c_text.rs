//! The C text primitives every scanner of C sources shares: comments and
//! literals blanked, integer literals, function definitions and the calls in
//! a body, brackets matched and arguments split; and the limits a C text from
//! an archive must keep before any of them runs ([`check_source`]). Each works
//! on text and returns slices of it; none knows what the code means.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::{Error, ErrorKind, Result};

/// Longest C source or header read from an archive, in bytes: TVM's largest
/// (weights written as C arrays) are tens of MiB.
pub(crate) const MAX_SOURCE_BYTES: usize = 128 << 20;

/// Deepest nesting of `(`, `[` and `{` in an archive's C (Clang's own default
/// `-fbracket-depth`): every scan that looks for a closing bracket stays
/// within this many times the text's length.
pub(crate) const MAX_NESTING: usize = 256;

/// Most tokens one `#define` may expand to (macros it names expanded in
/// turn): TVM's largest macros (constant pools) hold a few million.
pub(crate) const MAX_MACRO_TOKENS: u64 = 1 << 26;

/// Longest chain of macros naming macros that is followed.
pub(crate) const MAX_MACRO_DEPTH: usize = 64;

/// `text` with every comment and the inside of every string and character
/// literal replaced by spaces (line breaks kept), so each byte stays where it
/// was and no scanner takes `f(` or `//` in a literal for code. The header
/// name of an `#include` stays. A lexer: one pass, each byte looked at once.
pub(crate) fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in &mut out[from..to] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    // Whether the line so far is blank, where its `#` directive's name starts,
    // and the word (identifier or number) just before `i`: a raw string's
    // prefix, or a number whose `'` separates digits.
    let (mut line_start, mut directive) = (true, None::<usize>);
    let (mut word_start, mut after_word) = (0usize, false);
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        let next = bytes.get(i + 1).copied();
        let skip_to = match byte {
            b'/' if next == Some(b'/') => {
                let mut end = i + 2;
                while end < bytes.len() && bytes[end] != b'\n' {
                    // A backslash ending the line continues the comment.
                    match &bytes[end..] {
                        [b'\\', b'\n', ..] => end += 2,
                        [b'\\', b'\r', b'\n', ..] => end += 3,
                        _ => end += 1,
                    }
                }
                blank(&mut out, i, end);
                Some(end)
            }
            b'/' if next == Some(b'*') => {
                let end = text[i + 2..].find("*/").map_or(bytes.len(), |at| i + 2 + at + 2);
                blank(&mut out, i, end);
                Some(end)
            }
            // `#include "header.h"`: a header name, kept.
            b'"' if directive.is_some_and(|at| is_include(&text[at..i])) => Some(literal_end(bytes, i, b'"')),
            b'"' | b'\'' if byte == b'"' || !(after_word && bytes[word_start].is_ascii_digit()) => {
                let raw = if after_word && byte == b'"' { raw_string_end(text, word_start, i) } else { None };
                let end = raw.unwrap_or_else(|| literal_end(bytes, i, byte));
                let closed = end > i + 1 && bytes[end - 1] == byte;
                blank(&mut out, i + 1, if closed { end - 1 } else { end });
                Some(end)
            }
            _ => None,
        };
        if let Some(end) = skip_to {
            (i, after_word, line_start) = (end, false, false);
            continue;
        }
        match byte {
            b'\n' => (line_start, directive) = (true, None),
            b'#' if line_start => (line_start, directive) = (false, Some(i + 1)),
            _ if !byte.is_ascii_whitespace() => line_start = false,
            _ => {}
        }
        let wordish = byte.is_ascii_alphanumeric() || byte == b'_' || (byte == b'\'' && after_word);
        if wordish && !after_word {
            word_start = i;
        }
        after_word = wordish;
        i += 1;
    }
    // Only ASCII bytes were written, each over a whole character's bytes.
    String::from_utf8(out).unwrap_or_default()
}

/// Whether a directive's text after `#` is `include` (or `include_next`, `import`) before its operand.
fn is_include(directive: &str) -> bool {
    let word = directive.trim_start();
    let word = &word[..word.find(|c: char| !c.is_ascii_alphabetic() && c != '_').unwrap_or(word.len())];
    matches!(word, "include" | "include_next" | "import")
}

/// The index after the literal opening at `open` with `quote`: its closing
/// quote, else the end of its line (an unterminated literal is no longer than a line).
fn literal_end(bytes: &[u8], open: usize, quote: u8) -> usize {
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index after a C++ raw string `R"delim(...)delim"` whose `"` is at
/// `quote`, when the word before it is a raw prefix (`R`, `u8R`, `LR` ...).
fn raw_string_end(text: &str, word_start: usize, quote: usize) -> Option<usize> {
    if !matches!(&text[word_start.min(quote)..quote], "R" | "u8R" | "uR" | "UR" | "LR") {
        return None;
    }
    let after = &text[quote + 1..];
    let open = after.bytes().take(17).position(|b| b == b'(')?;
    let delimiter = &after[..open];
    if delimiter.bytes().any(|b| b.is_ascii_whitespace() || matches!(b, b'\\' | b')' | b'"')) {
        return None;
    }
    let close = format!("){delimiter}\"");
    let end = after[open..].find(&close).map_or(text.len(), |at| quote + 1 + open + at + close.len());
    Some(end)
}

/// Checks the limits an archive's C text (`path`, a source or header) must
/// keep before any scanner reads it: its length, how deep its brackets nest.
pub(crate) fn check_source(path: &str, text: &str) -> Result<()> {
    if text.len() > MAX_SOURCE_BYTES {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!("is {} bytes long, more than the {MAX_SOURCE_BYTES} bytes mlf-build reads of a C file", text.len()),
        )
        .in_file(path)
        .help("TVM's largest C sources are tens of MiB: pass the archive as TVM wrote it"));
    }
    let code = strip_comments(text);
    let mut depth = 0usize;
    for (at, byte) in code.bytes().enumerate() {
        match byte {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    let line = code[..at].matches('\n').count() + 1;
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!("brackets nest deeper than {MAX_NESTING} levels (the limit) at line {line}"),
                    )
                    .in_file(path)
                    .help("TVM's generated C nests a few levels deep; so deep a nesting is not code TVM wrote (Clang refuses it too)"));
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Checks that no object-like or function-like `#define` among `files`
/// (`(path, text without comments)`, taken together as one program may
/// include them all) expands to more than [`MAX_MACRO_TOKENS`] tokens or
/// through a chain of more than [`MAX_MACRO_DEPTH`] macros: a chain of
/// macros each naming the next twice grows geometrically in the compiler.
/// A macro's size counts each macro its body names at its own size; one
/// named inside its own expansion counts one token, as C expands it no further.
/// Returns the macros, to check the code that invokes them ([`Macros::check_code`]).
pub(crate) fn check_macros<'f>(files: impl IntoIterator<Item = (&'f str, &'f str)>) -> Result<Macros<'f>> {
    // Name → (file of its first definition, body tokens). Redefinitions add up: a bound for either.
    let mut macros: BTreeMap<&str, (&str, Vec<&str>)> = BTreeMap::new();
    // Function-like macro → (parameters, body after them) of each definition.
    let mut function_like: HashMap<&str, Vec<(Vec<&str>, &str)>> = HashMap::new();
    let mut object_like: Vec<(&str, &str)> = Vec::new();
    for (path, code) in files {
        for (name, body) in defines(code) {
            macros.entry(name).or_insert((path, Vec::new())).1.extend(tokens(body));
            match function_parameters(body) {
                Some((parameters, rest)) => function_like.entry(name).or_default().push((parameters, rest)),
                None => object_like.push((name, body)),
            }
        }
    }
    let mut sizes: HashMap<&str, u64> = HashMap::new();
    for &root in macros.keys() {
        // Depth-first, iteratively: (macro, index of its next body token, size so far).
        let mut stack: Vec<(&str, usize, u64)> = vec![(root, 0, 0)];
        while let Some(&(name, next, _)) = stack.last() {
            let Some(&token) = macros[name].1.get(next) else {
                let (name, _, size) = stack.pop().unwrap_or_default();
                sizes.insert(name, size);
                if let Some(caller) = stack.last_mut() {
                    caller.2 = caller.2.saturating_add(size);
                    if caller.2 > MAX_MACRO_TOKENS {
                        return Err(macro_error(
                            macros[caller.0].0,
                            caller.0,
                            format!("expands to more than {MAX_MACRO_TOKENS} tokens (the limit)"),
                        ));
                    }
                }
                continue;
            };
            let known = sizes.get(token).copied();
            let expands = known.is_none() && macros.contains_key(token) && !stack.iter().any(|(open, ..)| *open == token);
            let depth = stack.len();
            let Some(top) = stack.last_mut() else { break };
            top.1 += 1;
            if expands {
                if depth >= MAX_MACRO_DEPTH {
                    return Err(macro_error(
                        macros[root].0,
                        root,
                        format!("expands through a chain of more than {MAX_MACRO_DEPTH} macros (the limit)"),
                    ));
                }
                stack.push((token, 0, 0));
                continue;
            }
            top.2 = top.2.saturating_add(known.unwrap_or(1));
            if top.2 > MAX_MACRO_TOKENS {
                return Err(macro_error(macros[name].0, name, format!("expands to more than {MAX_MACRO_TOKENS} tokens (the limit)")));
            }
        }
    }
    let mut factors = growth_factors(&macros, &function_like, &sizes)?;
    // An object-like macro whose body ends in a function-like one's name
    // (`#define E D`) invokes it when `(` follows: it takes that factor,
    // through chains of such names at most [`MAX_MACRO_DEPTH`] long.
    let aliases: Vec<(&str, &str)> = object_like.iter().filter_map(|&(name, body)| Some((name, tokens(body).last()?))).collect();
    for _ in 0..MAX_MACRO_DEPTH {
        for &(name, target) in &aliases {
            if let Some(&factor) = factors.get(target) {
                let known = factors.entry(name).or_insert(factor);
                *known = (*known).max(factor);
            }
        }
    }
    let table = Macros { sizes, factors };
    // A body that nests invocations grows where it is used: estimated as code is.
    for (name, body) in object_like {
        if let Err(exceeded) = table.estimate(body, &HashSet::new()) {
            return Err(macro_error(macros[name].0, name, format!("in its `#define` {}", exceeded.why())));
        }
    }
    Ok(table)
}

/// How many times each function-like macro's expansion can copy an argument:
/// the uses of its parameters in its body, each multiplied by the factors of
/// the function-like macros it is passed to (one inside its own expansion
/// counts once, as C expands it no further). Depth-first, iteratively, along
/// chains of at most [`MAX_MACRO_DEPTH`] macros; each body is read once.
fn growth_factors<'f>(
    macros: &BTreeMap<&'f str, (&'f str, Vec<&'f str>)>,
    function_like: &HashMap<&'f str, Vec<(Vec<&'f str>, &'f str)>>,
    sizes: &HashMap<&'f str, u64>,
) -> Result<HashMap<&'f str, u64>> {
    let invoked = |name: &str| -> Vec<&'f str> {
        let definitions = function_like.get(name).map(Vec::as_slice).unwrap_or_default();
        definitions.iter().flat_map(|(_, body)| tokens(body)).filter(|token| function_like.contains_key(token)).collect()
    };
    let mut factors: HashMap<&str, u64> = HashMap::new();
    let mut open: HashSet<&str> = HashSet::new();
    for &root in macros.keys().filter(|name| function_like.contains_key(*name)) {
        if factors.contains_key(root) {
            continue;
        }
        open.insert(root);
        let mut stack = vec![(root, invoked(root), 0usize)];
        while let Some(top) = stack.last_mut() {
            if let Some(&next) = top.1.get(top.2) {
                top.2 += 1;
                if !factors.contains_key(next) && open.insert(next) {
                    if stack.len() >= MAX_MACRO_DEPTH {
                        return Err(macro_error(
                            macros[root].0,
                            root,
                            format!("invokes through a chain of more than {MAX_MACRO_DEPTH} function-like macros (the limit)"),
                        ));
                    }
                    stack.push((next, invoked(next), 0));
                }
                continue;
            }
            let Some((name, ..)) = stack.pop() else { break };
            open.remove(name);
            // Macros still open (a cycle) count once; their factors are not known yet.
            let mut factor = 1u64;
            for (parameters, body) in &function_like[name] {
                let estimate = Estimate {
                    sizes,
                    factor_of: &|callee: &str| function_like.contains_key(callee).then(|| factors.get(callee).copied().unwrap_or(1)),
                };
                match estimate.run(body, &parameters.iter().copied().collect()) {
                    Ok(uses) => factor = factor.max(uses),
                    Err(exceeded) => return Err(macro_error(macros[name].0, name, format!("in its `#define` {}", exceeded.why()))),
                }
            }
            factors.insert(name, factor);
        }
    }
    Ok(factors)
}

/// `(parameters, body after them)` when `body` (what follows a `#define`'s
/// name) opens a parameter list: a function-like macro.
fn function_parameters(body: &str) -> Option<(Vec<&str>, &str)> {
    let list = body.strip_prefix('(')?;
    let close = list.find(')')?;
    let parameters = list[..close]
        .split(',')
        .map(|parameter| parameter.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\\'))
        .map(|parameter| if parameter.ends_with("...") { "__VA_ARGS__" } else { parameter })
        .filter(|parameter| !parameter.is_empty())
        .collect();
    Some((parameters, &list[close + 1..]))
}

/// The macros of an archive's C: each one's size and, for a function-like
/// one, its growth factor ([`growth_factors`]).
#[derive(Debug, Default)]
pub(crate) struct Macros<'f> {
    sizes: HashMap<&'f str, u64>,
    factors: HashMap<&'f str, u64>,
}

impl Macros<'_> {
    /// Checks the code of `path` (without comments) outside its `#define`
    /// lines: invocations of function-like macros nested in each other
    /// multiply their growth factors, and no outermost invocation may
    /// expand to more than [`MAX_MACRO_TOKENS`] tokens by that estimate.
    /// One pass over the code.
    pub(crate) fn check_code(&self, path: &str, code: &str) -> Result<()> {
        let mut offset = 0;
        let mut code_start = 0;
        let bytes = code.as_bytes();
        let check = |from: usize, to: usize| -> Result<()> {
            self.estimate(&code[from..to], &HashSet::new()).map(|_| ()).map_err(|exceeded| {
                let line = code[..from + exceeded.at].matches('\n').count() + 1;
                Error::new(ErrorKind::Unsupported, format!("macro `{}` invoked at line {line} {}", exceeded.name, exceeded.why()))
                    .in_file(path)
                    .help("TVM's generated code invokes its macros a few levels deep; one nesting that multiplies its arguments would exhaust the compiler: pass the archive as TVM wrote it")
            })
        };
        // Each `#define` (continued lines included) is skipped: its body was estimated with the macros.
        for line in code.split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            if start < code_start {
                continue;
            }
            let is_define = line.trim_start().strip_prefix('#').map(str::trim_start).is_some_and(|rest| rest.starts_with("define"));
            if !is_define {
                continue;
            }
            check(code_start, start)?;
            let mut end = start;
            while end < bytes.len() && bytes[end] != b'\n' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            code_start = end.min(bytes.len());
        }
        check(code_start, code.len())
    }

    fn estimate(&self, code: &str, parameters: &HashSet<&str>) -> std::result::Result<u64, Exceeded> {
        let factor_of = |name: &str| self.factors.get(name).copied();
        Estimate { sizes: &self.sizes, factor_of: &factor_of }.run(code, parameters)
    }
}

/// The estimate of how far nested invocations of function-like macros grow.
struct Estimate<'a> {
    sizes: &'a HashMap<&'a str, u64>,
    factor_of: &'a dyn Fn(&str) -> Option<u64>,
}

/// Where an estimate passed [`MAX_MACRO_TOKENS`]: the macro invoked, at which byte of the text.
struct Exceeded {
    name: String,
    at: usize,
    factor: u64,
}

impl Exceeded {
    fn why(&self) -> String {
        format!(
            "expands to more than {MAX_MACRO_TOKENS} tokens (the limit) by mlf-build's estimate: the function-like macros invoked around it copy their arguments {} times",
            self.factor
        )
    }
}

impl Estimate<'_> {
    /// Reads `code` once, keeping a stack of the function-like macros
    /// invoked around each token with the product of their factors
    /// (saturating): each token counts that product, each invocation its
    /// body's size times the product around it. Returns how many copies of
    /// `parameters` the text makes; an outermost invocation whose estimate
    /// passes [`MAX_MACRO_TOKENS`] is an error.
    fn run(&self, code: &str, parameters: &HashSet<&str>) -> std::result::Result<u64, Exceeded> {
        let bytes = code.as_bytes();
        // (name, parenthesis depth inside its `(`, product of factors inside it).
        let mut stack: Vec<(&str, usize, u64)> = Vec::new();
        let (mut depth, mut expanded, mut uses) = (0usize, 0u64, 0u64);
        let mut pending: Option<(&str, u64)> = None;
        let mut i = 0;
        while i < bytes.len() {
            let byte = bytes[i];
            let product = stack.last().map_or(1, |top| top.2);
            let start = i;
            if byte.is_ascii_whitespace() || byte == b'\\' {
                i += 1;
                continue;
            }
            let mut counted = 1u64;
            if byte.is_ascii_alphanumeric() || byte == b'_' {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let word = &code[start..i];
                pending = None;
                if parameters.contains(&word) {
                    uses = uses.saturating_add(product);
                }
                if let Some(factor) = (self.factor_of)(word) {
                    pending = Some((word, factor));
                } else if let Some(&size) = self.sizes.get(word) {
                    counted = size;
                }
            } else {
                i += 1;
                let call = pending.take();
                match byte {
                    b'(' => {
                        depth += 1;
                        if let Some((name, factor)) = call {
                            let inside = product.saturating_mul(factor);
                            counted = self.sizes.get(name).copied().unwrap_or(1);
                            stack.push((name, depth, inside));
                            if inside > MAX_MACRO_TOKENS {
                                return Err(Exceeded { name: name.to_string(), at: start, factor: inside });
                            }
                        }
                    }
                    b')' => {
                        if stack.last().is_some_and(|top| top.1 == depth) {
                            stack.pop();
                        }
                        depth = depth.saturating_sub(1);
                    }
                    _ => {}
                }
            }
            if let Some(&(outermost, ..)) = stack.first() {
                expanded = expanded.saturating_add(counted.saturating_mul(product));
                if expanded > MAX_MACRO_TOKENS {
                    return Err(Exceeded { name: outermost.to_string(), at: start, factor: product });
                }
            } else {
                expanded = 0;
            }
        }
        Ok(uses)
    }
}

fn macro_error(path: &str, name: &str, why: String) -> Error {
    Error::new(ErrorKind::Unsupported, format!("macro `{name}` {why}"))
        .in_file(path)
        .help("TVM's macros are sizes and constant data; one that grows by expanding others would exhaust the compiler: pass the archive as TVM wrote it")
}

/// Only the `#define` lines of `code` (without comments), continuations kept:
/// what [`check_macros`] reads, without holding whole files.
pub(crate) fn define_lines(code: &str) -> String {
    defines(code).into_iter().map(|(name, body)| format!("#define {name}{body}\n")).collect()
}

/// `(name, body)` of every `#define` in `code` (without comments; continued lines joined in the body).
fn defines(code: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let Some(rest) = line.trim_start().strip_prefix('#').map(str::trim_start).and_then(|rest| rest.strip_prefix("define")) else {
            continue;
        };
        let rest = rest.trim_start();
        let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if name_end == 0 {
            continue;
        }
        let name_at = start + (line.len() - rest.len());
        // The body runs to the first line break no backslash continues.
        let mut end = name_at + name_end;
        let bytes = code.as_bytes();
        while end < bytes.len() && bytes[end] != b'\n' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        let end = end.min(bytes.len());
        found.push((&code[name_at..name_at + name_end], &code[name_at + name_end..end]));
    }
    found
}

/// The identifiers of `body` and one token for each other run of non-space characters.
fn tokens(body: &str) -> impl Iterator<Item = &str> {
    body.split(|c: char| c.is_ascii_whitespace() || c == '\\').flat_map(|run| {
        let mut parts = Vec::new();
        let mut rest = run;
        while !rest.is_empty() {
            let word = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let cut = if word == 0 { rest.find(|c: char| c.is_ascii_alphanumeric() || c == '_').unwrap_or(rest.len()) } else { word };
            parts.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        parts
    })
}

/// A C integer literal (`42`, `0x2a`, `052`, `16u`, `(64)`): decimal, hex or
/// octal, with unsigned and long suffixes and enclosing parentheses.
pub(crate) fn integer(text: &str) -> Option<u64> {
    let text = text.trim().trim_start_matches('(').trim_end_matches(')').trim();
    let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
    match digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None if digits.len() > 1 && digits.starts_with('0') => u64::from_str_radix(&digits[1..], 8).ok(),
        None => digits.parse().ok(),
    }
}

/// Where the identifier `text` ends with begins (`text.len()` when it ends with none).
/// Counted in ASCII bytes, so always a character boundary whatever precedes it.
pub(crate) fn trailing_identifier_start(text: &str) -> usize {
    text.len() - text.bytes().rev().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count()
}

/// Open index → close index of every `open` bracket of `code` that is closed.
fn bracket_pairs(code: &str, open: u8, close: u8) -> HashMap<usize, usize> {
    let mut pairs = HashMap::new();
    let mut opened = Vec::new();
    for (at, byte) in code.bytes().enumerate() {
        if byte == open {
            opened.push(at);
        } else if byte == close {
            if let Some(start) = opened.pop() {
                pairs.insert(start, at);
            }
        }
    }
    pairs
}

/// `(name, body)` of every function `code` (without comments and literals)
/// defines: the body between its braces, or to the end of `code` when
/// unclosed. Control statements are not functions, and nothing inside a body
/// is taken for one. One pass: each bracket is matched once.
pub(crate) fn function_definitions(code: &str) -> impl Iterator<Item = (&str, &str)> {
    definitions(code).into_iter().map(|(name, _, body)| (name, body))
}

/// `(name, parameter list, body)` of every function `code` defines (see [`function_definitions`]).
fn definitions(code: &str) -> Vec<(&str, &str, &str)> {
    const STATEMENTS: &[&str] = &["if", "for", "while", "switch", "return", "sizeof", "do", "else"];
    let parens = bracket_pairs(code, b'(', b')');
    let braces = bracket_pairs(code, b'{', b'}');
    let mut found = Vec::new();
    let mut resume = 0;
    for (at, _) in code.match_indices('(') {
        if at < resume {
            continue;
        }
        let head = code[..at].trim_end_matches([' ', '\t']);
        let name = &head[trailing_identifier_start(head)..];
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) || STATEMENTS.contains(&name) {
            continue;
        }
        let Some(&close) = parens.get(&at) else { continue };
        let after = code[close + 1..].trim_start();
        if !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let end = braces.get(&open).copied().unwrap_or(code.len());
        found.push((name, &code[at + 1..close], &code[open + 1..end]));
        resume = end;
    }
    found
}

/// Where each function of a text is defined (its first definition), found in
/// one pass, so looking one up costs nothing more.
#[derive(Debug, Clone, Default)]
pub(crate) struct FunctionIndex {
    spans: HashMap<String, (std::ops::Range<usize>, std::ops::Range<usize>)>,
}

impl FunctionIndex {
    /// The functions `code` (without comments and literals) defines.
    pub fn of(code: &str) -> FunctionIndex {
        let mut spans = HashMap::new();
        let offset = |part: &str| part.as_ptr() as usize - code.as_ptr() as usize;
        for (name, params, body) in definitions(code) {
            let (params, body) = (offset(params)..offset(params) + params.len(), offset(body)..offset(body) + body.len());
            spans.entry(name.to_string()).or_insert((params, body));
        }
        FunctionIndex { spans }
    }

    /// `(parameter list, body)` of `name` in `code`, the text the index was made of.
    pub fn get<'c>(&self, code: &'c str, name: &str) -> Option<(&'c str, &'c str)> {
        let (params, body) = self.spans.get(name)?;
        Some((code.get(params.clone())?, code.get(body.clone())?))
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.spans.keys().map(String::as_str)
    }
}

/// Whether the definition whose name is `name`, a slice of `code`, is `static`:
/// the words since the previous declaration's end say so.
pub(crate) fn is_static(code: &str, name: &str) -> bool {
    let at = (name.as_ptr() as usize).saturating_sub(code.as_ptr() as usize).min(code.len());
    let declaration = &code[code[..at].rfind([';', '}', '#']).map_or(0, |end| end + 1)..at];
    declaration.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).any(|word| word == "static")
}

/// Identifiers followed by `(` in a function body: the functions it calls (and
/// some keywords and macros, which are no defined function's name).
pub(crate) fn called_functions(body: &str) -> impl Iterator<Item = &str> {
    body.match_indices('(').filter_map(move |(at, _)| {
        let head = body[..at].trim_end_matches([' ', '\t']);
        let start = trailing_identifier_start(head);
        Some(&head[start..]).filter(|name| !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The index of the `close` that ends a bracket opened just before `text`.
pub(crate) fn closing(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// `text` split at the commas outside brackets: a call's arguments.
pub(crate) fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_in_every_base_and_suffix() {
        for (text, value) in [("42", 42), ("0x2a", 42), ("052", 42), ("16u", 16), ("(64)", 64), (" 7UL ", 7), ("0", 0)] {
            assert_eq!(integer(text), Some(value), "{text}");
        }
        for text in ["", "x", "0x", "09", "-1", "1.5"] {
            assert_eq!(integer(text), None, "{text}");
        }
    }

    #[test]
    fn comments_and_literals_are_blanked_where_they_are() {
        let text = "char* s = \"a // b /* c\"; int f(void) { return '\"' + '\\''; } // f(\n#include \"x.h\"\nx = 1'000; y = u8R\"d(\"f( )\")d\"; z = \"open\nw /* \"*/ = 2;";
        let code = strip_comments(text);
        assert_eq!(code.len(), text.len());
        assert_eq!(code.lines().count(), text.lines().count());
        assert!(code.starts_with(&format!("char* s = \"{}\"; int f(void) {{ return ' ' + '  '; }}", " ".repeat(11))), "{code}");
        assert!(code.contains("\n#include \"x.h\"\n"), "{code}");
        assert!(code.contains("x = 1'000; y = u8R\"") && !code.contains("f( )"), "{code}");
        assert!(code.ends_with("z = \"    \nw        = 2;"), "{code}");
        let names: Vec<&str> = function_definitions(&code).map(|(name, _)| name).collect();
        assert_eq!(names, ["f"]);
    }

    /// 100,000 `f(` in a literal, or unclosed in the code, are one pass each;
    /// the unclosed ones nest deeper than [`MAX_NESTING`] and are refused.
    #[test]
    fn adversarial_brackets_are_read_in_one_pass() {
        let literal = format!("const char* s = \"{}\";\nint g(void) {{ return 0; }}\n", "f(".repeat(100_000));
        let code = strip_comments(&literal);
        assert_eq!(function_definitions(&code).map(|(name, _)| name).collect::<Vec<_>>(), ["g"]);
        assert_eq!(called_functions(&code).count(), 1);
        check_source("lib.c", &literal).unwrap();
        let open = format!("int g(void) {{ {} }}", "f(".repeat(100_000));
        assert_eq!(function_definitions(&open).count(), 1);
        let error = check_source("codegen/host/src/lib.c", &open).unwrap_err();
        assert!(error.to_string().contains("deeper than 256 levels"), "{error}");
        assert_eq!(error.file(), Some("codegen/host/src/lib.c"));
        let nested = format!("{}{{}}{}", "int f(void) { ".repeat(200), "}".repeat(200));
        assert_eq!(function_definitions(&nested).count(), 1, "nothing inside a body is a definition");
    }

    #[test]
    fn macros_that_grow_geometrically_are_refused() {
        let mut doubling = String::from("#define M0 x\n");
        for level in 1..40 {
            doubling.push_str(&format!("#define M{level} M{prev} M{prev}\n", prev = level - 1));
        }
        let error = check_macros([("include/tvmgen_default.h", doubling.as_str())]).unwrap_err();
        assert!(error.to_string().contains("macro `M27` expands to more than 67108864 tokens"), "{error}");
        assert_eq!(error.file(), Some("include/tvmgen_default.h"));
        let chain: String = (0..100).map(|level| format!("#define C{level} C{}\n", level + 1)).collect();
        let error = check_macros([("lib.c", chain.as_str())]).unwrap_err();
        assert!(error.to_string().contains("chain of more than 64 macros"), "{error}");
        // Self-reference and cycles stop, as in C; TVM's macros pass.
        let fine = "#define A A B\n#define B A\n#define F(x) (x) * 2 \\\n  + A\n#define SIZE 4\n#define DATA 0x1, 0x2, \\\n 0x3\n";
        check_macros([("h", fine)]).unwrap();
        assert_eq!(define_lines(fine).lines().count(), fine.lines().count());
        let error = check_macros([("h", define_lines(&doubling).as_str())]).unwrap_err();
        assert!(error.to_string().contains("macro `M27`"), "{error}");
    }

    /// Function-like macros invoked nested in code: a doubling one 40 deep is
    /// refused naming the macro, file and line; one that copies its argument
    /// once passes however deep; macros invoking each other multiply.
    #[test]
    fn nested_invocations_that_grow_geometrically_are_refused() {
        let nested = |name: &str, depth: usize| format!("{}1{}", format!("{name}(").repeat(depth), ")".repeat(depth));
        let defines = "#define D(x) x x\n#define ID(x) (x)\n#define T(a, ...) a __VA_ARGS__ a __VA_ARGS__ \\\n  a\n";
        let macros = check_macros([("include/tvmgen_default.h", defines)]).unwrap();
        let code = format!("int f(void) {{\n  return {};\n}}\n", nested("D", 40));
        let error = macros.check_code("codegen/host/src/default_lib1.c", &code).unwrap_err();
        assert!(error.to_string().contains("macro `D` invoked at line 2 expands to more than 67108864 tokens"), "{error}");
        assert_eq!(error.file(), Some("codegen/host/src/default_lib1.c"));
        macros.check_code("lib.c", &format!("int x = {};\n", nested("ID", 200))).unwrap();
        macros.check_code("lib.c", &format!("int x = {};\n", nested("D", 20))).unwrap();
        // `T` copies its arguments 5 times: 8 levels pass, 24 do not.
        macros.check_code("lib.c", &format!("int x = {};\n", nested("T", 8))).unwrap();
        assert!(macros.check_code("lib.c", &format!("int x = {};\n", nested("T", 24))).is_err());
        // The `#define` lines of code are not invocations: their bodies are checked with the macros.
        macros.check_code("lib.c", &format!("{defines}int y = ID(D(2));\n")).unwrap();

        // Macros invoking each other (and themselves, which C expands no further) multiply.
        let mutual = "#define A(x) B(x) B(x)\n#define B(x) A(x) x\n#define S(x) S(x) S(x)\n";
        let macros = check_macros([("h", mutual)]).unwrap();
        let error = macros.check_code("lib.c", &format!("int z =\n\n{};\n", nested("A", 30))).unwrap_err();
        assert!(error.to_string().contains("invoked at line 3"), "{error}");
        assert!(macros.check_code("lib.c", &format!("int z = {};\n", nested("S", 30))).is_err());
        macros.check_code("lib.c", &format!("int z = {} + {};\n", nested("A", 5), nested("S", 5))).unwrap();

        // A name standing for a function-like macro invokes it too.
        let macros = check_macros([("h", "#define D(x) x x\n#define E D\n#define G E\n")]).unwrap();
        let error = macros.check_code("lib.c", &format!("int v = {};\n", nested("G", 40))).unwrap_err();
        assert!(error.to_string().contains("macro `G` invoked at line 1"), "{error}");
        macros.check_code("lib.c", &format!("int v = {} + G;\n", nested("G", 5))).unwrap();

        // A macro whose body nests them grows where it is used: refused at its `#define`.
        let copies = format!("#define D(x) x x\n#define F(y) {}\n", nested("D", 10).replace('1', "y"));
        let error = check_macros([("h", format!("{copies}#define BIG {}\n", nested("D", 40)).as_str())]).unwrap_err();
        assert!(error.to_string().contains("macro `BIG` in its `#define` expands to more than"), "{error}");
        // `F` copies its argument 2^10 times; nested three deep that is 2^30.
        let macros = check_macros([("h", copies.as_str())]).unwrap();
        macros.check_code("lib.c", "int w = F(F(1));\n").unwrap();
        assert!(macros.check_code("lib.c", "int w = F(F(F(1)));\n").is_err());
    }

    /// A character of several bytes just before an identifier (the fuzzer's
    /// `front_end` find, fuzz/regressions/front_end/) is not cut in two.
    #[test]
    fn identifiers_after_multibyte_characters() {
        assert_eq!(trailing_identifier_start("a é€f_1"), "a é€".len());
        assert_eq!(trailing_identifier_start("€"), "€".len());
        let names: Vec<&str> = function_definitions("int \u{fffd}f(int x) { return x; }\n€(){}").map(|(name, _)| name).collect();
        assert_eq!(names, ["f"]);
    }
}
