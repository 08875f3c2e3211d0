//! The top-level pass: one streaming pass over a C source's tokens that
//! keeps its directives and file-scope declarations ([`CSource`]), never
//! the tokens themselves. Function bodies are passed over by their braces
//! (parsed on first question, [`super::body`]); brace lists of numbers by the
//! lexer's byte loop ([`Lexer::skip_numeric_list`]). The bracket depth is
//! checked on every token ([`MAX_NESTING`]): no other pass counts it.
//! Text it does not recognise at file scope is passed over to the next `;`
//! or balanced `}`: never an error.

use std::cell::OnceCell;
use std::collections::HashSet;

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::input::c::lexer::{lex, Kind, Lexer, Token};
use crate::input::c::limits::{check_length, MAX_NESTING};
use crate::input::c::parser::body::{parse_initializer, Tok, TokKind};
use crate::input::c::parser::numeric::NumericList;
use crate::input::c::parser::syntax::{
    scalar_dtype, CSource, Define, Directive, Function, Include, Init, Member, Param, Prototype, Span, Struct, Variable,
    MAX_KEPT_INIT_TOKENS,
};
use crate::input::c::text::integer;

/// Most distinct identifiers one file may hold: TVM's largest sources hold
/// a few thousand; the bound keeps a file of distinct names within memory.
pub(crate) const MAX_DISTINCT_NAMES: usize = 1 << 20;

/// Most items (directives, declarations, parameters, members) kept of one
/// file: TVM's largest sources hold thousands.
pub(crate) const MAX_ITEMS: usize = 1 << 18;

/// Most tokens of one file-scope declaration before its body or
/// initializer: longer, it is passed over unread.
const MAX_HEAD_TOKENS: usize = 4096;

/// Most tokens of one struct member read.
const MAX_MEMBER_TOKENS: usize = 256;

/// Words that are no declared name.
const KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Bool",
    "bool",
    "__inline",
    "__inline__",
    "__restrict",
    "__restrict__",
    "__volatile__",
    "__extension__",
];

/// Attribute-like words whose parenthesised group is no declarator.
const ATTRIBUTES: &[&str] = &["__attribute__", "__attribute", "__declspec", "alignas", "_Alignas", "__asm__", "asm", "__asm"];

/// Reads `text` (the file `path`, a source or header) at file scope.
pub(crate) fn parse<'t>(path: &'t str, text: &'t str) -> Result<CSource<'t>> {
    check_length(path, text)?;
    let source = CSource {
        path,
        text,
        includes: Vec::new(),
        defines: Vec::new(),
        directives: Vec::new(),
        functions: Vec::new(),
        prototypes: Vec::new(),
        variables: Vec::new(),
        structs: Vec::new(),
        names: Vec::new(),
        name_set: HashSet::new(),
        called: HashSet::new(),
    };
    let mut parser = Parser { text, lexer: lex(text), raw_back: None, back: None, depth: 0, callee: None, items: 0, source };
    parser.file()?;
    Ok(parser.source)
}

fn span_of(token: &Token) -> Span {
    Span { start: token.start as u32, end: token.end as u32, line: token.line as u32 }
}

/// Whether a space token's text ends a line (a `\` continuing it aside).
fn ends_line(space: &str) -> bool {
    space.ends_with('\n') && !space.ends_with("\\\n") && !space.ends_with("\\\r\n")
}

struct Parser<'t> {
    text: &'t str,
    lexer: Lexer<'t>,
    /// A token read and given back.
    raw_back: Option<Token>,
    back: Option<Tok>,
    /// Open brackets.
    depth: usize,
    /// The identifier a `(` would call: the last token, or spaces and comments on its line since.
    callee: Option<&'t str>,
    items: usize,
    source: CSource<'t>,
}

/// The current file-scope declaration.
#[derive(Default)]
struct Head {
    tokens: Vec<Tok>,
    /// Open `(` and `[` among them.
    parens: usize,
    /// Past [`MAX_HEAD_TOKENS`]: passed over.
    overflow: bool,
    /// After a `struct`/`union`/`enum` body: the index the declarators start at.
    declarators_from: usize,
    /// A later declarator of `T a, b` (its tokens start with the first's
    /// specifiers): the declaration's start.
    continued: Option<Span>,
}

impl Head {
    fn clear(&mut self) {
        *self = Head::default();
    }
}

/// What a declaration's tokens declare.
struct Declared<'t> {
    /// Start of the declaration.
    start: Span,
    words: Vec<&'t str>,
    attributes: Vec<Span>,
    /// Index of the name among the tokens.
    name: Option<usize>,
    /// `(open, close)` of a function declarator's parameters.
    params: Option<(usize, usize)>,
    /// `[ ... ]` groups after the name: `(open, close)`.
    dims: Vec<(usize, usize)>,
}

impl<'t> Parser<'t> {
    fn text_of(&self, span: Span) -> &'t str {
        self.text.get(span.range()).unwrap_or_default()
    }

    fn count_item(&mut self) -> Result<()> {
        self.items += 1;
        if self.items > MAX_ITEMS {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("holds more than {MAX_ITEMS} directives, declarations, parameters and members (the limit)"),
            )
            .in_file(self.source.path)
            .help("TVM's generated C holds a few thousand: pass the archive as TVM wrote it"));
        }
        Ok(())
    }

    /// The next token, brackets and names counted.
    fn raw(&mut self) -> Result<Option<Token>> {
        if let Some(token) = self.raw_back.take() {
            return Ok(Some(token));
        }
        let Some(token) = self.lexer.next() else { return Ok(None) };
        match token.kind {
            Kind::Punctuator("(" | "[" | "{") => {
                self.open(token.line)?;
                if token.kind == Kind::Punctuator("(") {
                    if let Some(name) = self.callee {
                        self.source.called.insert(name);
                    }
                }
                self.callee = None;
            }
            Kind::Punctuator(")" | "]" | "}") => {
                self.depth = self.depth.saturating_sub(1);
                self.callee = None;
            }
            Kind::Identifier => {
                let name = token.text(self.text);
                if self.source.name_set.insert(name) {
                    self.source.names.push(name);
                    if self.source.names.len() > MAX_DISTINCT_NAMES {
                        return Err(Error::new(
                            ErrorKind::Unsupported,
                            format!("holds more than {MAX_DISTINCT_NAMES} distinct identifiers (the limit)"),
                        )
                        .in_file(self.source.path)
                        .help("TVM's largest C sources hold a few thousand: pass the archive as TVM wrote it"));
                    }
                }
                self.callee = Some(name);
            }
            Kind::Space | Kind::Comment => {
                if token.text(self.text).contains('\n') {
                    self.callee = None;
                }
            }
            // Brackets in a header name count too.
            Kind::HeaderName => {
                for byte in token.text(self.text).bytes() {
                    match byte {
                        b'(' | b'[' | b'{' => self.open(token.line)?,
                        b')' | b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                        _ => {}
                    }
                }
                self.callee = None;
            }
            _ => self.callee = None,
        }
        Ok(Some(token))
    }

    fn open(&mut self, line: usize) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("brackets nest deeper than {MAX_NESTING} levels (the limit) at line {line}"),
            )
            .in_file(self.source.path)
            .help("TVM's generated C nests a few levels deep; so deep a nesting is not code TVM wrote (Clang refuses it too)"));
        }
        Ok(())
    }

    /// The next significant token outside preprocessor lines (which are read on the way).
    fn next(&mut self) -> Result<Option<Tok>> {
        if let Some(tok) = self.back.take() {
            return Ok(Some(tok));
        }
        while let Some(token) = self.raw()? {
            if token.preprocessor {
                self.directive(token)?;
                continue;
            }
            let Some(kind) = TokKind::of(token.kind) else { continue };
            return Ok(Some(Tok { kind, span: span_of(&token) }));
        }
        Ok(None)
    }

    /// A preprocessor line from its first token to its end.
    fn directive(&mut self, first: Token) -> Result<()> {
        // Significant tokens of the line, up to the few each directive reads.
        let mut words: Vec<Token> = Vec::new();
        let mut last = first;
        let mut define_params: Option<Vec<&'t str>> = None;
        let mut params_open = false;
        // Where the macro's body starts: byte and line.
        let mut body_start: Option<(usize, usize)> = None;
        let mut token = Some(first);
        while let Some(current) = token {
            if !current.preprocessor {
                self.raw_back = Some(current);
                break;
            }
            match current.kind {
                Kind::Space if ends_line(current.text(self.text)) => break,
                Kind::Space | Kind::Comment => {}
                _ => {
                    last = current;
                    let is_define = words.len() >= 2 && words[1].text(self.text) == "define";
                    if is_define && words.len() == 3 && body_start.is_none() {
                        // After `# define NAME`: `(` touching the name opens its parameters.
                        if current.kind == Kind::Punctuator("(") && current.start == words[2].end && define_params.is_none() {
                            define_params = Some(Vec::new());
                            params_open = true;
                        } else if params_open {
                            match current.kind {
                                Kind::Punctuator(")") => params_open = false,
                                Kind::Identifier | Kind::Punctuator("...") => {
                                    self.count_item()?;
                                    if let Some(params) = define_params.as_mut() {
                                        params.push(current.text(self.text));
                                    }
                                }
                                _ => {}
                            }
                        } else {
                            body_start = Some((current.start, current.line));
                        }
                    } else if words.len() < 3 {
                        words.push(current);
                    }
                }
            }
            token = self.raw()?;
        }
        let span = Span { start: first.start as u32, end: last.end as u32, line: first.line as u32 };
        let Some(kind) = words.get(1).filter(|word| word.kind == Kind::Identifier) else { return Ok(()) };
        let kind = kind.text(self.text);
        match kind {
            "include" | "include_next" | "import" => {
                let Some(header) = words.get(2) else { return Ok(()) };
                let (header, angled) = match header.kind {
                    Kind::HeaderName => {
                        let name = header.text(self.text);
                        (name.strip_prefix('"').map(|name| name.strip_suffix('"').unwrap_or(name)).unwrap_or(name), false)
                    }
                    Kind::Punctuator("<") => {
                        let after = &self.text[header.end..last.end];
                        (after.split_once('>').map_or(after, |(name, _)| name).trim(), true)
                    }
                    _ => return Ok(()),
                };
                self.count_item()?;
                self.source.includes.push(Include { header, angled, span });
            }
            "define" => {
                let Some(name) = words.get(2).filter(|word| word.kind == Kind::Identifier) else { return Ok(()) };
                self.count_item()?;
                // No body: it ends at the name (or parameters), whose line a raw string may end past.
                let (start, line) = body_start.unwrap_or((last.end, last.line + last.text(self.text).matches('\n').count()));
                let body = Span { start: start as u32, end: span.end.max(start as u32), line: line as u32 };
                self.source.defines.push(Define { name: name.text(self.text), params: define_params, body, span });
            }
            "if" | "ifdef" | "ifndef" | "elif" | "else" | "endif" => {
                let after = words[1].end;
                let condition = self.text.get(after..span.end as usize).unwrap_or_default().trim();
                self.count_item()?;
                self.source.directives.push(Directive { kind, condition, span });
            }
            _ => {}
        }
        Ok(())
    }

    /// File scope, to the text's end.
    fn file(&mut self) -> Result<()> {
        let mut head = Head::default();
        // Open `extern "C" {` blocks.
        let mut extern_blocks = 0usize;
        while let Some(tok) = self.next()? {
            if head.overflow {
                match tok.kind {
                    TokKind::Punct(";") => head.clear(),
                    TokKind::Punct("{") => {
                        self.skip_braces()?;
                        head.clear();
                    }
                    _ => {}
                }
                continue;
            }
            if head.parens > 0 {
                match tok.kind {
                    TokKind::Punct("(" | "[") => head.parens += 1,
                    TokKind::Punct(")" | "]") => head.parens -= 1,
                    _ => {}
                }
                self.push(&mut head, tok);
                continue;
            }
            match tok.kind {
                TokKind::Punct("(" | "[") => {
                    head.parens += 1;
                    self.push(&mut head, tok);
                }
                TokKind::Punct(";") => {
                    self.declaration(&head, None, tok)?;
                    head.clear();
                }
                TokKind::Punct(",") => {
                    let declared = self.declaration(&head, None, tok)?;
                    self.continue_declaration(&mut head, declared);
                }
                TokKind::Punct("=") => {
                    let (init, end) = self.initializer()?;
                    let declared = self.declaration(&head, Some(init), end)?;
                    match end.kind {
                        TokKind::Punct(",") => self.continue_declaration(&mut head, declared),
                        _ => head.clear(),
                    }
                }
                TokKind::Punct("{") => self.braces(&mut head, tok, &mut extern_blocks)?,
                TokKind::Punct("}") => {
                    extern_blocks = extern_blocks.saturating_sub(1);
                    head.clear();
                }
                _ => self.push(&mut head, tok),
            }
        }
        Ok(())
    }

    fn push(&self, head: &mut Head, tok: Tok) {
        if head.tokens.len() >= MAX_HEAD_TOKENS {
            head.overflow = true;
            head.parens = 0;
        } else {
            head.tokens.push(tok);
        }
    }

    /// After `T a,`: the next declarator shares the specifiers.
    fn continue_declaration(&self, head: &mut Head, declared: Option<Declared<'t>>) {
        let tokens = std::mem::take(&mut head.tokens);
        head.clear();
        if let Some(Declared { start, name: Some(name), .. }) = declared {
            head.tokens = tokens[..name.min(tokens.len())].to_vec();
            head.continued = Some(start);
            head.declarators_from = head.tokens.len();
        }
    }

    /// A `{` at file scope: a function's body, a struct's members, an `extern "C"` block, or something passed over.
    fn braces(&mut self, head: &mut Head, open: Tok, extern_blocks: &mut usize) -> Result<()> {
        let plain = self.plain(head);
        let words: Vec<&str> = plain.iter().map(|&i| head.tokens[i].text(self.text)).collect();
        if let [extern_word, language] = head.tokens.as_slice() {
            if extern_word.text(self.text) == "extern" && language.kind == TokKind::Literal {
                *extern_blocks += 1;
                head.clear();
                return Ok(());
            }
        }
        let declared = self.declared(head);
        if let (Some(name), Some((params_open, params_close))) = (declared.name, declared.params) {
            let close = self.skip_braces()?;
            let body_end = close.map_or(self.text.len() as u32, |close| close.span.start);
            let end = close.map_or(self.text.len() as u32, |close| close.span.end);
            self.count_item()?;
            let params = self.params(head, params_open, params_close)?;
            let name_tok = head.tokens[name];
            self.source.functions.push(Function {
                name: name_tok.text(self.text),
                is_static: declared.words.contains(&"static"),
                returns: Span { end: name_tok.span.start.max(declared.start.start), ..declared.start },
                params,
                params_span: Span {
                    start: head.tokens[params_open].span.end,
                    end: head.tokens[params_close].span.start,
                    line: head.tokens[params_open].span.line,
                },
                body_span: Span { start: open.span.end, end: body_end.max(open.span.end), line: open.span.line },
                span: Span { end, ..declared.start },
                body: OnceCell::new(),
            });
            head.clear();
            return Ok(());
        }
        let tagged = words.iter().rposition(|word| matches!(*word, "struct" | "union" | "enum"));
        match tagged {
            Some(at) if at + 2 >= words.len() && plain[at] >= head.declarators_from => {
                let tag = words.get(at + 1).copied();
                if words[at] == "enum" {
                    self.skip_braces()?;
                } else {
                    let start = head.tokens.first().map_or(open.span, |first| first.span);
                    let (members, close) = self.members()?;
                    self.count_item()?;
                    let end = close.map_or(self.text.len() as u32, |close| close.span.end);
                    let name = tag.unwrap_or_default();
                    self.source.structs.push(Struct { name, members, span: Span { end, ..start } });
                }
                head.declarators_from = head.tokens.len();
            }
            _ => {
                self.skip_braces()?;
                head.clear();
            }
        }
        Ok(())
    }

    /// Passes over the braces opened by the last token; their closing `}`.
    fn skip_braces(&mut self) -> Result<Option<Tok>> {
        let mut depth = 1usize;
        while let Some(tok) = self.next()? {
            match tok.kind {
                TokKind::Punct("{") => depth += 1,
                TokKind::Punct("}") => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(Some(tok));
                    }
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// A struct's members after its `{`: each member's name; the closing `}`.
    fn members(&mut self) -> Result<(Vec<Member<'t>>, Option<Tok>)> {
        let mut members = Vec::new();
        let mut member: Vec<Tok> = Vec::new();
        let mut depth = 1usize;
        while let Some(tok) = self.next()? {
            match tok.kind {
                TokKind::Punct("{" | "(" | "[") => depth += 1,
                TokKind::Punct("}" | ")" | "]") => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok((members, Some(tok)));
                    }
                }
                TokKind::Punct(";" | ",") if depth == 1 => {
                    if let Some(found) = self.member(&member) {
                        self.count_item()?;
                        members.push(found);
                    }
                    // `T a, b;`: `b` shares the type (not `a`'s `*`).
                    if tok.kind != TokKind::Punct(",") {
                        member.clear();
                    } else {
                        member.retain(|tok| tok.kind != TokKind::Punct("[") && tok.kind != TokKind::Punct("]"));
                        member.pop();
                        while member.last().is_some_and(|tok| tok.kind == TokKind::Punct("*")) {
                            member.pop();
                        }
                    }
                    continue;
                }
                _ => {}
            }
            if member.len() < MAX_MEMBER_TOKENS {
                member.push(tok);
            }
        }
        Ok((members, None))
    }

    /// A member: its name, its last identifier at its own level before a
    /// `[`, `:` or attribute; a pointer when a `*` at that level comes before
    /// the name and no `[` after it.
    fn member(&self, member: &[Tok]) -> Option<Member<'t>> {
        let mut depth = 0usize;
        let mut name = None;
        let mut stars = false;
        let mut pointer = false;
        for (i, tok) in member.iter().enumerate() {
            match tok.kind {
                TokKind::Punct("{" | "(" | "[") => {
                    if depth == 0 && tok.kind == TokKind::Punct("[") && name.is_some() {
                        pointer = false;
                        break;
                    }
                    depth += 1;
                }
                TokKind::Punct("*") if depth == 0 => stars = true,
                TokKind::Punct("}" | ")" | "]") => depth = depth.saturating_sub(1),
                TokKind::Punct(":") if depth == 0 => break,
                TokKind::Ident if depth == 0 => {
                    let word = tok.text(self.text);
                    if ATTRIBUTES.contains(&word) && i > 0 {
                        break;
                    }
                    if !KEYWORDS.contains(&word) && !ATTRIBUTES.contains(&word) {
                        name = Some(word);
                        pointer = stars;
                    }
                }
                _ => {}
            }
        }
        name.filter(|_| member.len() > 1).map(|name| Member { name, pointer })
    }

    /// Indices of the head's tokens outside attributes and `extern "C"`, at its top level.
    fn plain(&self, head: &Head) -> Vec<usize> {
        let mut plain = Vec::new();
        let tokens = &head.tokens;
        let mut i = 0;
        while i < tokens.len() {
            let tok = tokens[i];
            if tok.kind == TokKind::Ident && ATTRIBUTES.contains(&tok.text(self.text)) {
                i = group_end(tokens, i + 1);
                continue;
            }
            if tok.kind == TokKind::Ident
                && tok.text(self.text) == "extern"
                && tokens.get(i + 1).is_some_and(|next| next.kind == TokKind::Literal)
            {
                i += 2;
                continue;
            }
            plain.push(i);
            i = match tok.kind {
                TokKind::Punct("(" | "[") => group_end(tokens, i),
                _ => i + 1,
            };
        }
        plain
    }

    /// What the head declares.
    fn declared(&self, head: &Head) -> Declared<'t> {
        let tokens = &head.tokens;
        let start = head.continued.or(tokens.first().map(|tok| tok.span)).unwrap_or_default();
        let mut declared = Declared { start, words: Vec::new(), attributes: Vec::new(), name: None, params: None, dims: Vec::new() };
        let mut i = 0;
        while i < tokens.len() {
            if tokens[i].kind == TokKind::Ident && ATTRIBUTES.contains(&tokens[i].text(self.text)) {
                let end = group_end(tokens, i + 1);
                if tokens[i].text(self.text).starts_with("__attribute") {
                    declared.attributes.push(tokens[i].span.to(tokens[end.saturating_sub(1).max(i)].span));
                }
                i = end;
                continue;
            }
            i += 1;
        }
        let plain = self.plain(head);
        for (position, &i) in plain.iter().enumerate() {
            let tok = tokens[i];
            match tok.kind {
                TokKind::Ident => {
                    let word = tok.text(self.text);
                    // `struct X y`: `X` is no name; `typedef struct { ... } y`: `y` is.
                    let after_tag = head.declarators_from == 0
                        && position > 0
                        && matches!(tokens[plain[position - 1]].text(self.text), "struct" | "union" | "enum");
                    let next_paren = plain.get(position + 1).is_some_and(|&next| tokens[next].kind == TokKind::Punct("("));
                    if declared.params.is_none() && next_paren && !KEYWORDS.contains(&word) && i >= head.declarators_from {
                        let close = group_end(tokens, plain[position + 1]) - 1;
                        if let Some(previous) = declared.name.replace(i) {
                            declared.words.push(tokens[previous].text(self.text));
                        }
                        declared.params = Some((plain[position + 1], close));
                        continue;
                    }
                    if declared.params.is_none() && !KEYWORDS.contains(&word) && !after_tag && i >= head.declarators_from {
                        if let Some(previous) = declared.name.replace(i) {
                            declared.words.push(tokens[previous].text(self.text));
                        }
                        continue;
                    }
                    if declared.params.is_none() {
                        declared.words.push(word);
                    }
                }
                TokKind::Punct("[") if declared.name.is_some() && declared.params.is_none() => {
                    declared.dims.push((i, group_end(tokens, i) - 1));
                }
                _ => {}
            }
        }
        if declared.params.is_none() && declared.dims.is_empty() {
            // A name that precedes the `[`s is the name, the later words are not.
            if let Some(name) = declared.name {
                declared.dims = plain
                    .iter()
                    .filter(|&&i| i > name && tokens[i].kind == TokKind::Punct("["))
                    .map(|&i| (i, group_end(tokens, i) - 1))
                    .collect();
            }
        }
        declared
    }

    /// Records the declaration in `head` ended by `end` (`;`, `,` or the initializer's end).
    fn declaration(&mut self, head: &Head, init: Option<Init<'t>>, end: Tok) -> Result<Option<Declared<'t>>> {
        if head.tokens.is_empty() {
            return Ok(None);
        }
        let declared = self.declared(head);
        let Some(name) = declared.name else { return Ok(None) };
        let span = Span { end: end.span.end, ..declared.start };
        let typedef = declared.words.contains(&"typedef");
        if typedef {
            // `typedef struct { ... } name;` names the struct it follows.
            if head.declarators_from > 0 {
                if let Some(last) = self.source.structs.last_mut() {
                    if last.name.is_empty() {
                        last.name = head.tokens[name].text(self.text);
                    }
                }
            }
            return Ok(Some(declared));
        }
        self.count_item()?;
        if let Some((open, close)) = declared.params {
            // `MACRO(x);` is no prototype.
            if declared.words.is_empty() {
                return Ok(Some(declared));
            }
            let params = self.params(head, open, close)?;
            let params_span =
                Span { start: head.tokens[open].span.end, end: head.tokens[close].span.start, line: head.tokens[open].span.line };
            self.source.prototypes.push(Prototype { name: head.tokens[name].text(self.text), params, params_span, span });
            return Ok(Some(declared));
        }
        if declared.words.is_empty() && head.continued.is_none() {
            return Ok(Some(declared));
        }
        let dims = declared
            .dims
            .iter()
            .map(|&(open, close)| match head.tokens.get(open + 1..close) {
                Some([number]) if number.kind == TokKind::Number => integer(number.text(self.text)),
                _ => None,
            })
            .collect();
        self.source.variables.push(Variable {
            name: head.tokens[name].text(self.text),
            is_static: declared.words.contains(&"static"),
            is_const: declared.words.contains(&"const"),
            type_words: declared.words.clone(),
            attributes: declared.attributes.clone(),
            dims,
            init,
            span,
        });
        // `T a, b;`: each variable spans the whole declaration.
        if end.kind == TokKind::Punct(";") {
            for variable in self.source.variables.iter_mut().rev().take_while(|variable| variable.span.start == span.start) {
                variable.span.end = span.end;
            }
        }
        Ok(Some(declared))
    }

    /// The parameters between the head's tokens `open` and `close`.
    fn params(&mut self, head: &Head, open: usize, close: usize) -> Result<Vec<Param<'t>>> {
        let mut params = Vec::new();
        let mut depth = 0usize;
        let mut piece_start = open + 1;
        for i in open + 1..=close {
            let tok = head.tokens[i];
            let ends_piece = i == close || (depth == 0 && tok.kind == TokKind::Punct(","));
            match tok.kind {
                TokKind::Punct("(" | "[") => depth += 1,
                TokKind::Punct(")" | "]") => depth = depth.saturating_sub(1),
                _ => {}
            }
            if !ends_piece {
                continue;
            }
            let piece = &head.tokens[piece_start..i];
            piece_start = i + 1;
            let (Some(first), Some(last)) = (piece.first(), piece.last()) else { continue };
            self.count_item()?;
            let name = piece.iter().rev().find(|tok| tok.kind == TokKind::Ident).map_or("", |tok| tok.text(self.text));
            let pointer = piece.iter().any(|tok| tok.kind == TokKind::Punct("*"));
            let dtype = self.param_dtype(piece);
            params.push(Param { text: self.text_of(first.span.to(last.span)), name, pointer, dtype });
        }
        Ok(params)
    }

    /// The scalar type a parameter's words before its first `*` spell, a
    /// leading `const` left out; comments and spacing between them do not count.
    fn param_dtype(&self, piece: &[Tok]) -> Option<DType> {
        let words = piece.iter().take_while(|tok| tok.kind != TokKind::Punct("*")).map(|tok| tok.text(self.text));
        let words: Vec<&str> = words.collect();
        let words = words.strip_prefix(&["const"]).unwrap_or(&words);
        scalar_dtype(&words.join(" "))
    }

    /// A file-scope initializer after its `=`, to its `,` or `;` (or a `}`
    /// closing the block it is in): what it is, and the token that ended it.
    fn initializer(&mut self) -> Result<(Init<'t>, Tok)> {
        let mut kept: Vec<Tok> = Vec::new();
        let mut overflow = false;
        let mut depth = 0usize;
        // When it opens with a `{` the fast path did not pass over: the token
        // path's rule, and its answer at the list's `}` (tokens after it: no list).
        let mut numeric: Option<NumericList> = None;
        let mut numeric_answer: Option<(bool, u64)> = None;
        let mut after_list = false;
        let mut first: Option<Span> = None;
        let mut last: Option<Span> = None;
        let mut previous: Option<TokKind> = Some(TokKind::Punct("="));
        let end = loop {
            let Some(mut tok) = self.next()? else {
                let at = self.text.len() as u32;
                break Tok { kind: TokKind::Punct(";"), span: Span { start: at, end: at, line: self.lexer.line() as u32 } };
            };
            match tok.kind {
                TokKind::Punct("," | ";") if depth == 0 => break tok,
                TokKind::Punct("}") if depth == 0 => {
                    self.back = Some(tok);
                    break Tok { kind: TokKind::Punct(";"), span: Span { end: tok.span.start, ..tok.span } };
                }
                TokKind::Punct("{") if matches!(previous, Some(TokKind::Punct("=" | "{" | ","))) => {
                    if let Some(elements) = self.lexer.skip_numeric_list(MAX_NESTING - self.depth) {
                        self.depth -= 1;
                        tok = Tok {
                            kind: TokKind::NumericList(elements),
                            span: tok.span.to(Span { end: self.lexer.offset() as u32, ..tok.span }),
                        };
                    }
                }
                _ => {}
            }
            first.get_or_insert(tok.span);
            last = Some(tok.span);
            match (&mut numeric, tok.kind) {
                _ if numeric_answer.is_some() => after_list = true,
                (Some(list), TokKind::NumericList(_)) => list.feed_numeric_list(),
                (Some(list), kind) => {
                    let kind = match kind {
                        TokKind::Punct(punct) => Kind::Punctuator(punct),
                        TokKind::Number => Kind::Number,
                        _ => Kind::Identifier,
                    };
                    numeric_answer = list.feed(kind, tok.text(self.text));
                }
                (None, TokKind::Punct("{")) if kept.is_empty() => numeric = Some(NumericList::new()),
                _ => {}
            }
            match tok.kind {
                TokKind::Punct("(" | "[" | "{") => depth += 1,
                TokKind::Punct(")" | "]" | "}") => depth = depth.saturating_sub(1),
                _ => {}
            }
            previous = Some(tok.kind);
            if kept.len() < MAX_KEPT_INIT_TOKENS {
                kept.push(tok);
            } else {
                overflow = true;
            }
        };
        let span = match (first, last) {
            (Some(first), Some(last)) => first.to(last),
            _ => Span { end: end.span.start, ..end.span },
        };
        let init = match (kept.as_slice(), numeric_answer) {
            ([Tok { kind: TokKind::NumericList(elements), .. }], _) => Init::Numeric { elements: *elements, span },
            (_, Some((true, elements))) if !after_list => Init::Numeric { elements, span },
            _ if overflow => Init::Long { span },
            _ => parse_initializer(self.text, &kept).map_or(Init::Long { span }, Init::Tree),
        };
        Ok((init, end))
    }
}

/// The index after the bracketed group opening at `open` (or after `open` when it opens none).
fn group_end(tokens: &[Tok], open: usize) -> usize {
    if !matches!(tokens.get(open).map(|tok| tok.kind), Some(TokKind::Punct("(" | "["))) {
        return open.min(tokens.len());
    }
    let mut depth = 0usize;
    for (i, tok) in tokens.iter().enumerate().skip(open) {
        match tok.kind {
            TokKind::Punct("(" | "[") => depth += 1,
            TokKind::Punct(")" | "]") => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::archive::Tree;
    use crate::input::c::parser::syntax::{Expr, Initializer, Stmt, StmtKind};
    use crate::input::c::{strip_comments, FunctionIndex};

    fn parsed(text: &str) -> CSource<'_> {
        parse("test.c", text).unwrap_or_else(|error| panic!("{error}"))
    }

    fn member_names<'t>(found: &Struct<'t>) -> Vec<&'t str> {
        found.members.iter().map(|member| member.name).collect()
    }

    fn function_names<'t>(source: &CSource<'t>) -> Vec<&'t str> {
        source.functions.iter().map(|function| function.name).collect()
    }

    /// `//` and `/*` inside string and character literals are text, and
    /// characters of several bytes (in comments, literals and code) are no
    /// declaration's part.
    #[test]
    fn comment_openers_in_literals_and_multibyte_text() {
        let text = "const char* s = \"a // b /* c\"; /* é€ { */ char q = '\"'; int f(void) { return '{'; } // g() {\n\
                    int h(int x) { return x; /* } */ } const char* u = \"π\\é}\"; €x; int k(void) { }";
        let source = parsed(text);
        assert_eq!(function_names(&source), ["f", "h", "k"]);
        let variables: Vec<&str> = source.variables.iter().map(|variable| variable.name).collect();
        assert_eq!(variables, ["s", "q", "u"]);
        assert!(source.mentions("h") && !source.mentions("g") && !source.mentions("c"));
        assert!(source.called().any(|name| name == "h") && !source.called().any(|name| name == "g"));
        let h = source.function("h").unwrap();
        assert_eq!(source.text_of(h.span), "int h(int x) { return x; /* } */ }");
        assert_eq!(h.params, [Param { text: "int x", name: "x", pointer: false, dtype: None }]);
        assert_eq!((source.text_of(h.returns).trim(), h.is_static), ("int", false));
        assert_eq!(source.names()[..5], ["const", "char", "s", "q", "int"]);
        assert!(matches!(h.body(&source).statements.as_slice(), [Stmt { kind: StmtKind::Return(Some(_)), .. }]));
    }

    /// Attributes before and after a declarator are the variable's, each with its span;
    /// `extern "C"` (as a block or one declaration's prefix) is passed through.
    #[test]
    fn attributes_and_extern_c() {
        let text = "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\
                    __attribute__((section(\".bss.noinit.tvm\"), aligned(16)))\nstatic uint8_t global_workspace[4235264];\n\
                    static uint8_t pool[N] __attribute__((aligned(16)));\n\
                    extern \"C\" TVM_DLL int32_t tvmgen_default_run(void* a, float* b);\n\
                    #ifdef __cplusplus\n}\n#endif\nstatic int after(void) { return 0; }\n";
        let source = parsed(text);
        let [workspace, pool] = source.variables.as_slice() else { panic!("{:?}", source.variables) };
        assert_eq!((workspace.name, workspace.dims.as_slice(), workspace.is_static), ("global_workspace", &[Some(4235264)][..], true));
        assert_eq!(workspace.type_words, ["static", "uint8_t"]);
        assert_eq!(workspace.attributes.len(), 1);
        assert_eq!(source.text_of(workspace.attributes[0]), "__attribute__((section(\".bss.noinit.tvm\"), aligned(16)))");
        assert!(source.text_of(workspace.span).ends_with("global_workspace[4235264];"));
        assert_eq!((pool.name, pool.dims.as_slice()), ("pool", &[None][..]));
        assert_eq!(source.text_of(pool.attributes[0]), "__attribute__((aligned(16)))");
        let [run] = source.prototypes.as_slice() else { panic!("{:?}", source.prototypes) };
        assert_eq!(run.name, "tvmgen_default_run");
        assert_eq!(run.params.iter().map(|param| (param.name, param.pointer)).collect::<Vec<_>>(), [("a", true), ("b", true)]);
        assert_eq!(function_names(&source), ["after"]);
        assert_eq!((source.text_of(source.functions[0].returns).trim(), source.functions[0].is_static), ("static int", true));
        let kinds: Vec<(&str, &str)> = source.directives.iter().map(|directive| (directive.kind, directive.condition)).collect();
        assert_eq!(kinds, [("ifdef", "__cplusplus"), ("endif", ""), ("ifdef", "__cplusplus"), ("endif", "")]);
    }

    /// Includes, and `#define`s with continuation lines, parameters and comments.
    #[test]
    fn includes_and_defines() {
        let text = "#include \"tvm/runtime/c_runtime_api.h\"\n#include <stdint.h>\n\
                    #define TVMGEN_DEFAULT_DATA_SIZE 784 // bytes\n\
                    #define MAX(a, b) \\\n  ((a) > (b) ? (a) : (b))\n#define EMPTY\n#define NOT_FN (x)\nint x = MAX(1, 2);\n";
        let source = parsed(text);
        let includes: Vec<(&str, bool)> = source.includes.iter().map(|include| (include.header, include.angled)).collect();
        assert_eq!(includes, [("tvm/runtime/c_runtime_api.h", false), ("stdint.h", true)]);
        let defines: Vec<(&str, Option<Vec<&str>>, &str, u32)> = source
            .defines
            .iter()
            .map(|define| (define.name, define.params.clone(), source.text_of(define.body), define.span.line))
            .collect();
        assert_eq!(
            defines,
            [
                ("TVMGEN_DEFAULT_DATA_SIZE", None, "784", 3),
                ("MAX", Some(vec!["a", "b"]), "((a) > (b) ? (a) : (b))", 4),
                ("EMPTY", None, "", 6),
                ("NOT_FN", None, "(x)", 7),
            ]
        );
        assert!(source.called().any(|name| name == "MAX"));
        let [x] = source.variables.as_slice() else { panic!() };
        assert_eq!(x.span.line, 8);
        assert!(matches!(&x.init, Some(Init::Tree(Initializer::Expr(Expr::Call { callee: "MAX", .. })))));
    }

    /// The byte loop over numbers and the tokens (which read the same list
    /// when a comment stops the loop) count the same items on the same lines.
    #[test]
    fn numeric_fast_path_and_tokens_agree() {
        let lists = [
            "{0x1.481eeep-6, -0x1.d2fecep-7, 1e-05f,\n 0x1p+0   , .5, 16u, -+3}",
            "{{1, 2}, {3,\n4,}, {}}",
            "{}",
            "{1,\n2,\n3,\n}",
            "{--1, 0xe}",
        ];
        for list in lists {
            let commented = list.replacen(',', ", /* c */", 1).replacen('{', "{ /* c */", 1);
            let mut answers = Vec::new();
            for init in [list.to_string(), commented] {
                let text = format!("float w[] = {init};\nint after;\n");
                let source = parsed(&text);
                let Some(Init::Numeric { elements, span }) = source.variables[0].init else { panic!("{text}: {:?}", source.variables[0]) };
                assert_eq!(source.text_of(span), init);
                answers.push((elements, source.variables[1].span.line));
            }
            assert_eq!(answers[0], answers[1], "{list}");
        }
        // Not numbers only: read as tokens, by either path.
        for list in ["{0xe+1}", "{a, b}", "{1, , 2}", "{1 2}", "{-}", "{1'000}", "{.x = 1}", "{1, {2}, x}", "{NAN}"] {
            let text = format!("float w[] = {list};");
            let source = parsed(&text);
            assert!(!matches!(source.variables[0].init, Some(Init::Numeric { .. })), "{list}: {:?}", source.variables[0].init);
        }
        assert_eq!(
            parsed("int w[2][2] = {{1, 2}, {3, 4}};").variables[0].init,
            Some(Init::Numeric { elements: 2, span: Span { start: 14, end: 30, line: 1 } })
        );
    }

    /// TVM's weights: a designated initializer of numeric lists, each counted.
    #[test]
    fn designated_weights_and_descriptors() {
        let text = "static const struct global_const_workspace {\n  float a_let[3] __attribute__((aligned(16)));\n  float b_let[2];\n} \
                    global_const_workspace = {\n  .a_let = {\n 0x1p+0, -0x1p+0, 0x0p+0\n  },\n  .b_let = {1, 2},\n};\n\
                    tvm_model_t tvmgen_default_network = {\n    .run_func = &tvmgen_default_run,\n    .num_input_tensors = 1,\n    .num_output_tensors = 2,\n};\n";
        let source = parsed(text);
        let [workspace] = source.structs.as_slice() else { panic!("{:?}", source.structs) };
        assert_eq!((workspace.name, member_names(workspace)), ("global_const_workspace", vec!["a_let", "b_let"]));
        let [weights, network] = source.variables.as_slice() else { panic!("{:?}", source.variables) };
        assert_eq!(weights.name, "global_const_workspace");
        assert_eq!(weights.type_words, ["static", "const", "struct", "global_const_workspace"]);
        let Some(Init::Tree(Initializer::List(items))) = &weights.init else { panic!("{:?}", weights.init) };
        let counted: Vec<(Option<&str>, u64)> = items
            .iter()
            .map(|(designator, item)| match item {
                Initializer::Numeric { elements, .. } => (*designator, *elements),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(counted, [(Some("a_let"), 3), (Some("b_let"), 2)]);
        assert_eq!(network.type_words, ["tvm_model_t"]);
        let Some(Init::Tree(Initializer::List(fields))) = &network.init else { panic!("{:?}", network.init) };
        let designators: Vec<Option<&str>> = fields.iter().map(|(designator, _)| *designator).collect();
        assert_eq!(designators, [Some("run_func"), Some("num_input_tensors"), Some("num_output_tensors")]);
        assert_eq!(fields[1].1, Initializer::Expr(Expr::Int(1)));
    }

    #[test]
    fn struct_definitions() {
        let text = "struct tvmgen_default_inputs {\n  void* data;\n  float* x[2];\n};\n\
                    typedef struct { int32_t n, h; uint8_t flag : 1; } cmsis_nn_dims_t;\nstruct later;\n";
        let source = parsed(text);
        let structs: Vec<(&str, Vec<&str>)> = source.structs.iter().map(|s| (s.name, member_names(s))).collect();
        assert_eq!(structs, [("tvmgen_default_inputs", vec!["data", "x"]), ("cmsis_nn_dims_t", vec!["n", "h", "flag"])]);
        let pointers: Vec<bool> = source.structs[0].members.iter().chain(&source.structs[1].members).map(|m| m.pointer).collect();
        assert_eq!(pointers, [true, false, false, false, false], "an array of pointers is no pointer");
        let shared = parsed("struct s { int *a, b, *c; };\n");
        let pointers: Vec<(&str, bool)> = shared.structs[0].members.iter().map(|m| (m.name, m.pointer)).collect();
        assert_eq!(pointers, [("a", true), ("b", false), ("c", true)]);
        assert!(source.variables.is_empty(), "{:?}", source.variables);
    }

    /// An unclosed body runs to the text's end; text at file scope the pass
    /// does not recognise is passed over to its `;` or balanced `}`.
    #[test]
    fn unclosed_body_and_unrecognised_text() {
        let source = parsed("int f(void) {\n  if (x) {\n    return 1;\n");
        assert_eq!(function_names(&source), ["f"]);
        let f = &source.functions[0];
        assert_eq!(f.body_span.end as usize, source.text().len());
        let body = f.body(&source);
        let [Stmt { kind: StmtKind::If { then, .. }, .. }] = body.statements.as_slice() else { panic!("{:?}", body.statements) };
        assert_eq!(then.kind, StmtKind::Unparsed);
        let source = parsed("@@ ) ] } ; { a b c } = 3; int g(void) { return 0; }");
        assert_eq!(function_names(&source), ["g"]);
    }

    /// 100 000 `(` are refused at the line where the limit is crossed.
    #[test]
    fn deep_brackets_are_refused_at_their_line() {
        let text = format!("int x;\n\nint y = {};", "(".repeat(100_000));
        let error = parse("deep.c", &text).expect_err("refused");
        assert!(error.to_string().contains("brackets nest deeper than 256 levels (the limit) at line 3"), "{error}");
        assert_eq!(error.file(), Some("deep.c"));
        // In a header name and a numeric list (where the byte loop passes over brackets) too.
        for text in [format!("#include \"{}\"\n", "(".repeat(300)), format!("int w[] = {}1{};", "{".repeat(300), "}".repeat(300))] {
            let error = parse("deep.c", &text).expect_err("refused");
            assert!(error.to_string().contains("brackets nest deeper than 256 levels (the limit) at line 1"), "{error}");
        }
    }

    #[test]
    fn distinct_names_are_bounded() {
        let text: String = (0..=MAX_DISTINCT_NAMES).map(|i| format!("n{i}\n")).collect();
        let error = parse("names.c", &text).expect_err("refused");
        assert!(error.to_string().contains(&format!("more than {MAX_DISTINCT_NAMES} distinct identifiers")), "{error}");
        let text: String = (0..=MAX_ITEMS).map(|_| "int a;\n").collect();
        let error = parse("items.c", &text).expect_err("refused");
        assert!(error.to_string().contains(&format!("more than {MAX_ITEMS} directives")), "{error}");
    }

    /// The C sources and headers of an archive's generated code, as `(path, text)`.
    fn generated_c(tar: &std::path::Path) -> Vec<(String, String)> {
        let tree = Tree::load(tar, Default::default()).unwrap_or_else(|error| panic!("{error}"));
        let paths: Vec<String> =
            tree.files_under("codegen/host/src").chain(tree.files_under("codegen/host/include")).map(str::to_string).collect();
        paths
            .into_iter()
            .filter(|path| path.rsplit_once('.').is_some_and(|(_, ext)| matches!(ext, "c" | "cc" | "cpp" | "h")))
            .map(|path| {
                let text = String::from_utf8_lossy(tree.get(&path).unwrap_or_default()).into_owned();
                (path, text)
            })
            .collect()
    }

    /// Every C file of every corpus archive parses, every body parses, and
    /// the functions defined are those the old scanner finds, but for the
    /// function-like macros whose body is a block: the old scanner read
    /// `#define` lines as code and took them for functions.
    #[test]
    fn corpus_parses_and_defines_what_function_index_finds() {
        let Some(dir) = crate::test_support::corpus_dir() else { return };
        let tars: Vec<_> = glob::glob(&format!("{}/**/model.tar", dir.display())).unwrap().map(|p| p.unwrap()).collect();
        let mut files = 0;
        for tar in &tars {
            for (path, text) in generated_c(tar) {
                let source = parse(&path, &text).unwrap_or_else(|error| panic!("{}: {error}", tar.display()));
                let mut new: Vec<&str> = function_names(&source);
                new.sort_unstable();
                new.dedup();
                let code = strip_comments(&text);
                let index = FunctionIndex::of(&code);
                let macros: Vec<&str> = source.defines.iter().filter(|define| define.params.is_some()).map(|define| define.name).collect();
                let mut old: Vec<&str> = index.names().filter(|name| !macros.contains(name)).collect();
                old.sort_unstable();
                assert_eq!(new, old, "{}: {path}", tar.display());
                for function in &source.functions {
                    function.body(&source);
                }
                files += 1;
            }
        }
        assert!(files >= 20, "{files} files");
    }

    /// How fast the pass reads mobilenet's 51 MB of weights (`--nocapture` shows it).
    #[test]
    fn mobilenet_weights_parse_speed() {
        let Some(dir) = crate::test_support::corpus_dir() else { return };
        let tar = dir.join("tvm-0.18/mobilenet_f32-aot_c/model.tar");
        let tree = Tree::load(&tar, Default::default()).unwrap();
        let text = String::from_utf8_lossy(tree.get("codegen/host/src/default_lib0.c").unwrap()).into_owned();
        let started = std::time::Instant::now();
        let source = parse("default_lib0.c", &text).unwrap();
        let seconds = started.elapsed().as_secs_f64();
        let weights = source.variables.iter().find(|variable| variable.name == "global_const_workspace").unwrap();
        let Some(Init::Tree(Initializer::List(items))) = &weights.init else { panic!("{:?}", weights.init) };
        assert!(items.iter().all(|(_, item)| matches!(item, Initializer::Numeric { .. })));
        assert_eq!(source.structs[0].members.len(), items.len());
        let started = std::time::Instant::now();
        let tokens = crate::input::c::lexer::lex(&text).count();
        let lexed = started.elapsed().as_secs_f64();
        println!(
            "default_lib0.c: {} bytes parsed in {seconds:.3} s ({:.0} MB/s); lexing its {tokens} tokens alone takes {lexed:.3} s",
            text.len(),
            text.len() as f64 / seconds / 1e6
        );
    }
}
