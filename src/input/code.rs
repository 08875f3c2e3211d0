//! One module's code as the planner asks about it: its parsed C and C++
//! sources in [`Codegen`] order, and its objects. Every answer is read from
//! the parsed values ([`CFiles`]); nothing here scans text.

use std::collections::{BTreeMap, BTreeSet};

use crate::dtype::DType;
use crate::input::archive::Tree;
use crate::input::c::parser::syntax::{CSource, Function};
use crate::input::c::CFiles;
use crate::input::sources::Codegen;

/// A module's parsed sources and objects.
pub(crate) struct ModuleCode<'f, 'c> {
    /// The C sources, then the C++ ones, in [`Codegen`] order.
    sources: Vec<&'f CSource<'c>>,
    /// Each function the C sources define, with the first file defining it.
    c_functions: BTreeMap<&'c str, (&'f CSource<'c>, &'f Function<'c>)>,
    /// Every function any source (C or C++) defines.
    defined: BTreeSet<&'c str>,
    objects: Vec<&'f [u8]>,
}

impl<'f, 'c> ModuleCode<'f, 'c> {
    pub fn new(tree: &'f Tree, files: &'f CFiles<'c>, codegen: &Codegen) -> ModuleCode<'f, 'c> {
        let parsed = |paths: &[String]| paths.iter().filter_map(|path| files.get(path)).collect::<Vec<_>>();
        let c_sources = parsed(&codegen.c_sources);
        let mut c_functions = BTreeMap::new();
        for source in &c_sources {
            for function in &source.functions {
                c_functions.entry(function.name).or_insert((*source, function));
            }
        }
        let mut sources = c_sources;
        sources.extend(parsed(&codegen.cxx_sources));
        let defined = sources.iter().flat_map(|source| source.functions.iter().map(|function| function.name)).collect();
        let objects = codegen.objects.iter().map(|path| tree.get(path).unwrap_or_default()).collect();
        ModuleCode { sources, c_functions, defined, objects }
    }

    /// The C and C++ sources, in [`Codegen`] order.
    pub fn sources(&self) -> &[&'f CSource<'c>] {
        &self.sources
    }

    /// The first definition of `name` among the C sources, with its file.
    pub fn c_function(&self, name: &str) -> Option<(&'f CSource<'c>, &'f Function<'c>)> {
        self.c_functions.get(name).copied()
    }

    /// Whether a source defines the function `name`, or an object's string
    /// tables hold the symbol: what the linker will find.
    pub fn defines(&self, name: &str) -> bool {
        if self.defined.contains(name) {
            return true;
        }
        let symbol = [b"\0", name.as_bytes(), b"\0"].concat();
        self.objects.iter().any(|bytes| bytes.windows(symbol.len()).any(|window| window == symbol.as_slice()))
    }

    /// Whether a source defines the function `name` (objects not asked).
    pub fn defines_function(&self, name: &str) -> bool {
        self.defined.contains(name)
    }

    /// How many parameters the C definition of `name` takes (`(void)` none).
    pub fn parameter_count(&self, name: &str) -> Option<usize> {
        let (_, function) = self.c_function(name)?;
        match &function.params[..] {
            [only] if only.text == "void" => Some(0),
            params => Some(params.len()),
        }
    }

    /// Element types of `tvmgen_<m>___tvm_main__`'s parameters, from its
    /// definition (`float* x_buffer_var, ...`); `None` for untyped (`void*`)
    /// parameters. A prototype is not the definition: `lib0.c` declares it
    /// with `void*`.
    pub fn main_parameter_types(&self, module: &str) -> Vec<Option<DType>> {
        let name = format!("tvmgen_{module}___tvm_main__");
        self.c_function(&name).map(|(_, function)| function.params.iter().map(|param| param.dtype).collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::c::CTexts;
    use crate::input::sources::codegen_for;

    /// Signatures read from the parsed definitions: `(void)` takes nothing, a
    /// comment between type words does not hide the type, a macro whose body
    /// is a block defines nothing the linker finds, and a C++ source's
    /// functions are defined though no C question reads their parameters.
    #[test]
    fn answers_from_the_parsed_definitions() {
        let lib1 = "#define BLOCK(x) { int y = (x); }\n\
                    int32_t tvmgen_default___tvm_main__(float /* in */ * x, int8_t* out, void* pool) { BLOCK(1); return 0; }\n\
                    int32_t tvmgen_default_run_model(void) { return 0; }\n\
                    static int32_t helper(int a[], int b) { return a[b]; }\n";
        let cxx = "extern \"C\" int32_t cxx_op(void* a) { return 0; }\n";
        let tree = Tree::from_files([
            ("codegen/host/src/default_lib1.c".to_string(), lib1.as_bytes().to_vec()),
            ("codegen/host/src/default_lib2.cc".to_string(), cxx.as_bytes().to_vec()),
        ])
        .unwrap();
        let codegen = codegen_for(&tree, "default", &["default"]);
        let texts = CTexts::of(&tree);
        let files = CFiles::parse(&texts).unwrap();
        let code = ModuleCode::new(&tree, &files, &codegen);
        let types: Vec<Option<String>> = code.main_parameter_types("default").iter().map(|t| t.map(|t| t.to_string())).collect();
        assert_eq!(types, [Some("float32".to_string()), Some("int8".to_string()), None]);
        assert_eq!(code.parameter_count("tvmgen_default___tvm_main__"), Some(3));
        assert_eq!(code.parameter_count("tvmgen_default_run_model"), Some(0));
        assert_eq!(code.parameter_count("helper"), Some(2));
        assert_eq!(code.parameter_count("cxx_op"), None, "C questions read the C sources");
        assert!(code.defines("helper") && code.defines("cxx_op") && code.defines_function("cxx_op"));
        assert!(!code.defines("BLOCK") && !code.defines("missing"));
    }
}
