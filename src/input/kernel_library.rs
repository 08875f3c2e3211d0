//! A kernel library the archive's code calls (BYOC: CMSIS-NN): which of its
//! sources define which functions and what each calls, read from the
//! library's own code, so a build compiles only what the archive needs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::ident;
use crate::input::{c, user_path};

/// CMSIS-NN's public headers: archives whose code includes one call CMSIS-NN.
pub(crate) const CMSIS_NN_HEADERS: &[&str] = &["arm_nnfunctions.h", "arm_nnsupportfunctions.h", "arm_nn_types.h", "arm_nn_math_types.h"];

/// The largest CMSIS-NN source or header read (the largest is tens of KiB).
pub(crate) const MAX_LIBRARY_FILE_BYTES: u64 = 4 << 20;
/// What all the sources and headers of a CMSIS-NN folder may add up to (a few MiB).
const MAX_LIBRARY_BYTES: u64 = 64 << 20;

/// The header that marks a CMSIS-NN checkout (below `Include/`) and states its revision.
const CMSIS_NN_API_HEADER: &str = "arm_nnfunctions.h";

/// One C source of the library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LibrarySource {
    /// Relative to the library's folder, `/`-separated.
    pub path: String,
    /// Every identifier called anywhere in the file: compiled, it needs them all.
    pub(crate) calls: BTreeSet<String>,
}

/// What a kernel library's code defines and calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KernelLibrary {
    /// The folder holding `Include/` and `Source/`.
    pub root: PathBuf,
    /// `$Revision` and `$Date` of the API header, as the library states its version.
    pub version: Option<String>,
    pub(crate) sources: Vec<LibrarySource>,
    /// Function name → the sources defining it (indexes into `sources`).
    pub(crate) defined_in: BTreeMap<String, Vec<usize>>,
    /// Functions and function-like macros defined in headers → what their bodies call.
    pub(crate) header_calls: BTreeMap<String, BTreeSet<String>>,
    /// Function name → its parameter list as declared in the headers.
    pub declarations: BTreeMap<String, String>,
    /// Function (or function-like macro) name → the extension its definitions
    /// are compiled only for; `None` once one definition needs none.
    pub(crate) guards: BTreeMap<String, Option<Guard>>,
}

/// An Arm core extension that some of the library's code is compiled only for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Extension {
    /// The DSP extension: Cortex-M4, M7, M33, M55.
    Dsp,
    /// Helium (MVE): Cortex-M55, M85.
    Mve,
}

/// The macros whose `#if`s select each extension's code, as CMSIS-NN and the compilers name them.
const EXTENSION_MACROS: &[(&str, Extension)] = &[
    ("ARM_MATH_DSP", Extension::Dsp),
    ("__ARM_FEATURE_DSP", Extension::Dsp),
    ("ARM_MATH_MVEI", Extension::Mve),
    ("__ARM_FEATURE_MVE", Extension::Mve),
];

/// Where the library defines a name only for cores with an extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Guard {
    pub extension: Extension,
    /// The file of its first definition, relative to the library's folder.
    pub file: String,
    /// The `#if` line around that definition.
    pub condition: String,
}

/// The sources a build must compile, and the called functions the library does not define.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selection {
    /// Relative paths, sorted.
    pub sources: Vec<String>,
    pub undefined: BTreeSet<String>,
}

impl Selection {
    /// The kernels among `kernels` the library left undefined.
    pub fn missing<'k>(&self, kernels: &[&'k str]) -> Vec<&'k str> {
        kernels.iter().copied().filter(|name| self.undefined.contains(*name)).collect()
    }
}

/// The CMSIS-NN kernels among the functions `undefined` names: CMSIS-NN's
/// names all start `arm_`; the rest may be the C library's.
pub(crate) fn kernels_among<'n>(undefined: impl IntoIterator<Item = &'n String>) -> Vec<&'n str> {
    undefined.into_iter().map(String::as_str).filter(|name| name.starts_with("arm_")).collect()
}

impl KernelLibrary {
    /// Reads the CMSIS-NN checkout at `root` (the folder holding `Include/` and `Source/`).
    pub fn read_cmsis_nn(root: &Path) -> Result<KernelLibrary> {
        let api_header = root.join("Include").join(CMSIS_NN_API_HEADER);
        if !api_header.is_file() || !root.join("Source").is_dir() {
            return Err(Error::new(
                ErrorKind::Config,
                format!("`{}` is not a CMSIS-NN checkout: expected Include/{CMSIS_NN_API_HEADER} and Source/ in it", root.display()),
            )
            .help("pass the folder that holds CMSIS-NN's Include/ and Source/ (a clone of github.com/ARM-software/CMSIS-NN, or the CMSIS-NN folder of a CMSIS pack)"));
        }
        // Absolute and one spelling however it was given (`a/../b`, relative): the wrappers include
        // the same files from wherever the compiler runs, and every report names the folder alike.
        let root = &root.canonicalize().map_err(|e| Error::io("read", root, e))?;
        let mut total = 0u64;
        let mut read_all = |dir: &Path, extension: &str| -> Result<Vec<(String, String)>> {
            let files = user_path::files_below(dir, "the CMSIS-NN folder", |path| path.extension().is_some_and(|ext| ext == extension))?;
            let mut texts = Vec::new();
            for path in files {
                let bytes = user_path::read_regular(&path, MAX_LIBRARY_FILE_BYTES, "a CMSIS-NN source or header")?;
                total += bytes.len() as u64;
                if total > MAX_LIBRARY_BYTES {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!("the CMSIS-NN folder's sources and headers are over the limit of {MAX_LIBRARY_BYTES} bytes in all"),
                    )
                    .in_file(path.display().to_string())
                    .help("pass the folder that holds CMSIS-NN's Include/ and Source/, nothing larger"));
                }
                let relative = path.strip_prefix(root).unwrap_or(&path).components().map(|c| c.as_os_str().to_string_lossy()).collect();
                texts.push((join_slash(relative), String::from_utf8_lossy(&bytes).into_owned()));
            }
            Ok(texts)
        };
        let headers = read_all(&root.join("Include"), "h")?;
        let sources = read_all(&root.join("Source"), "c")?;
        Ok(KernelLibrary::from_texts(root, &headers, &sources))
    }

    /// The library described by the texts of its headers and sources (paths relative to `root`).
    pub fn from_texts(root: &Path, headers: &[(String, String)], sources: &[(String, String)]) -> KernelLibrary {
        let mut library = KernelLibrary { root: root.to_path_buf(), ..KernelLibrary::default() };
        for (path, text) in headers {
            let code = c::strip_comments(text);
            if path.ends_with(CMSIS_NN_API_HEADER) {
                library.version = revision(text);
            }
            let guards = line_guards(&code);
            for (name, body) in c::function_definitions(&code) {
                library.header_calls.entry(name.to_string()).or_default().extend(calls(body));
                library.record_guard(name, guard_at(&guards, &code, name), path);
            }
            for (name, body) in function_like_macros(&code) {
                library.header_calls.entry(name.to_string()).or_default().extend(calls(&body));
                library.record_guard(name, guard_at(&guards, &code, name), path);
            }
            library.declarations.extend(declarations(&code));
        }
        for (index, (path, text)) in sources.iter().enumerate() {
            let code = c::strip_comments(text);
            let guards = line_guards(&code);
            for (name, _) in c::function_definitions(&code) {
                library.record_guard(name, guard_at(&guards, &code, name), path);
                let files = library.defined_in.entry(name.to_string()).or_default();
                if !files.contains(&index) {
                    files.push(index);
                }
            }
            library.sources.push(LibrarySource { path: path.clone(), calls: calls(&code).collect() });
        }
        library
    }

    /// The extension every definition of `name` needs, when all need one (the least of theirs).
    pub fn guard(&self, name: &str) -> Option<&Guard> {
        self.guards.get(name).and_then(Option::as_ref)
    }

    fn record_guard(&mut self, name: &str, found: Option<(Extension, &str)>, file: &str) {
        let found = found.map(|(extension, condition)| Guard { extension, file: file.to_string(), condition: condition.to_string() });
        let kept = match (self.guards.remove(name), found) {
            (None, found) => found,
            (Some(Some(kept)), Some(found)) => Some(if found.extension < kept.extension { found } else { kept }),
            (Some(_), _) => None,
        };
        self.guards.insert(name.to_string(), kept);
    }

    /// The sources defining `called` and, in turn, what those call; `undefined`
    /// lists what neither the sources nor the headers define.
    pub fn select(&self, called: &BTreeSet<String>) -> Selection {
        let mut selected = BTreeSet::new();
        let mut undefined = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut pending: Vec<&str> = called.iter().map(String::as_str).collect();
        while let Some(name) = pending.pop() {
            if !seen.insert(name) {
                continue;
            }
            if let Some(body_calls) = self.header_calls.get(name) {
                pending.extend(body_calls.iter().map(String::as_str));
            }
            match self.defined_in.get(name) {
                Some(files) => {
                    for &index in files {
                        if selected.insert(index) {
                            pending.extend(self.sources[index].calls.iter().map(String::as_str));
                        }
                    }
                }
                None if !self.header_calls.contains_key(name) => {
                    undefined.insert(name.to_string());
                }
                None => {}
            }
        }
        let mut sources: Vec<String> = selected.into_iter().map(|index| self.sources[index].path.clone()).collect();
        sources.sort();
        Selection { sources, undefined }
    }
}

/// A kernel call the archive's code makes with a scratch buffer: `cmsis_nn_context
/// ctx = {buf, 4464};` then `arm_..._s8(&ctx, ...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScratchCall {
    pub file: String,
    /// The generated function making the call.
    pub function: String,
    pub kernel: String,
    /// Bytes the context states.
    pub reserved: u64,
    /// Whether the context points at a buffer (TVM writes `{NULL,0}` when the
    /// kernel needs none on the core it compiled for).
    pub buffered: bool,
    /// The call's argument expressions.
    pub args: Vec<String>,
    /// The `cmsis_nn_*` structures the function initializes, in order:
    /// shared by its calls, so many calls among many locals stay linear.
    pub locals: std::sync::Arc<[KernelLocal]>,
}

/// `cmsis_nn_<type> <name> = {<init>};` in generated code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelLocal {
    pub type_name: String,
    pub name: String,
    /// Between the braces.
    pub init: String,
}

/// Every kernel call in `code` (a source of the archive, `file`, without
/// comments) given a `cmsis_nn_context` whose size is a constant.
pub(crate) fn scratch_calls(file: &str, code: &str) -> Vec<ScratchCall> {
    let mut calls = Vec::new();
    for (function, body) in c::function_definitions(code) {
        let locals: std::sync::Arc<[KernelLocal]> = body.split(';').filter_map(kernel_local).collect();
        if locals.iter().all(|local| local.type_name != "cmsis_nn_context") {
            continue;
        }
        // Read once per function and grouped by first argument, not searched once per context.
        let mut by_first: BTreeMap<String, Vec<(&str, Vec<String>)>> = BTreeMap::new();
        for (kernel, args) in call_expressions(body) {
            let first = args.first().map(|first| first.split_whitespace().collect::<String>()).unwrap_or_default();
            by_first.entry(first).or_default().push((kernel, args));
        }
        for context in locals.iter().filter(|local| local.type_name == "cmsis_nn_context") {
            let Some((buffer, size)) = context.init.rsplit_once(',') else { continue };
            let Some(reserved) = c::integer(size.trim()) else { continue };
            let buffered = !is_null(buffer);
            let reference = format!("&{}", context.name);
            for (kernel, args) in by_first.get(&reference).into_iter().flatten() {
                let (file, function) = (file.to_string(), function.to_string());
                calls.push(ScratchCall {
                    file,
                    function,
                    kernel: kernel.to_string(),
                    reserved,
                    buffered,
                    args: args.clone(),
                    locals: std::sync::Arc::clone(&locals),
                });
            }
        }
    }
    calls
}

/// `NULL`, `0` or either cast to a pointer: a context without a buffer.
fn is_null(expression: &str) -> bool {
    let compact: String = expression.chars().filter(|c| !c.is_whitespace()).collect();
    let bare = compact.trim_start_matches('(').trim_end_matches(')');
    let bare = bare.strip_prefix("void*)").unwrap_or(bare);
    matches!(bare, "NULL" | "0")
}

fn kernel_local(statement: &str) -> Option<KernelLocal> {
    let statement = statement.trim();
    let (declaration, init) = statement.split_once('=')?;
    let mut words = declaration.split_whitespace();
    let (type_name, name) = (words.next()?, words.next()?);
    let init = init.trim().strip_prefix('{')?.strip_suffix('}')?;
    let identifier = |word: &str| !word.is_empty() && word.chars().all(ident::is_identifier_char);
    (type_name.starts_with("cmsis_nn_") && identifier(name) && words.next().is_none()).then(|| KernelLocal {
        type_name: type_name.to_string(),
        name: name.to_string(),
        init: init.trim().to_string(),
    })
}

/// `(callee, argument expressions)` of every call in `body`.
fn call_expressions(body: &str) -> Vec<(&str, Vec<String>)> {
    let mut found = Vec::new();
    for (at, _) in body.match_indices('(') {
        let head = &body[..at];
        let start = crate::input::c::trailing_identifier_start(head);
        let callee = &head[start..];
        if callee.is_empty() || callee.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        if let Some(close) = closing_paren(&body[at + 1..]) {
            let arguments = c::split_top_level(&body[at + 1..at + 1 + close]);
            found.push((callee, arguments.into_iter().map(|argument| argument.trim().to_string()).collect()));
        }
    }
    found
}

fn calls(code: &str) -> impl Iterator<Item = String> + '_ {
    c::called_functions(code).map(str::to_string)
}

/// Per line of `code` (its start offset), the extension the `#if`s around it
/// demand, with the innermost condition demanding it. An `#else` branch and a
/// negated condition demand nothing: only code that exists solely for a core
/// with the extension counts.
fn line_guards(code: &str) -> Vec<(usize, Option<(Extension, &str)>)> {
    let mut open: Vec<Option<(Extension, &str)>> = Vec::new();
    let mut lines = Vec::new();
    let mut start = 0;
    for line in code.split_inclusive('\n') {
        lines.push((start, open.iter().flatten().copied().max_by_key(|(extension, _)| *extension)));
        start += line.len();
        let Some(directive) = line.trim_start().strip_prefix('#').map(str::trim_start) else { continue };
        let word_end = directive.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(directive.len());
        let (word, condition) = directive.split_at(word_end);
        let demanded = required_extension(condition).map(|extension| (extension, line.trim()));
        match word {
            "if" | "ifdef" => open.push(demanded),
            "ifndef" => open.push(None),
            "elif" | "else" => {
                if let Some(branch) = open.last_mut() {
                    *branch = if word == "elif" { demanded } else { None };
                }
            }
            "endif" => {
                open.pop();
            }
            _ => {}
        }
    }
    lines
}

/// The extension `#if <condition>` demands: the largest any `&&` term names
/// without negation; a term of `||` alternatives only when each names one.
fn required_extension(condition: &str) -> Option<Extension> {
    let named = |text: &str| {
        text.split(|c: char| !ident::is_identifier_char(c))
            .filter_map(|word| EXTENSION_MACROS.iter().find(|(name, _)| *name == word).map(|(_, extension)| *extension))
            .max()
    };
    condition.split("&&").filter(|term| !term.contains('!')).filter_map(|term| term.split("||").map(named).min().flatten()).max()
}

/// The guard of the line holding `name`, a slice of `code`.
fn guard_at<'c>(lines: &[(usize, Option<(Extension, &'c str)>)], code: &str, name: &str) -> Option<(Extension, &'c str)> {
    // `name` borrows from `code`: its address gives its offset.
    let offset = (name.as_ptr() as usize).checked_sub(code.as_ptr() as usize)?;
    let line = lines.partition_point(|(start, _)| *start <= offset).checked_sub(1)?;
    lines[line].1
}

/// `(name, body)` of every `#define NAME(args) body` (continued lines joined).
fn function_like_macros(code: &str) -> Vec<(&str, String)> {
    let mut macros = Vec::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim_start().strip_prefix('#').map(str::trim_start).and_then(|rest| rest.strip_prefix("define")) else {
            continue;
        };
        let rest = rest.trim_start();
        let name_end = rest.find(|c: char| !ident::is_identifier_char(c)).unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_end);
        let mut body = after.strip_prefix('(').map(str::to_string);
        let mut continued = line.trim_end().ends_with('\\');
        while continued {
            let Some(next) = lines.next() else { break };
            continued = next.trim_end().ends_with('\\');
            if let Some(body) = &mut body {
                body.push_str(next);
            }
        }
        if let Some(body) = body.filter(|_| !name.is_empty()) {
            macros.push((name, body));
        }
    }
    macros
}

/// `name → parameter list` of the function declarations (`T name(params);`) in `code`.
fn declarations(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices('(') {
        let head = code[..at].trim_end();
        let start = crate::input::c::trailing_identifier_start(head);
        let name = &head[start..];
        // A declaration follows a return type: a name or `*` before it.
        let before = head[..start].trim_end();
        if name.is_empty() || !before.ends_with(|c: char| ident::is_identifier_char(c) || c == '*') {
            continue;
        }
        let after = &code[at + 1..];
        let Some(close) = closing_paren(after) else { continue };
        if after[close + 1..].trim_start().starts_with(';') {
            found.push((name.to_string(), after[..close].split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    found
}

fn closing_paren(text: &str) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            ';' | '{' | '}' => return None,
            _ => {}
        }
    }
    None
}

/// `V.11.3.0 (13 January 2023)` from the header's `$Revision:` and `$Date:` lines.
fn revision(text: &str) -> Option<String> {
    let field = |key: &str| {
        text.lines().find_map(|line| line.split_once(key).map(|(_, value)| value.trim().trim_end_matches('$').trim().to_string()))
    };
    let revision = field("$Revision:").filter(|value| !value.is_empty() && value.len() <= 40)?;
    Some(match field("$Date:").filter(|value| !value.is_empty() && value.len() <= 40) {
        Some(date) => format!("{revision} ({date})"),
        None => revision,
    })
}

fn join_slash(parts: Vec<std::borrow::Cow<'_, str>>) -> String {
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(path: &str, code: &str) -> (String, String) {
        (path.to_string(), code.to_string())
    }

    fn library() -> KernelLibrary {
        let headers = [text(
            "Include/arm_nnfunctions.h",
            "/*\n * $Date:        1 May 2023\n * $Revision:    V.1.2.3\n */\n\
             int32_t arm_conv(const cmsis_nn_context *ctx, const cmsis_nn_dims *input_dims);\n\
             int32_t arm_conv_get_buffer_size(const cmsis_nn_dims *input_dims);\n\
             static inline int helper(int x) { return arm_support(x); }\n\
             #define CALLS_TABLE(x) arm_table_lookup(x)\n",
        )];
        let sources = [
            text("Source/Conv/arm_conv.c", "int32_t arm_conv(const cmsis_nn_context *ctx) { return helper(1) + CALLS_TABLE(2); }"),
            text("Source/Support/arm_support.c", "int arm_support(int x) { return x; }"),
            text("Source/Support/arm_table.c", "int arm_table_lookup(int x) { return memcpy(0, 0, x); }"),
            text("Source/Other/arm_unused.c", "int arm_unused(void) { return arm_conv(0); }"),
        ];
        KernelLibrary::from_texts(Path::new("lib"), &headers, &sources)
    }

    #[test]
    fn selects_what_the_called_functions_need_through_headers_and_macros() {
        let selection = library().select(&["arm_conv".to_string()].into());
        assert_eq!(selection.sources, ["Source/Conv/arm_conv.c", "Source/Support/arm_support.c", "Source/Support/arm_table.c"]);
        assert_eq!(selection.undefined, ["memcpy".to_string()].into());
    }

    #[test]
    fn finds_the_scratch_each_kernel_call_is_given() {
        let code = "int32_t f(int8_t* in, uint8_t* ws) {\n  void* buf = (&(ws[64]));\n  cmsis_nn_context context= {buf,4464};\n  \
                    cmsis_nn_tile stride = {1,1};\n  cmsis_nn_conv_params conv_params = {0, 0, stride};\n  \
                    cmsis_nn_dims input_dims = {1,8,8,3};\n  arm_status s = arm_conv(&context, &conv_params, &input_dims, in);\n  return 0;\n}";
        let calls = scratch_calls("lib2.c", code);
        assert_eq!(calls.len(), 1);
        let call = &calls[0];
        assert_eq!((call.function.as_str(), call.kernel.as_str(), call.reserved, call.buffered), ("f", "arm_conv", 4464, true));
        assert_eq!(call.args, ["&context", "&conv_params", "&input_dims", "in"]);
        let names: Vec<&str> = call.locals.iter().map(|local| local.name.as_str()).collect();
        assert_eq!(names, ["context", "stride", "conv_params", "input_dims"]);
        assert_eq!(call.locals[3].init, "1,8,8,3");
    }

    #[test]
    fn a_context_of_null_has_no_buffer() {
        for (init, buffered) in [("NULL,0", false), ("((void*)0), 0", false), ("(void *) NULL,0", false), ("buf,0", true), ("p0,16", true)]
        {
            let code = format!("int32_t f(int8_t* in) {{\n  cmsis_nn_context ctx = {{{init}}};\n  arm_pool(&ctx, in);\n  return 0;\n}}");
            let calls = scratch_calls("lib2.c", &code);
            assert_eq!(calls.iter().map(|call| call.buffered).collect::<Vec<_>>(), [buffered], "{init}");
        }
    }

    #[test]
    fn reads_the_revision_and_the_declarations() {
        let library = library();
        assert_eq!(library.version.as_deref(), Some("V.1.2.3 (1 May 2023)"));
        assert_eq!(library.declarations["arm_conv_get_buffer_size"], "const cmsis_nn_dims *input_dims");
        assert_eq!(library.declarations["arm_conv"], "const cmsis_nn_context *ctx, const cmsis_nn_dims *input_dims");
    }

    #[test]
    fn records_the_definitions_that_exist_only_under_an_extensions_if() {
        let header = "#ifndef GUARD_H\n#define GUARD_H\n\
             #if (defined(__ARM_FEATURE_DSP) && (__ARM_FEATURE_DSP == 1))\n  #define HAS_DSP 1\n#endif\n\
             #if defined(ARM_MATH_DSP)\nstatic inline int widen(int x) { return x; }\n#define PAIR(a, b) widen(a)\n\
             #if defined(ARM_MATH_MVEI) && !defined(SOME_ICE)\nstatic inline int lanes(int x) { return x; }\n#endif\n#endif\n\
             #if !defined(ARM_MATH_DSP)\nstatic inline int plain(int x) { return x; }\n#elif defined(__ARM_FEATURE_MVE)\n\
             static inline int vector(int x) { return x; }\n#else\nstatic inline int scalar(int x) { return x; }\n#endif\n\
             #if defined(ARM_MATH_DSP) || defined(PORTABLE_TOO)\nstatic inline int either(int x) { return x; }\n#endif\n#endif\n";
        let sources = [
            text("Source/arm_both.c", "#ifdef ARM_MATH_DSP\nint arm_both(int x) { return x; }\n#else\nint arm_both(int x) { return -x; }\n#endif\n"),
            text("Source/arm_dsp_only.c", "#if defined(ARM_MATH_DSP)\nint arm_dsp_only(int x) {\n#if defined(ARM_MATH_MVEI)\n  x++;\n#endif\n  return x;\n}\n#endif\n"),
        ];
        let library = KernelLibrary::from_texts(Path::new("lib"), &[text("Include/guard.h", header)], &sources);
        let guard = |name: &str| library.guard(name).map(|guard| (guard.extension, guard.file.as_str(), guard.condition.as_str()));
        assert_eq!(guard("widen"), Some((Extension::Dsp, "Include/guard.h", "#if defined(ARM_MATH_DSP)")));
        assert_eq!(guard("PAIR"), Some((Extension::Dsp, "Include/guard.h", "#if defined(ARM_MATH_DSP)")));
        assert_eq!(guard("lanes"), Some((Extension::Mve, "Include/guard.h", "#if defined(ARM_MATH_MVEI) && !defined(SOME_ICE)")));
        assert_eq!(guard("vector"), Some((Extension::Mve, "Include/guard.h", "#elif defined(__ARM_FEATURE_MVE)")));
        assert_eq!(guard("arm_dsp_only"), Some((Extension::Dsp, "Source/arm_dsp_only.c", "#if defined(ARM_MATH_DSP)")));
        for portable in ["plain", "scalar", "either", "arm_both", "HAS_DSP", "absent"] {
            assert_eq!(guard(portable), None, "{portable}");
        }
    }

    #[test]
    fn the_shared_cmsis_nn_checkouts_select_a_few_sources() {
        let Some(dir) = crate::test_support::third_party("CMSIS-NN") else { return };
        for version in ["v4.1.0", "v7.0.0"] {
            let library = KernelLibrary::read_cmsis_nn(&dir.join(version)).expect("a CMSIS-NN checkout");
            let called = ["arm_convolve_wrapper_s8", "arm_avgpool_s8", "arm_softmax_s8"].map(str::to_string).into();
            let selection = library.select(&called);
            assert!(selection.sources.iter().any(|s| s.ends_with("arm_convolve_wrapper_s8.c")), "{version}: {selection:?}");
            assert!(selection.sources.len() < 25, "{version}: {} sources", selection.sources.len());
            assert!(selection.undefined.iter().all(|name| !name.starts_with("arm_")), "{version}: {:?}", selection.undefined);
            assert!(library.version.is_some());
            // What TVM's native Arm schedules call: the DSP helpers exist only for DSP cores.
            for helper in ["read_and_pad", "SMLAD", "SXTB16"] {
                assert_eq!(library.guard(helper).map(|guard| guard.extension), Some(Extension::Dsp), "{version}: {helper}");
            }
            assert_eq!(library.guard("arm_doubling_high_mult_mve").map(|guard| guard.extension), Some(Extension::Mve), "{version}");
            assert_eq!(library.guard("arm_memset_s8"), None, "{version}");
        }
    }
}
