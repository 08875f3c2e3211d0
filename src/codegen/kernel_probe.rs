//! A host program that asks CMSIS-NN how much scratch each kernel call of the
//! archive needs on the target core, through the library's own
//! `*_get_buffer_size_{dsp,mve}` functions (which exist so that tools on a
//! host can size buffers for a core), fed the call's own structures.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::ident::{c_comment, is_c_identifier};
use crate::input::kernel_library::{KernelLocal, ScratchCall};
use crate::input::{c, sources};

/// Which of the kernels' code paths the core's compile selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KernelPath {
    Portable,
    Dsp,
    Mve,
}

impl KernelPath {
    pub fn describe(self) -> &'static str {
        match self {
            KernelPath::Portable => "portable C",
            KernelPath::Dsp => "DSP-extension",
            KernelPath::Mve => "Helium (MVE)",
        }
    }
}

/// Size parameters named differently from the kernel's own parameters, as
/// CMSIS-NN documents them: `(name, kernel parameter, field)`.
const SIZE_PARAMETERS: &[(&str, &str, &str)] =
    &[("output_x", "output_dims", "w"), ("dim_dst_width", "output_dims", "w"), ("ch_src", "input_dims", "c")];

/// The probe's C and what it asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScratchProbe {
    /// `None` when no call can be asked about.
    pub source: Option<String>,
    /// `(index into the calls, size function)`, in the order the program prints.
    pub asked: Vec<(usize, String)>,
    /// `(index into the calls, why the library cannot be asked about it)`.
    pub unasked: Vec<(usize, String)>,
    /// `(index into the calls, why)`: calls whose structures are not constants
    /// the crate can evaluate (TVM writes integers), so their scratch cannot be checked.
    pub unreadable: Vec<(usize, String)>,
}

/// Why a call is not in the probe.
enum Unasked {
    /// The library has no size function that fits the call.
    Library(String),
    /// The call's arguments are not numbers or constant structures.
    Archive(String),
}

impl ScratchProbe {
    /// The size functions the program calls.
    pub fn size_functions(&self) -> BTreeSet<String> {
        self.asked.iter().map(|(_, function)| function.clone()).collect()
    }
}

/// The program for `calls`, given the library's declarations (`name → parameters`).
pub(crate) fn scratch_probe(calls: &[&ScratchCall], declarations: &BTreeMap<String, String>, path: KernelPath) -> ScratchProbe {
    let mut probe = ScratchProbe { source: None, asked: Vec::new(), unasked: Vec::new(), unreadable: Vec::new() };
    let mut blocks = String::new();
    for (index, call) in calls.iter().enumerate() {
        match size_call(call, declarations, path) {
            Ok((function, block)) => {
                blocks.push_str(&format!("    {{ /* call {index} */\n{block}    }}\n"));
                probe.asked.push((index, function));
            }
            Err(Unasked::Library(why)) => probe.unasked.push((index, why)),
            Err(Unasked::Archive(why)) => probe.unreadable.push((index, why)),
        }
    }
    if !probe.asked.is_empty() {
        probe.source = Some(format!(
            "/* Written by mlf-build: the scratch bytes CMSIS-NN's {} code needs for each kernel call of the archive. */\n\
             #include <stdint.h>\n#include <stdio.h>\n#include \"arm_nnfunctions.h\"\n\nint main(void) {{\n{blocks}    return 0;\n}}\n",
            path.describe()
        ));
    }
    probe
}

/// The size function for `call` and the statements printing its result.
/// The program runs on the build machine, so nothing of the archive's text
/// reaches it: the structures are evaluated here into integers and written
/// under names of the probe's own; only the library's function names and
/// `cmsis_nn_*` type names (checked identifiers) are taken over.
fn size_call(call: &ScratchCall, declarations: &BTreeMap<String, String>, path: KernelPath) -> Result<(String, String), Unasked> {
    let base = format!("{}_get_buffer_size", call.kernel);
    let function = match path {
        KernelPath::Portable => base,
        KernelPath::Dsp => format!("{base}_dsp"),
        KernelPath::Mve => format!("{base}_mve"),
    };
    let library = |why: String| Unasked::Library(why);
    let size_params = declarations.get(&function).ok_or_else(|| library(format!("the library declares no `{function}`")))?;
    if !is_c_identifier(&function) {
        return Err(library(format!("`{}` is not a C identifier", c_comment(&function))));
    }
    let kernel_params =
        parameter_names(declarations.get(&call.kernel).ok_or_else(|| library(format!("the library declares no `{}`", call.kernel)))?);
    let argument = |name: &str| kernel_params.iter().position(|param| param == name).and_then(|at| call.args.get(at));
    let values = evaluate_locals(&call.locals);
    // The call's structures the arguments use, by position in `call.locals`; the probe names them `s0`, `s1`, ...
    let mut structures: Vec<usize> = Vec::new();
    let mut args = Vec::new();
    for name in parameter_names(size_params) {
        let (text, field) = match (argument(&name), SIZE_PARAMETERS.iter().find(|(alias, _, _)| *alias == name)) {
            (Some(arg), _) => (arg, None),
            (None, Some((_, param, field))) => {
                (argument(param).ok_or_else(|| library(format!("`{}` has no `{param}`", call.kernel)))?, Some(*field))
            }
            (None, None) => return Err(library(format!("`{function}` takes `{name}`, which `{}` has no parameter for", call.kernel))),
        };
        let arg = match (probe_argument(text, &call.locals).map_err(Unasked::Archive)?, field) {
            (Argument::Number(number), None) => number.to_string(),
            (Argument::Structure(local), field) => {
                let at = structures.iter().position(|index| *index == local).unwrap_or_else(|| {
                    structures.push(local);
                    structures.len() - 1
                });
                field.map_or_else(|| format!("&s{at}"), |field| format!("s{at}.{field}"))
            }
            (Argument::Number(_), Some(field)) => {
                return Err(Unasked::Archive(format!("its argument for `{name}` is a number, not a structure with `{field}`")));
            }
        };
        args.push(arg);
    }
    let mut block = String::new();
    for (at, local) in structures.iter().enumerate() {
        let value = values[*local].as_ref().map_err(|why| Unasked::Archive(why.clone()))?;
        let local = &call.locals[*local];
        block.push_str(&format!("        {} s{at} = {};\n", local.type_name, value.render()));
    }
    block.push_str(&format!("        printf(\"%ld\\n\", (long){function}({}));\n", args.join(", ")));
    Ok((function, block))
}

/// An argument of a kernel call the probe can pass on.
enum Argument {
    /// An integer constant.
    Number(i64),
    /// `&local`: the address of one of the call's structures (its index).
    Structure(usize),
}

fn probe_argument(text: &str, locals: &[KernelLocal]) -> Result<Argument, String> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if let Ok(number) = integer_literal(&compact) {
        return Ok(Argument::Number(number));
    }
    let named =
        |name: &str| -> Vec<usize> { locals.iter().enumerate().filter(|(_, local)| local.name == name).map(|(at, _)| at).collect() };
    match compact.strip_prefix('&').map(named).as_deref() {
        Some([at]) => Ok(Argument::Structure(*at)),
        _ => Err(format!("its argument `{}` is neither a number nor the address of one constant structure", c_comment(text))),
    }
}

/// A constant structure as the probe writes it: integers in braces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Number(i64),
    List(Vec<Value>),
}

impl Value {
    fn render(&self) -> String {
        match self {
            Value::Number(number) => number.to_string(),
            Value::List(items) => format!("{{{}}}", items.iter().map(Value::render).collect::<Vec<_>>().join(", ")),
        }
    }
}

/// Deepest nesting of braces in a structure's initializer (CMSIS-NN's go two deep).
const MAX_INIT_DEPTH: usize = 8;
/// Most integers in one structure, copies of other structures included (CMSIS-NN's hold at most a dozen).
const MAX_INIT_NUMBERS: usize = 256;

/// Each local's value (by position), where its initializer is integers,
/// `NULL` and copies of locals declared before it; else why not. A name
/// stands for the latest local declared with it (looked up in a map: linear in the locals).
pub(crate) fn evaluate_locals(locals: &[KernelLocal]) -> Vec<Result<Value, String>> {
    let mut values: Vec<Result<Value, String>> = Vec::with_capacity(locals.len());
    let mut latest: HashMap<&str, usize> = HashMap::new();
    for local in locals {
        let value = if is_c_identifier(&local.type_name) && local.type_name.starts_with("cmsis_nn_") {
            let earlier = |name: &str| latest.get(name).map(|&at| &values[at]);
            evaluate(&local.init, earlier)
                .map_err(|why| format!("`{}` is not initialized with numbers and structures only: {why}", local.name))
        } else {
            Err(format!("`{}` has the type `{}`, not a CMSIS-NN structure", local.name, c_comment(&local.type_name)))
        };
        latest.insert(&local.name, values.len());
        values.push(value);
    }
    values
}

/// The value of an initializer (the text between its outer braces).
fn evaluate<'v>(init: &str, earlier: impl Fn(&str) -> Option<&'v Result<Value, String>>) -> Result<Value, String> {
    let mut open: Vec<Vec<Value>> = vec![Vec::new()];
    let mut numbers = 0usize;
    let mut rest = init.trim_start();
    while let Some(first) = rest.chars().next() {
        let token_len = match first {
            '{' => {
                if open.len() > MAX_INIT_DEPTH {
                    return Err(format!("braces nest deeper than {MAX_INIT_DEPTH} (MAX_INIT_DEPTH)"));
                }
                open.push(Vec::new());
                1
            }
            '}' => {
                let list = open.pop().filter(|_| !open.is_empty()).ok_or("a `}` closes nothing")?;
                open.last_mut().ok_or("a `}` closes nothing")?.push(Value::List(list));
                1
            }
            ',' => 1,
            _ => {
                let len = rest.find(|c: char| c.is_whitespace() || "{},".contains(c)).unwrap_or(rest.len());
                let word = &rest[..len];
                let value = if let Ok(number) = integer_literal(word) {
                    Value::Number(number)
                } else if word == "NULL" {
                    Value::Number(0)
                } else if let Some(value) = earlier(word) {
                    let value = value.clone().map_err(|_| format!("it copies `{word}`, which is not constant"))?;
                    if open.len() + depth(&value) > MAX_INIT_DEPTH + 1 {
                        return Err(format!("braces nest deeper than {MAX_INIT_DEPTH} (MAX_INIT_DEPTH)"));
                    }
                    value
                } else {
                    return Err(format!("`{}` is not an integer constant or a structure declared before it", c_comment(word)));
                };
                numbers = numbers
                    .checked_add(count(&value))
                    .filter(|n| *n <= MAX_INIT_NUMBERS)
                    .ok_or_else(|| format!("it holds more than {MAX_INIT_NUMBERS} integers (MAX_INIT_NUMBERS)"))?;
                open.last_mut().ok_or("unbalanced braces")?.push(value);
                len
            }
        };
        rest = rest[token_len..].trim_start();
    }
    match <[Vec<Value>; 1]>::try_from(open) {
        Ok([items]) => Ok(Value::List(items)),
        Err(_) => Err("a `{` is not closed".to_string()),
    }
}

// Both recurse at most MAX_INIT_DEPTH deep: `evaluate` makes no deeper value.
fn count(value: &Value) -> usize {
    match value {
        Value::Number(_) => 1,
        Value::List(items) => items.iter().map(count).sum(),
    }
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Number(_) => 0,
        Value::List(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
    }
}

/// A C integer constant with an optional sign, within `int32_t` (what every
/// field of CMSIS-NN's structures is).
fn integer_literal(text: &str) -> Result<i64, ()> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(());
    }
    let magnitude = i64::try_from(c::integer(digits).ok_or(())?).map_err(|_| ())?;
    let value = if negative { -magnitude } else { magnitude };
    if i32::try_from(value).is_ok() {
        Ok(value)
    } else {
        Err(())
    }
}

/// The names of a C parameter list (`const cmsis_nn_dims *input_dims, const int ch`); `void` has none.
fn parameter_names(params: &str) -> Vec<String> {
    let mut names = sources::param_names(params);
    names.retain(|name| name != "void");
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::kernel_library::scratch_calls;

    const CALLS: &str = "int32_t f(int8_t* in, int8_t* out) {\n  cmsis_nn_context context= {NULL,0};\n  \
        cmsis_nn_tile stride = {3,3};\n  cmsis_nn_pool_params pool_params = {stride};\n  cmsis_nn_dims input_dims = {1,3,3,256};\n  \
        cmsis_nn_dims filter_dims = {1,3,3,1};\n  cmsis_nn_dims output_dims = {1,1,1,256};\n  \
        arm_status s = arm_avgpool_s8(&context, &pool_params, &input_dims, in, &filter_dims, &output_dims, out);\n  return 0;\n}";

    fn declarations() -> BTreeMap<String, String> {
        [
            ("arm_avgpool_s8", "const cmsis_nn_context *ctx, const cmsis_nn_pool_params *pool_params, const cmsis_nn_dims *input_dims, const int8_t *src, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims, int8_t *dst"),
            ("arm_avgpool_s8_get_buffer_size_dsp", "const int output_x, const int ch_src"),
        ]
        .into_iter()
        .map(|(name, params)| (name.to_string(), params.to_string()))
        .collect()
    }

    fn probe_of(code: &str, path: KernelPath) -> ScratchProbe {
        let calls = scratch_calls("lib2.c", code);
        scratch_probe(&calls.iter().collect::<Vec<_>>(), &declarations(), path)
    }

    #[test]
    fn asks_the_core_s_size_function_with_the_call_s_own_structures_as_numbers() {
        let probe = probe_of(CALLS, KernelPath::Dsp);
        assert_eq!(probe.asked, [(0, "arm_avgpool_s8_get_buffer_size_dsp".to_string())]);
        let source = probe.source.expect("a program");
        assert!(source.contains("cmsis_nn_dims s0 = {1, 1, 1, 256};"), "{source}");
        assert!(source.contains("cmsis_nn_dims s1 = {1, 3, 3, 256};"), "{source}");
        assert!(source.contains("arm_avgpool_s8_get_buffer_size_dsp(s0.w, s1.c)"), "{source}");
        assert!(!source.contains("pool_params") && !source.contains("output_dims"), "only numbers under the probe's names: {source}");
    }

    #[test]
    fn copies_of_structures_are_written_as_their_numbers() {
        let code = CALLS.replace(
            "cmsis_nn_dims output_dims = {1,1,1,256};",
            "cmsis_nn_tile t = {1, -0x10};\n  cmsis_nn_dims output_dims = {t, 3, NULL};",
        );
        let source = probe_of(&code, KernelPath::Dsp).source.expect("a program");
        assert!(source.contains("cmsis_nn_dims s0 = {{1, -16}, 3, 0};"), "{source}");
    }

    #[test]
    fn archive_text_other_than_numbers_never_reaches_the_program() {
        let hostile = [
            CALLS.replace("{1,1,1,256}", "{1,1,1,system(\"x\")}"),
            CALLS.replace("{1,1,1,256}", "{1,1,1,\n#include \"/etc/passwd\"\n}"),
            CALLS.replace("{1,1,1,256}", "{1,1,1,\"*/\"}"),
            CALLS.replace("&output_dims, out", "&output_dims[0], out"),
            // Calls inside an initializer, with locals of the same names shadowing stdio's further down.
            CALLS.replace("{1,1,1,256}", "{remove(in),fopen(out,in),popen(in,out),1}")
                + "\nint32_t g(void) { cmsis_nn_dims remove = {1}; cmsis_nn_dims fopen = {2}; cmsis_nn_dims popen = {3}; return 0; }",
            CALLS.replace("{1,1,1,256}", "{remove,fopen,popen,1}").replace(
                "cmsis_nn_context context",
                "cmsis_nn_dims remove = {1};\n  cmsis_nn_dims fopen = {1};\n  cmsis_nn_dims popen = {1};\n  cmsis_nn_context context",
            ),
            CALLS.replace("cmsis_nn_dims output_dims", "cmsis_nn_dims/**/output_dims"),
            CALLS.replace("{1,1,1,256}", "{1,1,1,2147483648}"),
            CALLS.replace("{1,1,1,256}", "{1,1,1,1+1}"),
        ];
        for (at, code) in hostile.iter().enumerate() {
            let probe = probe_of(code, KernelPath::Dsp);
            if at == 5 {
                // Structures of numbers only, whatever their names: asked, under the probe's names.
                let source = probe.source.unwrap_or_else(|| panic!("a program: {:?}", probe.unasked));
                assert!(source.contains("s0 = {{1}, {1}, {1}, 1}") && !source.contains("remove"), "{source}");
                continue;
            }
            assert!(probe.source.is_none(), "{code}\n{:?}", probe.source);
            assert_eq!(probe.unreadable.len(), 1, "{code}");
        }
    }

    #[test]
    fn copies_cannot_grow_a_structure_without_bound() {
        let mut chain = String::from("cmsis_nn_dims c0 = {1,1};\n");
        for level in 1..40 {
            chain.push_str(&format!("  cmsis_nn_dims c{level} = {{c{0},c{0}}};\n", level - 1));
        }
        let code = CALLS.replace("cmsis_nn_dims output_dims = {1,1,1,256};", &format!("{chain}  cmsis_nn_dims output_dims = {{c39}};"));
        assert!(probe_of(&code, KernelPath::Dsp).source.is_none());
        let calls = scratch_calls("lib2.c", &code);
        let refused: Vec<String> = evaluate_locals(&calls[0].locals).into_iter().filter_map(Result::err).collect();
        assert!(refused.iter().any(|why| why.contains("MAX_INIT_NUMBERS")), "{refused:?}");
        let deep = CALLS.replace("{1,1,1,256}", &format!("{}1{}", "{".repeat(100), "}".repeat(100)));
        assert!(probe_of(&deep, KernelPath::Dsp).unreadable[0].1.contains("MAX_INIT_DEPTH"));
    }

    /// Each local finds the one it copies in constant time: 100 000 locals,
    /// each naming one not declared and every other one copying the first, take well under a second.
    #[test]
    fn many_locals_are_evaluated_in_linear_time() {
        let local = |name: String, init: String| KernelLocal { type_name: "cmsis_nn_dims".to_string(), name, init };
        let mut locals = vec![local("d0".to_string(), "1, 2, 3, 4".to_string())];
        for index in 1..100_000 {
            let init = if index % 2 == 0 { "d0".to_string() } else { format!("missing{index}") };
            locals.push(local(format!("d{index}"), init));
        }
        let started = std::time::Instant::now();
        let values = evaluate_locals(&locals);
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "took {:?}", started.elapsed());
        assert_eq!(values[99_998], values[0].clone().map(|first| Value::List(vec![first])));
        assert!(values[99_999].as_ref().is_err_and(|why| why.contains("`missing99999` is not an integer constant")));
    }

    #[test]
    fn a_call_the_library_cannot_size_is_listed_with_why() {
        let probe = probe_of(CALLS, KernelPath::Mve);
        assert!(probe.source.is_none());
        assert_eq!(probe.unasked, [(0, "the library declares no `arm_avgpool_s8_get_buffer_size_mve`".to_string())]);
    }
}
