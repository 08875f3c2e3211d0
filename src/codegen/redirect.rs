//! USMP's `global_workspace` moved into an arena group's arena. TVM's USMP
//! defines the workspace it plans as a static array of the generated C
//! (`static uint8_t global_workspace[N];`); a member of an arena group must
//! keep it in the group's arena instead, so the build compiles an edited copy
//! of that source: the definition becomes the group's common arena and a
//! macro naming the array's bytes in it, as an lvalue of the array's own type
//! (`sizeof` and `&` keep their meaning). Whatever the edit cannot keep the
//! meaning of is refused by name with the reason ([`find`]).
//!
//! Edits are span replacements of the original text ([`SourceEdit`]),
//! applied once ([`apply`]); a split AOT run's step code (`stepper`) is one
//! more edit, at the end, so one copy carries both.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::includable;
use crate::error::{Error, ErrorKind, Result};
use crate::ident::CIdent;
use crate::input::archive::Tree;
use crate::input::c::lexer::{lex, Kind, Token};
use crate::input::c::parser::parse::parse;
use crate::input::c::parser::syntax::{scalar_dtype, CSource, Expr, Init, Initializer, Span, Stmt, StmtKind, Variable};
use crate::input::c::{integer, split_top_level};
use crate::plan::limits::MAX_BYTES;
use crate::plan::model::{CodeWorkspace, SourceEdit};

/// The name USMP gives the workspace it plans and the generated C defines.
pub(crate) const WORKSPACE: &str = "global_workspace";

/// The strictest alignment an `aligned`/`_Alignas` of the definition may ask:
/// past it the request is no workspace's.
const MAX_ALIGNMENT: u64 = 1 << 16;

/// Where the edited copy of the tree's `file` goes, relative to the glue directory (`gen`).
pub(crate) fn copy_path(file: &str) -> PathBuf {
    Path::new("edited").join(file)
}

/// What [`find`] read of the one definition, before the layout gives its offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub file: String,
    pub line: u32,
    pub bytes: u64,
    pub alignment: u64,
    is_static: bool,
    /// The definition's span and text, replaced by [`edits`].
    definition: (usize, usize, String),
    /// The line the text after the definition starts on, for `#line`.
    next_line: u64,
    /// `volatile uint8_t (*)[15378]`: a pointer to the array's type.
    array_pointer: String,
    /// Quoted `#include`s of files beside the original: the header name's span, text and the path from the copy.
    includes: Vec<(usize, usize, String, String)>,
}

fn refuse(module: &CIdent, file: &str, line: Option<u32>, reason: String) -> Error {
    let at = line.map_or_else(String::new, |line| format!(", line {line}"));
    Error::new(
        ErrorKind::Config,
        format!("module `{module}` cannot join an arena group: its workspace `{WORKSPACE}` ({file}{at}) {reason}"),
    )
    .in_file(file.to_string())
    .help("build the module without Builder::arena_group: its workspace then stays its own (book: \"Arena groups\", \"What cannot join yet\")")
}

/// The one definition of USMP's workspace among `module`'s C `sources` (tree
/// paths), checked to be redirectable: a file-scope array of a scalar type
/// with literal sizes, no initializer, declared alone, after which every
/// mention of its name is an expression the C parser reads. `None` when no
/// source names it. Refused: two definitions, a definition the parser cannot
/// read, a use under `sizeof`, as a member or in a preprocessor line, a
/// declaration of the same name, an `#include` through a macro,
/// `__has_include`, a header of the archive that names it, a source that is
/// not UTF-8, and (the caller's part) a workspace no source defines.
pub(crate) fn find(module: &CIdent, sources: &[String], tree: &Tree) -> Result<Option<Found>> {
    let mut found: Option<Found> = None;
    let mut mentioned: Vec<&str> = Vec::new();
    for path in sources {
        let Some(bytes) = tree.get(path) else { continue };
        if !contains(bytes, WORKSPACE.as_bytes()) {
            continue;
        }
        let text = std::str::from_utf8(bytes).map_err(|_| refuse(module, path, None, "is in a source that is not UTF-8 text".into()))?;
        let source = parse(path, text)?;
        if !source.mentions(WORKSPACE) {
            continue;
        }
        mentioned.push(path);
        let definitions: Vec<&Variable> =
            source.variables.iter().filter(|v| v.name == WORKSPACE && !v.type_words.contains(&"extern")).collect();
        for definition in definitions {
            if let Some(first) = &found {
                let reason = format!("is defined twice (also {}, line {}): mlf-build moves one array, not two", first.file, first.line);
                return Err(refuse(module, path, Some(definition.span.line), reason));
            }
            let mut read = read_definition(module, &source, definition)?;
            read.includes = includes(module, &source, tree)?;
            check_uses(module, &source, definition)?;
            found = Some(read);
        }
    }
    let Some(found) = found else { return Ok(None) };
    // A definition of external linkage: another source naming it would link to nothing.
    if let Some(other) = mentioned.iter().find(|path| **path != found.file).filter(|_| !found.is_static) {
        return Err(refuse(module, &found.file, Some(found.line), format!("is not static and {other} names it too")));
    }
    check_headers(module, tree)?;
    Ok(Some(found))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

/// Size, alignment and type of the definition, or why it cannot move.
fn read_definition(module: &CIdent, source: &CSource<'_>, definition: &Variable<'_>) -> Result<Found> {
    let (file, line) = (source.path, definition.span.line);
    let fail = |reason: &str| refuse(module, file, Some(line), reason.to_string());
    if definition.init.is_some() {
        return Err(fail("has an initializer: its contents are data, not scratch"));
    }
    if let Some(other) = source.variables.iter().find(|v| v.span.start == definition.span.start && v.name != WORKSPACE) {
        return Err(fail(&format!("is declared together with `{}`: mlf-build moves the declaration whole", other.name)));
    }
    let mut qualifiers = Vec::new();
    let mut base = Vec::new();
    for word in &definition.type_words {
        match *word {
            "static" => {}
            "volatile" => qualifiers.push(*word),
            "const" => return Err(fail("is const: read-only, not scratch")),
            "typedef" | "_Thread_local" | "__thread" | "thread_local" | "register" | "auto" | "constexpr" | "inline" => {
                return Err(fail(&format!("is declared `{word}`")))
            }
            _ => base.push(*word),
        }
    }
    let base = base.join(" ");
    let element = match base.as_str() {
        "char" | "signed char" | "unsigned char" => 1,
        other => scalar_dtype(other).map(|dtype| dtype.size_bytes() as u64).ok_or_else(|| {
            fail(&format!("has the element type `{other}`, whose size mlf-build does not know (a scalar type such as uint8_t is)"))
        })?,
    };
    // From its first attribute: one before the specifiers must not stay on the arena's definition.
    let first = definition.attributes.iter().map(|a| a.start).chain([definition.span.start]).min().unwrap_or(definition.span.start);
    let span = Span { start: first, ..definition.span };
    let line = definition.attributes.iter().filter(|a| a.start == first).map(|a| a.line).next().unwrap_or(line);
    let text = source.text_of(span);
    // A pointer or function declarator (`uint8_t* global_workspace[4]`) is no plain array.
    let in_attribute = |at: usize| definition.attributes.iter().any(|a| a.range().contains(&at));
    let declarator = lex(text)
        .take_while(|token| !(token.kind == Kind::Identifier && token.text(text) == WORKSPACE))
        .filter(|token| !in_attribute(span.start as usize + token.start))
        .any(|token| matches!(token.kind, Kind::Punctuator("*" | "(")));
    if declarator {
        return Err(fail("is not a plain array (a pointer or function declarator)"));
    }
    if definition.dims.is_empty() {
        return Err(fail("is not an array"));
    }
    let mut bytes = element;
    let mut dims = String::new();
    for dim in &definition.dims {
        let dim = dim.ok_or_else(|| fail("has a size that is no integer literal"))?;
        bytes = bytes.checked_mul(dim).ok_or_else(|| fail("has a size past 64 bits"))?;
        let _ = write!(dims, "[{dim}]");
    }
    if bytes > MAX_BYTES {
        return Err(fail(&format!("is {bytes} bytes, more than the {MAX_BYTES} bytes any workspace may take (the limit)")));
    }
    // At least the element's own alignment (scalar sizes are powers of two).
    let mut alignment = element;
    for attribute in &definition.attributes {
        for requested in attribute_alignments(source.text_of(*attribute)).map_err(|reason| fail(&reason))? {
            alignment = alignment.max(requested);
        }
    }
    let definition_text = text.to_string();
    let next_line = u64::from(line) + definition_text.matches('\n').count() as u64;
    let qualified = qualifiers.iter().map(|q| format!("{q} ")).collect::<String>();
    Ok(Found {
        file: file.to_string(),
        line,
        bytes,
        alignment,
        is_static: definition.is_static,
        definition: (span.start as usize, span.end as usize, definition_text),
        next_line,
        array_pointer: format!("{qualified}{base} (*){dims}"),
        includes: Vec::new(),
    })
}

/// The alignments an attribute asks (`aligned(16)`, `_Alignas(8)`); an
/// attribute that changes more than placement is refused, with its name.
fn attribute_alignments(text: &str) -> std::result::Result<Vec<u64>, String> {
    let open = text.find('(').ok_or_else(|| format!("has the attribute `{text}`, which mlf-build does not read"))?;
    let word = text[..open].trim();
    let inner = text[open + 1..].strip_suffix(')').unwrap_or(&text[open + 1..]);
    let alignment = |value: &str| -> std::result::Result<u64, String> {
        match integer(value) {
            Some(value) if value.is_power_of_two() && value <= MAX_ALIGNMENT => Ok(value),
            _ => Err(format!("asks an alignment `{}` that is no power of two up to {MAX_ALIGNMENT}", value.trim())),
        }
    };
    match word {
        "_Alignas" | "alignas" => Ok(vec![alignment(inner)?]),
        "__attribute__" | "__attribute" => {
            let inner = inner.trim().strip_prefix('(').and_then(|i| i.strip_suffix(')')).unwrap_or(inner);
            let mut found = Vec::new();
            for item in split_top_level(inner) {
                let item = item.trim();
                let (name, argument) = match item.split_once('(') {
                    Some((name, argument)) => (name.trim(), Some(argument.strip_suffix(')').unwrap_or(argument))),
                    None => (item, None),
                };
                match (name.trim_matches('_'), argument) {
                    ("aligned", Some(value)) => found.push(alignment(value)?),
                    // The largest alignment of any type on the targets mlf-build builds for.
                    ("aligned", None) => found.push(16),
                    // Placement only: the group's arena goes where the application places it.
                    ("section" | "used" | "unused" | "noinit" | "zero_init" | "", _) => {}
                    (other, _) => return Err(format!("has the attribute `{other}`, which the group's arena would not keep")),
                }
            }
            Ok(found)
        }
        other => Err(format!("has `{other}`, which mlf-build does not read")),
    }
}

/// The quoted `#include`s of `source` whose file is beside it in the tree,
/// with the path the copy includes it by; an `#include` through a macro, or
/// `__has_include`, is refused: where the copy looks would decide them.
fn includes(module: &CIdent, source: &CSource<'_>, tree: &Tree) -> Result<Vec<(usize, usize, String, String)>> {
    let text = source.text();
    let dir = Path::new(source.path).parent().unwrap_or(Path::new(""));
    let up: PathBuf =
        std::iter::repeat_n(Path::new(".."), copy_path(source.path).parent().map_or(0, |d| d.components().count()) + 1).collect();
    let mut rewrites = Vec::new();
    let mut tokens = lex(text).filter(|t| !matches!(t.kind, Kind::Space | Kind::Comment)).peekable();
    while let Some(token) = tokens.next() {
        if token.kind == Kind::Identifier && matches!(token.text(text), "__has_include" | "__has_include_next") {
            let reason = "is in a source that asks `__has_include`, whose answer depends on where the file is".to_string();
            return Err(refuse(module, source.path, Some(token.line as u32), reason));
        }
        if !(token.preprocessor && token.kind == Kind::Punctuator("#")) {
            continue;
        }
        let Some(name) = tokens.next_if(|t| t.preprocessor && t.kind == Kind::Identifier) else { continue };
        if !matches!(name.text(text), "include" | "include_next" | "import") {
            continue;
        }
        match tokens.next_if(|t| t.preprocessor) {
            Some(header) if header.kind == Kind::HeaderName => {
                let quoted = header.text(text);
                let name = quoted.trim_start_matches('"').trim_end_matches('"');
                let beside = beside(dir, name);
                if let Some(path) = beside.filter(|path| tree.contains(path)) {
                    let from_copy = up.join("tree").join(&path);
                    let from_copy = includable(&from_copy)?.to_string();
                    rewrites.push((header.start, header.end, quoted.to_string(), format!("\"{from_copy}\"")));
                }
            }
            Some(header) if header.kind == Kind::Punctuator("<") => {}
            _ => {
                let reason = "is in a source with an `#include` through a macro, which the copy could resolve elsewhere".to_string();
                return Err(refuse(module, source.path, Some(token.line as u32), reason));
            }
        }
    }
    Ok(rewrites)
}

/// The tree path of header `name` beside the directory `dir`, when it stays inside the tree.
fn beside(dir: &Path, name: &str) -> Option<String> {
    if name.contains('\\') || name.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = dir.to_str()?.split('/').filter(|p| !p.is_empty()).collect();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// Every mention of the workspace's name after its definition must be an
/// expression the parser reads (in a function body or a file-scope
/// initializer): the edit's macro keeps those meaning the same array.
fn check_uses(module: &CIdent, source: &CSource<'_>, definition: &Variable<'_>) -> Result<()> {
    let text = source.text();
    let (start, end) = (definition.span.start as usize, definition.span.end as usize);
    let mut read = BTreeSet::new();
    for function in source.functions.iter().filter(|f| f.body_span.start as usize >= end) {
        if text.get(function.body_span.range()).is_some_and(|body| body.contains(WORKSPACE)) {
            uses_in(&function.body(source).statements, &mut read);
        }
    }
    for variable in source.variables.iter().filter(|v| v.span.start as usize >= end) {
        if let Some(Init::Tree(init)) = &variable.init {
            initializer_uses(init, &mut read);
        }
    }
    let mut in_definition = 0;
    let mut previous: Option<Token> = None;
    let mut before_previous: Option<Token> = None;
    for token in lex(text) {
        if matches!(token.kind, Kind::Space | Kind::Comment) {
            continue;
        }
        if token.kind == Kind::Identifier && token.text(text) == WORKSPACE {
            let line = Some(token.line as u32);
            let fail = |reason: &str| Err(refuse(module, source.path, line, reason.to_string()));
            let word = |t: Option<Token>| t.map(|t| t.text(text));
            if (start..end).contains(&token.start) && !token.preprocessor {
                in_definition += 1;
                if in_definition > 1 {
                    return fail("is named inside its own definition");
                }
            } else if token.start < start {
                return fail("is named before its definition");
            } else if token.preprocessor {
                return fail("is named in a preprocessor line (a macro or condition the edit's macro would change)");
            } else if !read.contains(&token.start) {
                if word(previous) == Some("sizeof") || (word(previous) == Some("(") && word(before_previous) == Some("sizeof")) {
                    return fail("is used under `sizeof`, which mlf-build's C parser does not read");
                }
                if matches!(word(previous), Some("." | "->")) {
                    return fail("is also a member's name");
                }
                return fail("is named where mlf-build's C parser reads no use of the array (a declaration of the same name, or code it does not read)");
            }
        }
        before_previous = previous;
        previous = Some(token);
    }
    Ok(())
}

/// One node of a walk over statements and expressions (iterative: nesting is input).
enum Node<'a, 't> {
    Stmt(&'a Stmt<'t>),
    Expr(&'a Expr<'t>),
    Init(&'a Initializer<'t>),
}

fn uses_in(statements: &[Stmt<'_>], read: &mut BTreeSet<usize>) {
    walk(statements.iter().map(Node::Stmt).collect(), read);
}

fn initializer_uses(init: &Initializer<'_>, read: &mut BTreeSet<usize>) {
    walk(vec![Node::Init(init)], read);
}

/// The starts of the workspace's name read as an identifier expression.
fn walk<'a, 't>(mut stack: Vec<Node<'a, 't>>, read: &mut BTreeSet<usize>) {
    while let Some(node) = stack.pop() {
        match node {
            Node::Stmt(statement) => match &statement.kind {
                StmtKind::Block(inner) => stack.extend(inner.iter().map(Node::Stmt)),
                StmtKind::Decl { declarators, .. } => {
                    for declarator in declarators {
                        stack.extend(declarator.dims.iter().map(Node::Expr));
                        stack.extend(declarator.init.iter().map(Node::Init));
                    }
                }
                StmtKind::Expr(expr) | StmtKind::Return(Some(expr)) | StmtKind::Label { case: Some(expr) } => stack.push(Node::Expr(expr)),
                StmtKind::If { condition, then, otherwise } => {
                    stack.extend([Node::Expr(condition), Node::Stmt(then)]);
                    stack.extend(otherwise.iter().map(|o| Node::Stmt(o)));
                }
                StmtKind::For { init, condition, step, body } => {
                    stack.extend(init.iter().map(|i| Node::Stmt(i)));
                    stack.extend(condition.iter().chain(step).map(Node::Expr));
                    stack.push(Node::Stmt(body));
                }
                StmtKind::While { condition, body } | StmtKind::Switch { value: condition, body } => {
                    stack.extend([Node::Expr(condition), Node::Stmt(body)]);
                }
                StmtKind::Empty | StmtKind::Label { case: None } | StmtKind::Return(None) => {}
                StmtKind::Break | StmtKind::Continue | StmtKind::Unparsed => {}
            },
            Node::Init(init) => match init {
                Initializer::Expr(expr) => stack.push(Node::Expr(expr)),
                Initializer::List(items) => stack.extend(items.iter().map(|(_, item)| Node::Init(item))),
                Initializer::Numeric { .. } => {}
            },
            Node::Expr(expr) => match expr {
                Expr::Ident(name, span) if *name == WORKSPACE => {
                    read.insert(span.start as usize);
                }
                Expr::Unary(_, inner) | Expr::Postfix(_, inner) | Expr::Paren(inner) | Expr::Cast { value: inner, .. } => {
                    stack.push(Node::Expr(inner));
                }
                Expr::Member { of, .. } => stack.push(Node::Expr(of)),
                Expr::Binary(_, left, right) | Expr::Assign(_, left, right) | Expr::Index(left, right) => {
                    stack.extend([Node::Expr(left), Node::Expr(right)]);
                }
                Expr::Ternary(a, b, c) => stack.extend([Node::Expr(a), Node::Expr(b), Node::Expr(c)]),
                Expr::Call { args, .. } => stack.extend(args.iter().map(Node::Expr)),
                Expr::Int(_) | Expr::Number | Expr::Text | Expr::Ident(..) | Expr::Sizeof => {}
            },
        }
    }
}

/// A header of the archive that names the workspace: included after the
/// definition, the edit's macro would rewrite it.
fn check_headers(module: &CIdent, tree: &Tree) -> Result<()> {
    for path in tree.paths().filter(|path| path.ends_with(".h") || path.ends_with(".hpp") || path.ends_with(".hh")) {
        let Some(bytes) = tree.get(path).filter(|bytes| contains(bytes, WORKSPACE.as_bytes())) else { continue };
        let text = String::from_utf8_lossy(bytes);
        if parse(path, &text)?.mentions(WORKSPACE) {
            return Err(refuse(module, path, None, "is named by this header of the archive, which the edit's macro would rewrite".into()));
        }
    }
    Ok(())
}

/// The edits that move `found` to `offset` in `arena` (the group's arena
/// symbol): the definition replaced, quoted includes of files beside it
/// pointed at the tree from the copy.
pub(crate) fn edits(found: &Found, arena: &str, offset: u64, alignment: u64) -> Result<Vec<SourceEdit>> {
    let end = offset.checked_add(found.bytes).ok_or_else(|| Error::new(ErrorKind::Unsupported, "the arena's size overflows 64 bits"))?;
    let (start, stop, text) = &found.definition;
    let replacement = format!(
        "/* Written by mlf-build: `{WORKSPACE}` ({} bytes) moved into the arena group's arena, at offset {offset}. */ \
         __attribute__((common, aligned({alignment}))) unsigned char {arena}[{end}];\n\
         #define {WORKSPACE} (*({})({arena} + {offset}))\n#line {}\n",
        found.bytes, found.array_pointer, found.next_line
    );
    let mut edits = vec![SourceEdit { start: *start, end: *stop, expected: text.clone(), replacement }];
    for (start, stop, quoted, replacement) in &found.includes {
        edits.push(SourceEdit { start: *start, end: *stop, expected: quoted.clone(), replacement: replacement.clone() });
    }
    Ok(edits)
}

impl Found {
    pub(crate) fn into_plan(self, offset: u64, edits: Vec<SourceEdit>) -> CodeWorkspace {
        CodeWorkspace { file: self.file, line: self.line, bytes: self.bytes, alignment: self.alignment, offset, edits }
    }
}

/// `text` with `edits` applied, each checked to find its expected text where
/// it says; edits must not overlap. `appended` ends the copy.
pub(crate) fn apply(file: &str, text: &str, edits: &[SourceEdit], appended: &str) -> Result<String> {
    let mut sorted: Vec<&SourceEdit> = edits.iter().collect();
    sorted.sort_by_key(|edit| (edit.start, edit.end));
    let capacity = sorted.iter().map(|edit| edit.replacement.len()).fold(text.len().saturating_add(appended.len()), usize::saturating_add);
    let mut out = String::with_capacity(capacity);
    let mut at = 0;
    for edit in sorted {
        let stale = || {
            Error::new(
                ErrorKind::Unsupported,
                format!("{file} changed since it was read: its edited copy for the arena group cannot be written"),
            )
            .in_file(file.to_string())
        };
        if edit.start < at || text.get(edit.start..edit.end) != Some(edit.expected.as_str()) {
            return Err(stale());
        }
        out.push_str(&text[at..edit.start]);
        out.push_str(&edit.replacement);
        at = edit.end;
    }
    out.push_str(&text[at..]);
    // What is appended starts on a line of its own (it may open with a directive).
    if !appended.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(appended);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{corpus_dir, run_ok, scratch};

    const LIB0: &str = "codegen/host/src/default_lib0.c";

    /// Files replaced in the archive, and the reason the refusal must give.
    type Variant<'a> = (Vec<(&'a str, Vec<u8>)>, &'a str);
    const LIB1: &str = "codegen/host/src/default_lib1.c";

    fn module() -> CIdent {
        CIdent::new("module", "default").unwrap()
    }

    fn c_sources(tree: &Tree) -> Vec<String> {
        tree.files_under("codegen/host/src").filter(|path| path.ends_with(".c")).map(str::to_string).collect()
    }

    fn tree(files: &[(&str, &[u8])]) -> Tree {
        Tree::from_files(files.iter().map(|(path, text)| (path.to_string(), text.to_vec()))).unwrap()
    }

    /// The edited copy, compiled and run: the array is the arena's bytes at
    /// its offset, `&` and indexing keep their meaning, a quoted include
    /// beside the original still resolves, lines after the definition keep
    /// their numbers, and the appended step code is in the same copy.
    #[test]
    fn the_copy_keeps_the_array_s_meaning_in_the_arena() {
        let source = "#include <stdint.h>\n#include \"helper.h\"\n\
                      __attribute__((section(\".bss.noinit.tvm\"), aligned(16)))\nstatic uint8_t global_workspace[64];\n\
                      int line_after(void) { return __LINE__; }\n\
                      int32_t use_workspace(void) {\n  uint8_t* p = ((uint8_t*)&global_workspace);\n  p[3] = 7;\n  return global_workspace[3] + HELPER;\n}\n";
        let files: [(&str, &[u8]); 2] = [(LIB0, source.as_bytes()), ("codegen/host/src/helper.h", b"#define HELPER 1\n")];
        let tree = tree(&files);
        let found = find(&module(), &c_sources(&tree), &tree).unwrap().expect("found");
        assert_eq!((found.file.as_str(), found.line, found.bytes, found.alignment), (LIB0, 3, 64, 16));
        let edits = edits(&found, "mlf_arena_t", 32, 16).unwrap();
        let copy = apply(LIB0, source, &edits, "\nint32_t appended(void) { return 5; }\n").unwrap();
        assert!(copy.contains("#include \"../../../../../tree/codegen/host/src/helper.h\""), "{copy}");
        assert!(copy.contains("#define global_workspace (*(uint8_t (*)[64])(mlf_arena_t + 32))"), "{copy}");

        let dir = scratch("redirect-run");
        for (path, bytes) in files {
            let path = dir.join("tree").join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        let copy_file = dir.join("gen").join(copy_path(LIB0));
        std::fs::create_dir_all(copy_file.parent().unwrap()).unwrap();
        std::fs::write(&copy_file, copy).unwrap();
        let main = "#include <stdint.h>\nextern unsigned char mlf_arena_t[];\nint32_t use_workspace(void);\nint32_t appended(void);\nint line_after(void);\n\
                    int main(void) { return !(use_workspace() == 8 && mlf_arena_t[35] == 7 && appended() == 5 && line_after() == 5\n\
                    && (uintptr_t)mlf_arena_t % 16 == 0); }\n";
        std::fs::write(dir.join("main.c"), main).unwrap();
        run_ok(std::process::Command::new("cc").arg("-fno-common").arg("main.c").arg(&copy_file).args(["-o", "program"]).current_dir(&dir));
        run_ok(&mut std::process::Command::new(dir.join("program")));
    }

    /// The corpus's USMP workspace is found, and hostile variants of its
    /// source are refused naming the file, the line and the reason.
    #[test]
    fn hostile_variants_of_the_corpus_workspace_are_refused_with_the_reason() {
        let Some(corpus) = corpus_dir() else { return };
        let files = Tree::load(&corpus.join("tvm-0.18/kws_int8-aot_c_usmp/model.tar"), Default::default()).unwrap().into_files();
        let original = |path: &str| String::from_utf8(files[path].clone()).unwrap();
        let (lib0, lib1) = (original(LIB0), original(LIB1));
        let with = |edits: &[(&str, Vec<u8>)]| {
            let mut files = files.clone();
            for (path, bytes) in edits {
                files.insert(path.to_string(), bytes.clone());
            }
            let tree = Tree::from_files(files).unwrap();
            find(&module(), &c_sources(&tree), &tree)
        };
        let found = with(&[]).unwrap().expect("the corpus's workspace");
        assert_eq!((found.file.as_str(), found.bytes, found.alignment), (LIB0, 15378, 16));

        let definition = "static uint8_t global_workspace[15378];";
        let replaced = |to: &str| lib0.replace(definition, to).into_bytes();
        let appended = |text: &str| format!("{lib0}\n{text}\n").into_bytes();
        let mut non_utf8 = lib0.clone().into_bytes();
        non_utf8.extend(b"/* \xff */\n");
        let cases: Vec<Variant<'_>> = vec![
            (vec![(LIB0, appended("int f(void) { return (int)sizeof(global_workspace); }"))], "is used under `sizeof`"),
            (vec![(LIB0, appended("int f(void) { int global_workspace = 0; return global_workspace; }"))], "reads no use of the array"),
            (vec![(LIB0, appended("int f(struct s* s) { return s->global_workspace; }"))], "is also a member's name"),
            (vec![(LIB0, appended("#define WS global_workspace"))], "preprocessor line"),
            (vec![(LIB0, format!("extern uint8_t global_workspace[];\n{lib0}").into_bytes())], "before its definition"),
            (vec![(LIB1, format!("{lib1}\nstatic uint8_t global_workspace[8];\n").into_bytes())], "is defined twice"),
            (vec![(LIB0, replaced("static uint8_t global_workspace[15378] = {1};"))], "has an initializer"),
            (vec![(LIB0, replaced("static uint8_t* global_workspace[15378];"))], "not a plain array"),
            (vec![(LIB0, replaced("static uint8_t other[4], global_workspace[15378];"))], "declared together with `other`"),
            (vec![(LIB0, replaced("static const uint8_t global_workspace[15378];"))], "is const"),
            (vec![(LIB0, replaced("static my_byte global_workspace[15378];"))], "element type `my_byte`"),
            (vec![(LIB0, replaced("static uint64_t global_workspace[4294967296][4294967296];"))], "past 64 bits"),
            (vec![(LIB0, replaced("static float global_workspace[1073741824];"))], "more than the 1073741824 bytes"),
            (vec![(LIB0, lib0.replace("aligned(16)", "aligned(16), weak").into_bytes())], "the attribute `weak`"),
            (vec![(LIB0, lib0.replace("aligned(16)", "aligned(24)").into_bytes())], "no power of two"),
            (vec![(LIB0, format!("#define H \"x.h\"\n#include H\n{lib0}").into_bytes())], "`#include` through a macro"),
            (vec![(LIB0, format!("#if __has_include(\"x.h\")\n#endif\n{lib0}").into_bytes())], "`__has_include`"),
            (vec![(LIB0, non_utf8)], "not UTF-8"),
            (
                vec![
                    (LIB0, replaced("uint8_t global_workspace[15378];")),
                    (LIB1, format!("{lib1}\nextern uint8_t global_workspace[];\n").into_bytes()),
                ],
                "is not static and codegen/host/src/default_lib1.c names it too",
            ),
            (vec![("codegen/host/include/tvmgen_default.h", b"extern int global_workspace;\n".to_vec())], "is named by this header"),
        ];
        for (edits, reason) in cases {
            let error = with(&edits).err().unwrap_or_else(|| panic!("`{reason}` not refused"));
            let text = error.to_string();
            assert_eq!(error.kind(), ErrorKind::Config, "{text}");
            assert!(text.contains("module `default` cannot join an arena group") && text.contains(reason), "`{reason}`: {text}");
            assert!(error.file().is_some_and(|file| text.contains(file)), "{text}");
        }
    }

    /// Edits apply once, in span order; one that finds other text than it
    /// expects, or overlaps another, is refused rather than applied.
    #[test]
    fn edits_apply_in_order_and_refuse_stale_or_overlapping_spans() {
        let edit = |start, end, expected: &str, replacement: &str| SourceEdit {
            start,
            end,
            expected: expected.to_string(),
            replacement: replacement.to_string(),
        };
        let text = "int a; int b;";
        let edits = [edit(11, 12, "b", "y"), edit(4, 5, "a", "x")];
        assert_eq!(apply("f.c", text, &edits, "/* end */").unwrap(), "int x; int y;\n/* end */");
        assert!(apply("f.c", text, &[edit(4, 5, "b", "x")], "").unwrap_err().to_string().contains("changed since it was read"));
        let overlapping = [edit(0, 5, "int a", "x"), edit(4, 6, "a;", "y")];
        assert!(apply("f.c", text, &overlapping, "").is_err());
        assert!(apply("f.c", text, &[edit(10, 99, "", "")], "").is_err());
    }
}
