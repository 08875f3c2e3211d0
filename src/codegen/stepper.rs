//! The C of a split AOT run ([`crate::plan::steps`]): each source holding the
//! model function or the function the glue calls is compiled as a copy that
//! includes the original unchanged (so `run` keeps its code) and appends, in
//! the same translation unit (its `static` operators and pools stay in reach):
//!
//! - `int32_t mlf_<m>_steps_begin(<the parameters of the function the glue calls>)`:
//!   records its arguments in the step state, returns 0;
//! - `int32_t mlf_<m>_steps_run(uint32_t index)`: runs step `index`, returns 0
//!   to go on or the non-zero value the model function would have returned.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::includable;
use crate::error::Result;
use crate::ident::{c_comment, CIdent};
use crate::plan::model::{Begin, Split, Steps, STATE};

/// `mlf_<m>_steps_begin`: starts a stepped run with the arguments the glue gives `run`'s function today.
pub(crate) fn begin_symbol(module: &CIdent) -> String {
    format!("mlf_{module}_steps_begin")
}

/// `mlf_<m>_steps_run`: runs one step.
pub(crate) fn step_symbol(module: &CIdent) -> String {
    format!("mlf_{module}_steps_run")
}

/// `mlf_<m>_steps_record`: stores the model function's arguments, when begin is another function's copy.
fn record_symbol(module: &CIdent) -> String {
    format!("mlf_{module}_steps_record")
}

/// One source compiled as a copy: the original, included, then `appended`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SteppedSource {
    /// Tree path of the original.
    pub original: String,
    /// Where the copy goes, relative to the glue directory (`gen`, beside `tree`).
    pub path: PathBuf,
    pub appended: String,
}

impl SteppedSource {
    /// The copy's text, including `included` (relative to the directory
    /// holding `gen` and `tree`: the original, or a wrapper of it).
    pub fn text(&self, included: &Path) -> Result<Vec<u8>> {
        // Up from the copy's directory to the one holding `gen` and `tree`.
        let depth = self.path.parent().map_or(0, |dir| dir.components().count()) + 1;
        let up: PathBuf = std::iter::repeat_n(Path::new(".."), depth).collect();
        let include = up.join(included);
        Ok(format!("#include \"{}\"\n{}", includable(&include)?, self.appended).into_bytes())
    }

    /// The tree's original as the included file.
    pub fn original_included(&self) -> PathBuf {
        Path::new("tree").join(&self.original)
    }
}

/// The copies a module's split run compiles instead of its originals: none unless [`Steps::Split`].
pub(crate) fn sources(module: &CIdent, steps: Option<&Steps>) -> Vec<SteppedSource> {
    let Some(Steps::Split(split)) = steps else { return Vec::new() };
    let mut model = step_code(module, split);
    let Begin::Wrapper { file, function, params_text, arguments, model_params_text } = &split.begin else {
        return vec![copy(&split.file, model)];
    };
    let record = record_symbol(module);
    let mut begin = String::new();
    let _ =
        writeln!(begin, "\n/* Written by mlf-build: `{function}` beginning a stepped run, its call to `{}` recorded. */", split.function);
    let _ = writeln!(begin, "int32_t {record}({model_params_text});");
    let _ = writeln!(begin, "int32_t {}({params_text}) {{\n  return {record}{arguments};\n}}", begin_symbol(module));
    if *file == split.file {
        model.push_str(&begin);
        return vec![copy(&split.file, model)];
    }
    vec![copy(&split.file, model), copy(file, format!("#include <stdint.h>\n{begin}"))]
}

fn copy(original: &str, appended: String) -> SteppedSource {
    SteppedSource { original: original.to_string(), path: Path::new("steps").join(original), appended }
}

/// The state, the recorder (begin itself when the glue calls the model function) and the step function.
fn step_code(module: &CIdent, split: &Split) -> String {
    let mut c = String::new();
    let n = split.operators.len();
    let _ = writeln!(
        c,
        "\n/* Written by mlf-build: `{}` of {} split into {n} steps, one per operator call. */\n#include <stdint.h>\n",
        split.function,
        c_comment(&split.file)
    );
    let _ = writeln!(c, "static struct {{");
    for var in &split.state {
        let _ = writeln!(c, "  {};", var.declaration);
    }
    if split.state.is_empty() {
        let _ = writeln!(c, "  char unused;");
    }
    let _ = writeln!(c, "}} {STATE};\n");
    let recorder = match split.begin {
        Begin::Direct => begin_symbol(module),
        Begin::Wrapper { .. } => record_symbol(module),
    };
    let _ = writeln!(c, "int32_t {recorder}({}) {{", split.params_text);
    for var in split.state.iter().filter(|var| var.parameter) {
        let _ = writeln!(c, "  {STATE}.{0} = {0};", var.name);
    }
    let _ = writeln!(c, "  return 0;\n}}\n");
    // A function per step, never inlined: each step's frame holds its own locals only, so the
    // deepest step (what STACK_BYTES covers) is not the union of all of them.
    let _ = writeln!(c, "#if defined(_MSC_VER)\n#define MLF_STEP_FUNCTION static __declspec(noinline) int32_t");
    let _ = writeln!(c, "#else\n#define MLF_STEP_FUNCTION static __attribute__((noinline)) int32_t\n#endif\n");
    let step = step_symbol(module);
    for (index, (statements, operator)) in split.steps.iter().zip(&split.operators).enumerate() {
        let _ = writeln!(c, "/* {operator} */\nMLF_STEP_FUNCTION {step}_{index}(void) {{\n{statements}  return 0;\n}}\n");
    }
    let _ = writeln!(c, "int32_t {step}(uint32_t index) {{\n  switch (index) {{");
    for index in 0..n {
        let _ = writeln!(c, "  case {index}: return {step}_{index}();");
    }
    let _ = writeln!(c, "  default: return -1;\n  }}\n}}");
    c
}
