//! Entry points for the fuzz targets in `fuzz/` and `tests/fuzz_regressions.rs`:
//! one function per parser an archive reaches, each taking raw bytes. Only
//! compiled with the `fuzzing` feature; not part of the supported API.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::codegen::stepper;
use crate::error::{Error, ErrorKind, Result};
use crate::ident;
use crate::input::archive::{Limits, Tree};
use crate::input::code::ModuleCode;
use crate::input::sources::{self, InterfaceHeader};
use crate::input::{c, memory_x};
use crate::objects::sections::{self, SectionNames, Storage};
use crate::objects::{ar, elf, prologue, rename, sizes, stack, Machine};
use crate::plan::model::Steps;
use crate::plan::schedule::{self, Inputs};
use crate::plan::steps;
use crate::{input::graph, input::metadata, input::params, plan};

/// Limits small enough that a fuzzer's inputs cannot exhaust memory.
const LIMITS: Limits = Limits { max_entry_bytes: 16 << 20, max_total_bytes: 64 << 20, max_entries: 10_000 };
const MODULE: &str = "default";
const SOURCE: &str = "codegen/host/src/default_lib0.c";

/// `bytes` as a `.tar` file: loaded, written out as a directory, and that
/// directory loaded again (the directory loader must accept what it wrote).
pub fn archive(bytes: &[u8]) -> Result<()> {
    let scratch = Scratch::new()?;
    let tree = Tree::load(&scratch.tar(bytes)?, LIMITS)?;
    let dir = scratch.path.join("tree");
    crate::builder::unpack::write_tree(&tree, &dir)?;
    Tree::load(&dir, LIMITS).map(drop)
}

/// `bytes` as a `.tar` file, through everything the build does before compiling:
/// metadata of any version (or none), interface header, sources, Relay text, graph, params, the plan and its checks.
pub fn front_end(bytes: &[u8]) -> Result<()> {
    let scratch = Scratch::new()?;
    plan::read_and_plan(&scratch.tar(bytes)?, &plan::PlanOptions { limits: LIMITS, ..Default::default() }).map(drop)
}

/// `bytes` as `metadata.json` (any MLF version).
pub fn metadata(bytes: &[u8]) -> Result<()> {
    metadata::parse(bytes).map(drop)
}

/// `bytes` as JSON: what reads is written (compact and pretty) and reads back the same.
pub fn json(bytes: &[u8]) -> Result<()> {
    let value = crate::json::parse(bytes).map_err(|e| Error::new(crate::error::ErrorKind::Metadata, e.to_string()))?;
    for written in [value.to_string(), crate::json::to_string_pretty(&value)] {
        let again = crate::json::parse(written.as_bytes()).unwrap_or_else(|e| panic!("written JSON does not read: {e}: {written}"));
        assert_eq!(again, value, "written as {written}");
    }
    Ok(())
}

/// `bytes` as graph executor JSON, then scheduled as a graph without weights.
pub fn graph(bytes: &[u8]) -> Result<()> {
    let graph = graph::parse(bytes, "graph.json")?;
    let inputs = Inputs {
        graph_path: "graph.json",
        params_path: "default.params",
        params: &[],
        linked: None,
        sids: &[],
        metadata_inputs: Vec::new(),
        metadata_outputs: Vec::new(),
        metadata_output_bytes: Vec::new(),
        reaches: Default::default(),
        workspaces: std::collections::BTreeMap::new(),
        default_workspace: 0,
        alignment: 16,
    };
    schedule::schedule(&graph, &inputs, &mut crate::plan::Warnings::default()).map(drop)
}

/// `bytes` as a `.params` file.
pub fn params(bytes: &[u8]) -> Result<()> {
    params::parse(bytes, "default.params").map(drop)
}

/// `bytes` as generated C: read as the interface header `tvmgen_default.h`
/// and as the module's only source, by every function that inspects either.
pub fn sources(bytes: &[u8]) -> Result<()> {
    let text = String::from_utf8_lossy(bytes);
    let header_path = InterfaceHeader::path_for(MODULE);
    if let Ok(header) = c::parser::parse::parse(&header_path, &text) {
        if let Ok(header) = InterfaceHeader::from(MODULE, &header) {
            for value in header.macros.values() {
                c::integer(value);
                sources::parse_byte_list(value);
            }
        }
    }
    let tree = Tree::from_files([(SOURCE.to_string(), bytes.to_vec())])?;
    let codegen = sources::codegen_for(&tree, MODULE, &[MODULE]);
    let texts = c::CTexts::of(&tree);
    let files = c::CFiles::parse(&texts)?;
    let code = ModuleCode::new(&tree, &files, &codegen);
    sources::headerless_entry(&code, MODULE);
    sources::code_needs(&tree, &code);
    sources::linked_params(&code);
    code.main_parameter_types(MODULE);
    crate::plan::checks::check_own_symbols(&code, &[MODULE]).ok();
    // Operators are looked up by the names a graph gives; take them from the text.
    for (at, _) in text.match_indices("tvmgen_default_").take(8) {
        let name: String = text[at..].chars().take_while(|c| ident::is_identifier_char(*c)).collect();
        sources::operator_args(&code, &name);
    }
    Ok(())
}

/// `bytes` as C text through the C lexer: its tokens cover the text in
/// order, each a slice on character boundaries that starts on the line it
/// says; blanking its comments and literals keeps every byte's place and
/// every line break. A broken invariant panics: the fuzzer's finding.
pub fn c_lexer(bytes: &[u8]) -> Result<()> {
    let text = String::from_utf8_lossy(bytes);
    let (mut at, mut line) = (0, 1);
    for token in c::lexer::lex(&text) {
        assert!(token.start == at && token.end > at && text.is_char_boundary(token.end), "{token:?} after byte {at}");
        assert_eq!(token.line, line, "{token:?}");
        line += text[token.start..token.end].matches('\n').count();
        at = token.end;
    }
    assert_eq!(at, text.len(), "the tokens end before the text");
    let code = c::strip_comments(&text);
    assert_eq!(code.len(), text.len());
    assert!(code.bytes().zip(text.bytes()).all(|(kept, was)| (kept == b'\n') == (was == b'\n')), "a line break moved");
    Ok(())
}

/// `bytes` as a C source through the parser (`input/c/parser/`): every span
/// lies inside the text on character boundaries, starts on the line it says,
/// and those of one list come in text order; every function's parts lie in
/// it, and every body parses, each statement inside its parent; every
/// function split into steps (`plan::steps`) has one step per operator call
/// the body names, each step holding its call. A broken invariant panics: the
/// fuzzer's finding.
pub fn c_parser(bytes: &[u8]) -> Result<()> {
    use c::parser::syntax::{Span, StmtKind};
    let text = String::from_utf8_lossy(bytes);
    let source = c::parser::parse::parse(SOURCE, &text)?;
    let line_starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(at, _)| at + 1)).collect();
    let check = |span: Span, within: Span| {
        let (start, end) = (span.start as usize, span.end as usize);
        assert!(start <= end && end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end), "{span:?}");
        assert!(within.start <= span.start && span.end <= within.end, "{span:?} outside {within:?}");
        assert_eq!(span.line as usize, line_starts.partition_point(|&line_start| line_start <= start), "{span:?}");
    };
    let whole = Span { start: 0, end: text.len() as u32, line: 1 };
    let in_order = |spans: Vec<Span>| {
        for pair in spans.windows(2) {
            assert!(pair[0].start <= pair[1].start, "{pair:?} out of order");
        }
        for span in spans {
            check(span, whole);
        }
    };
    in_order(source.includes.iter().map(|include| include.span).collect());
    in_order(source.defines.iter().map(|define| define.span).collect());
    in_order(source.directives.iter().map(|directive| directive.span).collect());
    in_order(source.prototypes.iter().map(|prototype| prototype.span).collect());
    in_order(source.variables.iter().map(|variable| variable.span).collect());
    in_order(source.structs.iter().map(|item| item.span).collect());
    in_order(source.functions.iter().map(|function| function.span).collect());
    for define in &source.defines {
        check(define.body, define.span);
    }
    for function in &source.functions {
        check(function.params_span, function.span);
        check(function.body_span, function.span);
        let body = function.body(&source);
        for (_, span) in &body.called {
            check(*span, function.body_span);
        }
        // Each statement inside its parent and after its elder sibling; iteratively.
        let mut pending: Vec<(&[c::parser::syntax::Stmt<'_>], Span)> = vec![(&body.statements, function.body_span)];
        while let Some((statements, parent)) = pending.pop() {
            let mut previous = parent.start;
            for statement in statements {
                check(statement.span, parent);
                assert!(statement.span.start >= previous, "{statement:?} before its elder sibling");
                previous = statement.span.end;
                match &statement.kind {
                    StmtKind::Block(inner) => pending.push((inner, statement.span)),
                    StmtKind::If { then, otherwise, .. } => {
                        pending.push((std::slice::from_ref(then.as_ref()), statement.span));
                        if let Some(otherwise) = otherwise {
                            pending.push((std::slice::from_ref(otherwise.as_ref()), statement.span));
                        }
                    }
                    StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Switch { body, .. } => {
                        pending.push((std::slice::from_ref(body.as_ref()), statement.span))
                    }
                    _ => {}
                }
            }
        }
    }
    // Every function split as a model function, begun by itself and by the first other one.
    let module = ident::CIdent::new("module", "default")?;
    let defined = |name: &str| source.function(name).is_some();
    for function in &source.functions {
        // A name defined twice is planned from its first definition, as `CSource::function` finds it.
        if !source.function(function.name).is_some_and(|first| std::ptr::eq(first, function)) {
            continue;
        }
        let other = source.functions.iter().find(|other| other.name != function.name).map(|other| (&source, other.name));
        for wrapper in [None, other] {
            let entry = steps::EntryCode { model: &source, model_function: function.name, wrapper, defined: &defined };
            let Steps::Split(split) = steps::split(&entry) else { continue };
            let body = function.body(&source);
            assert!(!split.operators.is_empty() && split.steps.len() == split.operators.len(), "{split:?}");
            assert!(split
                .operators
                .iter()
                .all(|op| body.called.iter().any(|(name, span)| op == name && span.end <= function.body_span.end)));
            assert!(split.steps.iter().zip(&split.operators).all(|(step, op)| step.contains(op.as_str())), "{split:?}");
            for copy in stepper::sources(&module, Some(&Steps::Split(split))) {
                copy.text(&copy.original_included())?;
            }
        }
    }
    Ok(())
}

/// `bytes` as Relay text (`src/<module>.relay`).
pub fn relay(bytes: &[u8]) -> Result<()> {
    sources::relay_signature(&String::from_utf8_lossy(bytes));
    Ok(())
}

/// `bytes` as a prebuilt object (`codegen/host/lib/*.o`): read for the stack
/// bound, indexed into a static library, whose sections are then measured
/// as the footprint reads them, and its sections placed (`Builder::link_section`).
pub fn object(bytes: &[u8]) -> Result<()> {
    let _ = elf::validate(bytes);
    let mut program = stack::Program::default();
    program.add_object("default_lib0.o", bytes, Some("default_lib0.c:1:5:tvmgen_default_run\t16\tstatic\n"))?;
    let _ = program.bound("tvmgen_default_run");
    // Prebuilt, its frames read from its machine code.
    let mut program = stack::Program::default();
    program.add_object("default_lib0.o", bytes, None)?;
    let _ = program.bound("tvmgen_default_run");
    let scratch = Scratch::new()?;
    let object = scratch.path.join("default_lib0.o");
    std::fs::write(&object, bytes).map_err(|e| Error::io("write", &object, e))?;
    let library = scratch.path.join("libmlf_default.a");
    if ar::write_elf_library(&library, std::slice::from_ref(&object), None)? {
        sizes::library_sizes(std::slice::from_ref(&library))?;
    }
    // Made a crate's own as a build does: its symbols renamed as it is archived.
    let renaming = rename::Private { tag: "fuzz_0_1_0_".to_string(), imports: Vec::new() }.renaming(std::slice::from_ref(&object))?;
    ar::write_elf_library(&library, std::slice::from_ref(&object), Some(&renaming))?;
    sizes::library_sizes(&[library])?;
    let mut names = SectionNames::default();
    names.set(Storage::Workspace, ".sram2")?;
    names.set(Storage::Constants, ".ext_flash")?;
    sections::place(&object, &scratch.path.join("placed.o"), &names)?;
    sections::place(&object, &object, &names)?;
    Ok(())
}

/// `bytes` as a `memory.x`: parsed, then the sections a build places (and
/// the section names the text itself mentions) looked up in its `SECTIONS`.
pub fn memory_x(bytes: &[u8]) -> Result<()> {
    let text = String::from_utf8_lossy(bytes);
    let layout = memory_x::parse(&text)?;
    // As long as `Builder::link_section` allows.
    let mentioned =
        text.split(|c: char| c.is_whitespace() || "(){};,".contains(c)).filter(|word| word.starts_with('.') && word.len() <= 128).take(16);
    for name in [".bss", ".data", ".rodata", ".text", ".sram2", ".sram2.workspace", ""].into_iter().chain(mentioned) {
        let _ = layout.placement(name);
        let _ = layout.region(name.trim_start_matches('.'));
    }
    Ok(())
}

/// `bytes` as Thumb and as RISC-V machine code whose frame is read, and as
/// a call graph whose stack bound is walked (`objects::stack::graph_bound`).
pub fn stack(bytes: &[u8]) -> Result<()> {
    for machine in [Machine::Arm, Machine::Riscv] {
        let _ = prologue::frame(machine, &[prologue::Piece::Code { bytes, section: bytes, offset: 0 }], None, false);
    }
    stack::graph_bound(bytes);
    Ok(())
}

/// `bytes` as a model slot image, read as the device reads it: the header,
/// the digest, every tensor and `inspect`'s report. What the reader accepts
/// must encode back to its own bytes and seal again.
pub fn slot_header(bytes: &[u8]) -> Result<()> {
    use mlf_rt::slot::{self, Side, SlotHeader};
    let header = SlotHeader::parse(bytes).map_err(|e| Error::new(ErrorKind::Slot, e.to_string()))?;
    let _ = crate::slot::report(&header) + &crate::slot::digest_line(&header);
    let mut fixed = bytes[..slot::FIXED_BYTES].to_vec();
    fixed[slot::DIGEST_RANGE].fill(0);
    assert_eq!(header.fields().encode().to_vec(), fixed, "the fixed fields encode back to their bytes");
    for side in [Side::Input, Side::Output] {
        for index in 0..header.count(side) {
            let tensor = header.tensor(side, index).expect("a tensor the header counts");
            let at = slot::FIXED_BYTES
                + (usize::from(index) + if side == Side::Output { usize::from(header.count(Side::Input)) } else { 0 })
                    * slot::TENSOR_RECORD_BYTES;
            assert_eq!(tensor.record.encode()[..], bytes[at..at + slot::TENSOR_RECORD_BYTES], "a record encodes back to its bytes");
        }
    }
    let mut image = header.image().to_vec();
    let digest = slot::seal(&mut image).expect("an accepted image seals");
    assert_eq!(digest, header.computed_digest());
    header.check_digest().map_err(|e| Error::new(ErrorKind::Slot, e.to_string()))
}

/// A directory of this process's own, removed when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new() -> Result<Scratch> {
        // Tests call the entry points from several threads of one process.
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("mlf-build-fuzz-{}-{unique}", std::process::id()));
        let scratch = Scratch { path };
        scratch.clear();
        std::fs::create_dir_all(&scratch.path).map_err(|e| Error::io("create", &scratch.path, e))?;
        Ok(scratch)
    }

    fn tar(&self, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.path.join("model.tar");
        std::fs::write(&path, bytes).map_err(|e| Error::io("write", &path, e))?;
        Ok(path)
    }

    fn clear(&self) {
        // Best effort: a leftover directory holds nothing anyone reads.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.clear();
    }
}
