//! The limits an archive's C text must keep before any scanner reads it:
//! its length ([`check_length`]) and bracket depth ([`MAX_NESTING`], which
//! the parser checks as it reads), and how far its macros may expand
//! ([`check_macros`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::{Error, ErrorKind, Result};
use crate::ident;
use crate::input::c::parser::syntax::CSource;
use crate::input::c::text::strip_comments;

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

/// Refuses a C file longer than [`MAX_SOURCE_BYTES`], before anything reads it.
pub(crate) fn check_length(path: &str, text: &str) -> Result<()> {
    if text.len() > MAX_SOURCE_BYTES {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!("is {} bytes long, more than the {MAX_SOURCE_BYTES} bytes mlf-build reads of a C file", text.len()),
        )
        .in_file(path)
        .help("TVM's largest C sources are tens of MiB: pass the archive as TVM wrote it"));
    }
    Ok(())
}

/// One `#define` as [`check_macros`] reads it.
pub(crate) struct MacroDefinition<'f> {
    /// The file it is in.
    path: &'f str,
    name: &'f str,
    /// A function-like macro's parameters (`...` among them).
    params: Option<Vec<&'f str>>,
    /// What it expands to, comments and literals' contents blanked.
    body: Cow<'f, str>,
}

impl<'f> MacroDefinition<'f> {
    /// Every `#define` of `source`, in order.
    pub(crate) fn all_of<'s>(source: &'s CSource<'f>) -> impl Iterator<Item = MacroDefinition<'f>> + 's {
        source.defines.iter().map(|define| {
            let body = source.text_of(define.body);
            // Only a body with a comment or literal is lexed again, on its own.
            let body = if body.contains(['/', '"', '\'']) { Cow::Owned(strip_comments(body)) } else { Cow::Borrowed(body) };
            MacroDefinition { path: source.path, name: define.name, params: define.params.clone(), body }
        })
    }
}

/// Checks that no object-like or function-like `#define` among `definitions`
/// (of every file, taken together as one program may
/// include them all) expands to more than [`MAX_MACRO_TOKENS`] tokens or
/// through a chain of more than [`MAX_MACRO_DEPTH`] macros: a chain of
/// macros each naming the next twice grows geometrically in the compiler.
/// A macro's size counts each macro its body names at its own size; one
/// named inside its own expansion counts one token, as C expands it no further.
/// Returns the macros, to check the code that invokes them ([`Macros::check_code`]).
pub(crate) fn check_macros<'f>(definitions: &'f [MacroDefinition<'f>]) -> Result<Macros<'f>> {
    // Name → (file of its first definition, body tokens). Redefinitions add up: a bound for either.
    let mut macros: BTreeMap<&str, (&str, Vec<&str>)> = BTreeMap::new();
    // Function-like macro → (parameters, body after them) of each definition.
    let mut function_like: HashMap<&str, Vec<(Vec<&str>, &str)>> = HashMap::new();
    let mut object_like: Vec<(&str, &str)> = Vec::new();
    for definition in definitions {
        let (name, body) = (definition.name, definition.body.as_ref());
        macros.entry(name).or_insert((definition.path, Vec::new())).1.extend(tokens(body));
        match &definition.params {
            Some(params) => {
                let parameters = params.iter().map(|&param| if param == "..." { "__VA_ARGS__" } else { param }).collect();
                function_like.entry(name).or_default().push((parameters, body));
            }
            None => object_like.push((name, body)),
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

/// The macros of an archive's C: each one's size and, for a function-like
/// one, its growth factor ([`growth_factors`]).
#[derive(Debug, Default)]
pub(crate) struct Macros<'f> {
    sizes: HashMap<&'f str, u64>,
    factors: HashMap<&'f str, u64>,
}

impl Macros<'_> {
    /// Whether `source` names a function-like macro (or a name standing for
    /// one) anywhere: only such a file can invoke one.
    pub(crate) fn named_in(&self, source: &CSource<'_>) -> bool {
        self.factors.keys().any(|name| source.mentions(name))
    }

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
            if ident::is_identifier_byte(byte) {
                while i < bytes.len() && ident::is_identifier_byte(bytes[i]) {
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

/// The identifiers of `body` and one token for each other run of non-space characters.
fn tokens(body: &str) -> impl Iterator<Item = &str> {
    body.split(|c: char| c.is_ascii_whitespace() || c == '\\').flat_map(|run| {
        let mut parts = Vec::new();
        let mut rest = run;
        while !rest.is_empty() {
            let word = rest.find(|c: char| !ident::is_identifier_char(c)).unwrap_or(rest.len());
            let cut = if word == 0 { rest.find(ident::is_identifier_char).unwrap_or(rest.len()) } else { word };
            parts.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        parts
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::c::parser::parse::parse;
    use crate::input::c::text::{called_functions, function_definitions};

    /// The `#define`s of `text` (the file `path`), as the parser reads them.
    fn definitions<'t>(path: &'t str, text: &'t str) -> Vec<MacroDefinition<'t>> {
        MacroDefinition::all_of(&parse(path, text).unwrap()).collect()
    }

    /// 100,000 `f(` in a literal, or unclosed in the code, are one pass each;
    /// the unclosed ones nest deeper than [`MAX_NESTING`] and are refused.
    #[test]
    fn adversarial_brackets_are_read_in_one_pass() {
        let literal = format!("const char* s = \"{}\";\nint g(void) {{ return 0; }}\n", "f(".repeat(100_000));
        let code = strip_comments(&literal);
        assert_eq!(function_definitions(&code).map(|(name, _)| name).collect::<Vec<_>>(), ["g"]);
        assert_eq!(called_functions(&code).count(), 1);
        parse("lib.c", &literal).unwrap();
        let open = format!("int g(void) {{ {} }}", "f(".repeat(100_000));
        assert_eq!(function_definitions(&open).count(), 1);
        let error = parse("codegen/host/src/lib.c", &open).unwrap_err();
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
        let error = check_macros(&definitions("include/tvmgen_default.h", &doubling)).unwrap_err();
        assert!(error.to_string().contains("macro `M27` expands to more than 67108864 tokens"), "{error}");
        assert_eq!(error.file(), Some("include/tvmgen_default.h"));
        let chain: String = (0..100).map(|level| format!("#define C{level} C{}\n", level + 1)).collect();
        let error = check_macros(&definitions("lib.c", &chain)).unwrap_err();
        assert!(error.to_string().contains("chain of more than 64 macros"), "{error}");
        // Self-reference and cycles stop, as in C; TVM's macros pass.
        let fine = "#define A A B\n#define B A\n#define F(x) (x) * 2 \\\n  + A\n#define SIZE 4\n#define DATA 0x1, 0x2, \\\n 0x3\n";
        check_macros(&definitions("h", fine)).unwrap();
        // Comments and literals in a body are no tokens of it.
        let commented = "#define A B /* B B B */ \"B B\"\n#define B 1\n";
        let definitions = definitions("h", commented);
        assert_eq!(definitions.iter().map(|definition| tokens(&definition.body).count()).collect::<Vec<_>>(), [3, 1]);
    }

    /// Function-like macros invoked nested in code: a doubling one 40 deep is
    /// refused naming the macro, file and line; one that copies its argument
    /// once passes however deep; macros invoking each other multiply.
    #[test]
    fn nested_invocations_that_grow_geometrically_are_refused() {
        let nested = |name: &str, depth: usize| format!("{}1{}", format!("{name}(").repeat(depth), ")".repeat(depth));
        let defines = "#define D(x) x x\n#define ID(x) (x)\n#define T(a, ...) a __VA_ARGS__ a __VA_ARGS__ \\\n  a\n";
        let header = definitions("include/tvmgen_default.h", defines);
        let macros = check_macros(&header).unwrap();
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
        let mutual = definitions("h", mutual);
        let macros = check_macros(&mutual).unwrap();
        let error = macros.check_code("lib.c", &format!("int z =\n\n{};\n", nested("A", 30))).unwrap_err();
        assert!(error.to_string().contains("invoked at line 3"), "{error}");
        assert!(macros.check_code("lib.c", &format!("int z = {};\n", nested("S", 30))).is_err());
        macros.check_code("lib.c", &format!("int z = {} + {};\n", nested("A", 5), nested("S", 5))).unwrap();

        // A name standing for a function-like macro invokes it too.
        let aliases = definitions("h", "#define D(x) x x\n#define E D\n#define G E\n");
        let macros = check_macros(&aliases).unwrap();
        let error = macros.check_code("lib.c", &format!("int v = {};\n", nested("G", 40))).unwrap_err();
        assert!(error.to_string().contains("macro `G` invoked at line 1"), "{error}");
        macros.check_code("lib.c", &format!("int v = {} + G;\n", nested("G", 5))).unwrap();

        // A macro whose body nests them grows where it is used: refused at its `#define`.
        let copies = format!("#define D(x) x x\n#define F(y) {}\n", nested("D", 10).replace('1', "y"));
        let big = format!("{copies}#define BIG {}\n", nested("D", 40));
        let error = check_macros(&definitions("h", &big)).unwrap_err();
        assert!(error.to_string().contains("macro `BIG` in its `#define` expands to more than"), "{error}");
        // `F` copies its argument 2^10 times; nested three deep that is 2^30.
        let copies = definitions("h", &copies);
        let macros = check_macros(&copies).unwrap();
        macros.check_code("lib.c", "int w = F(F(1));\n").unwrap();
        assert!(macros.check_code("lib.c", "int w = F(F(F(1)));\n").is_err());
    }
}
