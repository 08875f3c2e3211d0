//! C that gives CMSIS-NN calls without a scratch buffer one of mlf-build's:
//! TVM writes `cmsis_nn_context ctx = {NULL,0};` when the kernel needs no
//! scratch on the core it compiled for, and the same kernel's code for another
//! core may need some. A wrapper of the calling file routes those kernels'
//! contexts through a function that hands out a static buffer when the
//! context has none; the archive's files are not edited.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{includable, GeneratedFile};
use crate::error::{Error, ErrorKind, Result};
use crate::ident::{c_comment, CIdent};

/// What one module's calls without a buffer need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScratchFiles<'a> {
    pub module: &'a CIdent,
    /// The buffer's size: the most any of the calls needs.
    pub bytes: u64,
    /// The buffer's alignment (the module's workspace alignment).
    pub alignment: u64,
    /// Calling file (relative to the tree) → kernels to route.
    pub calls: BTreeMap<String, BTreeSet<CIdent>>,
    /// In an arena group: the group's arena symbol and the buffer's offset in
    /// it (after the glue's parts); `None`: a static buffer of its own.
    pub group: Option<(String, u64)>,
    /// A calling file an arena group edits (`redirect`): its wrapper includes the edited copy.
    pub edited: Option<&'a str>,
}

/// The generated C for one module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScratchCode {
    /// `mlf_<m>_kernel_scratch.c`: the buffer and the function handing it out.
    pub buffer: GeneratedFile,
    /// `(calling file, its wrapper)`: compiled instead of the file.
    pub wrappers: Vec<(String, GeneratedFile)>,
}

/// The C for `scratch`, relative to the glue directory (`gen`, beside the
/// archive's `tree`); each wrapper includes its original by a path relative to
/// itself (`#include "..."` looks beside the including file first), so the
/// text is the same wherever the output directory is.
pub(crate) fn files(scratch: &ScratchFiles<'_>) -> Result<ScratchCode> {
    let m = scratch.module.as_str();
    let function = format!("mlf_{m}_kernel_scratch");
    // `cmsis_nn_context.size` is an `int32_t`.
    let size = i32::try_from(scratch.bytes).map_err(|_| {
        Error::new(ErrorKind::Config, format!("CMSIS-NN asks for {} bytes of scratch, more than its int32_t size can state", scratch.bytes))
            .help("the kernel's structures in the archive's code are not plausible for a microcontroller")
    })?;
    let alignment = scratch.alignment;
    let buffer = match &scratch.group {
        None => format!("static _Alignas({alignment}) int8_t {function}_buffer[{size}];\n"),
        // The group's arena at this member's size: the linker merges it with the glue's and the other members'.
        Some((arena, offset)) => {
            let end = offset.saturating_add(scratch.bytes);
            format!(
                "__attribute__((common, aligned({alignment}))) uint8_t {arena}[{end}];\n\
                 #define {function}_buffer ((int8_t*)({arena} + {offset}))\n"
            )
        }
    };
    let text = format!(
        "/* Written by mlf-build: scratch for module `{m}`'s CMSIS-NN calls that reserve none, {size} bytes, the most one needs on the core built for. */\n\
         #include <stddef.h>\n#include <stdint.h>\n#include \"arm_nn_types.h\"\n\n\
         {buffer}\
         static const cmsis_nn_context {function}_context = {{{function}_buffer, {size}}};\n\n\
         const cmsis_nn_context *{function}(const cmsis_nn_context *ctx) {{\n    return ctx->buf == NULL ? &{function}_context : ctx;\n}}\n"
    );
    let buffer = GeneratedFile { path: format!("{function}.c").into(), bytes: text.into_bytes() };
    let mut wrappers = Vec::new();
    for (file, kernels) in &scratch.calls {
        let routes: String =
            kernels.iter().map(|kernel| format!("#define {kernel}(ctx, ...) {kernel}({function}(ctx), __VA_ARGS__)\n")).collect();
        let wrapper_path = Path::new("kernel-scratch").join(file);
        // Up from the wrapper's directory to the one holding `gen` and `tree`.
        let depth = wrapper_path.parent().map_or(0, |dir| dir.components().count()) + 1;
        let up: PathBuf = std::iter::repeat_n(Path::new(".."), depth).collect();
        let original = match scratch.edited {
            Some(edited) if edited == file => up.join("gen").join(super::redirect::copy_path(file)),
            _ => up.join("tree").join(file),
        };
        // The library's header first: the routing macros must not rename its declarations.
        let text = format!(
            "/* Written by mlf-build: {} with its CMSIS-NN calls that have no scratch buffer given mlf-build's. */\n\
             #include <stdint.h>\n#include \"arm_nnfunctions.h\"\n\
             const cmsis_nn_context *{function}(const cmsis_nn_context *ctx);\n{routes}#include \"{}\"\n",
            c_comment(file),
            includable(&original)?
        );
        wrappers.push((file.clone(), GeneratedFile { path: wrapper_path, bytes: text.into_bytes() }));
    }
    Ok(ScratchCode { buffer, wrappers })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch<'a>(module: &'a CIdent, bytes: u64, file: &str) -> ScratchFiles<'a> {
        let kernels = ["arm_avgpool_s8", "arm_softmax_s8"].iter().map(|k| CIdent::new("kernel", k).unwrap()).collect();
        ScratchFiles { module, bytes, alignment: 4, calls: [(file.to_string(), kernels)].into(), group: None, edited: None }
    }

    #[test]
    fn routes_the_file_s_kernels_after_the_library_header_and_includes_the_original() {
        let module = CIdent::new("module", "vww").unwrap();
        let code = files(&scratch(&module, 1024, "codegen/host/src/lib2.c")).unwrap();
        let buffer = String::from_utf8(code.buffer.bytes).unwrap();
        assert_eq!(code.buffer.path, Path::new("mlf_vww_kernel_scratch.c"));
        assert!(buffer.contains("static _Alignas(4) int8_t mlf_vww_kernel_scratch_buffer[1024];"), "{buffer}");
        assert!(buffer.contains("return ctx->buf == NULL ? &mlf_vww_kernel_scratch_context : ctx;"), "{buffer}");
        let [(file, wrapper)] = &code.wrappers[..] else { panic!("one wrapper: {:?}", code.wrappers) };
        assert_eq!(
            (file.as_str(), wrapper.path.as_path()),
            ("codegen/host/src/lib2.c", Path::new("kernel-scratch/codegen/host/src/lib2.c"))
        );
        let text = String::from_utf8(wrapper.bytes.clone()).unwrap();
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("`{needle}` missing: {text}"));
        assert!(
            at("#include \"arm_nnfunctions.h\"")
                < at("#define arm_avgpool_s8(ctx, ...) arm_avgpool_s8(mlf_vww_kernel_scratch(ctx), __VA_ARGS__)")
        );
        // From gen/kernel-scratch/codegen/host/src/ to tree/codegen/host/src/lib2.c.
        assert!(at("#define arm_softmax_s8(ctx, ...)") < at("#include \"../../../../../tree/codegen/host/src/lib2.c\""));
    }

    #[test]
    fn in_an_arena_group_the_buffer_is_a_part_of_the_group_s_arena_after_the_glue_s() {
        let module = CIdent::new("module", "vww").unwrap();
        let grouped = ScratchFiles { group: Some(("mlf_arena_turns".to_string(), 4096)), ..scratch(&module, 1024, "lib2.c") };
        let buffer = String::from_utf8(files(&grouped).unwrap().buffer.bytes).unwrap();
        // The member's own size of the arena (offset + buffer), which the linker merges with the others'.
        assert!(buffer.contains("__attribute__((common, aligned(4))) uint8_t mlf_arena_turns[5120];"), "{buffer}");
        assert!(buffer.contains("#define mlf_vww_kernel_scratch_buffer ((int8_t*)(mlf_arena_turns + 4096))"), "{buffer}");
        assert!(!buffer.contains("static _Alignas"), "{buffer}");
    }

    #[test]
    fn sizes_c_cannot_state_and_paths_c_cannot_include_are_refused() {
        let module = CIdent::new("module", "vww").unwrap();
        let too_big = files(&scratch(&module, 1 << 31, "lib2.c")).unwrap_err();
        assert!(too_big.to_string().contains("int32_t"), "{too_big}");
        let quoted = files(&scratch(&module, 16, "lib\"2.c")).unwrap_err();
        assert!(quoted.to_string().contains("cannot #include"), "{quoted}");
    }
}
