//! How an AOT module's run is split into steps, one operator call each
//! (issue 34): the model function's top-level statements, read by the C
//! parser, are cut after each call to an operator; its parameters and locals
//! move to a static state so they survive between steps. The result is data
//! (`plan::model::Steps`); `codegen::stepper` writes the C. Anything the split cannot
//! prove keeps the same meaning makes the module `Steps::Whole`, with why.

use std::collections::BTreeSet;

use crate::ident::CIdent;
use crate::input::c::files::CFiles;
use crate::input::c::lexer::Kind;
use crate::input::c::parser::numeric::lex_at;
use crate::input::c::parser::syntax::{CSource, Declarator, Expr, Function, Initializer, Span, Stmt, StmtKind};
use crate::input::code::ModuleCode;
use crate::input::sources::Sources;
use crate::plan::model::{Begin, Entry, ModulePlan, Split, StateVar, Steps, STATE};

/// The two model functions' names TVM writes, in the order profiling prefers them.
pub(crate) fn model_functions(module: &str) -> [String; 2] {
    [format!("tvmgen_{module}___tvm_main__"), format!("tvmgen_{module}_run_model")]
}

/// The steps of an AOT module, `None` for graph and operator modules (their
/// steps are the schedule's calls, or the one call).
pub(crate) fn for_module(sources: &Sources<'_>, files: &CFiles<'_>, module: &ModulePlan) -> Option<Steps> {
    let m = module.name.as_str();
    let codegen = &module.codegen;
    let find = |function: &str| sources.defining(&codegen.c_sources, function).map(|(path, ..)| path.clone());
    let main = model_functions(m).into_iter().find(|name| find(name).is_some());
    // (function the glue calls, its file) when it is not the model function.
    let called: Option<(String, Option<String>)> = match &module.entry {
        Entry::Graph(_) | Entry::Operator { .. } => return None,
        Entry::CInterface(interface) => match &interface.direct_entry {
            Some(direct) => {
                if main.as_deref() != Some(direct.as_str()) {
                    return Some(whole(format!("the glue calls `{direct}` directly, which is not the model function profiling reads")));
                }
                None
            }
            None => {
                let run = format!("tvmgen_{m}_run");
                Some((run.clone(), find(&run)))
            }
        },
        Entry::Packed { function, file } => Some((function.to_string(), Some(file.clone()))),
        Entry::LegacyDescriptor { symbol, file } => {
            let run = files.get(file).and_then(|source| descriptor_run_function(source, symbol.as_str()));
            match run {
                Some(run) => Some((run, Some(file.clone()))),
                None => return Some(whole(format!("the run function of descriptor `{symbol}` in {file} is not read"))),
            }
        }
    };
    let Some(main) = main else {
        let [a, b] = model_functions(m);
        return Some(whole(format!("no source of module `{m}` defines its model function `{a}` or `{b}`")));
    };
    let called = called.filter(|(function, _)| *function != main);
    let model_file = find(&main)?;
    let wrapper_file = match &called {
        Some((function, None)) => return Some(whole(format!("no C source of module `{m}` defines `{function}`"))),
        Some((function, Some(file))) => Some((function.clone(), file.clone())),
        None => None,
    };
    let code = ModuleCode::new(sources.tree, files, codegen);
    let defined = |name: &str| code.defines(name);
    let parsed = |file: &str| files.get(file).ok_or_else(|| whole(format!("{file} is not among the archive's parsed C files")));
    let model = match parsed(&model_file) {
        Ok(source) => source,
        Err(whole) => return Some(whole),
    };
    let wrapper_source = match &wrapper_file {
        Some((_, file)) if *file != model_file => match parsed(file) {
            Ok(source) => Some(source),
            Err(whole) => return Some(whole),
        },
        _ => None,
    };
    let wrapper = wrapper_file.as_ref().map(|(function, _)| (wrapper_source.unwrap_or(model), function.as_str()));
    Some(split(&EntryCode { model, model_function: &main, wrapper, defined: &defined }))
}

/// The code a split reads: the model function's source, and the function the glue calls when it is another.
pub(crate) struct EntryCode<'s, 't> {
    pub model: &'s CSource<'t>,
    pub model_function: &'s str,
    /// (its source, its name).
    pub wrapper: Option<(&'s CSource<'t>, &'s str)>,
    /// Whether the module's code defines a function (an operator, when the model function calls it).
    pub defined: &'s dyn Fn(&str) -> bool,
}

fn whole(why: String) -> Steps {
    Steps::Whole { why: format!("stepping runs the model as one step: {why}") }
}

/// `&name` or `name` given to `.run_func` in the descriptor `symbol`.
fn descriptor_run_function(source: &CSource<'_>, symbol: &str) -> Option<String> {
    let variable = source.variables.iter().find(|variable| variable.name == symbol)?;
    let Some(crate::input::c::parser::syntax::Init::Tree(Initializer::List(items))) = &variable.init else { return None };
    let (_, Initializer::Expr(value)) = items.iter().find(|(designator, _)| *designator == Some("run_func"))? else { return None };
    let mut value = value;
    loop {
        match value {
            Expr::Unary("&", inner) | Expr::Paren(inner) => value = inner,
            Expr::Ident(name, _) => return Some(name.to_string()),
            _ => return None,
        }
    }
}

/// Splits the model function of `entry`, or says why it runs whole.
pub(crate) fn split(entry: &EntryCode<'_, '_>) -> Steps {
    match try_split(entry) {
        Ok(split) => Steps::Split(Box::new(split)),
        Err(why) => whole(why),
    }
}

/// Where a refusal happened, for its message.
struct At<'a> {
    function: &'a str,
    file: &'a str,
}

impl At<'_> {
    fn says(&self, line: u32, what: impl std::fmt::Display) -> String {
        format!("`{}` in {} {what} at line {line}", self.function, self.file)
    }
}

fn try_split(entry: &EntryCode<'_, '_>) -> Result<Split, String> {
    let source = entry.model;
    let main = entry.model_function;
    let at = At { function: main, file: source.path };
    let function = source.function(main).ok_or_else(|| format!("{} defines no `{main}`", source.path))?;
    let ident = |what: &str, name: &str| CIdent::new(what, name).map_err(|_| format!("`{name}` in {} is no C identifier", source.path));
    plain_path(source.path)?;
    check_tokens(source, function, &at)?;
    let body = function.body(source);
    if body.foreign {
        return Err(at.says(function.body_span.line, "has a token C has no place for (`#`, `##` or another character)"));
    }
    let mut state: Vec<StateVar> = Vec::new();
    for param in function.params.iter().filter(|param| !(function.params.len() == 1 && param.text.trim() == "void")) {
        let text = param.text.trim();
        let tail = text.rsplit('*').next().unwrap_or(text);
        let typed = text != param.name && !text.contains(['[', '(', '.']);
        if !typed || tail.split_whitespace().any(|word| word == "const") {
            return Err(at.says(
                function.params_span.line,
                format_args!("has parameter `{}`, which a state member cannot hold as written", param.name),
            ));
        }
        if state.iter().any(|var| var.name == param.name) {
            return Err(at.says(function.params_span.line, format_args!("names two parameters `{}`", param.name)));
        }
        state.push(StateVar { name: ident("a parameter", param.name)?, declaration: text.to_string(), parameter: true });
    }
    let is_operator = |name: &str| name != main && (entry.defined)(name);
    let mut operators: Vec<CIdent> = Vec::new();
    // Per statement: its text with the state's names rewritten, and the operator call it ends a step with.
    let mut texts: Vec<String> = Vec::new();
    let mut ends_step: Vec<bool> = Vec::new();
    // (statement, constant returned or None, line) of every `return`.
    let mut returns: Vec<(usize, Option<i64>, u32)> = Vec::new();
    for (index, statement) in body.statements.iter().enumerate() {
        let line = statement.span.line;
        let mut edits: Vec<(Span, String)> = Vec::new();
        match &statement.kind {
            StmtKind::Unparsed => return Err(at.says(line, "has a statement the parser does not read")),
            StmtKind::For { .. } | StmtKind::While { .. } => return Err(at.says(line, "has a loop")),
            StmtKind::Switch { .. } => return Err(at.says(line, "has a switch")),
            StmtKind::Label { .. } => return Err(at.says(line, "has a label")),
            StmtKind::Break | StmtKind::Continue => return Err(at.says(line, "has a break or continue outside a loop")),
            StmtKind::Return(_) if index + 1 != body.statements.len() => return Err(at.says(line, "returns before its last statement")),
            StmtKind::Decl { type_words, type_span, declarators } => {
                const STORAGE: &[&str] =
                    &["static", "extern", "typedef", "register", "const", "_Thread_local", "thread_local", "auto", "inline", "constexpr"];
                if let Some(word) = type_words.iter().find(|word| STORAGE.contains(word)) {
                    return Err(at.says(line, format_args!("declares a `{word}` local")));
                }
                let [declarator] = declarators.as_slice() else { return Err(at.says(line, "declares several locals in one statement")) };
                let declaration = local_declaration(source, *type_span, declarator).ok_or_else(|| {
                    at.says(
                        line,
                        format_args!(
                            "declares `{}` in a form a state member cannot take (a brace initialiser, variable or empty dimensions)",
                            declarator.name
                        ),
                    )
                })?;
                if state.iter().any(|var| var.name == declarator.name) {
                    return Err(at.says(line, format_args!("declares `{}` again", declarator.name)));
                }
                state.push(StateVar { name: ident("a local", declarator.name)?, declaration, parameter: false });
                // `T* name = init;` becomes `mlf_steps.name = init;`; without an initialiser, nothing.
                match declarator.init {
                    Some(_) => edits.push((
                        Span { start: statement.span.start, end: declarator.name_span.end, line },
                        format!("{STATE}.{}", declarator.name),
                    )),
                    None => edits.push((statement.span, String::new())),
                }
            }
            _ => {}
        }
        let mut walk = Walk { is_operator: Some(&is_operator), ..Walk::default() };
        walk.statement(statement);
        if walk.sizeof {
            return Err(at.says(line, "uses sizeof, whose operand the parser keeps no names of"));
        }
        let in_state = |name: &str| state.iter().any(|var| var.name == name);
        if let Some(name) = walk.nested_decls.iter().find(|name| in_state(name)) {
            return Err(at.says(line, format_args!("declares `{name}` in a block, hiding a parameter or local the steps share")));
        }
        if let Some(name) = walk.callees.iter().find(|name| in_state(name)) {
            return Err(at.says(line, format_args!("calls through `{name}`, a parameter or local")));
        }
        // Only a name declared by now is the state's: an earlier use of a later local's name is another variable.
        edits.extend(walk.idents.iter().filter(|(name, _)| in_state(name)).map(|(name, span)| (*span, format!("{STATE}.{name}"))));
        returns.extend(walk.returns.iter().map(|value| (index, *value, line)));
        match walk.calls.as_slice() {
            [] => ends_step.push(false),
            [call] => {
                if !operator_in_place(statement) {
                    return Err(at.says(
                        line,
                        format_args!("calls operator `{call}` where it may not run exactly once (a branch, a block or an argument)"),
                    ));
                }
                operators.push(ident("an operator", call)?);
                ends_step.push(true);
            }
            [first, second, ..] => return Err(at.says(line, format_args!("calls two operators (`{first}`, `{second}`) in one statement"))),
        }
        texts.push(edited(source, statement.span, edits));
    }
    if operators.is_empty() {
        return Err(format!("`{main}` in {} calls no function the module defines", source.path));
    }
    // The parser's calls in text order, as profiling counts them: any the statements did not show (a macro, an unread part) refuses.
    let counted: Vec<&str> = body.called.iter().map(|(name, _)| *name).filter(|name| is_operator(name)).collect();
    if counted.len() != operators.len() || counted.iter().zip(&operators).any(|(a, b)| *a != b.as_str()) {
        return Err(format!("`{main}` in {}: the operator calls its statements show differ from those its text names", source.path));
    }
    // The step each statement runs in: up to and including its operator call; what follows the last, in the last step.
    let mut step_of = Vec::with_capacity(texts.len());
    let mut step = 0usize;
    for ends in &ends_step {
        step_of.push(step.min(operators.len() - 1));
        if *ends {
            step += 1;
        }
    }
    let last = operators.len() - 1;
    // A return that ends a step early must say the run failed: a 0 would read as "continue".
    if let Some((_, _, line)) = returns.iter().find(|(index, value, _)| step_of[*index] != last && value.is_none_or(|value| value == 0)) {
        return Err(at.says(*line, "returns a value that is not a non-zero constant before its last operator call"));
    }
    let mut steps = vec![String::new(); operators.len()];
    for (text, step) in texts.iter().zip(&step_of) {
        if !text.is_empty() {
            steps[*step].push_str(text);
            steps[*step].push('\n');
        }
    }
    let begin = match entry.wrapper {
        None => Begin::Direct,
        Some((wrapper, name)) => wrapper_begin(entry, wrapper, name)?,
    };
    Ok(Split {
        operators,
        file: source.path.to_string(),
        function: ident("the model function", main)?,
        params_text: source.text_of(function.params_span).to_string(),
        state,
        steps,
        begin,
    })
}

/// The function the glue calls, when it only passes its arguments on to the model function.
fn wrapper_begin(entry: &EntryCode<'_, '_>, source: &CSource<'_>, name: &str) -> Result<Begin, String> {
    let at = At { function: name, file: source.path };
    plain_path(source.path)?;
    let function = source.function(name).ok_or_else(|| format!("{} defines no `{name}`", source.path))?;
    check_tokens(source, function, &at)?;
    let body = function.body(source);
    let line = function.body_span.line;
    let doing_more = || at.says(line, format_args!("does more than pass its arguments to `{}`", entry.model_function));
    let [Stmt { kind: StmtKind::Return(Some(Expr::Call { callee, args, span })), .. }] = body.statements.as_slice() else {
        return Err(doing_more());
    };
    if *callee != entry.model_function || body.foreign || !args.iter().all(is_plain_value) {
        return Err(doing_more());
    }
    let arguments = Span { start: span.start.saturating_add(callee.len() as u32), ..*span };
    let model = entry.model.function(entry.model_function).ok_or_else(doing_more)?;
    // The recorder's prototype beside the wrapper: the declaration its file gives the model function, when typed.
    let declared = (source.path != entry.model.path)
        .then(|| source.prototypes.iter().find(|prototype| prototype.name == entry.model_function))
        .flatten()
        .filter(|prototype| prototype.params.iter().all(|param| param.text.trim() != param.name))
        .map(|prototype| source.text_of(prototype.params_span));
    Ok(Begin::Wrapper {
        file: source.path.to_string(),
        function: CIdent::new("the entry function", name).map_err(|_| doing_more())?,
        params_text: source.text_of(function.params_span).to_string(),
        arguments: source.text_of(arguments).to_string(),
        model_params_text: declared.unwrap_or_else(|| entry.model.text_of(model.params_span)).to_string(),
    })
}

/// A value computed without effects: names, members, casts, constant indexes, addresses.
fn is_plain_value(expr: &Expr<'_>) -> bool {
    match expr {
        Expr::Int(_) | Expr::Number | Expr::Ident(..) => true,
        Expr::Unary("&" | "*" | "-", inner) | Expr::Paren(inner) | Expr::Cast { value: inner, .. } | Expr::Member { of: inner, .. } => {
            is_plain_value(inner)
        }
        Expr::Index(of, index) => is_plain_value(of) && is_plain_value(index),
        _ => false,
    }
}

/// A tree path the copy can `#include` and compile as C.
fn plain_path(path: &str) -> Result<(), String> {
    let plain = path.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"_-./".contains(&byte)) && path.ends_with(".c");
    plain.then_some(()).ok_or_else(|| format!("{path} is no C source with a plain path the stepper can include"))
}

/// Refuses what the statements do not show: a preprocessor line inside the
/// body, a macro of the file used in it (the copy's code comes after all of
/// the file's `#define`s), a name mlf-build's step code uses.
fn check_tokens(source: &CSource<'_>, function: &Function<'_>, at: &At<'_>) -> Result<(), String> {
    let macros: BTreeSet<&str> = source.defines.iter().map(|define| define.name).collect();
    if let Some(define) = source.defines.iter().find(|define| define.name.starts_with(crate::own_code::GLUE_PREFIX)) {
        return Err(at.says(define.span.line, format_args!("has macro `{}`, a name of mlf-build's code", define.name)));
    }
    let span = function.body_span;
    let mut lexer = lex_at(source.text(), span.start as usize, span.line as usize);
    while lexer.offset() < span.end as usize {
        let Some(token) = lexer.next() else { break };
        let line = token.line as u32;
        if token.preprocessor {
            return Err(at.says(line, "has a preprocessor line in its body"));
        }
        if token.kind == Kind::Identifier {
            let name = token.text(source.text());
            if name.starts_with(crate::own_code::GLUE_PREFIX) {
                return Err(at.says(line, format_args!("uses `{name}`, a name of mlf-build's code")));
            }
            if macros.contains(name) {
                return Err(at.says(line, format_args!("uses `{name}`, a macro its file defines")));
            }
        }
    }
    Ok(())
}

/// `type *name[dims]` of a top-level local with an expression or no
/// initialiser and constant dimensions: its state member's declaration.
fn local_declaration(source: &CSource<'_>, type_span: Span, declarator: &Declarator<'_>) -> Option<String> {
    if matches!(declarator.init, Some(Initializer::List(_) | Initializer::Numeric { .. })) {
        return None;
    }
    if declarator.init.is_some() && !declarator.dims.is_empty() {
        return None;
    }
    let stars = source.text_of(Span { start: type_span.end, end: declarator.name_span.start, line: type_span.line });
    if type_span.end > declarator.name_span.start || !stars.chars().all(|c| c == '*' || c.is_whitespace()) {
        return None;
    }
    let mut declaration = format!("{} {}{}", source.text_of(type_span), stars.trim(), declarator.name);
    for dim in &declarator.dims {
        match dim {
            Expr::Int(n) if *n > 0 => declaration.push_str(&format!("[{n}]")),
            _ => return None,
        }
    }
    Some(declaration)
}

/// `span`'s text with `edits` (sorted, inside it, apart) made.
fn edited(source: &CSource<'_>, span: Span, mut edits: Vec<(Span, String)>) -> String {
    edits.sort_by_key(|(span, _)| span.start);
    let mut text = String::new();
    let mut at = span.start;
    for (edit, with) in &edits {
        // Edits are one per name token plus a declaration's head before them: apart by construction.
        debug_assert!(edit.start >= at && edit.end <= span.end, "edit {edit:?} overlaps or leaves {span:?}");
        if edit.start < at || edit.end > span.end {
            continue;
        }
        text.push_str(source.text_of(Span { start: at, end: edit.start, line: 0 }));
        text.push_str(with);
        at = edit.end;
    }
    text.push_str(source.text_of(Span { start: at, end: span.end, line: 0 }));
    text
}

/// Whether the statement's one operator call runs exactly once whenever the
/// statement runs: the statement's expression, a declaration's initialiser,
/// or an `if` condition's comparison, possibly cast or assigned.
fn operator_in_place(statement: &Stmt<'_>) -> bool {
    fn call_like(expr: &Expr<'_>) -> bool {
        match expr {
            Expr::Call { .. } => true,
            Expr::Cast { value, .. } | Expr::Paren(value) | Expr::Assign("=", _, value) => call_like(value),
            _ => false,
        }
    }
    fn tested(expr: &Expr<'_>) -> bool {
        match expr {
            Expr::Binary("!=" | "==" | "<" | ">" | "<=" | ">=", left, right) => call_like(left) || call_like(right),
            Expr::Unary("!", inner) | Expr::Paren(inner) => tested(inner),
            _ => call_like(expr),
        }
    }
    match &statement.kind {
        StmtKind::Expr(expr) | StmtKind::Return(Some(expr)) => tested(expr),
        StmtKind::If { condition, .. } => tested(condition),
        StmtKind::Decl { declarators, .. } => declarators.iter().any(|d| matches!(&d.init, Some(Initializer::Expr(expr)) if tested(expr))),
        _ => false,
    }
}

/// What a statement holds, all nesting included.
#[derive(Default)]
struct Walk<'a, 't> {
    is_operator: Option<&'a dyn Fn(&str) -> bool>,
    /// Operators called, in text order.
    calls: Vec<&'t str>,
    /// Every callee.
    callees: Vec<&'t str>,
    sizeof: bool,
    /// Names declared in nested blocks.
    nested_decls: Vec<&'t str>,
    /// Every identifier read, with where.
    idents: Vec<(&'t str, Span)>,
    /// Every `return`'s value when a constant.
    returns: Vec<Option<i64>>,
}

impl<'t> Walk<'_, 't> {
    fn statement(&mut self, statement: &Stmt<'t>) {
        self.kind(&statement.kind, true);
    }

    fn kind(&mut self, kind: &StmtKind<'t>, top: bool) {
        match kind {
            StmtKind::Block(statements) => statements.iter().for_each(|s| self.kind(&s.kind, false)),
            StmtKind::Decl { declarators, .. } => {
                for declarator in declarators {
                    if !top {
                        self.nested_decls.push(declarator.name);
                    }
                    declarator.dims.iter().for_each(|dim| self.expr(dim));
                    if let Some(init) = &declarator.init {
                        self.initializer(init);
                    }
                }
            }
            StmtKind::Expr(expr) => self.expr(expr),
            StmtKind::If { condition, then, otherwise } => {
                self.expr(condition);
                self.kind(&then.kind, false);
                if let Some(otherwise) = otherwise {
                    self.kind(&otherwise.kind, false);
                }
            }
            StmtKind::For { init, condition, step, body } => {
                if let Some(init) = init {
                    self.kind(&init.kind, false);
                }
                condition.iter().chain(step).for_each(|expr| self.expr(expr));
                self.kind(&body.kind, false);
            }
            StmtKind::While { condition: value, body } | StmtKind::Switch { value, body } => {
                self.expr(value);
                self.kind(&body.kind, false);
            }
            StmtKind::Label { case } => case.iter().for_each(|expr| self.expr(expr)),
            StmtKind::Return(value) => {
                self.returns.push(value.as_ref().and_then(constant));
                value.iter().for_each(|expr| self.expr(expr));
            }
            StmtKind::Empty | StmtKind::Break | StmtKind::Continue | StmtKind::Unparsed => {}
        }
    }

    fn initializer(&mut self, init: &Initializer<'t>) {
        match init {
            Initializer::Expr(expr) => self.expr(expr),
            Initializer::List(items) => items.iter().for_each(|(_, item)| self.initializer(item)),
            Initializer::Numeric { .. } => {}
        }
    }

    fn expr(&mut self, expr: &Expr<'t>) {
        match expr {
            Expr::Int(_) | Expr::Number | Expr::Text => {}
            Expr::Sizeof => self.sizeof = true,
            Expr::Ident(name, span) => self.idents.push((name, *span)),
            Expr::Unary(_, inner)
            | Expr::Postfix(_, inner)
            | Expr::Paren(inner)
            | Expr::Cast { value: inner, .. }
            | Expr::Member { of: inner, .. } => self.expr(inner),
            Expr::Binary(_, left, right) | Expr::Assign(_, left, right) | Expr::Index(left, right) => {
                self.expr(left);
                self.expr(right);
            }
            Expr::Ternary(a, b, c) => {
                self.expr(a);
                self.expr(b);
                self.expr(c);
            }
            Expr::Call { callee, args, .. } => {
                self.callees.push(callee);
                if self.is_operator.is_some_and(|is_operator| is_operator(callee)) {
                    self.calls.push(callee);
                }
                args.iter().for_each(|arg| self.expr(arg));
            }
        }
    }
}

/// The value of `-1`, `(1)`, `42` and the like.
fn constant(expr: &Expr<'_>) -> Option<i64> {
    match expr {
        Expr::Int(value) => Some(*value),
        Expr::Paren(inner) => constant(inner),
        Expr::Unary("-", inner) => constant(inner)?.checked_neg(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::c::parser::parse::parse;
    use crate::plan::{profile, read_and_plan, PlanOptions};
    use crate::test_support::corpus_dir;

    const ENTRY: &str = "#include <stdint.h>\n\
        int32_t op_a(int8_t* x, void* y) { return 0; }\n\
        static int32_t op_b(void* x, int8_t* y) { return 0; }\n\
        int32_t tvmgen_default___tvm_main__(int8_t* input, int8_t* output) {\n\
        \x20 void* sid_1 = TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 0, 8);\n\
        \x20 if (sid_1 == NULL) {\n    return -1;\n  }\n\
        \x20 TVMValue ret_val;\n\
        \x20 if (op_a(input, sid_1) != 0 ) return -1;\n\
        \x20 if (op_b(sid_1, output) != 0 ) return -1;\n\
        \x20 if (TVMBackendFreeWorkspace(1, 0, sid_1) != 0) {\n    return -1;\n  }\n\
        \x20 return 0;\n}\n\
        int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs, struct tvmgen_default_outputs* outputs) {\
        return tvmgen_default___tvm_main__(inputs->input, outputs->output);\n}\n";

    /// The steps of `text`'s `tvmgen_default___tvm_main__`, begun by `tvmgen_default_run`.
    fn steps_of(text: &str) -> Steps {
        let source = parse("codegen/host/src/default_lib1.c", text).unwrap();
        let names: Vec<&str> = source.functions.iter().map(|function| function.name).collect();
        let defined = |name: &str| names.contains(&name);
        let main = "tvmgen_default___tvm_main__";
        split(&EntryCode { model: &source, model_function: main, wrapper: Some((&source, "tvmgen_default_run")), defined: &defined })
    }

    fn why(text: &str) -> String {
        match steps_of(text) {
            Steps::Whole { why } => why,
            Steps::Split(split) => panic!("split: {split:?}"),
        }
    }

    /// Allocations and checks go with the call after them, what follows the
    /// last call with it; parameters and locals read from the state.
    #[test]
    fn splits_after_each_operator_call() {
        let Steps::Split(split) = steps_of(ENTRY) else { panic!("{:?}", steps_of(ENTRY)) };
        assert_eq!(split.operators, ["op_a", "op_b"]);
        let names: Vec<(&str, bool)> = split.state.iter().map(|var| (var.name.as_str(), var.parameter)).collect();
        assert_eq!(names, [("input", true), ("output", true), ("sid_1", false), ("ret_val", false)]);
        assert_eq!(split.state[2].declaration, "void *sid_1");
        assert_eq!(split.state[3].declaration, "TVMValue ret_val");
        assert_eq!(
            split.steps[0],
            "mlf_steps.sid_1 = TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 0, 8);\n\
             if (mlf_steps.sid_1 == NULL) {\n    return -1;\n  }\n\
             if (op_a(mlf_steps.input, mlf_steps.sid_1) != 0 ) return -1;\n"
        );
        assert!(split.steps[1].starts_with("if (op_b(mlf_steps.sid_1, mlf_steps.output) != 0 ) return -1;\n"), "{}", split.steps[1]);
        assert!(split.steps[1].ends_with("return 0;\n"), "{}", split.steps[1]);
        let Begin::Wrapper { arguments, params_text, model_params_text, .. } = &split.begin else { panic!("{:?}", split.begin) };
        assert_eq!(arguments, "(inputs->input, outputs->output)");
        assert!(params_text.starts_with("struct tvmgen_default_inputs* inputs"));
        assert_eq!(model_params_text, "int8_t* input, int8_t* output");
    }

    /// The address of a local taken in one step and read in another: every
    /// top-level local lives in the state, so the address stays valid.
    #[test]
    fn addresses_of_locals_point_into_the_state() {
        let text = ENTRY.replace("op_a(input, sid_1)", "op_a(input, &ret_val)").replace("op_b(sid_1, output)", "op_b(&ret_val, output)");
        let Steps::Split(split) = steps_of(&text) else { panic!() };
        assert!(split.steps[0].contains("op_a(mlf_steps.input, &mlf_steps.ret_val)"), "{}", split.steps[0]);
        assert!(split.steps[1].contains("op_b(&mlf_steps.ret_val, mlf_steps.output)"), "{}", split.steps[1]);
    }

    /// Each construct the split cannot prove keeps its meaning runs whole, and says which and where.
    #[test]
    fn what_cannot_be_split_runs_whole_and_says_why() {
        let call = "  if (op_a(input, sid_1) != 0 ) return -1;\n";
        let cases: &[(&str, String)] = &[
            ("has a loop at line 10", ENTRY.replace(call, "  for (int i = 0; i < 2; ++i) { op_a(input, sid_1); }\n")),
            ("has a statement the parser does not read at line 10", ENTRY.replace(call, "  goto done;\n")),
            ("has a switch at line 10", ENTRY.replace(call, "  switch (1) { default: op_a(input, sid_1); }\n")),
            (
                "calls two operators (`op_a`, `op_b`) in one statement at line 10",
                ENTRY.replace(call, "  if (sid_1 != NULL) { op_a(input, sid_1); op_b(sid_1, output); }\n"),
            ),
            (
                "calls operator `op_a` where it may not run exactly once",
                ENTRY.replace(call, "  if (sid_1 != NULL) { op_a(input, sid_1); }\n"),
            ),
            (
                "calls operator `op_a` where it may not run exactly once",
                ENTRY.replace(call, "  if (sid_1 && op_a(input, sid_1)) return -1;\n"),
            ),
            ("declares `k` in a form a state member cannot take", ENTRY.replace("  TVMValue ret_val;", "  int32_t k[2] = {1, 2};")),
            ("declares `k` in a form a state member cannot take", ENTRY.replace("  TVMValue ret_val;", "  int32_t k[input[0]];")),
            ("declares a `static` local", ENTRY.replace("  TVMValue ret_val;", "  static int32_t k;")),
            ("has a preprocessor line in its body at line 10", ENTRY.replace(call, &format!("#ifdef SKIP_A\n{call}#endif\n"))),
            ("has a token C has no place for", ENTRY.replace("  TVMValue ret_val;", "  TVMValue ret ## _val;")),
            (
                "uses `ALLOC`, a macro its file defines at line 6",
                format!("#define ALLOC TVMBackendAllocWorkspace\n{}", ENTRY.replace("= TVMBackendAllocWorkspace", "= ALLOC")),
            ),
            (
                "returns a value that is not a non-zero constant",
                ENTRY.replace("    return -1;\n  }\n  TVMValue", "    return 0;\n  }\n  TVMValue"),
            ),
            ("uses sizeof", ENTRY.replace("(uint64_t)16", "sizeof(ret_val)")),
            (
                "declares `sid_1` in a block, hiding a parameter or local",
                ENTRY.replace("    return -1;\n  }\n  TVMValue", "    void* sid_1 = 0;\n  }\n  TVMValue"),
            ),
            ("calls no function the module defines", ENTRY.replace("op_a(input", "op_x(input").replace("op_b(sid_1", "op_y(sid_1")),
            ("uses `mlf_steps`, a name of mlf-build's code", ENTRY.replace("  TVMValue ret_val;", "  TVMValue ret_val = mlf_steps;")),
            (
                "`tvmgen_default_run` in codegen/host/src/default_lib1.c does more than pass its arguments",
                ENTRY.replace(
                    "{return tvmgen_default___tvm_main__(inputs->input, outputs->output);",
                    "{int32_t r = tvmgen_default___tvm_main__(inputs->input, outputs->output); return r;",
                ),
            ),
            (
                "does more than pass its arguments",
                ENTRY.replace("(inputs->input, outputs->output);\n}", "(inputs->input++, outputs->output);\n}"),
            ),
        ];
        for (expected, text) in cases {
            let why = why(text);
            assert!(why.contains(expected), "`{expected}` not in `{why}` for:\n{text}");
            assert!(why.starts_with("stepping runs the model as one step: "), "{why}");
        }
        // The first refusal names the function and the file.
        assert!(why(&cases[0].1).contains("`tvmgen_default___tvm_main__` in codegen/host/src/default_lib1.c has a loop at line 10"));
    }

    /// Every AOT module of the corpus: split into the operator calls profiling
    /// counts, or whole with a reason; the cases known to split do.
    #[test]
    fn corpus_entries_split_at_profiling_s_operator_calls() {
        let Some(corpus) = corpus_dir() else { return };
        let mut split_cases = Vec::new();
        for set in ["tvm-0.18", "real-world"] {
            let Ok(cases) = std::fs::read_dir(corpus.join(set)) else { continue };
            let mut cases: Vec<_> = cases.filter_map(|case| case.ok()).map(|case| case.path()).collect();
            cases.sort();
            for case in cases {
                let name = case.file_name().unwrap().to_string_lossy().into_owned();
                let Ok(planned) = read_and_plan(&case.join("model.tar"), &PlanOptions::default()) else { continue };
                let texts = crate::input::c::CTexts::of(&planned.tree);
                let files = crate::input::c::CFiles::parse(&texts).unwrap();
                for module in &planned.plan.modules {
                    match &module.entry_split {
                        None => assert!(matches!(module.entry, Entry::Graph(_) | Entry::Operator { .. }), "{name}"),
                        Some(Steps::Whole { why }) => println!("{name} {}: whole: {why}", module.name),
                        Some(Steps::Split(split)) => {
                            let code = crate::input::code::ModuleCode::new(&planned.tree, &files, &module.codegen);
                            let profiled = profile::operator_calls(&code, module).unwrap_or_else(|e| panic!("{name}: {e}"));
                            assert_eq!(split.operators, profiled.calls, "{name} {}", module.name);
                            assert_eq!(split.steps.len(), split.operators.len());
                            println!("{name} {}: {} steps", module.name, split.operators.len());
                            split_cases.push(format!("{name}/{}", module.name));
                        }
                    }
                }
            }
        }
        for expected in [
            "kws_int8-aot_c_usmp/default",
            "kws_int8-aot_c_nousmp/default",
            "kws_int8-aot_c_pools/default",
            "kws_int8-aot_c/default",
            "cnn_f32-aot_c_usmp/default",
            "mobilenet_f32-aot_c/default",
            "arduino-yesno-aot-packed-v5/default",
            "arduino-microspeech-aot-tvm_model_t-v5/default",
        ] {
            assert!(split_cases.iter().any(|case| case == expected), "{expected} not split: {split_cases:?}");
        }
    }
}
