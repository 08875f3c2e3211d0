//! How far a generated C function reaches into one of its buffers, read from
//! what the code does: TVM's C is regular (`for (int32_t i = 0; i < N; ++i)`
//! nests, affine indices like `((T*)x)[((i0 * 490) + (i1 * 10)) + i2]`, bounds
//! checks as `if`s and ternaries), so interval arithmetic over the loop ranges
//! bounds every index. External kernels are read from the `cmsis_nn_dims` they
//! are given. Anything the reader does not understand that touches the buffer
//! makes the answer unknown: a buffer is never sized from a guess.
//!
//! Pure: text in, facts out. All arithmetic on the code's numbers is checked.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use crate::dtype::DType;
use crate::input::c;
use crate::input::c::lexer::{self, Kind};
use crate::input::c::parser::syntax::scalar_dtype;

/// How much of a buffer the code reaches: indices `0..elements` of `dtype`.
/// `exact`: some run of the code reaches the last element; otherwise
/// `elements` is only an upper bound (a guard or index the reader did not
/// follow exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reach {
    pub elements: u64,
    pub dtype: DType,
    pub exact: bool,
}

impl Reach {
    /// The buffer's size in bytes, `None` on overflow.
    pub fn bytes(self) -> Option<u64> {
        self.elements.checked_mul(self.dtype.size_bytes() as u64)
    }
}

/// What a function's code does with one of its buffer parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// Never reads, writes or passes it on.
    Untouched,
    Reaches(Reach),
}

/// Nesting allowed in statements and expressions: deeper code is not TVM's.
const MAX_DEPTH: usize = 200;

/// How far the function with parameter list `params` and body `body` (comments
/// removed) reaches into its parameter `name`. `callee(f, i)` answers for a
/// call passing the buffer (or a pointer into it) as argument `i` of a function
/// `f` the reader does not know as an external kernel (`None`: unknown, and so
/// is the answer); see [`use_of`]. Pointers into the buffer at offsets the code computes
/// (`&(x[8192])`, `x + 4`, `((uint8_t*)x) + 16`) are followed. `None` when the
/// code does not tell, or shows an index below zero. The reach is in the one
/// element type every access uses; a `uint8_t*` buffer accessed as several
/// types (a workspace pool) is reached in bytes.
pub(crate) fn reach(params: &str, body: &str, name: &str, callee: &dyn Fn(&str, usize) -> Option<Use>) -> Option<Reach> {
    match use_of(params, body, name, callee)? {
        Use::Reaches(reach) => Some(reach),
        Use::Untouched => None,
    }
}

/// As [`reach`], telling a parameter the code never touches (reached by a
/// caller passing it on: nothing) from one it cannot bound (`None`).
pub(crate) fn use_of(params: &str, body: &str, name: &str, callee: &dyn Fn(&str, usize) -> Option<Use>) -> Option<Use> {
    let param = params.split(',').find(|p| last_identifier(p) == Some(name))?;
    let declared = pointer_dtype(param);
    let tokens = tokenize(body)?;
    let mut reader = Reader {
        mutated: mutated(&tokens),
        tokens,
        at: 0,
        depth: 0,
        scopes: vec![Scope::of(vec![(name.to_string(), 0, Binding::Buffer(Pointer { dtype: declared, offset: Interval::point(0) }))])],
        loop_vars: BTreeSet::new(),
        budget: std::cell::Cell::new(ENUMERATION_BUDGET),
        next_id: 1,
        reached: None,
        unknown: false,
        callee,
    };
    while reader.at < reader.tokens.len() {
        reader.statement()?;
    }
    if reader.unknown {
        return None;
    }
    let Some(Reached { end, dtype, exact_end }) = reader.reached else { return Some(Use::Untouched) };
    let exact = exact_end == Some(end);
    let end = u64::try_from(end).ok()?;
    let bytes = DType::parse("uint8").ok()?;
    match dtype {
        Some(dtype) => Some(Use::Reaches(Reach { elements: end.div_ceil(dtype.size_bytes() as u64), dtype, exact })),
        None if declared == Some(bytes) => Some(Use::Reaches(Reach { elements: end, dtype: bytes, exact })),
        None => None,
    }
}

/// The element type of a C pointer declaration or cast (`float* x`, `int8_t*`).
pub(crate) fn pointer_dtype(declaration: &str) -> Option<DType> {
    let ty = declaration.trim().split('*').next()?.trim().trim_start_matches("const ").trim();
    scalar_dtype(ty)
}

fn last_identifier(text: &str) -> Option<&str> {
    let text = text.trim_end();
    let start = c::trailing_identifier_start(text);
    Some(&text[start..]).filter(|ident| !ident.is_empty())
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Int(i64),
    /// A number that is not an integer the reader can hold (floats, huge literals).
    Number,
    Punct(&'static str),
    Text,
}

/// Tokens of a C body without comments, through the C lexer; preprocessor
/// lines are skipped. `None` on a character C has no token for.
fn tokenize(body: &str) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    for token in lexer::lex(body).filter(|token| !token.preprocessor) {
        let text = token.text(body);
        tokens.push(match token.kind {
            Kind::Space | Kind::Comment => continue,
            Kind::Identifier => Token::Ident(text.to_string()),
            Kind::Number => c::integer(text).and_then(|value| i64::try_from(value).ok()).map_or(Token::Number, Token::Int),
            Kind::Literal | Kind::HeaderName => Token::Text,
            Kind::Punctuator("#" | "##") | Kind::Other => return None,
            Kind::Punctuator(punctuator) => Token::Punct(punctuator),
        });
    }
    Some(tokens)
}

/// Variables the body assigns after their declaration (`x = ...`, `x += ...`,
/// `++x`), other than a `for` header's step: they have no one range.
fn mutated(tokens: &[Token]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, token) in tokens.iter().enumerate() {
        let Token::Punct(op) = token else { continue };
        let before = i.checked_sub(1).and_then(|b| tokens.get(b));
        match *op {
            "++" | "--" => {
                let after = tokens.get(i + 1);
                let step = |t: Option<&Token>| matches!(t, Some(Token::Punct(";")));
                let step_end = |t: Option<&Token>| matches!(t, Some(Token::Punct(")")));
                for (side, other, other_side) in
                    [(after, before, tokens.get(i + 2)), (before, after, i.checked_sub(2).and_then(|b| tokens.get(b)))]
                {
                    if let Some(Token::Ident(name)) = side {
                        let in_for_step = (step(other) && step_end(other_side)) || (step_end(other) && step(other_side));
                        if !in_for_step {
                            names.insert(name.clone());
                        }
                    }
                }
            }
            "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "&=" | "|=" | "^=" | "<<=" | ">>=" => {
                let Some(Token::Ident(name)) = before else { continue };
                // `T name = ...` declares; `; name = ...` assigns.
                let declared = matches!(i.checked_sub(2).and_then(|b| tokens.get(b)), Some(Token::Ident(_) | Token::Punct("*")));
                if !declared || *op != "=" {
                    names.insert(name.clone());
                }
            }
            _ => {}
        }
    }
    names
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Interval {
    lo: i64,
    hi: i64,
}

impl Interval {
    fn point(value: i64) -> Interval {
        Interval { lo: value, hi: value }
    }

    fn constant(self) -> Option<i64> {
        (self.lo == self.hi).then_some(self.lo)
    }

    fn hull(self, other: Interval) -> Interval {
        Interval { lo: self.lo.min(other.lo), hi: self.hi.max(other.hi) }
    }

    fn binary(self, op: &str, rhs: Interval) -> Option<Interval> {
        let (a, b) = (self, rhs);
        Some(match op {
            "+" => Interval { lo: a.lo.checked_add(b.lo)?, hi: a.hi.checked_add(b.hi)? },
            "-" => Interval { lo: a.lo.checked_sub(b.hi)?, hi: a.hi.checked_sub(b.lo)? },
            "*" => {
                let products = [a.lo.checked_mul(b.lo)?, a.lo.checked_mul(b.hi)?, a.hi.checked_mul(b.lo)?, a.hi.checked_mul(b.hi)?];
                Interval { lo: *products.iter().min()?, hi: *products.iter().max()? }
            }
            // C division truncates and is monotonic in the dividend for a positive divisor.
            "/" => {
                let divisor = b.constant().filter(|d| *d > 0)?;
                Interval { lo: a.lo / divisor, hi: a.hi / divisor }
            }
            "%" => {
                let divisor = b.constant().filter(|d| *d > 0)?;
                match (a.lo >= 0, a.hi < divisor) {
                    (true, true) => a,
                    (true, false) => Interval { lo: 0, hi: divisor - 1 },
                    (false, _) => Interval { lo: -(divisor - 1), hi: divisor - 1 },
                }
            }
            ">>" => {
                let shift = u32::try_from(b.constant()?).ok().filter(|s| *s < 63)?;
                Interval { lo: a.lo >> shift, hi: a.hi >> shift }
            }
            "<<" => {
                let shift = u32::try_from(b.constant()?).ok().filter(|s| *s < 62)?;
                a.binary("*", Interval::point(1i64 << shift))?
            }
            // A non-negative mask bounds the result whatever the other operand.
            "&" => {
                let mask = [a, b].into_iter().find(|side| side.lo >= 0 && side.constant().is_some())?.lo;
                let other = if a.constant() == Some(mask) { b } else { a };
                Interval { lo: 0, hi: if other.lo >= 0 { mask.min(other.hi) } else { mask } }
            }
            "<" | "<=" | ">" | ">=" | "==" | "!=" | "&&" | "||" => Interval { lo: 0, hi: 1 },
            _ => return None,
        })
    }
}

/// Most terms one form keeps, and how deeply `/`, `>>` and `%` nest in it:
/// beyond, the value is followed as an interval only (an upper bound).
const MAX_TERMS: usize = 32;
const MAX_NESTING: usize = 4;
/// Guard variable values tried for one access, and for one function: beyond,
/// the reach is an upper bound.
const MAX_ENUMERATION: u64 = 1 << 14;
const ENUMERATION_BUDGET: u64 = 1 << 22;
/// Guards on several variables that hold at once (TVM's nests have a few).
const MAX_GUARDS: usize = 64;

/// A part of a quasi-affine form.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    /// An integer variable, by binding id.
    Var(usize),
    /// `floor(form / divisor)` of a form never below zero (`x / 4`, `x >> 2`).
    Floor(Rc<Form>, i64),
    /// `form % divisor` of a form never below zero.
    Mod(Rc<Form>, i64),
}

/// `constant + Σ coefficient × atom`: an integer value as a sum over the
/// variables it depends on, so that each temporary is expanded once (its form
/// is kept) and guards on several variables can be compared with indices.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Form {
    terms: BTreeMap<Atom, i64>,
    constant: i64,
}

impl Form {
    fn constant(value: i64) -> Form {
        Form { terms: BTreeMap::new(), constant: value }
    }

    fn atom(atom: Atom) -> Form {
        Form { terms: BTreeMap::from([(atom, 1)]), constant: 0 }
    }

    fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    fn scaled(&self, factor: i64) -> Option<Form> {
        if factor == 0 {
            return Some(Form::constant(0));
        }
        let terms = self.terms.iter().map(|(atom, c)| Some((atom.clone(), c.checked_mul(factor)?))).collect::<Option<_>>()?;
        Some(Form { terms, constant: self.constant.checked_mul(factor)? })
    }

    fn plus(&self, other: &Form) -> Option<Form> {
        let mut sum = self.clone();
        sum.constant = sum.constant.checked_add(other.constant)?;
        for (atom, c) in &other.terms {
            let total = sum.terms.get(atom).copied().unwrap_or(0).checked_add(*c)?;
            if total == 0 {
                sum.terms.remove(atom);
            } else {
                sum.terms.insert(atom.clone(), total);
            }
        }
        (sum.terms.len() <= MAX_TERMS).then_some(sum)
    }

    fn minus(&self, other: &Form) -> Option<Form> {
        self.plus(&other.scaled(-1)?)
    }

    /// How deeply `Floor` and `Mod` nest (bounded by construction, so the walks below are shallow).
    fn nesting(&self) -> usize {
        self.terms
            .keys()
            .map(|atom| match atom {
                Atom::Var(_) => 0,
                Atom::Floor(inner, _) | Atom::Mod(inner, _) => inner.nesting() + 1,
            })
            .max()
            .unwrap_or(0)
    }

    /// Every variable the form depends on.
    fn vars(&self, out: &mut BTreeSet<usize>) {
        for atom in self.terms.keys() {
            match atom {
                Atom::Var(id) => {
                    out.insert(*id);
                }
                Atom::Floor(inner, _) | Atom::Mod(inner, _) => inner.vars(out),
            }
        }
    }

    fn var_set(&self) -> BTreeSet<usize> {
        let mut vars = BTreeSet::new();
        self.vars(&mut vars);
        vars
    }

    /// Only variables, no `Floor` or `Mod`.
    fn is_linear(&self) -> bool {
        self.terms.keys().all(|atom| matches!(atom, Atom::Var(_)))
    }

    /// The value for the variables' `values` (`None` if one is missing or on overflow).
    fn value(&self, values: &BTreeMap<usize, i64>) -> Option<i64> {
        self.terms.iter().try_fold(self.constant, |sum, (atom, c)| {
            let value = match atom {
                Atom::Var(id) => *values.get(id)?,
                Atom::Floor(inner, d) => inner.value(values)?.checked_div_euclid(*d)?,
                Atom::Mod(inner, d) => inner.value(values)?.checked_rem_euclid(*d)?,
            };
            sum.checked_add(c.checked_mul(value)?)
        })
    }

    /// The same constraint `self <= 0` with the sign chosen so the first term is positive, and whether it was flipped.
    fn oriented(&self) -> Option<(Form, bool)> {
        let first = *self.terms.values().next()?;
        if first > 0 {
            Some((self.clone(), false))
        } else {
            Some((self.scaled(-1)?, true))
        }
    }
}

/// A condition on several variables that holds in a scope: `form <= 0`, and
/// where it could be made linear, `lo <= linear <= hi` (the `/`, `>>` and `%`
/// of TVM's split-loop guards removed exactly).
#[derive(Debug, Clone)]
struct Guard {
    form: Form,
    linear: Option<(Form, i64, i64)>,
    vars: BTreeSet<usize>,
}

/// `form <= 0` with one `floor(A / d)` removed exactly, if its coefficient
/// allows: `c·floor(A/d) + P <= 0` becomes a condition on `A` and `P`.
fn without_floor(form: &Form) -> Option<Form> {
    // `A % d` is `A - d·floor(A/d)` for `A >= 0`.
    if let Some((atom, c)) = form.terms.iter().find(|(atom, _)| matches!(atom, Atom::Mod(..))) {
        let Atom::Mod(inner, d) = atom else { return None };
        let mut rest = form.clone();
        rest.terms.remove(atom);
        let floor = Form::atom(Atom::Floor(inner.clone(), *d));
        let expanded = inner.as_ref().minus(&floor.scaled(*d)?)?.scaled(*c)?;
        return rest.plus(&expanded);
    }
    let (atom, c) = form.terms.iter().find(|(atom, _)| matches!(atom, Atom::Floor(..)))?;
    let Atom::Floor(inner, d) = atom else { return None };
    let (inner, d, c) = (inner.as_ref(), *d, *c);
    let mut rest = form.clone();
    rest.terms.remove(atom);
    let magnitude = c.checked_abs()?;
    if rest.terms.values().any(|coefficient| coefficient % magnitude != 0) {
        return None;
    }
    let remainder = rest.constant.rem_euclid(magnitude);
    let mut reduced = rest.clone();
    reduced.constant -= remainder;
    let reduced =
        Form { terms: reduced.terms.iter().map(|(a, k)| (a.clone(), k / magnitude)).collect(), constant: reduced.constant / magnitude };
    if c > 0 {
        // floor(A/d) <= t - P'  ⇔  A + d·P' - d·(t + 1) + 1 <= 0, t = floor(-remainder / |c|).
        let t = if remainder == 0 { 0 } else { -1 };
        inner.plus(&reduced.scaled(d)?)?.plus(&Form::constant(d.checked_mul(t + 1)?.checked_neg()?.checked_add(1)?))
    } else {
        // floor(A/d) >= P' + t  ⇔  d·(P' + t) - A <= 0, t = ceil(remainder / |c|).
        let t = i64::from(remainder != 0);
        reduced.plus(&Form::constant(t))?.scaled(d)?.minus(inner)
    }
}

impl Guard {
    fn new(form: Form) -> Guard {
        let mut linear = Some(form.clone());
        for _ in 0..=2 * MAX_NESTING {
            match linear {
                Some(ref f) if !f.is_linear() => linear = without_floor(f),
                _ => break,
            }
        }
        let linear = linear.and_then(|f| {
            let constant = f.constant;
            let mut variable = f;
            variable.constant = 0;
            let (oriented, flipped) = variable.oriented()?;
            let bound = constant.checked_neg()?;
            Some(if flipped { (oriented, bound.checked_neg()?, i64::MAX) } else { (oriented, i64::MIN, bound) })
        });
        let vars = form.var_set();
        Guard { form, linear, vars }
    }
}

/// What a name stands for in the current scope.
#[derive(Debug, Clone)]
enum Binding {
    /// A loop variable, or a variable narrowed by a condition: every value lies in the interval.
    Int(Interval),
    /// An integer declared once from an expression (`int32_t cse_var_1 = (i2 * 3);`): its
    /// range at the declaration, and its form over the variables it reads, kept so a
    /// chain of temporaries is expanded once each and re-read under narrower ranges.
    Let { declared: Interval, form: Option<Form> },
    /// The buffer (or a pointer into it), with the element type it is declared as.
    Buffer(Pointer),
    /// A `cmsis_nn_dims` (`{n, h, w, c}`): the element count of the tensor it describes.
    Dims(u64),
    /// Anything else: shadows outer bindings of the name.
    Opaque,
}

/// The value of an expression as far as the reader follows it.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Int(Option<Interval>),
    Buffer(Pointer),
    /// `&dims` of a `cmsis_nn_dims`.
    DimsAddress(u64),
}

const UNKNOWN: Value = Value::Int(None);

/// A pointer into the buffer: its element type, and the bytes it lies past the buffer's start.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pointer {
    dtype: Option<DType>,
    offset: Interval,
}

impl Pointer {
    fn as_type(self, ty: &str) -> Pointer {
        Pointer { dtype: scalar_dtype(ty.trim_start_matches("const ")).or(self.dtype), ..self }
    }

    /// `self + elements` in C: `None` for a `void*` or on overflow.
    fn advanced(self, elements: Interval) -> Option<Pointer> {
        let size = i64::try_from(self.dtype?.size_bytes()).ok()?;
        let bytes = elements.binary("*", Interval::point(size))?;
        Some(Pointer { offset: self.offset.binary("+", bytes)?, ..self })
    }
}

/// The bytes reached so far (`0..end`), the element type of every access
/// (`None`: several), and how far the accesses known to happen exactly reach.
#[derive(Debug, Clone, Copy)]
struct Reached {
    end: i64,
    dtype: Option<DType>,
    exact_end: Option<i64>,
}

/// What holds in one block: its bindings, the guards on several variables, and
/// whether every condition and loop that decides whether its code runs was followed.
struct Scope {
    bindings: Vec<(String, usize, Binding)>,
    guards: Vec<Guard>,
    followed: bool,
}

impl Scope {
    fn of(bindings: Vec<(String, usize, Binding)>) -> Scope {
        Scope { bindings, guards: Vec::new(), followed: true }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Int(i64),
    Unknown,
    Ident(String),
    Unary(&'static str, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(String, bool, Box<Expr>),
    Call(String, Vec<Expr>),
    Index(Box<Expr>, Box<Expr>),
    Member(Box<Expr>),
    Braces(Vec<Expr>),
}

const INTEGER_TYPES: &[&str] = &[
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "int", "long", "short", "unsigned", "size_t",
];
const CAST_TYPES: &[&str] = &["float", "double", "char", "void", "bool", "signed"];
const KEYWORDS: &[&str] =
    &["if", "else", "for", "while", "do", "switch", "case", "default", "return", "break", "continue", "goto", "sizeof"];

struct Reader<'c> {
    tokens: Vec<Token>,
    at: usize,
    depth: usize,
    mutated: BTreeSet<String>,
    /// Bindings by scope: name, id (kept by narrowings of the same variable), meaning.
    scopes: Vec<Scope>,
    /// Ids of loop variables: each takes every value of its range.
    loop_vars: BTreeSet<usize>,
    /// Guard values left to try in this function.
    budget: std::cell::Cell<u64>,
    next_id: usize,
    /// How far the accesses reach.
    reached: Option<Reached>,
    /// Set when the buffer is used in a way the reader cannot bound.
    unknown: bool,
    callee: &'c dyn Fn(&str, usize) -> Option<Use>,
}

impl Reader<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_at(&self, offset: usize) -> Option<&Token> {
        self.tokens.get(self.at + offset)
    }

    fn is(&self, punct: &str) -> bool {
        matches!(self.peek(), Some(Token::Punct(p)) if *p == punct)
    }

    fn is_word(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Ident(w)) if w == word)
    }

    fn expect(&mut self, punct: &str) -> Option<()> {
        self.is(punct).then(|| self.at += 1)
    }

    fn ident(&mut self) -> Option<String> {
        let Some(Token::Ident(name)) = self.peek() else { return None };
        let name = name.clone();
        self.at += 1;
        Some(name)
    }

    fn lookup(&self, name: &str) -> Option<(usize, &Binding)> {
        self.scopes.iter().rev().find_map(|scope| scope.bindings.iter().rev().find(|(n, _, _)| n == name).map(|(_, id, b)| (*id, b)))
    }

    /// The innermost binding of variable `id`, and its name.
    fn binding_of(&self, id: usize) -> Option<(&str, &Binding)> {
        self.scopes
            .iter()
            .rev()
            .find_map(|scope| scope.bindings.iter().rev().find(|(_, i, _)| *i == id).map(|(name, _, b)| (name.as_str(), b)))
    }

    /// The range of integer variable `name` here, a `let` re-read from its form under the current (narrowed) ranges.
    fn range(&self, name: &str) -> Option<(usize, Interval)> {
        match self.lookup(name)? {
            (id, Binding::Int(range)) => Some((id, *range)),
            (id, Binding::Let { declared, form }) => Some((id, form.as_ref().and_then(|f| self.form_range(f)).unwrap_or(*declared))),
            _ => None,
        }
    }

    /// The range of variable `id` here.
    fn id_range(&self, id: usize) -> Option<Interval> {
        match self.binding_of(id)?.1 {
            Binding::Int(range) => Some(*range),
            Binding::Let { declared, .. } => Some(*declared),
            _ => None,
        }
    }

    /// The range of a form under the current ranges of its variables.
    fn form_range(&self, form: &Form) -> Option<Interval> {
        self.form_range_within(form, &BTreeMap::new())
    }

    /// As [`Self::form_range`], with some atoms known to lie in narrower ranges.
    fn form_range_within(&self, form: &Form, narrowed: &BTreeMap<&Atom, Interval>) -> Option<Interval> {
        form.terms.iter().try_fold(Interval::point(form.constant), |sum, (atom, c)| {
            let range = match atom {
                _ if narrowed.contains_key(atom) => *narrowed.get(atom)?,
                Atom::Var(id) => self.id_range(*id)?,
                Atom::Floor(inner, d) => self.form_range(inner)?.binary("/", Interval::point(*d))?,
                Atom::Mod(inner, d) => self.form_range(inner)?.binary("%", Interval::point(*d))?,
            };
            sum.binary("+", range.binary("*", Interval::point(*c))?)
        })
    }

    fn bind(&mut self, name: String, binding: Binding) {
        let binding = match binding {
            Binding::Int(_) | Binding::Let { .. } if self.mutated.contains(&name) => Binding::Opaque,
            other => other,
        };
        let id = self.next_id;
        self.next_id += 1;
        if let Some(scope) = self.scopes.last_mut() {
            scope.bindings.push((name, id, binding));
        }
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        self.depth += 1;
        let result = if self.depth > MAX_DEPTH { None } else { f(self) };
        self.depth -= 1;
        result
    }

    fn scoped<T>(&mut self, scope: Scope, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        self.scopes.push(scope);
        let result = self.nested(f);
        self.scopes.pop();
        result
    }

    fn statement(&mut self) -> Option<()> {
        self.nested(|r| r.statement_inner())
    }

    fn statement_inner(&mut self) -> Option<()> {
        match self.peek()? {
            Token::Punct("{") => {
                self.at += 1;
                self.scoped(Scope::of(Vec::new()), |r| {
                    while !r.is("}") {
                        r.statement()?;
                    }
                    r.expect("}")
                })
            }
            Token::Punct(";") => self.expect(";"),
            Token::Ident(word) => match word.as_str() {
                "for" => self.for_loop(),
                "if" => {
                    self.at += 1;
                    self.expect("(")?;
                    let condition = self.expression()?;
                    self.expect(")")?;
                    self.evaluate(&condition);
                    let narrowed = self.narrowing(&condition);
                    self.scoped(narrowed, |r| r.statement())?;
                    if self.is_word("else") {
                        self.at += 1;
                        self.scoped(Scope { followed: false, ..Scope::of(Vec::new()) }, |r| r.statement())?;
                    }
                    Some(())
                }
                "while" | "switch" => {
                    self.at += 1;
                    self.expect("(")?;
                    let condition = self.expression()?;
                    self.expect(")")?;
                    self.evaluate(&condition);
                    self.scoped(Scope { followed: false, ..Scope::of(Vec::new()) }, |r| r.statement())
                }
                "case" | "default" => {
                    while !self.is(":") {
                        self.peek()?;
                        self.at += 1;
                    }
                    self.expect(":")
                }
                "return" => {
                    self.at += 1;
                    if !self.is(";") {
                        let value = self.expression()?;
                        self.consume(&value);
                    }
                    self.expect(";")
                }
                "break" | "continue" => {
                    self.at += 1;
                    self.expect(";")
                }
                _ if self.declaration_ahead() => {
                    self.declaration()?;
                    self.expect(";")
                }
                _ => self.expression_statement(),
            },
            _ => self.expression_statement(),
        }
    }

    fn expression_statement(&mut self) -> Option<()> {
        let expr = self.expression()?;
        self.consume(&expr);
        self.expect(";")
    }

    /// `T name`, `T* name`, `struct T name`, `const T name`: a type then a declarator.
    fn declaration_ahead(&self) -> bool {
        let (Some(Token::Ident(first)), Some(second)) = (self.peek(), self.peek_at(1)) else { return false };
        if KEYWORDS.contains(&first.as_str()) {
            return false;
        }
        match second {
            Token::Ident(_) => true,
            Token::Punct("*") => {
                let mut offset = 1;
                while matches!(self.peek_at(offset), Some(Token::Punct("*"))) {
                    offset += 1;
                }
                matches!(self.peek_at(offset), Some(Token::Ident(_)))
                    && matches!(self.peek_at(offset + 1), Some(Token::Punct("=" | ";" | "[" | ",")))
            }
            _ => false,
        }
    }

    /// One declaration, up to (not including) its `;`; binds each name declared.
    fn declaration(&mut self) -> Option<()> {
        let mut type_words = Vec::new();
        while let (Some(Token::Ident(word)), Some(Token::Ident(_) | Token::Punct("*"))) = (self.peek(), self.peek_at(1)) {
            type_words.push(word.clone());
            self.at += 1;
        }
        let ty = type_words.join(" ");
        loop {
            let mut pointer = false;
            while self.is("*") {
                pointer = true;
                self.at += 1;
            }
            let name = self.ident()?;
            let mut array = false;
            while self.is("[") {
                self.at += 1;
                let size = self.expression()?;
                self.consume(&size);
                self.expect("]")?;
                array = true;
            }
            let binding = if self.is("=") {
                self.at += 1;
                let init = self.initializer()?;
                self.declared(&ty, pointer || array, &init)
            } else {
                Binding::Opaque
            };
            self.bind(name, binding);
            if !self.is(",") {
                return Some(());
            }
            self.at += 1;
        }
    }

    fn initializer(&mut self) -> Option<Expr> {
        if !self.is("{") {
            return self.assignment();
        }
        self.at += 1;
        let mut items = Vec::new();
        while !self.is("}") {
            items.push(self.nested(|r| r.initializer())?);
            if !self.is(",") {
                break;
            }
            self.at += 1;
        }
        self.expect("}")?;
        Some(Expr::Braces(items))
    }

    /// What a declared name stands for, given its type and initializer.
    fn declared(&mut self, ty: &str, pointer: bool, init: &Expr) -> Binding {
        if let Expr::Braces(items) = init {
            let values: Vec<Value> = items.iter().map(|item| self.evaluate(item)).collect();
            let dims = values.iter().map(|v| match v {
                Value::Int(Some(iv)) => iv.constant().and_then(|c| u64::try_from(c).ok()),
                _ => None,
            });
            if ty.ends_with("cmsis_nn_dims") && values.len() == 4 {
                return dims
                    .collect::<Option<Vec<u64>>>()
                    .and_then(|d| d.into_iter().try_fold(1u64, u64::checked_mul))
                    .map_or(Binding::Opaque, Binding::Dims);
            }
            return Binding::Opaque;
        }
        match self.evaluate(init) {
            Value::Buffer(at) if pointer => Binding::Buffer(at.as_type(ty)),
            Value::Buffer(_) => {
                self.unknown = true;
                Binding::Opaque
            }
            Value::Int(Some(declared)) if !pointer && INTEGER_TYPES.contains(&ty.trim_start_matches("const ")) => {
                Binding::Let { declared, form: self.form_of(init) }
            }
            _ => Binding::Opaque,
        }
    }

    /// `for (T v = a; v < b; ++v) body`: `v` ranges over `a..b` in the body.
    fn for_loop(&mut self) -> Option<()> {
        self.at += 1;
        self.expect("(")?;
        self.scoped(Scope::of(Vec::new()), |r| {
            let mut variable = None;
            if r.declaration_ahead() {
                r.declaration()?;
                if let Some((name, _, Binding::Let { declared, .. })) = r.scopes.last().and_then(|scope| scope.bindings.last()) {
                    variable = Some((name.clone(), declared.lo));
                }
            } else if !r.is(";") {
                let init = r.expression()?;
                r.consume(&init);
            }
            r.expect(";")?;
            let condition = if r.is(";") { None } else { Some(r.expression()?) };
            r.expect(";")?;
            let step_start = r.at;
            if !r.is(")") {
                let step = r.expression()?;
                r.consume(&step);
            }
            let step: Vec<Token> = r.tokens[step_start..r.at].to_vec();
            r.expect(")")?;
            if let Some(condition) = &condition {
                r.evaluate(condition);
            }
            let mut body = Scope { followed: false, ..Scope::of(Vec::new()) };
            if let (Some((name, lo)), Some(condition)) = (variable, &condition) {
                let increments =
                    matches!(step.as_slice(), [Token::Punct("++"), Token::Ident(v)] | [Token::Ident(v), Token::Punct("++")] if *v == name);
                let upper = r.upper_bound(condition, &name);
                let id = r.next_id;
                r.next_id += 1;
                let binding = match upper {
                    Some((hi, exact)) if increments => {
                        // Every value of the range is taken when the loop runs at least once to a constant bound.
                        body.followed = exact && hi >= lo;
                        r.loop_vars.insert(id);
                        Binding::Int(Interval { lo, hi: hi.max(lo) })
                    }
                    _ => Binding::Opaque,
                };
                body.bindings.push((name, id, binding));
            }
            r.scoped(body, |r| r.statement())
        })
    }

    /// The largest value `name` takes while `condition` (`name < e`, `name <= e`)
    /// holds, and whether `e` is a constant (the value is then taken).
    fn upper_bound(&mut self, condition: &Expr, name: &str) -> Option<(i64, bool)> {
        let Expr::Binary(op, left, right) = condition else { return None };
        let Expr::Ident(variable) = left.as_ref() else { return None };
        if variable != name {
            return None;
        }
        let Value::Int(Some(bound)) = self.evaluate(right) else { return None };
        let exact = bound.constant().is_some();
        match *op {
            "<" => bound.hi.checked_sub(1).map(|hi| (hi, exact)),
            "<=" => Some((bound.hi, exact)),
            _ => None,
        }
    }

    /// What a condition says where it holds: narrower ranges for the variables it
    /// bounds (`(1 <= i) && (i < 17)`), guards on several (`((o * 2) + (i >> 1)) < 5`),
    /// and whether every part of it was understood.
    fn narrowing(&mut self, condition: &Expr) -> Scope {
        let mut scope = Scope::of(Vec::new());
        let mut pending = vec![condition];
        while let Some(expr) = pending.pop() {
            let Expr::Binary(op, left, right) = expr else {
                // Only a constant other than zero is known to hold.
                scope.followed &= self.form_of(expr).and_then(|form| form.as_constant()).is_some_and(|value| value != 0);
                continue;
            };
            if *op == "&&" {
                pending.extend([left.as_ref(), right.as_ref()]);
                continue;
            }
            let one = Form::constant(1);
            let constraints = match (self.form_of(left), self.form_of(right)) {
                (Some(l), Some(r)) => match *op {
                    "<" => vec![l.minus(&r).and_then(|d| d.plus(&one))],
                    "<=" => vec![l.minus(&r)],
                    ">" => vec![r.minus(&l).and_then(|d| d.plus(&one))],
                    ">=" => vec![r.minus(&l)],
                    "==" => vec![l.minus(&r), r.minus(&l)],
                    _ => vec![None],
                },
                _ => vec![None],
            };
            for constraint in constraints {
                match constraint {
                    Some(form) => self.constrain(&mut scope, form),
                    None => {
                        scope.followed = false;
                        self.narrow_by_interval(&mut scope, op, left, right);
                    }
                }
            }
        }
        scope
    }

    /// Adds `form <= 0` to what holds in `scope`: a narrower range when it bounds one variable, else a guard.
    fn constrain(&mut self, scope: &mut Scope, form: Form) {
        if let Some(value) = form.as_constant() {
            // Always true, or never: a branch that never runs reaches nothing exactly.
            scope.followed &= value <= 0;
            return;
        }
        if let (true, [(Atom::Var(id), c)]) = (form.is_linear(), form.terms.iter().collect::<Vec<_>>().as_slice()) {
            let (id, c, k) = (*id, **c, form.constant);
            let current = match scope.bindings.iter().rev().find(|(_, i, _)| *i == id) {
                Some((_, _, Binding::Int(range))) => Some(*range),
                _ => self.id_range(id),
            };
            let name = self.binding_of(id).map(|(name, _)| name.to_string());
            // Narrowed under its name only where the name still means this variable.
            let visible = name.as_deref().and_then(|name| self.lookup(name)).is_some_and(|(seen, _)| seen == id);
            if let (Some(range), Some(name), true) = (current, name, visible) {
                // c·v + k <= 0: v <= floor(-k / c) for c > 0, v >= ceil(k / -c) for c < 0.
                let narrowed = if c > 0 {
                    k.checked_neg().map(|n| Interval { lo: range.lo, hi: range.hi.min(n.div_euclid(c)) })
                } else {
                    c.checked_neg()
                        .zip(k.checked_neg())
                        .and_then(|(m, n)| Some(Interval { lo: range.lo.max(n.div_euclid(m).checked_neg()?), hi: range.hi }))
                };
                match narrowed.filter(|r| r.lo <= r.hi) {
                    Some(range) => scope.bindings.push((name, id, Binding::Int(range))),
                    // An empty range: the branch never runs with these values; keep the old one.
                    None => scope.followed = false,
                }
                return;
            }
        }
        // Past the cap a guard is dropped: the reach stays sound, as an upper bound.
        let guards = scope.guards.len() + self.scopes.iter().map(|s| s.guards.len()).sum::<usize>();
        if guards < MAX_GUARDS {
            scope.guards.push(Guard::new(form));
        } else {
            scope.followed = false;
        }
    }

    /// `variable op bound` where the bound has no form: the variable's range narrowed by the bound's interval.
    fn narrow_by_interval(&mut self, scope: &mut Scope, op: &str, left: &Expr, right: &Expr) {
        let (variable, bound, op) = match (left, right) {
            (Expr::Ident(v), other) => (v, other, op),
            (other, Expr::Ident(v)) => match op {
                "<" => (v, other, ">"),
                "<=" => (v, other, ">="),
                ">" => (v, other, "<"),
                ">=" => (v, other, "<="),
                _ => return,
            },
            _ => return,
        };
        let current = match scope.bindings.iter().rev().find(|(n, _, _)| n == variable) {
            Some((_, id, Binding::Int(range))) => Some((*id, *range)),
            _ => self.range(variable),
        };
        let (Some((id, range)), Value::Int(Some(bound))) = (current, self.evaluate(bound)) else { return };
        let range = match op {
            "<" => bound.hi.checked_sub(1).map(|hi| Interval { lo: range.lo, hi: range.hi.min(hi) }),
            "<=" => Some(Interval { lo: range.lo, hi: range.hi.min(bound.hi) }),
            ">" => bound.lo.checked_add(1).map(|lo| Interval { lo: range.lo.max(lo), hi: range.hi }),
            ">=" => Some(Interval { lo: range.lo.max(bound.lo), hi: range.hi }),
            _ => None,
        };
        // An empty range: the branch never runs with these values; keep the old one.
        if let Some(range) = range.filter(|r| r.lo <= r.hi) {
            scope.bindings.push((variable.clone(), id, Binding::Int(range)));
        }
    }

    /// The quasi-affine form of an integer expression, if it has one.
    fn form_of(&mut self, expr: &Expr) -> Option<Form> {
        self.nested(|r| r.form_of_inner(expr))
    }

    fn form_of_inner(&mut self, expr: &Expr) -> Option<Form> {
        match expr {
            Expr::Int(value) => Some(Form::constant(*value)),
            Expr::Ident(name) => match self.lookup(name)? {
                (id, Binding::Int(_) | Binding::Let { form: None, .. }) => Some(Form::atom(Atom::Var(id))),
                (_, Binding::Let { form: Some(form), .. }) => Some(form.clone()),
                _ => None,
            },
            Expr::Unary("-", operand) => self.form_of(operand)?.scaled(-1),
            Expr::Unary("+", operand) => self.form_of(operand),
            Expr::Cast(ty, false, operand) if INTEGER_TYPES.contains(&ty.as_str()) => {
                let form = self.form_of(operand)?;
                fits(self.form_range(&form)?, ty).then_some(form)
            }
            Expr::Binary(op, left, right) => {
                let (left, right) = (self.form_of(left)?, self.form_of(right)?);
                let shift = || u32::try_from(right.as_constant()?).ok().filter(|s| *s < 62).map(|s| 1i64 << s);
                match *op {
                    "+" => left.plus(&right),
                    "-" => left.minus(&right),
                    "*" => match (left.as_constant(), right.as_constant()) {
                        (Some(c), _) => right.scaled(c),
                        (_, Some(c)) => left.scaled(c),
                        _ => None,
                    },
                    "<<" => left.scaled(shift()?),
                    ">>" => self.divided(left, shift()?, false),
                    "/" => self.divided(left, right.as_constant().filter(|d| *d > 0)?, false),
                    "%" => self.divided(left, right.as_constant().filter(|d| *d > 0)?, true),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `floor(form / divisor)`, or `form % divisor`, of a form never below zero (where C's `/` and `%` are floor's).
    fn divided(&self, form: Form, divisor: i64, remainder: bool) -> Option<Form> {
        let range = self.form_range(&form)?;
        if range.lo < 0 {
            return None;
        }
        if let Some(value) = form.as_constant() {
            return Some(Form::constant(if remainder { value % divisor } else { value / divisor }));
        }
        match (remainder, divisor == 1, range.hi < divisor) {
            (true, true, _) | (false, false, true) => Some(Form::constant(0)),
            (false, true, _) | (true, false, true) => Some(form),
            _ if form.nesting() >= MAX_NESTING => None,
            _ => {
                let inner = Rc::new(form);
                Some(Form::atom(if remainder { Atom::Mod(inner, divisor) } else { Atom::Floor(inner, divisor) }))
            }
        }
    }

    /// Whether the ends of a form's range are values it takes: its atoms read
    /// distinct loop variables, and each atom's ends are taken.
    fn independent(&self, form: &Form) -> bool {
        let mut seen = BTreeSet::new();
        form.terms.keys().all(|atom| {
            let vars = Form::atom(atom.clone()).var_set();
            let disjoint = vars.iter().all(|v| seen.insert(*v));
            disjoint
                && match atom {
                    Atom::Var(id) => self.loop_vars.contains(id),
                    Atom::Floor(inner, _) => self.independent(inner),
                    // Every remainder is taken when the dividend runs through `divisor` consecutive values.
                    Atom::Mod(inner, divisor) => {
                        let single = matches!(inner.terms.iter().collect::<Vec<_>>().as_slice(), [(Atom::Var(_), c)] if c.abs() == 1);
                        single && self.independent(inner) && self.form_range(inner).is_some_and(|r| r.hi - r.lo >= divisor - 1)
                    }
                }
        })
    }

    /// Whether a linear form over loop variables takes every value between its ends.
    fn contiguous(&self, linear: &Form) -> bool {
        let mut terms = Vec::new();
        for (atom, c) in &linear.terms {
            let Atom::Var(id) = atom else { return false };
            let Some(range) = self.id_range(*id).filter(|_| self.loop_vars.contains(id)) else { return false };
            terms.push((c.unsigned_abs(), range.hi.abs_diff(range.lo)));
        }
        terms.sort_unstable();
        let mut span: u64 = 0;
        for (c, width) in terms {
            if c > span.saturating_add(1) {
                return false;
            }
            span = span.saturating_add(c.saturating_mul(width));
        }
        true
    }

    /// The ends of an index's values here, and whether both are taken: its form
    /// within the guards, through clamps to a constant (`min(e, 9)`, `(e < 9) ? e : 9`).
    fn index_ends(&mut self, index: &Expr) -> Option<(Interval, bool)> {
        self.nested(|r| {
            let clamp = match index {
                Expr::Call(function, args) => match (function.as_str(), args.as_slice()) {
                    ("min" | "max", [a, b]) => Some((function.as_str() == "min", a, b)),
                    _ => None,
                },
                Expr::Ternary(condition, a, b) => match condition.as_ref() {
                    Expr::Binary(op @ ("<" | "<=" | ">" | ">="), l, rr) if l == a && rr == b => {
                        Some((op.starts_with('<'), a.as_ref(), b.as_ref()))
                    }
                    _ => None,
                },
                _ => None,
            };
            let Some((is_min, a, b)) = clamp else {
                let form = r.form_of(index)?;
                return r.extremes(&form);
            };
            let (value, limit) = match (r.form_of(a).and_then(|f| f.as_constant()), r.form_of(b).and_then(|f| f.as_constant())) {
                (None, Some(limit)) => (a, limit),
                (Some(limit), None) => (b, limit),
                _ => return None,
            };
            let (ends, exact) = r.index_ends(value)?;
            let clamp = |v: i64| if is_min { v.min(limit) } else { v.max(limit) };
            Some((Interval { lo: clamp(ends.lo), hi: clamp(ends.hi) }, exact))
        })
    }

    /// The smallest and largest value of an index here within the guards that
    /// hold, and whether both are taken by some run of the code (otherwise they are bounds).
    fn extremes(&self, form: &Form) -> Option<(Interval, bool)> {
        // The guards on the index's variables, directly or through other guards, and their variables.
        let form_vars = form.var_set();
        let mut vars = BTreeSet::new();
        let mut relevant: Vec<&Guard> = Vec::new();
        let mut rest: Vec<&Guard> = self.scopes.iter().flat_map(|scope| scope.guards.iter()).collect();
        loop {
            let (touching, other): (Vec<&Guard>, Vec<&Guard>) =
                rest.into_iter().partition(|g| !g.vars.is_disjoint(&form_vars) || !g.vars.is_disjoint(&vars));
            rest = other;
            if touching.is_empty() {
                break;
            }
            touching.iter().for_each(|g| vars.extend(g.vars.iter().copied()));
            relevant.extend(touching);
        }
        if relevant.is_empty() {
            return Some((self.form_range(form)?, self.independent(form)));
        }
        if let Some(found) = self.decomposed(form, &relevant).or_else(|| self.enumerated(form, &relevant, &vars)) {
            return Some(found);
        }
        // A bound: guards on one part of the index (`1 <= (f % 34)`) narrow that part.
        let mut narrowed: BTreeMap<&Atom, Interval> = BTreeMap::new();
        for guard in &relevant {
            let [(atom, &c)] = guard.form.terms.iter().collect::<Vec<_>>()[..] else { continue };
            let Some(current) = narrowed.get(atom).copied().or_else(|| self.form_range(&Form::atom(atom.clone()))) else { continue };
            let k = guard.form.constant;
            let range = match c.signum() {
                1 => k.checked_neg().map(|n| Interval { lo: current.lo, hi: current.hi.min(n.div_euclid(c)) }),
                _ => c
                    .checked_neg()
                    .zip(k.checked_neg())
                    .and_then(|(m, n)| Some(Interval { lo: current.lo.max(n.div_euclid(m).checked_neg()?), hi: current.hi })),
            };
            if let Some(range) = range.filter(|r| r.lo <= r.hi) {
                narrowed.insert(atom, range);
            }
        }
        Some((self.form_range_within(form, &narrowed)?, false))
    }

    /// Each guard's linear form `G` appears in the index as `λ·G`, over variables
    /// no other guard reads and the rest of the index does not: the index's ends
    /// are `λ·` the ends of `G` within the guard, plus the ends of the rest.
    fn decomposed(&self, form: &Form, guards: &[&Guard]) -> Option<(Interval, bool)> {
        let mut merged: Vec<(Form, i64, i64)> = Vec::new();
        for guard in guards {
            let (linear, lo, hi) = guard.linear.as_ref()?;
            if let Some(same) = merged.iter_mut().find(|(f, _, _)| f == linear) {
                same.1 = same.1.max(*lo);
                same.2 = same.2.min(*hi);
            } else if merged.iter().all(|(f, _, _)| f.var_set().is_disjoint(&guard.vars)) {
                merged.push((linear.clone(), *lo, *hi));
            } else {
                return None;
            }
        }
        let (mut rest, mut total, mut exact) = (form.clone(), Interval::point(0), true);
        for (linear, lo, hi) in &merged {
            let (first, c) = linear.terms.iter().next()?;
            let scale = *form.terms.get(first)?;
            if scale % c != 0 {
                return None;
            }
            let part = linear.scaled(scale / c)?;
            if part.terms.iter().any(|(atom, c)| form.terms.get(atom) != Some(c)) {
                return None;
            }
            rest = rest.minus(&part)?;
            let span = self.form_range(linear)?;
            let within = Interval { lo: span.lo.max(*lo), hi: span.hi.min(*hi) };
            if within.lo > within.hi {
                return None;
            }
            exact &= self.contiguous(linear);
            total = total.binary("+", within.binary("*", Interval::point(scale / c))?)?;
        }
        let guarded: BTreeSet<usize> = merged.iter().flat_map(|(f, _, _)| f.var_set()).collect();
        if !rest.var_set().is_disjoint(&guarded) {
            return None;
        }
        Some((total.binary("+", self.form_range(&rest)?)?, exact && self.independent(&rest)))
    }

    /// Every value of the guards' variables tried, when there are few: the
    /// index's ends where every guard holds.
    fn enumerated(&self, form: &Form, guards: &[&Guard], vars: &BTreeSet<usize>) -> Option<(Interval, bool)> {
        let (mut inside, mut rest) = (Form::constant(0), Form::constant(form.constant));
        for (atom, c) in &form.terms {
            let part = Form { terms: BTreeMap::from([(atom.clone(), *c)]), constant: 0 };
            let atom_vars = part.var_set();
            if atom_vars.is_subset(vars) {
                inside = inside.plus(&part)?;
            } else if atom_vars.is_disjoint(vars) {
                rest = rest.plus(&part)?;
            } else {
                return None;
            }
        }
        let ranges: Vec<(usize, Interval)> = vars.iter().map(|id| Some((*id, self.id_range(*id)?))).collect::<Option<_>>()?;
        let count = ranges.iter().try_fold(1u64, |n, (_, r)| n.checked_mul(r.hi.abs_diff(r.lo).checked_add(1)?))?;
        let cost = count.checked_mul(guards.len() as u64 + 1)?;
        if count > MAX_ENUMERATION || cost > self.budget.get() {
            return None;
        }
        self.budget.set(self.budget.get() - cost);
        let mut values: BTreeMap<usize, i64> = ranges.iter().map(|(id, r)| (*id, r.lo)).collect();
        let mut found: Option<Interval> = None;
        'values: loop {
            if guards.iter().all(|g| g.form.value(&values).is_some_and(|v| v <= 0)) {
                let value = Interval::point(inside.value(&values)?);
                found = Some(found.map_or(value, |f| f.hull(value)));
            }
            for (id, range) in &ranges {
                let value = values.get_mut(id)?;
                if *value < range.hi {
                    *value += 1;
                    continue 'values;
                }
                *value = range.lo;
            }
            break;
        }
        let exact = vars.iter().all(|id| self.loop_vars.contains(id)) && self.independent(&rest);
        Some((found?.binary("+", self.form_range(&rest)?)?, exact))
    }

    // Expressions, by C precedence.

    fn expression(&mut self) -> Option<Expr> {
        self.nested(|r| r.assignment())
    }

    fn assignment(&mut self) -> Option<Expr> {
        let target = self.ternary()?;
        const ASSIGN: &[&str] = &["=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="];
        if let Some(Token::Punct(op)) = self.peek() {
            if ASSIGN.contains(op) {
                self.at += 1;
                let value = self.nested(|r| r.assignment())?;
                return Some(Expr::Binary("=", Box::new(target), Box::new(value)));
            }
        }
        Some(target)
    }

    fn ternary(&mut self) -> Option<Expr> {
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

    fn binary(&mut self, level: usize) -> Option<Expr> {
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
        while let Some(Token::Punct(op)) = self.peek() {
            let Some(op) = ops.iter().find(|o| *o == op) else { break };
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

    fn unary(&mut self) -> Option<Expr> {
        if let Some(Token::Punct(op @ ("-" | "+" | "!" | "~" | "&" | "*" | "++" | "--"))) = self.peek() {
            let op = *op;
            self.at += 1;
            let operand = self.nested(|r| r.unary())?;
            return Some(Expr::Unary(op, Box::new(operand)));
        }
        if self.is("(") {
            if let Some((ty, pointer, length)) = self.cast_ahead() {
                self.at += length;
                let operand = self.nested(|r| r.unary())?;
                return Some(Expr::Cast(ty, pointer, Box::new(operand)));
            }
        }
        if self.is_word("sizeof") {
            return None;
        }
        self.postfix()
    }

    /// `(T)`, `(T*)`, `(const T*)`, `(unsigned char)` at the cursor: the type, whether a pointer, and the tokens it takes.
    fn cast_ahead(&self) -> Option<(String, bool, usize)> {
        let mut words = Vec::new();
        let mut offset = 1;
        while let Some(Token::Ident(word)) = self.peek_at(offset) {
            words.push(word.as_str());
            offset += 1;
        }
        let mut pointer = false;
        while matches!(self.peek_at(offset), Some(Token::Punct("*"))) {
            pointer = true;
            offset += 1;
        }
        if !matches!(self.peek_at(offset), Some(Token::Punct(")"))) || words.is_empty() {
            return None;
        }
        let known = |w: &&str| INTEGER_TYPES.contains(w) || CAST_TYPES.contains(w) || *w == "const" || *w == "struct";
        (pointer || words.iter().all(known)).then(|| (words.join(" "), pointer, offset + 1))
    }

    fn postfix(&mut self) -> Option<Expr> {
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
                let Expr::Ident(name) = &expr else { return None };
                let name = name.clone();
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
                expr = Expr::Call(name, args);
            } else if self.is(".") || self.is("->") {
                self.at += 1;
                self.ident()?;
                expr = Expr::Member(Box::new(expr));
            } else if self.is("++") || self.is("--") {
                self.at += 1;
                expr = Expr::Unary("++", Box::new(expr));
            } else {
                return Some(expr);
            }
        }
        None
    }

    fn primary(&mut self) -> Option<Expr> {
        match self.peek()?.clone() {
            Token::Int(value) => {
                self.at += 1;
                Some(Expr::Int(value))
            }
            Token::Number | Token::Text => {
                self.at += 1;
                Some(Expr::Unknown)
            }
            Token::Ident(name) if !KEYWORDS.contains(&name.as_str()) => {
                self.at += 1;
                Some(Expr::Ident(name))
            }
            Token::Punct("(") => {
                self.at += 1;
                let inner = self.expression()?;
                self.expect(")")?;
                Some(inner)
            }
            _ => None,
        }
    }

    // Evaluation: values as intervals, and every use of the buffer.

    /// Evaluates an expression whose value is not kept: a buffer value here is a use the reader cannot follow.
    fn consume(&mut self, expr: &Expr) {
        if let Value::Buffer(_) = self.evaluate(expr) {
            self.unknown = true;
        }
    }

    fn integer_of(&mut self, expr: &Expr) -> Option<Interval> {
        match self.evaluate(expr) {
            Value::Int(iv) => iv,
            Value::Buffer(_) => {
                self.unknown = true;
                None
            }
            Value::DimsAddress(_) => None,
        }
    }

    /// A pointer the code computed into the buffer; `None` (not followed) makes the reach unknown.
    fn pointer(&mut self, at: Option<Pointer>) -> Value {
        at.map_or_else(
            || {
                self.unknown = true;
                UNKNOWN
            },
            Value::Buffer,
        )
    }

    /// An access to elements `index` of type `dtype` through pointer `at`;
    /// `exact`: some run of the code reaches both ends of `index`.
    fn access(&mut self, at: Pointer, index: Option<Interval>, dtype: Option<DType>, exact: bool) {
        let exact = exact && at.offset.constant().is_some() && self.scopes.iter().all(|scope| scope.followed);
        let bytes = |index: Interval, dtype: DType| {
            let size = i64::try_from(dtype.size_bytes()).ok()?;
            let first = at.offset.lo.checked_add(index.lo.checked_mul(size)?)?;
            let end = at.offset.hi.checked_add(index.hi.checked_add(1)?.checked_mul(size)?)?;
            (index.lo >= 0 && first >= 0).then_some(end)
        };
        match index.zip(dtype).and_then(|(index, dtype)| Some((bytes(index, dtype)?, dtype))) {
            Some((end, dtype)) => {
                let exact_end = exact.then_some(end);
                self.reached = Some(match self.reached {
                    Some(seen) => Reached {
                        end: seen.end.max(end),
                        dtype: seen.dtype.filter(|&seen| seen == dtype),
                        exact_end: seen.exact_end.max(exact_end),
                    },
                    None => Reached { end, dtype: Some(dtype), exact_end },
                })
            }
            None => self.unknown = true,
        }
    }

    fn evaluate(&mut self, expr: &Expr) -> Value {
        self.nested(|r| Some(r.evaluate_inner(expr))).unwrap_or_else(|| {
            self.unknown = true;
            UNKNOWN
        })
    }

    fn evaluate_inner(&mut self, expr: &Expr) -> Value {
        match expr {
            Expr::Int(value) => Value::Int(Some(Interval::point(*value))),
            Expr::Unknown => UNKNOWN,
            Expr::Ident(name) => match self.lookup(name) {
                Some((_, Binding::Buffer(at))) => Value::Buffer(*at),
                _ => Value::Int(self.range(name).map(|(_, range)| range)),
            },
            Expr::Unary("&", operand) => match operand.as_ref() {
                Expr::Ident(name) => match self.lookup(name) {
                    Some((_, Binding::Dims(elements))) => Value::DimsAddress(*elements),
                    _ => {
                        self.consume(operand);
                        UNKNOWN
                    }
                },
                // `&(x[i])`: a pointer into the buffer, `i` elements on.
                Expr::Index(base, index) => {
                    let base = self.evaluate(base);
                    let index = self.integer_of(index);
                    match base {
                        Value::Buffer(at) => self.pointer(index.and_then(|index| at.advanced(index))),
                        _ => UNKNOWN,
                    }
                }
                _ => {
                    self.consume(operand);
                    UNKNOWN
                }
            },
            Expr::Unary(op, operand) => {
                let value = self.integer_of(operand);
                match *op {
                    "-" => Value::Int(value.and_then(|iv| Some(Interval { lo: iv.hi.checked_neg()?, hi: iv.lo.checked_neg()? }))),
                    "+" => Value::Int(value),
                    "!" => Value::Int(Some(Interval { lo: 0, hi: 1 })),
                    _ => UNKNOWN,
                }
            }
            Expr::Binary("=", target, value) => {
                let stored = self.evaluate(value);
                if let Value::Buffer(_) = stored {
                    self.unknown = true;
                }
                match target.as_ref() {
                    Expr::Index(..) => {
                        self.evaluate(target);
                    }
                    other => self.consume(other),
                }
                UNKNOWN
            }
            Expr::Binary(op @ ("+" | "-"), left, right) => {
                match (self.evaluate(left), self.evaluate(right)) {
                    // Pointer arithmetic: `x + i`, `i + x`, `x - i`.
                    (Value::Buffer(at), Value::Int(elements)) => {
                        let elements = if *op == "-" { elements.and_then(|iv| iv.binary("*", Interval::point(-1))) } else { elements };
                        self.pointer(elements.and_then(|elements| at.advanced(elements)))
                    }
                    (Value::Int(elements), Value::Buffer(at)) if *op == "+" => {
                        self.pointer(elements.and_then(|elements| at.advanced(elements)))
                    }
                    (Value::Int(Some(l)), Value::Int(Some(r))) => Value::Int(l.binary(op, r)),
                    (Value::Buffer(_), _) | (_, Value::Buffer(_)) => {
                        self.unknown = true;
                        UNKNOWN
                    }
                    _ => UNKNOWN,
                }
            }
            Expr::Binary(op, left, right) => {
                let (left, right) = (self.integer_of(left), self.integer_of(right));
                Value::Int(
                    left.zip(right).and_then(|(l, r)| l.binary(op, r)).or_else(|| {
                        matches!(*op, "<" | "<=" | ">" | ">=" | "==" | "!=" | "&&" | "||").then_some(Interval { lo: 0, hi: 1 })
                    }),
                )
            }
            Expr::Ternary(condition, then, otherwise) => {
                self.consume(condition);
                let narrowed = self.narrowing(condition);
                let then = self.scoped(narrowed, |r| r.integer_of(then).map(Some)).flatten();
                let otherwise =
                    self.scoped(Scope { followed: false, ..Scope::of(Vec::new()) }, |r| r.integer_of(otherwise).map(Some)).flatten();
                Value::Int(then.zip(otherwise).map(|(a, b)| a.hull(b)))
            }
            Expr::Cast(ty, pointer, operand) => match (self.evaluate(operand), pointer) {
                (Value::Buffer(at), true) => Value::Buffer(at.as_type(ty)),
                (Value::Buffer(_), false) => {
                    self.unknown = true;
                    UNKNOWN
                }
                (Value::Int(Some(iv)), false) if INTEGER_TYPES.contains(&ty.as_str()) && fits(iv, ty) => Value::Int(Some(iv)),
                _ => UNKNOWN,
            },
            Expr::Index(base, index) => {
                let range = self.integer_of(index);
                let ends = self.index_ends(index);
                match self.evaluate(base) {
                    Value::Buffer(at) => {
                        // The guards may narrow the index's range further, and tell whether its ends are reached.
                        let (range, exact) = match (range, ends) {
                            (Some(range), Some((ends, exact))) if range.lo <= ends.lo && ends.hi <= range.hi => (Some(ends), exact),
                            (None, Some((ends, exact))) => (Some(ends), exact),
                            (range, _) => (range, false),
                        };
                        self.access(at, range, at.dtype, exact)
                    }
                    Value::DimsAddress(_) | Value::Int(_) => {}
                }
                UNKNOWN
            }
            Expr::Call(function, args) => {
                let values: Vec<Value> = args.iter().map(|arg| self.evaluate(arg)).collect();
                for (position, value) in values.iter().enumerate() {
                    let Value::Buffer(at) = *value else { continue };
                    match self.external(function, position, &values) {
                        Some(elements) => self.access(at, elements.checked_sub(1).map(|hi| Interval { lo: 0, hi }), at.dtype, true),
                        None => match (self.callee)(function, position) {
                            Some(Use::Untouched) => {}
                            Some(Use::Reaches(reach)) => {
                                let last = i64::try_from(reach.elements).ok().and_then(|e| e.checked_sub(1));
                                self.access(at, last.map(|hi| Interval { lo: 0, hi }), Some(reach.dtype), reach.exact)
                            }
                            None => self.unknown = true,
                        },
                    }
                }
                // Clamps (`min(i, 9)`, `max(i - 1, 0)`) as TVM's C prints them.
                match (function.as_str(), values.as_slice()) {
                    ("min", [Value::Int(Some(a)), Value::Int(Some(b))]) => {
                        Value::Int(Some(Interval { lo: a.lo.min(b.lo), hi: a.hi.min(b.hi) }))
                    }
                    ("max", [Value::Int(Some(a)), Value::Int(Some(b))]) => {
                        Value::Int(Some(Interval { lo: a.lo.max(b.lo), hi: a.hi.max(b.hi) }))
                    }
                    _ => UNKNOWN,
                }
            }
            Expr::Member(base) => {
                self.consume(base);
                UNKNOWN
            }
            Expr::Braces(items) => {
                for item in items {
                    self.consume(item);
                }
                UNKNOWN
            }
        }
    }

    /// Elements a CMSIS-NN kernel reaches in its buffer argument `position`: the
    /// `cmsis_nn_dims` passed just before it (`&input_dims, input_`), or for the
    /// softmax kernels (`arm_softmax_s8(input, num_rows, row_size, ..., output)`) rows × row size.
    fn external(&self, function: &str, position: usize, values: &[Value]) -> Option<i64> {
        let elements = match position.checked_sub(1).and_then(|p| values.get(p)) {
            Some(Value::DimsAddress(elements)) => Some(*elements),
            _ if function.starts_with("arm_softmax_") && (position == 0 || position + 1 == values.len()) => {
                let constant = |i: usize| match values.get(i) {
                    Some(Value::Int(Some(iv))) => iv.constant().and_then(|c| u64::try_from(c).ok()),
                    _ => None,
                };
                constant(1)?.checked_mul(constant(2)?)
            }
            _ => None,
        }?;
        i64::try_from(elements).ok()
    }
}

/// Whether every value of `iv` is representable in the integer type `ty`.
fn fits(iv: Interval, ty: &str) -> bool {
    let (lo, hi): (i64, i64) = match ty {
        "int8_t" => (i8::MIN.into(), i8::MAX.into()),
        "uint8_t" => (0, u8::MAX.into()),
        "int16_t" | "short" => (i16::MIN.into(), i16::MAX.into()),
        "uint16_t" => (0, u16::MAX.into()),
        "int32_t" | "int" => (i32::MIN.into(), i32::MAX.into()),
        "uint32_t" | "unsigned" => (0, u32::MAX.into()),
        "uint64_t" | "size_t" => (0, i64::MAX),
        _ => (i64::MIN, i64::MAX),
    };
    lo <= iv.lo && iv.hi <= hi
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str, _: usize) -> Option<Use> {
        None
    }

    fn elements(params: &str, body: &str, name: &str) -> Option<(u64, String)> {
        reach(params, body, name, &none).map(|r| (r.elements, r.dtype.to_string()))
    }

    #[test]
    fn loop_nests_bound_affine_indices() {
        let body = "for (int32_t ax0_ax1_fused = 0; ax0_ax1_fused < 24; ++ax0_ax1_fused) {\n\
                      for (int32_t ax2 = 0; ax2 < 10; ++ax2) {\n\
                        int32_t cse_var_1 = ((ax0_ax1_fused * 10) + ax2);\n\
                        T_subtract[cse_var_1] = (((int16_t)p0[cse_var_1]) - (int16_t)-3);\n\
                      }\n\
                    }\n  return 0;\n";
        let params = "int8_t* p0, int16_t* T_subtract, uint8_t* global_const_workspace_2_var";
        assert_eq!(elements(params, body, "p0"), Some((240, "int8".into())));
        assert_eq!(elements(params, body, "T_subtract"), Some((240, "int16".into())));
        assert_eq!(elements(params, body, "global_const_workspace_2_var"), None, "never accessed");
    }

    #[test]
    fn guards_narrow_the_padded_reads() {
        let body = "void* pad_temp_let = (&(ws[8192]));\n\
            for (int32_t i0 = 0; i0 < 18; ++i0) {\n  for (int32_t i2 = 0; i2 < 18; ++i2) {\n    for (int32_t i3 = 0; i3 < 3; ++i3) {\n\
              int32_t cse_var_1 = (i2 * 3);\n      float condval;\n\
              if (((((1 <= i0) && (i0 < 17)) && (1 <= i2)) && (i2 < 17))) {\n        condval = p0[((((i0 * 48) + cse_var_1) + i3) - 51)];\n\
              } else {\n        condval = 0.000000e+00f;\n      }\n\
              ((float*)pad_temp_let)[(((i0 * 54) + cse_var_1) + i3)] = condval;\n    }\n  }\n}\n\
            for (int32_t i = 0; i < 490; ++i) {\n  out[i] = (((10 <= i) && (i < 480)) ? in8[(i - 10)] : (int8_t)0);\n}\n";
        let params = "float* p0, int8_t* in8, int8_t* out, uint8_t* ws";
        assert_eq!(elements(params, body, "p0"), Some((768, "float32".into())));
        assert_eq!(elements(params, body, "in8"), Some((470, "int8".into())));
        assert_eq!(elements(params, body, "out"), Some((490, "int8".into())));
    }

    #[test]
    fn casts_shifts_masks_and_aliases() {
        let body = "void* placeholder = arg0;\n\
            for (int32_t f = 0; f < 256; ++f) {\n  for (int32_t rc = 0; rc < 3; ++rc) {\n\
              ((float*)arg1)[((((f >> 4) * 54) + ((f & 15) * 3)) + rc)] = (float)((int8_t*)placeholder)[((f / 4) * 3) + (f % 4)];\n  }\n}\n";
        let params = "void* arg0, void* arg1";
        assert_eq!(elements(params, body, "arg1"), Some((15 * 54 + 45 + 3, "float32".into())));
        assert_eq!(elements(params, body, "arg0"), Some((63 * 3 + 3 + 1, "int8".into())));
    }

    #[test]
    fn external_kernels_reach_what_their_dims_say() {
        let body = "cmsis_nn_context context= {ctx,128};\n  cmsis_nn_dims input_dims = {1,96,96,3};\n  cmsis_nn_dims output_dims = {1,48,48,8};\n\
            arm_cmsis_nn_status status = arm_convolve_wrapper_s8(&context, &conv_params, &quant_params, &input_dims, input_, &output_dims, output_);\n\
            switch (!status) {\n  case ARM_CMSIS_NN_SUCCESS: break;\n  case ARM_CMSIS_NN_ARG_ERROR: return -1;\n  }\n  return 0;\n";
        let params = "int8_t* input_, int8_t* output_";
        assert_eq!(elements(params, body, "input_"), Some((27648, "int8".into())));
        assert_eq!(elements(params, body, "output_"), Some((18432, "int8".into())));
        let softmax = "arm_softmax_s8(input_, 1, 2, 2011586560, 20, -1984, output_);\n  return 0;\n";
        assert_eq!(elements(params, softmax, "output_"), Some((2, "int8".into())));
        // A kernel the reader does not know reaches an unknown amount.
        assert_eq!(elements(params, "arm_other_s8(input_, 4);\n", "input_"), None);
    }

    #[test]
    fn calls_are_answered_by_the_callee() {
        let body =
            "if (op_a(x_buffer_var, sid_1_let, ws) != 0 ) return -1;\n  if (op_b(sid_1_let, x_buffer_var) != 0 ) return -1;\n  return 0;\n";
        let callee = |function: &str, position: usize| match (function, position) {
            ("op_a", 0) => DType::parse("int8").ok().map(|dtype| Use::Reaches(Reach { elements: 240, dtype, exact: true })),
            ("op_b", 1) => DType::parse("int8").ok().map(|dtype| Use::Reaches(Reach { elements: 100, dtype, exact: true })),
            ("op_d", 0) => Some(Use::Untouched),
            _ => None,
        };
        let found = reach("int8_t* x_buffer_var, uint8_t* ws", body, "x_buffer_var", &callee);
        assert_eq!(found.map(|r| r.elements), Some(240));
        assert_eq!(reach("int8_t* x_buffer_var", "op_c(x_buffer_var);\n", "x_buffer_var", &callee), None);
        // A callee that never touches the buffer adds nothing to the reach.
        let found = reach("int8_t* x_buffer_var", "op_d(x_buffer_var);\n op_b(0, x_buffer_var);\n", "x_buffer_var", &callee);
        assert_eq!(found.map(|r| r.elements), Some(100));
        assert_eq!(use_of("int8_t* x", "op_d(x);\n", "x", &callee), Some(Use::Untouched));
    }

    #[test]
    fn pointers_at_offsets_into_a_pool_are_followed() {
        // TVM's USMP operators: lets at constant offsets into a `uint8_t*` pool, accessed as several types.
        let body = "void* fused_constant_let = (&(pool[9728]));\n  void* pad_temp_let = (&(pool[8192]));\n\
            for (int32_t i = 0; i < 972; ++i) {\n  ((float*)pad_temp_let)[i] = 0.0f;\n}\n\
            for (int32_t j = 0; j < 8; ++j) {\n  void* acc_let = (&(pool[12080]));\n  ((int32_t*)acc_let)[0] = ((int16_t*)fused_constant_let)[j];\n}\n";
        assert_eq!(elements("uint8_t* pool", body, "pool"), Some((12084, "uint8".into())));
        // One element type: the reach is in it, rounded up to whole elements.
        assert_eq!(elements("uint8_t* pool", "((float*)(pool + 6))[1] = 0.0f;\n", "pool"), Some((4, "float32".into())));
        assert_eq!(elements("float* x", "float* y = x + 4;\n y[0] = 1.0f;\n", "x"), Some((5, "float32".into())));
        let cast = "((int8_t*)((void*)(((uint8_t*)pool) + 100)))[3] = 1;\n";
        assert_eq!(elements("uint8_t* pool", cast, "pool"), Some((104, "int8".into())));
        // Several element types through a buffer not declared as bytes: unknown.
        assert_eq!(elements("float* x", "((int8_t*)x)[0] = 1;\n x[1] = 0.0f;\n", "x"), None);
        // A pointer passed on reaches what the callee reaches, from its offset.
        let callee = |function: &str, position: usize| match (function, position) {
            ("op", 0) => DType::parse("float32").ok().map(|dtype| Use::Reaches(Reach { elements: 10, dtype, exact: true })),
            _ => None,
        };
        let found = reach("uint8_t* pool", "void* sid_1_let = (&(pool[5120]));\n op(sid_1_let);\n", "pool", &callee);
        assert_eq!(found.map(|r| (r.elements, r.dtype.to_string())), Some((1290, "float32".into())));
    }

    /// Elements reached in `x` (int8) and whether the reach is exact.
    fn exact_reach(body: &str) -> Option<(u64, bool)> {
        reach("int8_t* x, int32_t n", body, "x", &none).map(|r| (r.elements, r.exact))
    }

    /// A loop of extent 10 split by 4 inside a loop of 49, with `guard` around `x[index]`.
    fn split_by_four(guard: &str, index: &str) -> String {
        format!(
            "for (int32_t ax0 = 0; ax0 < 49; ++ax0) {{\n  for (int32_t ax3_outer = 0; ax3_outer < 3; ++ax3_outer) {{\n\
             for (int32_t ax3_inner = 0; ax3_inner < 4; ++ax3_inner) {{\n  if ({guard}) {{\n\
             int32_t cse_var_1 = {index};\n  x[cse_var_1] = (int8_t)1;\n  }}\n  }}\n  }}\n}}\n"
        )
    }

    #[test]
    fn split_loop_guards_give_the_exact_reach() {
        let index = "(((ax0 * 10) + (ax3_outer * 4)) + ax3_inner)";
        // TVM writes the tail guard of a split directly, shifted, divided, or scaled by its simplifier.
        for guard in [
            "((ax3_outer * 4) + ax3_inner) < 10",
            "(ax3_inner + (ax3_outer * 4)) <= 9",
            "10 > ((ax3_outer * 4) + ax3_inner)",
            "((ax3_outer * 2) + (ax3_inner >> 1)) < 5",
            "((ax3_outer * 2) + (ax3_inner / 2)) < 5",
            "(((ax3_outer * 4) + ax3_inner) >> 1) < 5",
            "(ax3_outer < 2) || (ax3_inner < 2)",
        ] {
            let found = exact_reach(&split_by_four(guard, index));
            let expected = if guard.contains("||") { (492, false) } else { (490, true) };
            assert_eq!(found, Some(expected), "{guard}");
        }
        // Without the guard the loop reaches 492 elements, exactly.
        assert_eq!(exact_reach(&split_by_four("1", index)), Some((492, true)));
        // The guard on a temporary the index reads.
        let body = "for (int32_t o = 0; o < 3; ++o) {\n for (int32_t i = 0; i < 4; ++i) {\n int32_t cse_var_2 = ((o * 4) + i);\n\
                    if (cse_var_2 < 10) {\n x[cse_var_2] = (int8_t)0;\n }\n }\n}\n";
        assert_eq!(exact_reach(body), Some((10, true)));
        // The same guard in a ternary.
        let body = "for (int32_t o = 0; o < 3; ++o) {\n for (int32_t i = 0; i < 4; ++i) {\n\
                    y[((o * 4) + i)] = ((((o * 2) + (i >> 1)) < 5) ? x[((o * 4) + i)] : (int8_t)0);\n }\n}\n";
        assert_eq!(exact_reach(body), Some((10, true)));
        // [1, 32, 56, 56] read through a layout transform's split of 56 by 16.
        let body = "for (int32_t c = 0; c < 32; ++c) {\n for (int32_t h = 0; h < 56; ++h) {\n\
                    for (int32_t ax3_outer = 0; ax3_outer < 4; ++ax3_outer) {\n for (int32_t ax3_inner = 0; ax3_inner < 16; ++ax3_inner) {\n\
                    if (((ax3_outer * 2) + (ax3_inner >> 3)) < 7) {\n\
                    int32_t cse_var_1 = ((((c * 3136) + (h * 56)) + (ax3_outer * 16)) + ax3_inner);\n\
                    x[cse_var_1] = (int8_t)0;\n }\n }\n }\n }\n}\n";
        assert_eq!(exact_reach(body), Some((32 * 56 * 56, true)));
    }

    #[test]
    fn nested_splits_fused_loops_and_clamps() {
        // Extent 13 split by 8 then by 4: both guards, or the inner one scaled.
        let nest = |guard: &str| {
            format!(
                "for (int32_t o1 = 0; o1 < 2; ++o1) {{\n for (int32_t o2 = 0; o2 < 2; ++o2) {{\n for (int32_t i = 0; i < 4; ++i) {{\n\
                 if ({guard}) {{\n x[(((o1 * 8) + (o2 * 4)) + i)] = (int8_t)0;\n }}\n }}\n }}\n}}\n"
            )
        };
        assert_eq!(exact_reach(&nest("((((o1 * 2) + o2) < 4) && ((((o1 * 8) + (o2 * 4)) + i) < 13))")), Some((13, true)));
        assert_eq!(exact_reach(&nest("((((o1 * 4) + (o2 * 2)) + (i >> 1)) < 7)")), Some((14, true)));
        assert_eq!(exact_reach(&nest("((((o1 * 2) + ((o2 * 4 + i) >> 2)) * 2) < 7)")), Some((16, true)));
        // A fused loop split again: `%` and `/` of the fused variable in guard and index.
        let fused = "for (int32_t f = 0; f < 147; ++f) {\n for (int32_t i = 0; i < 4; ++i) {\n\
                     if ((((f % 3) * 4) + i) < 10) {\n x[((((f / 3) * 10) + ((f % 3) * 4)) + i)] = (int8_t)0;\n }\n }\n}\n";
        assert_eq!(exact_reach(fused), Some((490, true)));
        // Clamps to a constant, as a call or a ternary.
        let clamp = "for (int32_t o = 0; o < 3; ++o) {\n for (int32_t i = 0; i < 4; ++i) {\n\
                     x[min(((o * 4) + i), 9)] = (int8_t)0;\n x[((((o * 4) + i) < 7) ? ((o * 4) + i) : 7)] = (int8_t)0;\n }\n}\n";
        assert_eq!(exact_reach(clamp), Some((10, true)));
        // A guard the reader cannot follow exactly keeps a sound upper bound.
        let wide = "for (int32_t f = 0; f < 100000; ++f) {\n for (int32_t i = 0; i < 8; ++i) {\n\
                    if ((((f % 7) * 8) + i) < 50) {\n x[((f * 8) + i)] = (int8_t)0;\n }\n }\n}\n";
        assert_eq!(exact_reach(wide), Some((800_000, false)));
        let unknown_guard = "for (int32_t i = 0; i < 8; ++i) {\n if (i != n) {\n x[i] = (int8_t)0;\n }\n}\n";
        assert_eq!(exact_reach(unknown_guard), Some((8, false)));
        // A loop whose bound is a run-time value: unknown, as before.
        assert_eq!(exact_reach("for (int32_t i = 0; i < n; ++i) { x[i] = (int8_t)0; }\n"), None);
    }

    #[test]
    fn chained_temporaries_and_deep_text_take_linear_time() {
        let started = std::time::Instant::now();
        // Each temporary reads the previous one twice: expanded textually this doubles per level.
        let mut body = String::from("for (int32_t i = 0; i < 4; ++i) {\n  int32_t t0 = i;\n");
        for level in 1..=60 {
            body += &format!("  int32_t t{level} = ((t{p} + t{p}) - t{p});\n", p = level - 1);
        }
        body += "  if (t60 < 3) {\n    x[t60] = (int8_t)0;\n  }\n}\n";
        assert_eq!(exact_reach(&body), Some((3, true)));
        // Temporaries without a linear form (ternaries) are kept as their range.
        let mut body = String::from("for (int32_t i = 0; i < 4; ++i) {\n  int32_t t0 = i;\n");
        for level in 1..=60 {
            body += &format!("  int32_t t{level} = ((t{p} < 2) ? t{p} : t{p});\n", p = level - 1);
        }
        body += "  x[t60] = (int8_t)0;\n}\n";
        assert_eq!(exact_reach(&body).map(|(elements, _)| elements), Some(4));
        // Shifts of shifts nest a bounded number of times, then stay intervals.
        let mut body = String::from("for (int32_t i = 0; i < 4096; ++i) {\n  int32_t t0 = i;\n");
        for level in 1..=60 {
            body += &format!("  int32_t t{level} = ((t{p} >> 1) + (t{p} >> 2));\n", p = level - 1);
        }
        body += "  x[t60] = (int8_t)0;\n}\n";
        assert!(exact_reach(&body).is_some());
        // Long chains and deep nesting are refused by the depth limit, not the stack.
        let chain = format!("x[{}0] = (int8_t)0;\n", "1 + ".repeat(200_000));
        assert_eq!(exact_reach(&chain), None);
        let conjuncts = format!("if ({}1) {{ x[0] = (int8_t)0; }}\n", "1 && ".repeat(200_000));
        assert_eq!(exact_reach(&conjuncts), None);
        let subscripts = format!("x[0]{} = 1;\n", "[0]".repeat(200_000));
        assert_eq!(exact_reach(&subscripts), None);
        // Many guards on several variables at once: capped, the reach stays a sound bound.
        let mut body = String::from("for (int32_t i = 0; i < 64; ++i) {\n for (int32_t j = 0; j < 64; ++j) {\n");
        for level in 0..20 {
            let guard = |a: i64, b: i64| format!("((((i * {a}) + (j * {b})) + {level}) < 1000)");
            body += &format!("if ({} && {} && {} && {}) {{\n", guard(2, 1), guard(1, 2), guard(3, 1), guard(1, 3));
        }
        body += &format!("x[((i * 64) + j)] = (int8_t)0;\n{}", "}\n".repeat(22));
        assert_eq!(exact_reach(&body), Some((4096, false)));
        let parens = format!("x[{}0{}] = (int8_t)0;\n", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(exact_reach(&parens), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    }

    #[test]
    fn what_cannot_be_bounded_is_unknown() {
        let params = "float* x, int32_t n";
        // A bound computed at run time, a pointer escaping, an index that changes inside the loop.
        assert_eq!(elements(params, "for (int32_t i = 0; i < n; ++i) { x[i] = 0.0f; }\n", "x"), None);
        assert_eq!(elements(params, "float* y = x + n;\n y[0] = 1.0f;\n", "x"), None);
        assert_eq!(elements(params, "float* y = x + 4;\n y = y + 1;\n y[0] = 1.0f;\n", "x"), None);
        assert_eq!(elements(params, "float* y = x - 4;\n y[2] = 1.0f;\n", "x"), None, "before the buffer");
        assert_eq!(elements(params, "store(&(x[n]));\n", "x"), None);
        assert_eq!(elements(params, "int32_t k = 0;\nfor (int32_t i = 0; i < 4; ++i) { x[k] = 0.0f; k = k + 8; }\n", "x"), None);
        assert_eq!(elements(params, "for (int32_t i = 0; i < 4; ++i) { x[i - 1] = 0.0f; }\n", "x"), None, "below zero");
        // Overflow is refused, not wrapped.
        let huge = "for (int64_t i = 0; i < 9223372036854775807; ++i) { x[i * 4] = 0.0f; }\n";
        assert_eq!(elements(params, huge, "x"), None);
        assert_eq!(elements(params, "x[0] = 1.0f; @\n", "x"), None, "not C");
        let deep = format!("x[{}0{}] = 1.0f;\n", "(".repeat(10_000), ")".repeat(10_000));
        assert_eq!(elements(params, &deep, "x"), None);
    }
}
