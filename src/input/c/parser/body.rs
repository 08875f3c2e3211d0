//! The statements and expressions of one function body, read from its
//! span on first question ([`Function::body`]), and the file-scope
//! initializers [`super::parse`] keeps as trees. The decisions are those of
//! `loops.rs`'s reader (which declaration, which cast, `case`, `sizeof`);
//! what it does not read is [`StmtKind::Unparsed`], never a guess. Nesting
//! is bounded by [`MAX_DEPTH`], size by [`MAX_BODY_TOKENS`].

use std::collections::BTreeSet;

use crate::input::c::lexer::Kind;
use crate::input::c::limits::MAX_NESTING;
use crate::input::c::parser::numeric::lex_at;
use crate::input::c::parser::syntax::{Body, CSource, Declarator, Expr, Function, Initializer, Span, Stmt, StmtKind};
use crate::input::c::text::integer;

/// Nesting allowed in statements and expressions (chains counted): deeper
/// code is not TVM's. The rule of `loops.rs`'s reader, which this parser
/// replaces (plan33 step 10).
pub(crate) const MAX_DEPTH: usize = 200;

/// Most tokens of a body read: TVM's largest operators hold tens of
/// thousands. A longer body is one [`StmtKind::Unparsed`].
pub(crate) const MAX_BODY_TOKENS: usize = 1 << 20;

/// A significant token (no space or comment), as the parsers read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tok {
    pub kind: TokKind,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokKind {
    Ident,
    Number,
    Literal,
    Punct(&'static str),
    /// A brace list of numbers only, passed over whole: its outer items.
    NumericList(u64),
    /// `#`, `##` or a character C has no token for.
    Foreign,
}

impl TokKind {
    /// What the parser reads of a lexer token; `None` for spaces and comments.
    pub(crate) fn of(kind: Kind) -> Option<TokKind> {
        Some(match kind {
            Kind::Space | Kind::Comment => return None,
            Kind::Identifier => TokKind::Ident,
            Kind::Number => TokKind::Number,
            Kind::Literal | Kind::HeaderName => TokKind::Literal,
            Kind::Punctuator("#" | "##") | Kind::Other => TokKind::Foreign,
            Kind::Punctuator(punct) => TokKind::Punct(punct),
        })
    }
}

impl Tok {
    pub fn text<'t>(&self, text: &'t str) -> &'t str {
        text.get(self.span.range()).unwrap_or_default()
    }
}

impl<'t> Function<'t> {
    /// The body's statements, parsed on first call (from `source`, the file it is in).
    pub fn body(&self, source: &CSource<'t>) -> &Body<'t> {
        self.body.get_or_init(|| parse_body(source.text(), self.body_span))
    }
}

/// Parses the body at `span` (inside its braces) of `text`.
pub(crate) fn parse_body(text: &str, span: Span) -> Body<'_> {
    let mut body = Body::default();
    let mut tokens = Vec::new();
    let mut lexer = lex_at(text, span.start as usize, span.line as usize);
    // The identifier a `(` would make called, while only spaces and comments on its line follow it.
    let mut callee: Option<Tok> = None;
    let mut previous: Option<&'static str> = None;
    while lexer.offset() < span.end as usize {
        let Some(token) = lexer.next() else { break };
        let tok_span = Span { start: token.start as u32, end: token.end as u32, line: token.line as u32 };
        match token.kind {
            Kind::Space | Kind::Comment => {
                if token.text(text).contains('\n') {
                    callee = None;
                }
                continue;
            }
            Kind::Punctuator("(") => {
                if let Some(name) = callee.take() {
                    body.called.push((name.text(text), name.span));
                }
            }
            Kind::Identifier => callee = Some(Tok { kind: TokKind::Ident, span: tok_span }),
            _ => callee = None,
        }
        // Preprocessor lines name calls (`#define`d bodies) but are no statements.
        if token.preprocessor {
            continue;
        }
        let Some(kind) = TokKind::of(token.kind) else { continue };
        if kind == TokKind::Foreign {
            body.foreign = true;
        }
        let mut tok = Tok { kind, span: tok_span };
        // Weights in a body: `= {` numbers `}` passed over whole.
        if kind == TokKind::Punct("{") && previous == Some("=") {
            if let Some(elements) = lexer.skip_numeric_list(MAX_NESTING) {
                tok = Tok { kind: TokKind::NumericList(elements), span: tok_span.to(Span { end: lexer.offset() as u32, ..tok_span }) };
            }
        }
        previous = match tok.kind {
            TokKind::Punct(punct) => Some(punct),
            _ => None,
        };
        if tokens.len() == MAX_BODY_TOKENS {
            return Body { statements: vec![Stmt { kind: StmtKind::Unparsed, span }], ..body };
        }
        tokens.push(tok);
    }
    body.assigned = assigned(text, &tokens);
    let mut reader = Reader { text, tokens: &tokens, at: 0, depth: 0 };
    while reader.at < tokens.len() {
        let statement = reader.statement();
        body.statements.push(statement);
    }
    body
}

/// A file-scope initializer's tokens (after its `=`) as a tree, `None` when they do not read as one.
pub(crate) fn parse_initializer<'t>(text: &'t str, tokens: &[Tok]) -> Option<Initializer<'t>> {
    let mut reader = Reader { text, tokens, at: 0, depth: 0 };
    let init = reader.initializer()?;
    (reader.at == tokens.len()).then_some(init)
}

/// Variables the body assigns after their declaration (`x = ...`, `x += ...`,
/// `++x`), other than a `for` header's step: they have no one range.
fn assigned<'t>(text: &'t str, tokens: &[Tok]) -> BTreeSet<&'t str> {
    let mut names = BTreeSet::new();
    let at = |i: Option<usize>| i.and_then(|i| tokens.get(i)).map(|token| token.kind);
    for (i, token) in tokens.iter().enumerate() {
        let TokKind::Punct(op) = token.kind else { continue };
        let before = i.checked_sub(1);
        match op {
            "++" | "--" => {
                let after = Some(i + 1);
                let step = |t: Option<TokKind>| t == Some(TokKind::Punct(";"));
                let step_end = |t: Option<TokKind>| t == Some(TokKind::Punct(")"));
                for (side, other, other_side) in [(after, before, Some(i + 2)), (before, after, i.checked_sub(2))] {
                    if at(side) == Some(TokKind::Ident) {
                        let in_for_step = (step(at(other)) && step_end(at(other_side))) || (step_end(at(other)) && step(at(other_side)));
                        if !in_for_step {
                            names.insert(tokens[side.unwrap_or(i)].text(text));
                        }
                    }
                }
            }
            "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "&=" | "|=" | "^=" | "<<=" | ">>=" => {
                let Some(before) = before.filter(|&b| tokens[b].kind == TokKind::Ident) else { continue };
                // `T name = ...` declares; `; name = ...` assigns.
                let declared = matches!(at(before.checked_sub(1)), Some(TokKind::Ident | TokKind::Punct("*")));
                if !declared || op != "=" {
                    names.insert(tokens[before].text(text));
                }
            }
            _ => {}
        }
    }
    names
}

const INTEGER_TYPES: &[&str] = &[
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "int", "long", "short", "unsigned", "size_t",
];
const CAST_TYPES: &[&str] = &["float", "double", "char", "void", "bool", "signed"];
const KEYWORDS: &[&str] =
    &["if", "else", "for", "while", "do", "switch", "case", "default", "return", "break", "continue", "goto", "sizeof"];
const ASSIGN: &[&str] = &["=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="];

struct Reader<'t, 'k> {
    text: &'t str,
    tokens: &'k [Tok],
    at: usize,
    depth: usize,
}

impl<'t> Reader<'t, '_> {
    fn peek(&self) -> Option<Tok> {
        self.tokens.get(self.at).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<Tok> {
        self.tokens.get(self.at + offset).copied()
    }

    fn kind_at(&self, offset: usize) -> Option<TokKind> {
        self.peek_at(offset).map(|token| token.kind)
    }

    fn is(&self, punct: &str) -> bool {
        matches!(self.kind_at(0), Some(TokKind::Punct(p)) if p == punct)
    }

    fn word_at(&self, offset: usize) -> Option<&'t str> {
        let token = self.peek_at(offset)?;
        (token.kind == TokKind::Ident).then(|| token.text(self.text))
    }

    fn is_word(&self, word: &str) -> bool {
        self.word_at(0) == Some(word)
    }

    fn expect(&mut self, punct: &str) -> Option<()> {
        self.is(punct).then(|| self.at += 1)
    }

    fn ident(&mut self) -> Option<(&'t str, Span)> {
        let word = self.word_at(0)?;
        let span = self.tokens[self.at].span;
        self.at += 1;
        Some((word, span))
    }

    /// The span from token `first` to the last token read.
    fn span_from(&self, first: usize) -> Span {
        let start = self.tokens.get(first).map(|token| token.span).unwrap_or_default();
        match self.at.checked_sub(1).and_then(|last| self.tokens.get(last)) {
            Some(last) if self.at > first => start.to(last.span),
            _ => Span { end: start.start, ..start },
        }
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        self.depth += 1;
        let result = if self.depth > MAX_DEPTH { None } else { f(self) };
        self.depth -= 1;
        result
    }

    /// One statement; [`StmtKind::Unparsed`] over its tokens (to the next `;`
    /// or `}` at its depth) when it does not read.
    fn statement(&mut self) -> Stmt<'t> {
        let first = self.at;
        match self.nested(|r| r.statement_inner()) {
            Some(kind) => Stmt { kind, span: self.span_from(first) },
            None => {
                self.at = first;
                self.skip_statement();
                Stmt { kind: StmtKind::Unparsed, span: self.span_from(first) }
            }
        }
    }

    /// Past the statement at the cursor: its `;` at bracket depth 0, or up to a
    /// `}` closing its block; at least one token.
    fn skip_statement(&mut self) {
        let mut depth = 0usize;
        let first = self.at;
        while let Some(kind) = self.kind_at(0) {
            match kind {
                TokKind::Punct("(" | "[" | "{") => depth += 1,
                TokKind::Punct(")" | "]") => depth = depth.saturating_sub(1),
                TokKind::Punct("}") if depth == 0 => {
                    if self.at == first {
                        self.at += 1;
                    }
                    return;
                }
                TokKind::Punct("}") => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        // A block ends its statement unless an `else` or `while` continues it.
                        if !(self.is_word("else") || self.is_word("while")) {
                            return;
                        }
                        continue;
                    }
                }
                TokKind::Punct(";") if depth == 0 => {
                    self.at += 1;
                    return;
                }
                _ => {}
            }
            self.at += 1;
        }
    }

    fn statement_inner(&mut self) -> Option<StmtKind<'t>> {
        match self.peek()?.kind {
            TokKind::Punct("{") => {
                self.at += 1;
                let mut statements = Vec::new();
                while !self.is("}") {
                    self.peek()?;
                    statements.push(self.statement());
                }
                self.expect("}")?;
                Some(StmtKind::Block(statements))
            }
            // `{}` read as an empty list of numbers.
            TokKind::NumericList(0) => {
                self.at += 1;
                Some(StmtKind::Block(Vec::new()))
            }
            TokKind::Punct(";") => {
                self.at += 1;
                Some(StmtKind::Empty)
            }
            TokKind::Ident => match self.word_at(0)? {
                "for" => self.for_loop(),
                "if" => {
                    self.at += 1;
                    let condition = self.condition()?;
                    let then = Box::new(self.statement());
                    let otherwise = if self.is_word("else") {
                        self.at += 1;
                        Some(Box::new(self.statement()))
                    } else {
                        None
                    };
                    Some(StmtKind::If { condition, then, otherwise })
                }
                word @ ("while" | "switch") => {
                    self.at += 1;
                    let condition = self.condition()?;
                    let body = Box::new(self.statement());
                    Some(match word {
                        "while" => StmtKind::While { condition, body },
                        _ => StmtKind::Switch { value: condition, body },
                    })
                }
                word @ ("case" | "default") => {
                    self.at += 1;
                    let start = self.at;
                    while !self.is(":") {
                        self.peek()?;
                        self.at += 1;
                    }
                    let case = (word == "case")
                        .then(|| {
                            let end = self.at;
                            let mut label = Reader { text: self.text, tokens: &self.tokens[start..end], at: 0, depth: self.depth };
                            label.expression().filter(|_| label.at == end - start)
                        })
                        .flatten();
                    self.expect(":")?;
                    Some(StmtKind::Label { case })
                }
                "return" => {
                    self.at += 1;
                    let value = if self.is(";") { None } else { Some(self.expression()?) };
                    self.expect(";")?;
                    Some(StmtKind::Return(value))
                }
                word @ ("break" | "continue") => {
                    self.at += 1;
                    self.expect(";")?;
                    Some(if word == "break" { StmtKind::Break } else { StmtKind::Continue })
                }
                _ if self.declaration_ahead() => {
                    let declaration = self.declaration()?;
                    self.expect(";")?;
                    Some(declaration)
                }
                _ => self.expression_statement(),
            },
            _ => self.expression_statement(),
        }
    }

    /// `( expression )` after `if`, `while`, `switch`.
    fn condition(&mut self) -> Option<Expr<'t>> {
        self.expect("(")?;
        let condition = self.expression()?;
        self.expect(")")?;
        Some(condition)
    }

    fn expression_statement(&mut self) -> Option<StmtKind<'t>> {
        let expr = self.expression()?;
        self.expect(";")?;
        Some(StmtKind::Expr(expr))
    }

    /// `T name`, `T* name`, `struct T name`, `const T name`: a type then a declarator.
    fn declaration_ahead(&self) -> bool {
        let (Some(first), Some(second)) = (self.word_at(0), self.kind_at(1)) else { return false };
        if KEYWORDS.contains(&first) {
            return false;
        }
        match second {
            TokKind::Ident => true,
            TokKind::Punct("*") => {
                let mut offset = 1;
                while self.kind_at(offset) == Some(TokKind::Punct("*")) {
                    offset += 1;
                }
                self.kind_at(offset) == Some(TokKind::Ident)
                    && matches!(self.kind_at(offset + 1), Some(TokKind::Punct("=" | ";" | "[" | ",")))
            }
            _ => false,
        }
    }

    /// One declaration, up to (not including) its `;`.
    fn declaration(&mut self) -> Option<StmtKind<'t>> {
        let first = self.at;
        let mut type_words = Vec::new();
        while let (Some(word), Some(TokKind::Ident | TokKind::Punct("*"))) = (self.word_at(0), self.kind_at(1)) {
            type_words.push(word);
            self.at += 1;
        }
        let type_span = self.span_from(first);
        let mut declarators = Vec::new();
        loop {
            let mut pointer = false;
            while self.is("*") {
                pointer = true;
                self.at += 1;
            }
            let (name, name_span) = self.ident()?;
            let mut dims = Vec::new();
            while self.is("[") {
                self.at += 1;
                dims.push(self.expression()?);
                self.expect("]")?;
            }
            let init = if self.is("=") {
                self.at += 1;
                Some(self.initializer()?)
            } else {
                None
            };
            declarators.push(Declarator { name, name_span, pointer, dims, init });
            if !self.is(",") {
                return Some(StmtKind::Decl { type_words, type_span, declarators });
            }
            self.at += 1;
        }
    }

    fn initializer(&mut self) -> Option<Initializer<'t>> {
        if let Some(Tok { kind: TokKind::NumericList(elements), span }) = self.peek() {
            self.at += 1;
            return Some(Initializer::Numeric { elements, span });
        }
        if !self.is("{") {
            return self.assignment().map(Initializer::Expr);
        }
        self.at += 1;
        let mut items = Vec::new();
        while !self.is("}") {
            let designator = if self.is(".") && self.kind_at(2) == Some(TokKind::Punct("=")) {
                let field = self.word_at(1)?;
                self.at += 3;
                Some(field)
            } else {
                None
            };
            items.push((designator, self.nested(|r| r.initializer())?));
            if !self.is(",") {
                break;
            }
            self.at += 1;
        }
        self.expect("}")?;
        Some(Initializer::List(items))
    }

    /// `for (init; condition; step) body`.
    fn for_loop(&mut self) -> Option<StmtKind<'t>> {
        self.at += 1;
        self.expect("(")?;
        let first = self.at;
        let init = if self.declaration_ahead() {
            let declaration = self.declaration()?;
            Some(Box::new(Stmt { kind: declaration, span: self.span_from(first) }))
        } else if !self.is(";") {
            let init = self.expression()?;
            Some(Box::new(Stmt { kind: StmtKind::Expr(init), span: self.span_from(first) }))
        } else {
            None
        };
        self.expect(";")?;
        let condition = if self.is(";") { None } else { Some(self.expression()?) };
        self.expect(";")?;
        let step = if self.is(")") { None } else { Some(self.expression()?) };
        self.expect(")")?;
        let body = Box::new(self.statement());
        Some(StmtKind::For { init, condition, step, body })
    }

    // Expressions, by C precedence.

    fn expression(&mut self) -> Option<Expr<'t>> {
        self.nested(|r| r.assignment())
    }

    fn assignment(&mut self) -> Option<Expr<'t>> {
        let target = self.ternary()?;
        if let Some(TokKind::Punct(op)) = self.kind_at(0) {
            if ASSIGN.contains(&op) {
                self.at += 1;
                let value = self.nested(|r| r.assignment())?;
                return Some(Expr::Assign(op, Box::new(target), Box::new(value)));
            }
        }
        Some(target)
    }

    fn ternary(&mut self) -> Option<Expr<'t>> {
        let condition = self.binary(0)?;
        if !self.is("?") {
            return Some(condition);
        }
        self.at += 1;
        let then = self.expression()?;
        self.expect(":")?;
        let otherwise = self.nested(|r| r.ternary())?;
        Some(Expr::Ternary(Box::new(condition), Box::new(then), Box::new(otherwise)))
    }

    fn binary(&mut self, level: usize) -> Option<Expr<'t>> {
        const LEVELS: &[&[&str]] = &[
            &["||"],
            &["&&"],
            &["|"],
            &["^"],
            &["&"],
            &["==", "!="],
            &["<", "<=", ">", ">="],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        let Some(ops) = LEVELS.get(level) else { return self.unary() };
        let mut left = self.nested(|r| r.binary(level + 1))?;
        // A chain `a + b + c ...` nests as deeply as it is long: it counts towards the depth limit.
        let mut chained = 0;
        while let Some(TokKind::Punct(op)) = self.kind_at(0) {
            let Some(op) = ops.iter().find(|o| **o == op) else { break };
            chained += 1;
            if self.depth + chained > MAX_DEPTH {
                return None;
            }
            self.at += 1;
            let right = self.nested(|r| r.binary(level + 1))?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Some(left)
    }

    fn unary(&mut self) -> Option<Expr<'t>> {
        if let Some(TokKind::Punct(op @ ("-" | "+" | "!" | "~" | "&" | "*" | "++" | "--"))) = self.kind_at(0) {
            self.at += 1;
            let operand = self.nested(|r| r.unary())?;
            return Some(Expr::Unary(op, Box::new(operand)));
        }
        if self.is("(") {
            if let Some((ty, pointer, length)) = self.cast_ahead() {
                self.at += length;
                let operand = self.nested(|r| r.unary())?;
                return Some(Expr::Cast { ty, pointer, value: Box::new(operand) });
            }
        }
        if self.is_word("sizeof") {
            self.at += 1;
            if self.is("(") {
                self.skip_group()?;
            } else {
                self.nested(|r| r.unary())?;
            }
            return Some(Expr::Sizeof);
        }
        self.postfix()
    }

    /// Past the bracketed group at the cursor.
    fn skip_group(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()?.kind {
                TokKind::Punct("(" | "[" | "{") => depth += 1,
                TokKind::Punct(")" | "]" | "}") => depth = depth.checked_sub(1)?,
                _ => {}
            }
            self.at += 1;
            if depth == 0 {
                return Some(());
            }
        }
    }

    /// `(T)`, `(T*)`, `(const T*)`, `(unsigned char)` at the cursor: the type, whether a pointer, and the tokens it takes.
    fn cast_ahead(&self) -> Option<(Vec<&'t str>, bool, usize)> {
        let mut words = Vec::new();
        let mut offset = 1;
        while let Some(word) = self.word_at(offset) {
            words.push(word);
            offset += 1;
        }
        let mut pointer = false;
        while self.kind_at(offset) == Some(TokKind::Punct("*")) {
            pointer = true;
            offset += 1;
        }
        if self.kind_at(offset) != Some(TokKind::Punct(")")) || words.is_empty() {
            return None;
        }
        let known = |w: &&str| INTEGER_TYPES.contains(w) || CAST_TYPES.contains(w) || *w == "const" || *w == "struct";
        // `(name) 1`, `(name) x`: an expression in parentheses is never followed by an operand, so
        // `name` is a type (a typedef such as `DLDeviceType`), however the parser does not know it.
        let operand_follows = matches!(self.kind_at(offset + 1), Some(TokKind::Number | TokKind::Ident | TokKind::Literal));
        (pointer || words.iter().all(known) || (words.len() == 1 && operand_follows)).then_some((words, pointer, offset + 1))
    }

    fn postfix(&mut self) -> Option<Expr<'t>> {
        let first = self.at;
        let mut expr = self.primary()?;
        for chained in 1.. {
            if self.depth + chained > MAX_DEPTH {
                return None;
            }
            if self.is("[") {
                self.at += 1;
                let index = self.expression()?;
                self.expect("]")?;
                expr = Expr::Index(Box::new(expr), Box::new(index));
            } else if self.is("(") {
                let Expr::Ident(callee, _) = expr else { return None };
                self.at += 1;
                let mut args = Vec::new();
                while !self.is(")") {
                    args.push(self.nested(|r| r.assignment())?);
                    if !self.is(",") {
                        break;
                    }
                    self.at += 1;
                }
                self.expect(")")?;
                expr = Expr::Call { callee, args, span: self.span_from(first) };
            } else if self.is(".") || self.is("->") {
                let arrow = self.is("->");
                self.at += 1;
                let (field, _) = self.ident()?;
                expr = Expr::Member { of: Box::new(expr), field, arrow };
            } else if let Some(TokKind::Punct(op @ ("++" | "--"))) = self.kind_at(0) {
                self.at += 1;
                expr = Expr::Postfix(op, Box::new(expr));
            } else {
                return Some(expr);
            }
        }
        None
    }

    fn primary(&mut self) -> Option<Expr<'t>> {
        let token = self.peek()?;
        let expr = match token.kind {
            TokKind::Number => match integer(token.text(self.text)).and_then(|value| i64::try_from(value).ok()) {
                Some(value) => Expr::Int(value),
                None => Expr::Number,
            },
            TokKind::Literal => Expr::Text,
            TokKind::Ident if !KEYWORDS.contains(&token.text(self.text)) => Expr::Ident(token.text(self.text), token.span),
            TokKind::Punct("(") => {
                self.at += 1;
                let inner = self.expression()?;
                self.expect(")")?;
                return Some(Expr::Paren(Box::new(inner)));
            }
            _ => return None,
        };
        self.at += 1;
        Some(expr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::c::parser::parse::parse;

    /// The statements of the only function `text` defines, with the text of each.
    fn statements(text: &str, check: impl FnOnce(&Body<'_>, &dyn Fn(Span) -> String)) {
        let source = parse("test.c", text).unwrap_or_else(|error| panic!("{error}"));
        let [function] = source.functions.as_slice() else { panic!("{:?}", source.functions) };
        check(function.body(&source), &|span| source.text_of(span).to_string());
    }

    /// USMP's entry: pointers into the workspace, then guarded operator calls.
    #[test]
    fn usmp_entry() {
        let text = "TVM_DLL int32_t tvmgen_default___tvm_main__(float* input, float* output, uint8_t* global_workspace_1_var) {\n\
                    \x20 void* sid_3_let = (&(global_workspace_1_var[4464]));\n\
                    \x20 if (tvmgen_default_fused_nn_dense(input, sid_3_let, global_workspace_1_var) != 0 ) return -1;\n\
                    \x20 if (tvmgen_default_fused_add(sid_3_let, output) != 0 ) return -1;\n  return 0;\n}\n";
        statements(text, |body, text_of| {
            let [decl, first, second, last] = body.statements.as_slice() else { panic!("{:?}", body.statements) };
            assert_eq!(text_of(decl.span), "void* sid_3_let = (&(global_workspace_1_var[4464]));");
            assert_eq!(decl.span.line, 2);
            let StmtKind::Decl { type_words, declarators, .. } = &decl.kind else { panic!("{decl:?}") };
            assert_eq!(type_words, &["void"]);
            let [Declarator { name: "sid_3_let", pointer: true, init: Some(Initializer::Expr(init)), .. }] = declarators.as_slice() else {
                panic!("{declarators:?}")
            };
            let Expr::Paren(address) = init else { panic!("{init:?}") };
            let Expr::Unary("&", indexed) = address.as_ref() else { panic!("{address:?}") };
            let Expr::Paren(indexed) = indexed.as_ref() else { panic!("{indexed:?}") };
            assert!(
                matches!(indexed.as_ref(), Expr::Index(of, at) if matches!(**of, Expr::Ident("global_workspace_1_var", _)) && **at == Expr::Int(4464))
            );
            for (statement, callee) in [(first, "tvmgen_default_fused_nn_dense"), (second, "tvmgen_default_fused_add")] {
                let StmtKind::If { condition: Expr::Binary("!=", call, zero), then, otherwise: None } = &statement.kind else {
                    panic!("{statement:?}")
                };
                assert!(matches!(call.as_ref(), Expr::Call { callee: c, args, .. } if *c == callee && args.len() >= 2));
                assert_eq!(**zero, Expr::Int(0));
                assert_eq!(then.kind, StmtKind::Return(Some(Expr::Unary("-", Box::new(Expr::Int(1))))));
            }
            assert_eq!(last.kind, StmtKind::Return(Some(Expr::Int(0))));
            let called: Vec<&str> = body.called.iter().map(|(name, _)| *name).collect();
            // Keywords before `(` too, as the old scanner counted them.
            assert_eq!(called, ["if", "tvmgen_default_fused_nn_dense", "if", "tvmgen_default_fused_add"]);
            assert!(body.assigned.is_empty() && !body.foreign);
        });
    }

    /// A cast to a typedef the parser does not know is read from what follows it; `(a) - b` stays a subtraction.
    #[test]
    fn cast_to_an_unknown_typedef() {
        let text = "int32_t f(DLTensor* t, int32_t a, int32_t b) {\n  t->device.device_type = (DLDeviceType)1;\n  a = (a) - b;\n  a = (Tag)b;\n  return 0;\n}\n";
        statements(text, |body, _| {
            let [kind, minus, named, _] = body.statements.as_slice() else { panic!("{:?}", body.statements) };
            let cast = |statement: &Stmt<'_>| match &statement.kind {
                StmtKind::Expr(Expr::Assign("=", _, value)) => matches!(**value, Expr::Cast { .. }),
                other => panic!("{other:?}"),
            };
            assert!(cast(kind) && cast(named));
            assert!(matches!(&minus.kind, StmtKind::Expr(Expr::Assign("=", _, value)) if matches!(**value, Expr::Binary("-", ..))));
        });
    }

    /// Without USMP: workspace allocations, checks and frees.
    #[test]
    fn alloc_workspace_entry() {
        let text = "TVM_DLL int32_t tvmgen_default___tvm_main__(int8_t* input_1_buffer_var, int8_t* output_buffer_var) {\n\
                    \x20 void* sid_1 = TVMBackendAllocWorkspace(1, 0, (uint64_t)7680, 0, 8);\n  if (sid_1 == NULL) {\n    return -1;\n  }\n\
                    \x20 if (tvmgen_default_op(input_1_buffer_var, sid_1) != 0 ) return -1;\n\
                    \x20 if (TVMBackendFreeWorkspace(1, 0, sid_1) != 0) {\n    return -1;\n  }\n  return 0;\n}\n";
        statements(text, |body, _| {
            let [alloc, check, ..] = body.statements.as_slice() else { panic!() };
            let StmtKind::Decl { declarators, .. } = &alloc.kind else { panic!("{alloc:?}") };
            let Some(Initializer::Expr(Expr::Call { callee: "TVMBackendAllocWorkspace", args, .. })) = &declarators[0].init else {
                panic!("{declarators:?}")
            };
            assert_eq!(args[2], Expr::Cast { ty: vec!["uint64_t"], pointer: false, value: Box::new(Expr::Int(7680)) });
            let StmtKind::If { then, .. } = &check.kind else { panic!("{check:?}") };
            assert!(matches!(&then.kind, StmtKind::Block(inner) if inner.len() == 1));
            assert_eq!(body.statements.len(), 5);
            assert!(body.statements.iter().all(|statement| statement.kind != StmtKind::Unparsed));
        });
    }

    /// A packed call's argument stores: `TVMValue stack[6]` and casts through `void*`.
    #[test]
    fn packed_stack_stores() {
        let text = "int32_t f(void* args, int32_t* arg_type_ids, int32_t num_args) {\n  TVMValue stack_1[6];\n  void* stack_value = stack_1;\n\
                    \x20 void* arg0 = (((TVMValue*)args)[0].v_handle);\n\
                    \x20 (((DLTensor*)stack_array)[0].data) = sid_1_let;\n  ((int64_t*)stack_shape)[1] = (int64_t)64;\n\
                    \x20   uint64_t v_ = (uint64_t)0;\n  (((DLTensor*)stack_array)[0].strides) = (int64_t*)(*(void* *)(&(v_)));\n\
                    \x20 (((DLTensor*)stack_array)[0].device.device_type) = (DLDeviceType)1;\n\
                    \x20 if (tvmgen_default_op( (TVMValue*) stack_value , (int*) stack_tcode, 3, &ret_val, &ret_type_code, NULL) != 0){\n    return -1;\n  }\n}\n";
        statements(text, |body, text_of| {
            let kinds: Vec<&StmtKind> = body.statements.iter().map(|statement| &statement.kind).collect();
            let StmtKind::Decl { type_words, declarators, .. } = kinds[0] else { panic!("{kinds:?}") };
            assert_eq!((type_words.as_slice(), declarators[0].name), (&["TVMValue"][..], "stack_1"));
            assert_eq!(declarators[0].dims, [Expr::Int(6)]);
            let StmtKind::Decl { declarators, .. } = kinds[2] else { panic!("{kinds:?}") };
            let Some(Initializer::Expr(Expr::Paren(member))) = &declarators[0].init else { panic!("{declarators:?}") };
            let Expr::Member { of, field: "v_handle", arrow: false } = member.as_ref() else { panic!("{member:?}") };
            let Expr::Index(array, index) = of.as_ref() else { panic!("{of:?}") };
            assert_eq!(**index, Expr::Int(0));
            let Expr::Paren(cast) = array.as_ref() else { panic!("{array:?}") };
            assert!(
                matches!(cast.as_ref(), Expr::Cast { ty, pointer: true, value } if ty == &["TVMValue"] && matches!(**value, Expr::Ident("args", _)))
            );
            let StmtKind::Expr(Expr::Assign("=", target, _)) = kinds[3] else { panic!("{kinds:?}") };
            assert!(matches!(target.as_ref(), Expr::Paren(_)));
            assert!(
                matches!(kinds[4], StmtKind::Expr(Expr::Assign("=", _, value)) if matches!(**value, Expr::Cast { pointer: false, .. }))
            );
            assert!(matches!(kinds[6], StmtKind::Expr(Expr::Assign("=", _, value)) if matches!(**value, Expr::Cast { pointer: true, .. })));
            // `(DLDeviceType)1`: a typedef the parser does not know, a cast by what follows it.
            let StmtKind::Expr(Expr::Assign("=", _, value)) = kinds[7] else { panic!("{kinds:?}") };
            assert!(
                matches!(value.as_ref(), Expr::Cast { ty, pointer: false, value } if ty == &["DLDeviceType"] && **value == Expr::Int(1))
            );
            assert_eq!(text_of(body.statements[7].span), "(((DLTensor*)stack_array)[0].device.device_type) = (DLDeviceType)1;");
            let StmtKind::If { condition: Expr::Binary("!=", call, _), .. } = kinds[8] else { panic!("{kinds:?}") };
            let Expr::Call { callee: "tvmgen_default_op", args, span } = call.as_ref() else { panic!("{call:?}") };
            assert_eq!(args.len(), 6);
            assert!(text_of(*span).starts_with("tvmgen_default_op( (TVMValue*) stack_value"));
            assert_eq!(body.statements.len(), 9);
        });
    }

    /// Loops, switches with labels, `sizeof`, what is not read, and what the tokens say.
    #[test]
    fn loops_labels_and_unparsed() {
        let text = "int32_t f(int32_t* p, int32_t n) {\n  for (int32_t i = 0; i < 16; ++i) {\n    p[i] = i;\n  }\n\
                    \x20 switch (n) { case 1: n += 2; break; default: break; }\n  int32_t s = sizeof(int32_t) + sizeof p;\n\
                    \x20 do { n--; } while (n);\n  goto out;\n  # pragma unroll\n  while (n < 3) n++;\n  return @n;\n}\n";
        statements(text, |body, text_of| {
            let kinds: Vec<&StmtKind> = body.statements.iter().map(|statement| &statement.kind).collect();
            let StmtKind::For { init: Some(init), condition: Some(_), step: Some(Expr::Unary("++", _)), body: loop_body } = kinds[0] else {
                panic!("{kinds:?}")
            };
            assert!(matches!(init.kind, StmtKind::Decl { .. }) && matches!(loop_body.kind, StmtKind::Block(_)));
            let StmtKind::Switch { body: cases, .. } = kinds[1] else { panic!("{kinds:?}") };
            let StmtKind::Block(cases) = &cases.kind else { panic!("{cases:?}") };
            assert_eq!(cases[0].kind, StmtKind::Label { case: Some(Expr::Int(1)) });
            assert_eq!(cases[3].kind, StmtKind::Label { case: None });
            let StmtKind::Decl { declarators, .. } = kinds[2] else { panic!("{kinds:?}") };
            assert_eq!(declarators[0].init, Some(Initializer::Expr(Expr::Binary("+", Box::new(Expr::Sizeof), Box::new(Expr::Sizeof)))));
            assert_eq!((kinds[3], text_of(body.statements[3].span).as_str()), (&StmtKind::Unparsed, "do { n--; } while (n);"));
            assert_eq!((kinds[4], text_of(body.statements[4].span).as_str()), (&StmtKind::Unparsed, "goto out;"));
            assert!(matches!(kinds[5], StmtKind::While { .. }));
            assert_eq!(*kinds[6], StmtKind::Unparsed);
            assert_eq!(body.statements.len(), 7);
            assert!(body.foreign);
            assert_eq!(body.assigned.iter().copied().collect::<Vec<_>>(), ["n"]);
            assert_eq!(body.statements[5].span.line, 10);
        });
    }

    /// Nesting past [`MAX_DEPTH`] is unread, not a stack overflow, in statements and in expression chains.
    #[test]
    fn deep_code_is_unparsed() {
        let blocks = format!("void f(void) {{ {}x = 1;{} y = 2; }}", "{".repeat(250), "}".repeat(250));
        statements(&blocks, |body, _| {
            assert!(matches!(body.statements[0].kind, StmtKind::Block(_)));
            assert!(matches!(&body.statements[1].kind, StmtKind::Expr(Expr::Assign("=", _, value)) if **value == Expr::Int(2)));
        });
        let chain = format!("int f(void) {{ return {}1; }}", "1 + ".repeat(100_000));
        statements(&chain, |body, _| assert_eq!(body.statements[0].kind, StmtKind::Unparsed));
        let parens = format!("int f(void) {{ return {}1{}; }}", "(".repeat(250), ")".repeat(250));
        statements(&parens, |body, _| assert_eq!(body.statements[0].kind, StmtKind::Unparsed));
    }
}
