//! Which operator calls a profiled run times (`Builder::profile`), in call
//! order, or why an archive's cannot be timed. A graph module's calls are its
//! schedule's; an AOT module's are the calls its model function makes to
//! functions the archive's C defines, read from its parsed body
//! (`ModuleCode::entry_calls`).

use std::collections::BTreeMap;

use crate::error::{Error, ErrorKind, Result};
use crate::ident::CIdent;
use crate::input::archive::Tree;
use crate::input::c::CFiles;
use crate::input::code::ModuleCode;
use crate::plan::model::{Entry, ModulePlan, Plan, Profile};

/// Sets every module's [`ModulePlan::profile`], or refuses the archive.
pub(crate) fn apply(tree: &Tree, files: &CFiles<'_>, plan: &mut Plan) -> Result<()> {
    if let [_, _, ..] = plan.modules.as_slice() {
        let names: Vec<&str> = plan.modules.iter().map(|m| m.name.as_str()).collect();
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "Builder::profile(true) on an archive of {} modules ({}): a program has one set of profiling hooks",
                names.len(),
                names.join(", ")
            ),
        )
        .help("profile one module at a time: export it alone (tvmc compile without the others), or build with profile(false)"));
    }
    for module in &mut plan.modules {
        module.profile = Some(operator_calls(&ModuleCode::new(tree, files, &module.codegen), module)?);
    }
    Ok(())
}

/// Refuses a compiler `-finstrument-functions` does not exist for (MSVC) when
/// a module's operators are timed through it: the ticks would all stay 0.
pub(crate) fn check_compiler(plan: &Plan, msvc: bool) -> Result<()> {
    match plan.modules.iter().find(|module| module.profile.is_some() && is_instrumented(module)) {
        Some(module) if msvc => Err(Error::new(
            ErrorKind::Unsupported,
            format!("Builder::profile(true): module `{}` is AOT, whose operators are timed through GCC and Clang's -finstrument-functions, which MSVC lacks", module.name),
        )
        .help("build with GCC or Clang (cc's CC variable), or with profile(false)")),
        _ => Ok(()),
    }
}

/// Whether a profiled `module` is timed by instrumenting the archive's C (AOT)
/// rather than by the glue around each planned call (graph).
pub(crate) fn is_instrumented(module: &ModulePlan) -> bool {
    !matches!(module.entry, Entry::Graph(_))
}

pub(crate) fn operator_calls(code: &ModuleCode<'_, '_>, module: &ModulePlan) -> Result<Profile> {
    let m = &module.name;
    let refuse = |why: String, help: &str| {
        Error::new(ErrorKind::Unsupported, format!("Builder::profile(true) on module `{m}` ({}): {why}", module.entry.kind())).help(help)
    };
    match &module.entry {
        Entry::Graph(schedule) => {
            return Ok(Profile {
                calls: schedule.calls.iter().map(|call| call.func_name.clone()).collect(),
                source: "the graph's operator nodes, in the order the build planned them".to_string(),
                untimed: Vec::new(),
            })
        }
        Entry::Operator { function, .. } => {
            return Err(refuse(
                format!("the archive is the single operator `{function}`, so there is nothing to tell apart"),
                "time `run` itself with your clock, and build with profile(false)",
            ))
        }
        Entry::CInterface(_) | Entry::Packed { .. } | Entry::LegacyDescriptor { .. } => {}
    }
    if !module.codegen.objects.is_empty() {
        return Err(refuse(
            format!("its code comes partly as objects TVM compiled ({}), which cannot be instrumented", module.codegen.objects.join(", ")),
            "export the model with TVM's `c` target instead of `llvm`, or build with profile(false)",
        ));
    }
    // Every function the module's sources define: where, and whether `static`.
    let defined = code.functions();
    let Some((main, file, called)) = code.entry_calls(m) else {
        return Err(refuse(
            format!(
                "no source defines its model function `tvmgen_{m}___tvm_main__` or `tvmgen_{m}_run_model`, whose calls are the operators"
            ),
            "pass the archive as TVM wrote it, or build with profile(false)",
        ));
    };
    let mut calls = Vec::new();
    for name in called.into_iter().filter(|name| *name != main) {
        let Some(&(path, is_static)) = defined.get(name) else { continue };
        if is_static {
            return Err(refuse(
                format!("operator `{name}` is `static` in {path}, so the profiling hooks cannot know its address"),
                "build with profile(false)",
            )
            .in_file(path));
        }
        calls.push(CIdent::new(&format!("module `{m}`: operator called by {main}"), name)?);
    }
    if calls.is_empty() {
        return Err(refuse(format!("{main} calls no function the archive defines"), "build with profile(false)").in_file(file));
    }
    // A name that is no identifier was misread from the text: left instrumented, its hooks find no operator.
    let in_calls = Substrings::of(calls.iter().map(CIdent::as_str));
    let untimed = defined
        .keys()
        .filter(|name| !in_calls.contains(name))
        .filter_map(|name| CIdent::new("a function of the archive's C", name).ok())
        .collect();
    Ok(Profile { calls, source: format!("the calls `{main}` makes in {file}, in its order"), untimed })
}

/// Every substring of some texts, each looked up in time linear in its length
/// (a suffix automaton of the texts joined by a byte no name holds): however
/// many functions and calls a module has, excluding is linear.
struct Substrings {
    next: Vec<BTreeMap<u8, usize>>,
    link: Vec<Option<usize>>,
    len: Vec<usize>,
}

impl Substrings {
    fn of<'a>(texts: impl IntoIterator<Item = &'a str>) -> Substrings {
        let mut automaton = Substrings { next: vec![BTreeMap::new()], link: vec![None], len: vec![0] };
        let mut last = 0;
        for text in texts {
            for byte in text.bytes().chain([0]) {
                last = automaton.extend(last, byte);
            }
        }
        automaton
    }

    fn state(&mut self, len: usize, next: BTreeMap<u8, usize>, link: Option<usize>) -> usize {
        self.next.push(next);
        self.link.push(link);
        self.len.push(len);
        self.len.len() - 1
    }

    /// The state after `last` reads `byte` (the standard online construction).
    fn extend(&mut self, last: usize, byte: u8) -> usize {
        let current = self.state(self.len[last] + 1, BTreeMap::new(), Some(0));
        let mut state = Some(last);
        while let Some(p) = state.filter(|&p| !self.next[p].contains_key(&byte)) {
            self.next[p].insert(byte, current);
            state = self.link[p];
        }
        let Some(p) = state else { return current };
        let q = self.next[p][&byte];
        if self.len[p] + 1 == self.len[q] {
            self.link[current] = Some(q);
            return current;
        }
        let clone = self.state(self.len[p] + 1, self.next[q].clone(), self.link[q]);
        let mut state = Some(p);
        while let Some(p) = state.filter(|&p| self.next[p].get(&byte) == Some(&q)) {
            self.next[p].insert(byte, clone);
            state = self.link[p];
        }
        self.link[q] = Some(clone);
        self.link[current] = Some(clone);
        current
    }

    fn contains(&self, text: &str) -> bool {
        text.bytes().try_fold(0, |state, byte| self.next[state].get(&byte).copied()).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanOptions;
    use crate::test_support::corpus_dir;

    fn planned(case: &str) -> Option<(Tree, Plan)> {
        let archive = corpus_dir()?.join(case).join("model.tar");
        let planned = crate::plan::read_and_plan(&archive, &PlanOptions::default()).unwrap();
        Some((planned.tree, planned.plan))
    }

    /// `kws_int8-aot_c_usmp` with every file passed through `edit` (path, text), then planned.
    fn edited_kws(edit: impl Fn(&str, String) -> String, extra: Option<(&str, &[u8])>) -> Option<(Tree, Plan)> {
        let (tree, _) = planned("tvm-0.18/kws_int8-aot_c_usmp")?;
        let mut files: Vec<(String, Vec<u8>)> = tree
            .into_files()
            .into_iter()
            .map(|(path, bytes)| {
                let text = edit(&path, String::from_utf8_lossy(&bytes).into_owned());
                (path, text.into_bytes())
            })
            .collect();
        files.extend(extra.map(|(path, bytes)| (path.to_string(), bytes.to_vec())));
        let planned = crate::plan::plan_tree(Tree::from_files(files).unwrap(), &PlanOptions::default()).unwrap();
        Some((planned.tree, planned.plan))
    }

    /// [`apply`], the tree's C parsed as planning parses it.
    fn apply_parsed(tree: &Tree, plan: &mut Plan) -> Result<()> {
        let texts = crate::input::c::CTexts::of(tree);
        apply(tree, &CFiles::parse(&texts)?, plan)
    }

    fn refusal(tree: &Tree, plan: &mut Plan) -> String {
        let error = apply_parsed(tree, plan).expect_err("refused");
        assert_eq!(error.kind(), ErrorKind::Unsupported);
        error.to_string()
    }

    /// The calls `__tvm_main__` makes, in its order, one entry per call.
    #[test]
    fn aot_calls_come_from_the_model_function() {
        let Some((tree, mut plan)) = planned("tvm-0.18/kws_int8-aot_c_usmp") else { return };
        apply_parsed(&tree, &mut plan).unwrap();
        let profile = plan.modules[0].profile.clone().unwrap();
        assert_eq!(profile.calls.len(), 11);
        assert_eq!(profile.calls[0], "tvmgen_default_fused_cast_cast_subtract");
        assert_eq!(profile.calls[10], "tvmgen_default_fused_nn_contrib_dense_pack_fixed_point_multiply_clip_cast");
        assert!(profile.source.contains("default_lib1.c"), "{}", profile.source);
        assert!(is_instrumented(&plan.modules[0]));
    }

    /// The archive's other functions (TVM's micro-kernels, the model function)
    /// A name is excluded only when no operator's name holds it, however many there are.
    #[test]
    fn substrings_of_the_calls_are_found() {
        let texts = ["tvmgen_default_fused_add", "fused_conv2d", "abcab"];
        let automaton = Substrings::of(texts);
        for text in texts {
            for start in 0..text.len() {
                for end in start + 1..=text.len() {
                    assert!(automaton.contains(&text[start..end]), "{}", &text[start..end]);
                }
            }
        }
        for absent in ["addf", "conv2d_", "abcabc", "ba_", "default_fused_conv"] {
            assert!(!automaton.contains(absent), "{absent}");
        }
        let many: Vec<String> = (0..20_000).map(|i| format!("op_{i}_x")).collect();
        let automaton = Substrings::of(many.iter().map(String::as_str));
        assert!(automaton.contains("op_19999_x") && automaton.contains("9_x") && !automaton.contains("op_20000"));
    }

    /// stay uninstrumented; a name inside an operator's would exclude the operator.
    #[test]
    fn helpers_are_untimed_and_operators_never() {
        let Some((tree, mut plan)) = planned("tvm-0.18/kws_int8-aot_c-cortex_m4") else { return };
        apply_parsed(&tree, &mut plan).unwrap();
        let profile = plan.modules[0].profile.clone().unwrap();
        let untimed: Vec<&str> = profile.untimed.iter().map(CIdent::as_str).collect();
        assert!(untimed.contains(&"tvmgen_default___tvm_main__"), "{untimed:?}");
        assert!(untimed.iter().any(|name| name.starts_with("gemm")), "{untimed:?}");
        for call in &profile.calls {
            assert!(untimed.iter().all(|name| !call.as_str().contains(name)), "{call} excluded by {untimed:?}");
        }
        let Some((tree, mut plan)) = edited_kws(
            |path, text| {
                if path.ends_with("default_lib1.c") {
                    text + "\nint32_t fused_cast(void) { return 0; }\n"
                } else {
                    text
                }
            },
            None,
        ) else {
            return;
        };
        apply_parsed(&tree, &mut plan).unwrap();
        let profile = plan.modules[0].profile.clone().unwrap();
        assert!(profile.untimed.iter().all(|name| name.as_str() != "fused_cast"), "{:?}", profile.untimed);
    }

    /// A graph's calls are its schedule's, timed by the glue: nothing is instrumented.
    #[test]
    fn graph_calls_are_the_schedule() {
        let Some((tree, mut plan)) = planned("tvm-0.18/cnn_f32-graph") else { return };
        apply_parsed(&tree, &mut plan).unwrap();
        let module = &plan.modules[0];
        let scheduled: Vec<CIdent> = module.schedule().unwrap().calls.iter().map(|call| call.func_name.clone()).collect();
        assert_eq!(module.profile.as_ref().unwrap().calls, scheduled);
        assert!(!is_instrumented(module));
        check_compiler(&plan, true).unwrap();
    }

    #[test]
    fn refuses_archives_of_several_modules() {
        let Some((tree, mut plan)) = planned("tvm-0.18/multi-kws_mlp-aot_c") else { return };
        let text = refusal(&tree, &mut plan);
        assert!(text.contains("archive of 2 modules (kws, mlp)") && text.contains("one module at a time"), "{text}");
    }

    #[test]
    fn refuses_an_operator_export() {
        let Some((tree, mut plan)) = planned("tvm-0.18/operator-add_f32") else { return };
        let text = refusal(&tree, &mut plan);
        assert!(text.contains("single operator") && text.contains("time `run` itself"), "{text}");
    }

    #[test]
    fn refuses_operators_compiled_to_objects() {
        let object = Some(("codegen/host/lib/default_lib2.o", &b"\x7fELF"[..]));
        let Some((tree, mut plan)) = edited_kws(|_, text| text, object) else { return };
        let text = refusal(&tree, &mut plan);
        assert!(text.contains("default_lib2.o") && text.contains("`c` target"), "{text}");
    }

    #[test]
    fn refuses_static_operators() {
        let edit =
            |_: &str, text: String| text.replace("TVM_DLL int32_t tvmgen_default_fused_cast(", "static int32_t tvmgen_default_fused_cast(");
        let Some((tree, mut plan)) = edited_kws(edit, None) else { return };
        let text = refusal(&tree, &mut plan);
        assert!(text.contains("operator `tvmgen_default_fused_cast` is `static`"), "{text}");
    }

    #[test]
    fn refuses_a_module_without_its_model_function() {
        let edit = |_: &str, text: String| text.replace("tvmgen_default___tvm_main__", "tvmgen_default_renamed_main");
        let Some((tree, mut plan)) = edited_kws(edit, None) else { return };
        let text = refusal(&tree, &mut plan);
        assert!(text.contains("no source defines its model function `tvmgen_default___tvm_main__`"), "{text}");
    }

    /// MSVC has no `-finstrument-functions`: an AOT module is refused, profiling off is not.
    #[test]
    fn refuses_msvc_for_aot_modules() {
        let Some((tree, mut plan)) = planned("tvm-0.18/kws_int8-aot_c_usmp") else { return };
        check_compiler(&plan, true).unwrap();
        apply_parsed(&tree, &mut plan).unwrap();
        let text = check_compiler(&plan, true).expect_err("refused").to_string();
        assert!(text.contains("MSVC lacks") && text.contains("GCC or Clang"), "{text}");
        check_compiler(&plan, false).unwrap();
    }
}
