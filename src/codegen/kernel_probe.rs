//! A host program that asks CMSIS-NN how much scratch each kernel call of the
//! archive needs on the target core, through the library's own
//! `*_get_buffer_size_{dsp,mve}` functions (which exist so that tools on a
//! host can size buffers for a core), fed the call's own structures.

use std::collections::{BTreeMap, BTreeSet};

use crate::ident::c_comment;
use crate::input::kernel_library::{KernelLocal, ScratchCall};
use crate::input::sources;

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
    /// `(index into the calls, why it cannot be asked)`.
    pub unasked: Vec<(usize, String)>,
}

impl ScratchProbe {
    /// The size functions the program calls.
    pub fn size_functions(&self) -> BTreeSet<String> {
        self.asked.iter().map(|(_, function)| function.clone()).collect()
    }
}

/// The program for `calls`, given the library's declarations (`name → parameters`).
pub(crate) fn scratch_probe(calls: &[&ScratchCall], declarations: &BTreeMap<String, String>, path: KernelPath) -> ScratchProbe {
    let mut probe = ScratchProbe { source: None, asked: Vec::new(), unasked: Vec::new() };
    let mut blocks = String::new();
    for (index, call) in calls.iter().enumerate() {
        match size_call(call, declarations, path) {
            Ok((function, block)) => {
                blocks.push_str(&block);
                probe.asked.push((index, function));
            }
            Err(why) => probe.unasked.push((index, why)),
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

/// The size function for `call` and a block printing its result.
fn size_call(call: &ScratchCall, declarations: &BTreeMap<String, String>, path: KernelPath) -> Result<(String, String), String> {
    let base = format!("{}_get_buffer_size", call.kernel);
    let function = match path {
        KernelPath::Portable => base,
        KernelPath::Dsp => format!("{base}_dsp"),
        KernelPath::Mve => format!("{base}_mve"),
    };
    let size_params = declarations.get(&function).ok_or_else(|| format!("the library declares no `{function}`"))?;
    let kernel_params =
        parameter_names(declarations.get(&call.kernel).ok_or_else(|| format!("the library declares no `{}`", call.kernel))?);
    let argument = |name: &str| kernel_params.iter().position(|param| param == name).and_then(|at| call.args.get(at));
    let (mut args, mut used) = (Vec::new(), Vec::new());
    for name in parameter_names(size_params) {
        let (arg, field) = match (argument(&name), SIZE_PARAMETERS.iter().find(|(alias, _, _)| *alias == name)) {
            (Some(arg), _) => (arg, None),
            (None, Some((_, param, field))) => (argument(param).ok_or_else(|| format!("`{}` has no `{param}`", call.kernel))?, Some(field)),
            (None, None) => return Err(format!("`{function}` takes `{name}`, which `{}` has no parameter for", call.kernel)),
        };
        args.push(field.map_or_else(|| arg.clone(), |field| format!("({arg})->{field}")));
        used.push(arg.clone());
    }
    let locals = needed_locals(&call.locals, &used)?;
    let mut block = format!("    {{ /* {}: {} */\n", c_comment(&call.file), call.function);
    for local in locals {
        block.push_str(&format!("        {} {} = {{{}}};\n", local.type_name, local.name, local.init));
    }
    block.push_str(&format!("        printf(\"%ld\\n\", (long){function}({}));\n    }}\n", args.join(", ")));
    Ok((function, block))
}

/// The locals the arguments use, and the ones those use, in declaration
/// order; each initializer must be integers and such locals only. The program
/// runs on the build machine: archive text reaches it only when it is that.
fn needed_locals<'l>(locals: &'l [KernelLocal], expressions: &[String]) -> Result<Vec<&'l KernelLocal>, String> {
    let mut needed: BTreeSet<&str> = BTreeSet::new();
    if let Some(expression) = expressions.iter().find(|expression| !is_plain(expression)) {
        return Err(format!("its argument `{}` is not a plain reference", c_comment(expression)));
    }
    let mut pending: Vec<String> = expressions.iter().flat_map(|e| identifiers(e)).collect();
    while let Some(name) = pending.pop() {
        if needed.contains(name.as_str()) {
            continue;
        }
        let local = locals
            .iter()
            .find(|local| local.name == name)
            .ok_or_else(|| format!("its arguments use `{name}`, not a constant structure"))?;
        if !is_plain(&local.init) || !is_identifier(&local.type_name) {
            return Err(format!("`{name}` is not initialized with numbers and structures only"));
        }
        needed.insert(&local.name);
        pending.extend(identifiers(&local.init));
    }
    Ok(locals.iter().filter(|local| needed.contains(local.name.as_str())).collect())
}

/// Only names, numbers, signs, commas, `&` and brackets: no string, comment,
/// directive or statement can hide in it.
fn is_plain(text: &str) -> bool {
    text.chars().all(|c| c.is_ascii_alphanumeric() || " _,-+&(){}\t".contains(c))
}

fn is_identifier(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Identifiers in a C expression or initializer (numbers and punctuation dropped).
fn identifiers(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .map(str::to_string)
        .collect()
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

    #[test]
    fn asks_the_core_s_size_function_with_the_call_s_own_structures() {
        let calls = scratch_calls("lib2.c", CALLS);
        let probe = scratch_probe(&calls.iter().collect::<Vec<_>>(), &declarations(), KernelPath::Dsp);
        assert_eq!(probe.asked, [(0, "arm_avgpool_s8_get_buffer_size_dsp".to_string())]);
        let source = probe.source.expect("a program");
        assert!(source.contains("cmsis_nn_dims output_dims = {1,1,1,256};"), "{source}");
        assert!(source.contains("arm_avgpool_s8_get_buffer_size_dsp((&output_dims)->w, (&input_dims)->c)"), "{source}");
        assert!(!source.contains("pool_params"), "only what the size function reads: {source}");
    }

    #[test]
    fn archive_text_other_than_numbers_and_structures_never_reaches_the_program() {
        let hostile = [
            CALLS.replace("{1,1,1,256}", "{1,1,1,system(\"x\")}"),
            CALLS.replace("{1,1,1,256}", "{1,1,1,\n#include \"/etc/passwd\"\n}"),
            CALLS.replace("{1,1,1,256}", "{1,1,1,\"*/\"}"),
            CALLS.replace("&output_dims, out", "&output_dims[0], out"),
        ];
        for code in hostile {
            let calls = scratch_calls("lib2.c", &code);
            let probe = scratch_probe(&calls.iter().collect::<Vec<_>>(), &declarations(), KernelPath::Dsp);
            assert!(probe.source.is_none(), "{code}\n{:?}", probe.source);
        }
        let calls = scratch_calls("a*/b.c", CALLS);
        let probe = scratch_probe(&calls.iter().collect::<Vec<_>>(), &declarations(), KernelPath::Dsp);
        assert!(probe.source.expect("a program").contains("/* a* /b.c: f */"));
    }

    #[test]
    fn a_call_the_library_cannot_size_is_listed_with_why() {
        let calls = scratch_calls("lib2.c", CALLS);
        let probe = scratch_probe(&calls.iter().collect::<Vec<_>>(), &declarations(), KernelPath::Mve);
        assert!(probe.source.is_none());
        assert_eq!(probe.unasked, [(0, "the library declares no `arm_avgpool_s8_get_buffer_size_mve`".to_string())]);
    }
}
