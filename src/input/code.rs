//! One module's code as the planner asks about it: its parsed C and C++
//! sources in [`Codegen`] order, and its objects. Every answer is read from
//! the parsed values ([`CFiles`]); nothing here scans text.

use std::collections::{BTreeMap, BTreeSet};

use crate::dtype::DType;
use crate::input::archive::Tree;
use crate::input::c::parser::syntax::{walk, Body, CSource, Expr, Function, Node};
use crate::input::c::CFiles;
use crate::input::sources::Codegen;

/// A module's parsed sources and objects.
pub(crate) struct ModuleCode<'f, 'c> {
    /// The C sources, then the C++ ones, in [`Codegen`] order.
    sources: Vec<&'f CSource<'c>>,
    /// How many of `sources` are C.
    c_count: usize,
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
        let c_count = c_sources.len();
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
        ModuleCode { sources, c_count, c_functions, defined, objects }
    }

    /// The C and C++ sources, in [`Codegen`] order.
    pub fn sources(&self) -> &[&'f CSource<'c>] {
        &self.sources
    }

    /// The C sources, in [`Codegen`] order.
    pub fn c_sources(&self) -> &[&'f CSource<'c>] {
        &self.sources[..self.c_count]
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

    /// Whether the code names `TVMBackendAllocWorkspace`: an allocator and arena must be supplied.
    pub fn allocates_workspace(&self) -> bool {
        self.sources.iter().any(|source| source.mentions(ALLOC_WORKSPACE))
    }

    /// Every function the sources (C, then C++) define, with the file of its
    /// first definition and whether that one is `static`.
    pub fn functions(&self) -> BTreeMap<&'c str, (&'c str, bool)> {
        let mut functions = BTreeMap::new();
        for source in &self.sources {
            for function in &source.functions {
                functions.entry(function.name).or_insert((source.path, function.is_static));
            }
        }
        functions
    }

    /// The model function of `module` (`tvmgen_<m>___tvm_main__`, else
    /// `tvmgen_<m>_run_model`) as the sources first define it: its name, its
    /// file, and the names its body calls, in order, repeats kept.
    pub fn entry_calls(&self, module: &str) -> Option<(String, &'c str, Vec<&'c str>)> {
        [format!("tvmgen_{module}___tvm_main__"), format!("tvmgen_{module}_run_model")].into_iter().find_map(|main| {
            let (source, function) = self.sources.iter().find_map(|source| Some((source, source.function(&main)?)))?;
            let called = function.body(source).called.iter().map(|(name, _)| *name).collect();
            Some((main, source.path, called))
        })
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

/// Calls deeper than this are not followed (TVM's are two deep: entry, operator).
pub(crate) const MAX_CALL_DEPTH: usize = 8;

const ALLOC_WORKSPACE: &str = "TVMBackendAllocWorkspace";

impl<'c> ModuleCode<'_, 'c> {
    /// The sizes of the static byte arrays the C sources define at file
    /// scope without initializer (`static uint8_t global_workspace[15378];`):
    /// USMP's workspace pools. `None` when there is none, or on overflow.
    pub fn static_workspace(&self) -> Option<u64> {
        let mut total = None;
        for source in self.c_sources() {
            for variable in &source.variables {
                let [Some(size)] = variable.dims[..] else { continue };
                if variable.type_words == ["static", "uint8_t"] && variable.init.is_none() {
                    total = Some(total.unwrap_or(0u64).checked_add(size)?);
                }
            }
        }
        total
    }

    /// Bytes of workspace `function` asks `TVMBackendAllocWorkspace` for, each
    /// request rounded up to `alignment` as the allocator does, with those of the
    /// module's functions it calls: an upper bound, as all may be live at once.
    /// `None` when the function is not found, a size is not a constant, a
    /// request is where the parser does not read, or calls recurse.
    pub fn workspace_bytes(&self, function: &str, alignment: u64) -> Option<u64> {
        // A function's own requests, and the module's functions it calls.
        let own = |name: &str| -> Option<(u64, Vec<&'c str>)> {
            let (source, function) = self.c_function(name)?;
            let body = function.body(source);
            let mut total = 0u64;
            let mut read = 0usize;
            for node in walk(&body.statements) {
                let Node::Expr(Expr::Call { callee: ALLOC_WORKSPACE, args, .. }) = node else { continue };
                read += 1;
                total = total.checked_add(constant_size(args.get(2)?)?.checked_next_multiple_of(alignment.max(1))?)?;
            }
            // A request the statements do not show (in a statement not read) has no known size.
            if read != body.called.iter().filter(|(callee, _)| *callee == ALLOC_WORKSPACE).count() {
                return None;
            }
            Some((total, body.called.iter().map(|(callee, _)| *callee).filter(|callee| self.defines_function(callee)).collect()))
        };
        // Depth-first with an explicit stack of (function, total so far, callees, next callee); each function summed once.
        let mut totals: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
        let (total, callees) = own(function)?;
        let mut stack = vec![(function, total, callees, 0usize)];
        loop {
            let depth = stack.len();
            let (name, total, callees, next) = stack.last_mut()?;
            let Some(&callee) = callees.get(*next) else {
                let (name, total) = (*name, *total);
                stack.pop();
                totals.insert(name, total);
                match stack.last_mut() {
                    Some(caller) => caller.1 = caller.1.checked_add(total)?,
                    None => return Some(total),
                }
                continue;
            };
            *next += 1;
            if let Some(&known) = totals.get(callee) {
                *total = total.checked_add(known)?;
                continue;
            }
            // Recursion has no bound; calls deeper than TVM's are not followed.
            if callee == *name || depth > MAX_CALL_DEPTH || stack.iter().any(|frame| frame.0 == callee) {
                return None;
            }
            let (total, callees) = own(callee)?;
            stack.push((callee, total, callees, 0));
        }
    }
}

/// How many packed arguments a body reads: the highest `i` of its
/// `((T*)args)[i]`, plus one (TVM's packed functions take `void* args`).
pub(crate) fn packed_arguments(body: &Body<'_>) -> usize {
    walk(&body.statements)
        .into_iter()
        .filter_map(|node| match node {
            Node::Expr(Expr::Index(array, index)) if array.cast_pointer().is_some_and(|(_, name)| name == "args") => match **index {
                Expr::Int(index) => usize::try_from(index).ok()?.checked_add(1),
                _ => None,
            },
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// A request's size as TVM writes it: a literal, maybe cast (`(uint64_t)3888`).
fn constant_size(size: &Expr<'_>) -> Option<u64> {
    let size = match size.unparenthesized() {
        Expr::Cast { value, .. } => value.unparenthesized(),
        other => other,
    };
    match size {
        Expr::Int(value) => u64::try_from(*value).ok(),
        _ => None,
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

    #[test]
    fn workspace_bytes_follow_the_code() {
        let code = "int32_t op_compute_(float* x) {\n\
                      void* a = TVMBackendAllocWorkspace(1, dev_id, (uint64_t)100, 2, 32);\n\
                      void* b = TVMBackendAllocWorkspace(1, dev_id, (uint64_t)16, 2, 32);\n\
                      return 0;\n}\n\
                    int32_t op(void* args, int32_t* codes, int32_t n, void* r, int32_t* rc, void* h) {\n\
                      /* TVMBackendAllocWorkspace(1, 0, (uint64_t)1000000, 2, 32) */\n\
                      void* c = TVMBackendAllocWorkspace(1, dev_id, (uint64_t)8, 2, 32);\n\
                      return op_compute_((float*)args);\n}\n\
                    int32_t dynamic(void* args) { void* w = TVMBackendAllocWorkspace(1, 0, (uint64_t)n * 4, 2, 32); return 0; }\n\
                    int32_t loop_a(void* x) { return loop_b(x); }\n\
                    int32_t loop_b(void* x) { void* w = TVMBackendAllocWorkspace(1, 0, (uint64_t)4, 2, 32); return loop_a(x); }\n";
        let tree = Tree::from_files([("codegen/host/src/default_lib1.c".to_string(), code.as_bytes().to_vec())]).unwrap();
        let codegen = codegen_for(&tree, "default", &["default"]);
        let texts = CTexts::of(&tree);
        let files = CFiles::parse(&texts).unwrap();
        let code = ModuleCode::new(&tree, &files, &codegen);
        let bytes = |function: &str| code.workspace_bytes(function, 16);
        // 100 -> 112 and 16 in the callee, 8 -> 16 in the operator; the comment is not code.
        assert_eq!(bytes("op_compute_"), Some(128));
        assert_eq!(bytes("op"), Some(144));
        assert_eq!(bytes("dynamic"), None, "a size computed at run time");
        assert_eq!(bytes("loop_a"), None, "recursion has no bound");
        assert_eq!(bytes("missing"), None);
    }

    /// A chain of 2,000 calls and a call graph in which each of 40 levels calls
    /// the next twice: each function is read once, and past TVM's depth the
    /// bound is unknown rather than the stack overflowing.
    #[test]
    fn workspace_bytes_of_deep_and_doubling_calls() {
        let alloc = "void* w = TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 2, 32);";
        let chain: String = (0..2000).map(|i| format!("int32_t c{i}(void) {{ {alloc} return c{}(); }}\n", i + 1)).collect();
        let doubling: String = (0..40).map(|i| format!("int32_t d{i}(void) {{ {alloc} d{n}(); return d{n}(); }}\n", n = i + 1)).collect();
        let short: String = (0..3).map(|i| format!("int32_t s{i}(void) {{ {alloc} s{n}(); return s{n}(); }}\n", n = i + 1)).collect();
        let code = format!("{chain}{doubling}{short}int32_t c2000(void) {{ return 0; }}\nint32_t d40(void) {{ return 0; }}\nint32_t s3(void) {{ return 0; }}\n");
        let tree = Tree::from_files([("codegen/host/src/default_lib1.c".to_string(), code.into_bytes())]).unwrap();
        let codegen = codegen_for(&tree, "default", &["default"]);
        let texts = CTexts::of(&tree);
        let files = CFiles::parse(&texts).unwrap();
        let code = ModuleCode::new(&tree, &files, &codegen);
        let bytes = |function: &str| code.workspace_bytes(function, 16);
        assert_eq!(bytes("c0"), None);
        assert_eq!(bytes("d0"), None);
        assert_eq!(bytes("c1995"), Some(5 * 16));
        // Each call counts: s0 calls s1 twice, and so on.
        assert_eq!(bytes("s0"), Some(16 + 2 * (16 + 2 * 16)));
    }
}
