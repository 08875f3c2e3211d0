//! What the C front end reads of a source or header: its file-scope
//! declarations and directives ([`CSource`], made by one streaming pass,
//! [`super::parse`]), and of a function body its statements ([`Body`], parsed
//! on first question, [`super::body`]). Every part keeps its [`Span`];
//! weights are counted, never kept one value per element.

use std::cell::OnceCell;
use std::collections::{BTreeSet, HashSet};

use crate::dtype::DType;
use crate::input::c::text::strip_comments;

/// Byte range of a source's text, with the line of `start` (from 1). `u32`:
/// [`crate::input::c::limits::MAX_SOURCE_BYTES`] fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Span {
    pub start: u32,
    pub end: u32,
    pub line: u32,
}

impl Span {
    /// From `start` to `end` of two spans (`end` taken from `last`).
    pub fn to(self, last: Span) -> Span {
        Span { end: last.end.max(self.start), ..self }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// One C source or header, read at file scope.
#[derive(Debug)]
pub(crate) struct CSource<'t> {
    pub path: &'t str,
    pub(super) text: &'t str,
    /// In order.
    pub includes: Vec<Include<'t>>,
    /// In order.
    pub defines: Vec<Define<'t>>,
    /// `#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`, `#endif`, in order.
    pub directives: Vec<Directive<'t>>,
    /// Definitions, in order.
    pub functions: Vec<Function<'t>>,
    /// `T name(params);` at file scope.
    pub prototypes: Vec<Prototype<'t>>,
    /// File-scope objects: arrays, descriptors, pools.
    pub variables: Vec<Variable<'t>>,
    /// `struct name { ... }` (and `union`), with their members.
    pub structs: Vec<Struct<'t>>,
    /// Distinct identifiers outside comments and literals, first seen first.
    pub(super) names: Vec<&'t str>,
    pub(super) name_set: HashSet<&'t str>,
    /// Every identifier directly before a `(` (spaces and comments on its line between).
    pub(super) called: HashSet<&'t str>,
}

impl<'t> CSource<'t> {
    pub fn text(&self) -> &'t str {
        self.text
    }

    pub fn text_of(&self, span: Span) -> &'t str {
        self.text.get(span.range()).unwrap_or_default()
    }

    /// The first definition of `name`.
    pub fn function(&self, name: &str) -> Option<&Function<'t>> {
        self.functions.iter().find(|function| function.name == name)
    }

    /// Whether `name` appears as an identifier outside comments and literals.
    pub fn mentions(&self, name: &str) -> bool {
        self.name_set.contains(name)
    }

    /// Distinct identifiers, in the order they first appear.
    pub fn names(&self) -> &[&'t str] {
        &self.names
    }

    /// Every identifier directly before a `(` (functions, function-like
    /// macros and keywords such as `if`), in no order.
    pub fn called(&self) -> impl Iterator<Item = &'t str> + '_ {
        self.called.iter().copied()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Include<'t> {
    pub header: &'t str,
    pub angled: bool,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Directive<'t> {
    /// `if`, `ifdef`, `ifndef`, `elif`, `else` or `endif`.
    pub kind: &'t str,
    /// The text after the kind, to the line's end (continuations and comments as written).
    pub condition: &'t str,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Define<'t> {
    pub name: &'t str,
    /// A function-like macro's parameters (`...` among them).
    pub params: Option<Vec<&'t str>>,
    /// What it expands to: after the name (or parameters) to the line's end.
    pub body: Span,
    pub span: Span,
}

impl Define<'_> {
    /// What the macro expands to, on one line: its comments and the insides
    /// of its literals blanked, continuation lines joined, trimmed.
    pub fn value(&self, source: &CSource<'_>) -> String {
        strip_comments(source.text_of(self.body)).replace("\\\r\n", " ").replace("\\\n", " ").trim().to_string()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prototype<'t> {
    pub name: &'t str,
    pub params: Vec<Param<'t>>,
    pub params_span: Span,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Struct<'t> {
    /// The tag, or for `typedef struct { ... } name;` the name.
    pub name: &'t str,
    /// In order.
    pub members: Vec<Member<'t>>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member<'t> {
    pub name: &'t str,
    /// Declared with a `*` and no array dimension (`void* a`, not `int* a[4]`).
    pub pointer: bool,
}

/// One parameter: a comma-separated piece of a parameter list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Param<'t> {
    pub text: &'t str,
    /// Its last identifier (`(void)` gives `void`).
    pub name: &'t str,
    pub pointer: bool,
    /// The scalar type its words name before any `*` (`const` first left
    /// out): `float* x` gives float32; `void*`, `x[]` or a struct give `None`.
    pub dtype: Option<DType>,
}

#[derive(Debug)]
pub(crate) struct Function<'t> {
    pub name: &'t str,
    /// `static` among its specifiers.
    pub is_static: bool,
    /// The specifiers and declarator before the name.
    // With `span`: read by the tests and the `c_parser` fuzz target until
    // the later questions move onto the parser (plan33 steps 9 to 13).
    #[cfg_attr(not(test), allow(dead_code))]
    pub returns: Span,
    pub params: Vec<Param<'t>>,
    /// Inside the parentheses.
    pub params_span: Span,
    /// Inside the braces (to the text's end when unclosed).
    pub body_span: Span,
    /// First specifier (attributes included) to the closing `}`.
    #[cfg_attr(not(test), allow(dead_code))]
    pub span: Span,
    pub(super) body: OnceCell<Body<'t>>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Variable<'t> {
    pub name: &'t str,
    pub is_static: bool,
    pub is_const: bool,
    /// The specifier words (`static`, `const`, `struct`, type names).
    pub type_words: Vec<&'t str>,
    /// Each `__attribute__((...))`, before or after the declarator.
    pub attributes: Vec<Span>,
    /// `[15378]` gives `Some(15378)`; `[]` or not a literal gives `None`.
    pub dims: Vec<Option<u64>>,
    pub init: Option<Init<'t>>,
    /// The whole definition with its `;`.
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Init<'t> {
    /// A brace list of numbers only (weights): counted, never stored.
    /// `elements` at its outer level.
    Numeric { elements: u64, span: Span },
    /// Anything else up to [`MAX_KEPT_INIT_TOKENS`], read: descriptors, structs.
    Tree(Initializer<'t>),
    /// Longer, or not read: only where it is.
    Long { span: Span },
}

/// Tokens of a file-scope initializer kept as a tree (numeric lists in it count one).
pub(crate) const MAX_KEPT_INIT_TOKENS: usize = 4096;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Initializer<'t> {
    Expr(Expr<'t>),
    /// `{ a, .field = b, ... }`: each item with its designator.
    List(Vec<(Option<&'t str>, Initializer<'t>)>),
    /// A nested brace list of numbers only, counted as [`Init::Numeric`].
    Numeric {
        elements: u64,
        span: Span,
    },
}

/// A function body's statements and what its tokens say.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Body<'t> {
    pub statements: Vec<Stmt<'t>>,
    /// Identifiers before `(`, in text order, repeats kept.
    pub called: Vec<(&'t str, Span)>,
    /// Variables assigned after their declaration (`x = `, `x += `, `++x`), a `for` header's step aside.
    pub assigned: BTreeSet<&'t str>,
    /// A `#`, `##` or character C has no token for outside preprocessor lines.
    pub foreign: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stmt<'t> {
    pub kind: StmtKind<'t>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StmtKind<'t> {
    Block(Vec<Stmt<'t>>),
    Empty,
    Decl {
        type_words: Vec<&'t str>,
        type_span: Span,
        declarators: Vec<Declarator<'t>>,
    },
    Expr(Expr<'t>),
    If {
        condition: Expr<'t>,
        then: Box<Stmt<'t>>,
        otherwise: Option<Box<Stmt<'t>>>,
    },
    For {
        init: Option<Box<Stmt<'t>>>,
        condition: Option<Expr<'t>>,
        step: Option<Expr<'t>>,
        body: Box<Stmt<'t>>,
    },
    While {
        condition: Expr<'t>,
        body: Box<Stmt<'t>>,
    },
    Switch {
        value: Expr<'t>,
        body: Box<Stmt<'t>>,
    },
    /// `case N:` (the tokens before `:` read as an expression, when they read) or `default:` (`None`).
    Label {
        case: Option<Expr<'t>>,
    },
    Return(Option<Expr<'t>>),
    Break,
    Continue,
    /// What the parser does not read (`goto`, `do`, `asm`, too deep, too long):
    /// every question treats it as unknown.
    Unparsed,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Declarator<'t> {
    pub name: &'t str,
    pub name_span: Span,
    pub pointer: bool,
    pub dims: Vec<Expr<'t>>,
    pub init: Option<Initializer<'t>>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr<'t> {
    Int(i64),
    /// A number that is no `i64` integer (floats, huge literals).
    Number,
    /// A string or character literal.
    Text,
    Ident(&'t str, Span),
    Unary(&'static str, Box<Expr<'t>>),
    Postfix(&'static str, Box<Expr<'t>>),
    Sizeof,
    Binary(&'static str, Box<Expr<'t>>, Box<Expr<'t>>),
    Assign(&'static str, Box<Expr<'t>>, Box<Expr<'t>>),
    Ternary(Box<Expr<'t>>, Box<Expr<'t>>, Box<Expr<'t>>),
    Cast {
        ty: Vec<&'t str>,
        pointer: bool,
        value: Box<Expr<'t>>,
    },
    Call {
        callee: &'t str,
        args: Vec<Expr<'t>>,
        span: Span,
    },
    Index(Box<Expr<'t>>, Box<Expr<'t>>),
    Member {
        of: Box<Expr<'t>>,
        field: &'t str,
        arrow: bool,
    },
    Paren(Box<Expr<'t>>),
}

/// The element type a C scalar type name spells (`int8_t`, `float`, `unsigned char`).
pub(crate) fn scalar_dtype(ty: &str) -> Option<DType> {
    let name = match ty {
        "int8_t" | "signed char" => "int8",
        "uint8_t" | "unsigned char" => "uint8",
        "int16_t" => "int16",
        "uint16_t" => "uint16",
        "int32_t" => "int32",
        "uint32_t" => "uint32",
        "int64_t" => "int64",
        "uint64_t" => "uint64",
        "float" => "float32",
        "double" => "float64",
        _ => return None,
    };
    DType::parse(name).ok()
}

/// A statement or an expression of a body, as [`walk`] meets them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Node<'a, 't> {
    Stmt(&'a Stmt<'t>),
    Expr(&'a Expr<'t>),
}

/// Every statement and expression of `statements`, each before its parts,
/// in text order. An explicit stack: the depth the parser allows
/// ([`super::body::MAX_DEPTH`]) never reaches the call stack.
pub(crate) fn walk<'a, 't>(statements: &'a [Stmt<'t>]) -> Vec<Node<'a, 't>> {
    let mut found = Vec::new();
    let mut stack: Vec<Node<'a, 't>> = statements.iter().rev().map(Node::Stmt).collect();
    // Parts are pushed last first, so they come out in text order.
    while let Some(node) = stack.pop() {
        found.push(node);
        let mut parts: Vec<Node<'a, 't>> = Vec::new();
        match node {
            Node::Stmt(statement) => match &statement.kind {
                StmtKind::Block(inner) => parts.extend(inner.iter().map(Node::Stmt)),
                StmtKind::Decl { declarators, .. } => {
                    for declarator in declarators {
                        parts.extend(declarator.dims.iter().map(Node::Expr));
                        let mut inits: Vec<&'a Initializer<'t>> = declarator.init.iter().collect();
                        while let Some(init) = inits.pop() {
                            match init {
                                Initializer::Expr(expr) => parts.push(Node::Expr(expr)),
                                Initializer::List(items) => inits.extend(items.iter().rev().map(|(_, item)| item)),
                                Initializer::Numeric { .. } => {}
                            }
                        }
                    }
                }
                StmtKind::Expr(expr) | StmtKind::Return(Some(expr)) | StmtKind::Label { case: Some(expr) } => parts.push(Node::Expr(expr)),
                StmtKind::If { condition, then, otherwise } => {
                    parts.extend([Node::Expr(condition), Node::Stmt(then)]);
                    parts.extend(otherwise.as_deref().map(Node::Stmt));
                }
                StmtKind::For { init, condition, step, body } => {
                    parts.extend(init.as_deref().map(Node::Stmt));
                    parts.extend(condition.iter().chain(step).map(Node::Expr));
                    parts.push(Node::Stmt(body));
                }
                StmtKind::While { condition: value, body } | StmtKind::Switch { value, body } => {
                    parts.extend([Node::Expr(value), Node::Stmt(body)]);
                }
                StmtKind::Empty
                | StmtKind::Label { case: None }
                | StmtKind::Return(None)
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Unparsed => {}
            },
            Node::Expr(expr) => match expr {
                Expr::Int(_) | Expr::Number | Expr::Text | Expr::Ident(..) | Expr::Sizeof => {}
                Expr::Unary(_, inner)
                | Expr::Postfix(_, inner)
                | Expr::Paren(inner)
                | Expr::Cast { value: inner, .. }
                | Expr::Member { of: inner, .. } => parts.push(Node::Expr(inner)),
                Expr::Binary(_, left, right) | Expr::Assign(_, left, right) | Expr::Index(left, right) => {
                    parts.extend([Node::Expr(left), Node::Expr(right)]);
                }
                Expr::Ternary(condition, then, otherwise) => parts.extend([condition, then, otherwise].map(|part| Node::Expr(part))),
                Expr::Call { args, .. } => parts.extend(args.iter().map(Node::Expr)),
            },
        }
        stack.extend(parts.into_iter().rev());
    }
    found
}

impl<'t> Expr<'t> {
    /// The expression inside any parentheses.
    pub fn unparenthesized(&self) -> &Expr<'t> {
        let mut expr = self;
        while let Expr::Paren(inner) = expr {
            expr = inner;
        }
        expr
    }

    /// `((T*)name)`: the variable a pointer cast reads, with the cast's type words.
    pub fn cast_pointer(&self) -> Option<(&[&'t str], &'t str)> {
        match self.unparenthesized() {
            Expr::Cast { ty, pointer: true, value } => match value.unparenthesized() {
                Expr::Ident(name, _) => Some((ty, name)),
                _ => None,
            },
            _ => None,
        }
    }
}
