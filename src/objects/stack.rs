//! The stack bound of a module's run: each function's frame from the
//! compiler's `-fstack-usage` file, who calls whom from the objects'
//! relocations, and the deepest path from the glue's entry point. Pure: the
//! caller hands in the objects' bytes and the `.su` texts
//! (`toolchain::stack_bound` is the thin shell that reads them).
//!
//! Sound for code that calls functions directly, as TVM's generated C and
//! CMSIS-NN do. A call through a pointer has no relocation, so pointers are
//! followed from where their value comes from: a function that reads a table
//! of function addresses (a graph's call list, a `tvm_model_t`) is taken to
//! call every function in it; a function whose code takes another's address
//! must pass it to one of mlf-build's own callback runners
//! ([`CALLBACK_RUNNERS`]), which then call it in their frame; any other taken
//! address makes the bound unknown. So does recursion, a frame the compiler
//! calls `dynamic`, a function without a frame (no `.su` line) and a call
//! into code no object defines, unless the toolchain's libraries define it
//! (their members' frames read from their machine code, `prologue`) or,
//! where that code says nothing, [`library_allowance`] names it. An object
//! without a `.su` file (compiled under a compiler wrapper, which gets no
//! `-fstack-usage`, or prebuilt) has its frames read from its code too.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::objects::elf::{self, Header};
use crate::objects::library::Archive;
use crate::objects::prologue;
use crate::objects::Machine;

/// The worst-case stack of one run of a module, from the compiled objects
/// (README.md, "How deep is its stack?"), or why it is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StackBound {
    /// The bound in bytes: `STACK_BYTES` of the generated module; `None` when unknown.
    pub bytes: Option<u64>,
    /// Why there is no bound, when there is none.
    pub unknown: Option<String>,
    /// The deepest path, outermost first: each function (or allowance) and its frame.
    pub path: Vec<StackFrame>,
}

/// One step of a [`StackBound`]'s deepest path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StackFrame {
    /// The function, or what an allowance stands for.
    pub function: String,
    /// Its frame in bytes.
    pub bytes: u64,
}

impl StackBound {
    /// No bound, for `why`.
    pub(crate) fn unknown(why: impl Into<String>) -> StackBound {
        StackBound { bytes: None, unknown: Some(why.into()), path: Vec::new() }
    }

    /// The bound of a module whose C is not compiled (planning alone, `inspect` without `--target`).
    pub(crate) fn not_compiled() -> StackBound {
        StackBound::unknown("not compiled: the bound is read from the compiled objects (a build, or inspect --target)")
    }

    /// The path as text: `f (16) → g (8)`.
    pub fn path_text(&self) -> String {
        self.path.iter().map(|step| format!("{} ({})", step.function, step.bytes)).collect::<Vec<_>>().join(" → ")
    }
}

/// mlf-build's support functions that call a function pointer their caller
/// passes, in their own frame: `mlf_support_call` runs the glue's entry and
/// `mlf_support_step` one step of it under the abort guard;
/// `TVMBackendParallelLaunch` runs generated code's lambda.
const CALLBACK_RUNNERS: &[&str] = &["mlf_support_call", "mlf_support_step", "TVMBackendParallelLaunch"];

/// The hooks `-finstrument-functions` makes every function call (`Builder::profile`)
/// with its own address and those of the functions inlined into it: they compare
/// addresses with their table of operators and call none of them.
const ADDRESS_READERS: &[&str] = &["__cyg_profile_func_enter", "__cyg_profile_func_exit"];

/// mlf-build's support functions that call the application's code through a
/// pointer the application set: their stack is not the model's to know.
const APPLICATION_CALLS: &[(&str, &str)] =
    &[("TVMLogf", "the application's log hook"), ("mlf_support_emit_log", "the application's log hook")];

/// C library functions that copy, fill, scan or save registers: a few saved registers, no calls.
const MEMORY_FUNCTIONS: &[&str] =
    &["memcpy", "memmove", "memset", "memcmp", "strlen", "setjmp", "longjmp", "_setjmp", "_longjmp", "__errno", "__stack_chk_fail"];
/// C maths library functions (single and double precision); each may call
/// the library's error helpers and, without an FPU, soft-float helpers.
const MATHS_FUNCTIONS: &[&str] = &[
    "expf",
    "exp",
    "exp2f",
    "expm1f",
    "logf",
    "log",
    "log2f",
    "log10f",
    "log1pf",
    "powf",
    "pow",
    "sqrtf",
    "sqrt",
    "tanhf",
    "tanh",
    "erff",
    "erf",
    "sinf",
    "sin",
    "cosf",
    "cos",
    "atanf",
    "atan2f",
    "fabsf",
    "fabs",
    "floorf",
    "floor",
    "ceilf",
    "ceil",
    "roundf",
    "round",
    "truncf",
    "trunc",
    "rintf",
    "nearbyintf",
    "lroundf",
    "fmaxf",
    "fmax",
    "fminf",
    "fmin",
    "fmodf",
    "fmod",
];

/// The stack a call into a library function is allowed when no library's
/// code gives its frame (the host's shared libraries, code the reader does
/// not decode), with what it is, when mlf-build names it: C library memory functions and
/// `setjmp`/`longjmp` 32 bytes, compiler runtime helpers (`__aeabi_*`,
/// libgcc's `__divdi3`, `__mulsf3`, `__fixsfsi`, ...) 128 bytes, C maths
/// library functions 256 bytes. README.md ("How deep is its stack?") says
/// what these rest on.
pub(crate) fn library_allowance(name: &str) -> Option<(u64, &'static str)> {
    let libgcc = name.strip_prefix("__").is_some_and(|rest| {
        rest.starts_with("aeabi_")
            || rest.starts_with("gnu_thumb1_case_")
            || rest.starts_with("fix")
            || rest.starts_with("float")
            || (rest.ends_with(['2', '3']) && rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
    });
    if MEMORY_FUNCTIONS.contains(&name) || name.starts_with("__aeabi_mem") {
        Some((32, "C library"))
    } else if libgcc {
        Some((128, "compiler runtime"))
    } else if MATHS_FUNCTIONS.contains(&name) {
        Some((256, "C maths library"))
    } else {
        None
    }
}

/// One function's frame as its `.su` line states it, or as its machine code shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Bytes(u64),
    /// `dynamic` without `bounded`: it grows with its arguments (alloca, VLAs).
    Dynamic,
    /// No line in its object's `.su` file (written in assembly).
    Missing,
    /// Read from machine code that does not say (its [`Function::undecoded`]).
    Undecoded,
}

/// The frames of a `.su` file by function name (`file:line:col:name<TAB>bytes<TAB>qualifiers`).
/// gcc names a clone without its number (`f.constprop` for `f.constprop.0`),
/// so a repeated name keeps its largest frame, and any `dynamic` one wins.
fn parse_stack_usage(text: &str) -> BTreeMap<String, Frame> {
    let mut frames = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split('\t');
        let (Some(location), Some(bytes), Some(qualifiers)) = (fields.next(), fields.next(), fields.next()) else { continue };
        let name = location.rsplit(':').next().unwrap_or_default().trim();
        let frame = match bytes.trim().parse::<u64>() {
            Ok(_) if qualifiers.trim() == "dynamic" => Frame::Dynamic,
            Ok(bytes) => Frame::Bytes(bytes),
            Err(_) => Frame::Missing,
        };
        let entry = frames.entry(name.to_string()).or_insert(frame);
        *entry = match (*entry, frame) {
            (Frame::Bytes(a), Frame::Bytes(b)) => Frame::Bytes(a.max(b)),
            (Frame::Dynamic, _) | (_, Frame::Dynamic) => Frame::Dynamic,
            (Frame::Missing | Frame::Undecoded, other) | (other, Frame::Missing | Frame::Undecoded) => other,
        };
    }
    frames
}

/// A symbol name without gcc's clone numbers (`f.constprop.0` → `f.constprop`), as `.su` files name it.
fn su_name(symbol: &str) -> String {
    symbol.split('.').filter(|part| part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit())).collect::<Vec<_>>().join(".")
}

/// What a relocation does with its symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// A call, tail call or branch.
    Call,
    /// Takes the symbol's address (a pointer, a table entry, a literal).
    Reference,
    /// Label arithmetic, relaxation hints, unwind tables.
    Ignore,
}

/// What relocation `kind` at `offset` of `code` (the section's bytes) does, on `machine`.
fn classify(machine: Machine, kind: u32, code: &[u8], offset: u64) -> Use {
    match machine {
        // PC24, THM_CALL, CALL, JUMP24, THM_JUMP24, THM_JUMP19, THM_JUMP11, THM_JUMP8; NONE, V4BX, PREL31.
        Machine::Arm => match kind {
            1 | 10 | 28 | 29 | 30 | 51 | 102 | 103 => Use::Call,
            0 | 40 | 42 => Use::Ignore,
            _ => Use::Reference,
        },
        // BRANCH, JAL, CALL, CALL_PLT, RVC_BRANCH, RVC_JUMP; NONE, PCREL_LO12_I/S (point at
        // their auipc), ADD/SUB (label differences), ALIGN, RELAX, SUB6, SET6/8/16/32.
        Machine::Riscv => match kind {
            16..=19 | 44 | 45 => Use::Call,
            0 | 24 | 25 | 33..=40 | 43 | 51..=56 => Use::Ignore,
            _ => Use::Reference,
        },
        // PLT32 calls; PC32 calls when the instruction is call/jmp/jcc rel32, else takes an address.
        Machine::X86_64 => match kind {
            4 => Use::Call,
            0 => Use::Ignore,
            2 => {
                let at = usize::try_from(offset).unwrap_or(usize::MAX);
                let before = |back: usize| at.checked_sub(back).and_then(|i| code.get(i)).copied();
                let jcc = before(2) == Some(0x0f) && before(1).is_some_and(|b| b & 0xf0 == 0x80);
                if matches!(before(1), Some(0xe8 | 0xe9)) || jcc {
                    Use::Call
                } else {
                    Use::Reference
                }
            }
            _ => Use::Reference,
        },
        // TSTBR14, CONDBR19, JUMP26, CALL26.
        Machine::Aarch64 => match kind {
            279 | 280 | 282 | 283 => Use::Call,
            0 => Use::Ignore,
            _ => Use::Reference,
        },
        _ => Use::Ignore,
    }
}

/// What a relocation points at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Function(usize),
    Data(usize),
    /// A symbol this object does not define: another object's, or the C library's.
    Global(String),
    /// Code whose stack nothing says, and why.
    Opaque(String),
}

#[derive(Debug)]
struct Function {
    name: String,
    frame: Frame,
    calls: BTreeSet<Target>,
    /// Addresses its code takes.
    references: BTreeSet<Target>,
    /// Where a function of the toolchain's libraries comes from; `None` for the build's own objects.
    library: Option<LibraryCode>,
    /// Why its machine code does not give its frame ([`Frame::Undecoded`]).
    undecoded: Option<String>,
}

/// A library function, its frame read from its machine code (`objects::prologue`).
#[derive(Debug)]
struct LibraryCode {
    /// The library's file name (`libm.a`).
    archive: String,
}

/// Where the frames of an object's functions come from.
#[derive(Debug, Clone, Copy)]
enum FrameSource<'a> {
    /// The compiler's `.su` file.
    StackUsage(&'a str),
    /// The machine code of one of the build's objects that has no `.su` file:
    /// compiled under a compiler wrapper, which drops `-fstack-usage`, or prebuilt.
    OwnCode,
    /// The machine code of a member of library `archive`.
    MachineCode { archive: &'a str },
}

/// The functions and data of every object read so far.
#[derive(Debug, Default)]
pub(crate) struct Program {
    functions: Vec<Function>,
    /// What each data section (a table, a descriptor) points at.
    data: Vec<BTreeSet<Target>>,
    global_functions: HashMap<String, usize>,
    global_data: HashMap<String, usize>,
    /// Why an object could not be read, the first time.
    unreadable: Option<String>,
    /// The limit the last object read went past.
    over_limit: Option<String>,
}

/// The relocation tables (`SHT_REL`, `SHT_RELA`) of an object that apply to
/// a section `applies` accepts: that section's index, whether the addends
/// are explicit (RELA), and the relocations; `None` for a table the object
/// does not hold.
fn relocation_tables<'a>(
    header: &'a Header,
    sections: &'a [elf::Section],
    bytes: &'a [u8],
    applies: impl Fn(usize) -> bool + 'a,
) -> impl Iterator<Item = Option<(usize, bool, impl Iterator<Item = elf::Relocation> + 'a)>> + 'a {
    sections.iter().filter_map(move |table| {
        let explicit_addend = match table.kind {
            elf::SHT_RELA => true,
            elf::SHT_REL => false,
            _ => return None,
        };
        let Ok(applies_to) = usize::try_from(table.info) else { return Some(None) };
        if !applies(applies_to) {
            return None;
        }
        Some(table.bytes(bytes).map(|relocations| (applies_to, explicit_addend, header.relocations(relocations, explicit_addend))))
    })
}

/// Where each function's code lies in its section (up to the next function's
/// start), and in an Arm object which parts are Thumb, A32 or data (the
/// `$t`, `$a`, `$d` mapping symbols).
struct CodeMap {
    machine: Machine,
    /// Each section's function starts, in order.
    starts: HashMap<usize, Vec<u64>>,
    /// Each section's mapping symbols, in order: offset and `t`, `a` or `d`.
    mapping: HashMap<usize, Vec<(u64, u8)>>,
    /// Each section's branches whose relocation names their target.
    relocated: HashMap<usize, prologue::Relocated>,
    /// A member of the toolchain's own libraries, not code of the archive (`prologue::frame`).
    from_toolchain: bool,
}

impl CodeMap {
    fn new<'s>(
        machine: Machine,
        symbols: &'s [elf::Symbol],
        name: impl Fn(&'s elf::Symbol) -> Option<&'s str>,
        from_toolchain: bool,
    ) -> CodeMap {
        let mut map = CodeMap { machine, starts: HashMap::new(), mapping: HashMap::new(), relocated: HashMap::new(), from_toolchain };
        for symbol in symbols.iter().filter(|symbol| symbol.section != 0) {
            let section = usize::from(symbol.section);
            if symbol.kind == elf::STT_FUNC {
                let start = map.start(symbol.value);
                map.starts.entry(section).or_default().push(start);
            } else if let Some(kind) = name(symbol).and_then(|name| name.strip_prefix('$')).and_then(|kind| kind.bytes().next()) {
                if machine == Machine::Arm && b"tad".contains(&kind) {
                    map.mapping.entry(section).or_default().push((symbol.value, kind));
                }
            }
        }
        for list in map.starts.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        for list in map.mapping.values_mut() {
            list.sort_unstable();
        }
        map
    }

    /// A function symbol's value as an offset (a Thumb function's has its low bit set).
    fn start(&self, value: u64) -> u64 {
        if self.machine == Machine::Arm {
            value & !1
        } else {
            value
        }
    }

    /// The start of the function whose code holds `offset` of `section`.
    fn containing(&self, section: usize, offset: u64) -> Option<u64> {
        let starts = self.starts.get(&section)?;
        starts.get(starts.partition_point(|&start| start <= offset).checked_sub(1)?).copied()
    }

    /// The frame of the function at `value` of `section` (whose bytes are `code`), from its machine code.
    fn frame(&self, machine: Machine, section: usize, code: &[u8], value: u64) -> std::result::Result<u64, String> {
        let start = self.start(value);
        let starts = self.starts.get(&section).map_or(&[][..], Vec::as_slice);
        let end = starts.get(starts.partition_point(|&s| s <= start)).copied();
        let end = end.unwrap_or(code.len() as u64).min(code.len() as u64);
        self.range_frame(machine, section, code, start, end)
    }

    /// The frame of all the code of `section` (whose bytes are `code`): every decrement of its functions and of any code between them.
    fn section_frame(&self, section: usize, code: &[u8]) -> std::result::Result<u64, String> {
        self.range_frame(self.machine, section, code, 0, code.len() as u64)
    }

    /// The frame of the code from `start` to `end` of `section` (whose bytes are `code`).
    fn range_frame(&self, machine: Machine, section: usize, code: &[u8], start: u64, end: u64) -> std::result::Result<u64, String> {
        let mapping = self.mapping.get(&section).map_or(&[][..], Vec::as_slice);
        // The kind at the start (Thumb when no mapping symbol says), then each change within.
        let mut kind = mapping.iter().rev().find(|(at, _)| *at <= start).map_or(b't', |(_, kind)| *kind);
        let mut at = start;
        let mut pieces = Vec::new();
        for &(change, next) in mapping.iter().filter(|(change, _)| *change > start && *change < end).chain([&(end, b't')]) {
            let offset = |at: u64| usize::try_from(at).unwrap_or(usize::MAX);
            let bytes = code.get(offset(at)..offset(change)).unwrap_or_default();
            match kind {
                b'a' => pieces.push(prologue::Piece::Arm),
                b'd' => {}
                _ => pieces.push(prologue::Piece::Code { bytes, section: code, offset: offset(at) }),
            }
            (at, kind) = (change, next);
        }
        prologue::frame(machine, &pieces, self.relocated.get(&section), self.from_toolchain)
    }
}

/// The addend an `SHT_REL` relocation keeps in the word it patches, for the
/// absolute words that point into code (a jump table's entries, a function
/// pointer against its section): Arm's `R_ARM_ABS32` and x86's `R_386_32`.
/// Arm's Thumb bit is cleared, so an entry reads as the offset it jumps to;
/// 0 for other kinds, as before the word is read.
fn implicit_addend(machine: Machine, kind: u32, contents: &[u8], offset: u64) -> i64 {
    let word = |at: u64| {
        let at = usize::try_from(at).ok()?;
        let bytes: [u8; 4] = contents.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(i64::from(i32::from_le_bytes(bytes)))
    };
    match (machine, kind) {
        (Machine::Arm, 2) => word(offset).map_or(0, |addend| addend & !1),
        (Machine::X86, 1) => word(offset).unwrap_or(0),
        _ => 0,
    }
}

/// Sections whose relocations say nothing about calls: unwind and exception tables.
fn is_unwind_section(name: &str) -> bool {
    name == ".eh_frame" || name.starts_with(".ARM.exidx") || name.starts_with(".ARM.extab") || name.starts_with(".gcc_except_table")
}

/// Limits on what the objects of one bound may hold, checked before what they
/// declare is read: many times what the largest models' objects hold.
const MAX_SYMBOLS: usize = 1 << 20;
/// Functions across every object of one bound, the toolchain's library code included.
const MAX_FUNCTIONS: usize = 1 << 20;

impl Program {
    /// Adds object `label` (its bytes) with the text of its `.su` file; without
    /// one its frames are read from its machine code. An object that cannot be
    /// read makes every bound unknown; one past a limit is an error.
    pub fn add_object(&mut self, label: &str, bytes: &[u8], stack_usage: Option<&str>) -> Result<()> {
        let source = stack_usage.map_or(FrameSource::OwnCode, FrameSource::StackUsage);
        if self.add(bytes, source).is_some() {
            return Ok(());
        }
        if let Some(what) = self.over_limit.take() {
            return Err(Error::new(ErrorKind::Unsupported, format!("reading `{label}` for the stack bound: {what}"))
                .in_file(label.to_string())
                .help("an object this large is not one TVM or mlf-build writes: check the archive's codegen/host/lib objects"));
        }
        if self.unreadable.is_none() {
            self.unreadable = Some(format!("`{label}` is not an ELF object of a machine the bound reads (Arm, RISC-V, x86-64, AArch64)"));
        }
        Ok(())
    }

    /// Adds a member of the toolchain's library `archive`, its frames read
    /// from its code. One that cannot be read is left out: its functions stay undefined.
    fn add_library_member(&mut self, archive: &str, bytes: &[u8]) {
        let (functions, data) = (self.functions.len(), self.data.len());
        if self.add(bytes, FrameSource::MachineCode { archive }).is_some() {
            return;
        }
        self.over_limit = None;
        // Forget what was read of it: it must not stand half-read.
        self.functions.truncate(functions);
        self.data.truncate(data);
        self.global_functions.retain(|_, node| *node < functions);
        self.global_data.retain(|_, node| *node < data);
    }

    /// A new function node; `None` past [`MAX_FUNCTIONS`] (noted in [`Program::over_limit`]).
    fn push_function(&mut self, function: Function) -> Option<usize> {
        if self.functions.len() >= MAX_FUNCTIONS {
            self.over_limit = Some(format!("the objects define more than {MAX_FUNCTIONS} functions, the limit"));
            return None;
        }
        self.functions.push(function);
        Some(self.functions.len() - 1)
    }

    /// Reads an object into the program; `None` when it cannot be read, or is past a limit (noted in [`Program::over_limit`]).
    fn add(&mut self, bytes: &[u8], source: FrameSource<'_>) -> Option<()> {
        let header = Header::parse(bytes)?;
        let machine = Machine::from_elf(header.machine).filter(|machine| machine.relocations_read())?;
        let sections = match header.checked_sections(bytes) {
            Ok(sections) => sections,
            Err(elf::Malformed::Limit(what)) => {
                self.over_limit = Some(what);
                return None;
            }
            Err(elf::Malformed::Layout(_)) => return None,
        };
        let section_names = sections.get(header.names_index(&sections)?)?.bytes(bytes)?;
        let names: Vec<&str> =
            sections.iter().map(|s| std::str::from_utf8(elf::string(section_names, s.name)?).ok()).collect::<Option<_>>()?;
        let symtab = sections.iter().find(|s| s.kind == elf::SHT_SYMTAB)?;
        let symbol_names = sections.get(usize::try_from(symtab.link).ok()?)?.bytes(bytes)?;
        let table = symtab.bytes(bytes)?;
        let declared = table.len() / header.symbol_len();
        if declared > MAX_SYMBOLS {
            self.over_limit = Some(format!("its symbol table holds {declared} symbols, more than the limit of {MAX_SYMBOLS}"));
            return None;
        }
        let symbols: Vec<elf::Symbol> = header.symbols(table).collect();
        let symbol_name = |symbol: &elf::Symbol| std::str::from_utf8(elf::string(symbol_names, symbol.name)?).ok();
        let executable = |index: usize| sections.get(index).is_some_and(|s| s.flags & elf::SHF_EXECINSTR != 0);
        let is_data = |index: usize| {
            sections.get(index).is_some_and(|s| s.flags & elf::SHF_ALLOC != 0 && s.flags & elf::SHF_EXECINSTR == 0)
                && !is_unwind_section(names[index])
        };
        let frames = match source {
            FrameSource::StackUsage(text) => parse_stack_usage(text),
            FrameSource::OwnCode | FrameSource::MachineCode { .. } => BTreeMap::new(),
        };
        let mut code_of = CodeMap::new(machine, &symbols, symbol_name, matches!(source, FrameSource::MachineCode { .. }));
        // Branches a relocation completes (RV32 objects' loops, which relaxation leaves
        // for the linker): to a label of their own section, or out of it.
        for table in relocation_tables(&header, &sections, bytes, executable) {
            let (applies_to, explicit_addend, relocations) = table?;
            let code = sections.get(applies_to)?.bytes(bytes)?;
            for relocation in relocations {
                if classify(machine, relocation.kind, code, relocation.offset) != Use::Call {
                    continue;
                }
                let symbol = symbols.get(usize::try_from(relocation.symbol).ok()?)?;
                let to_label = usize::from(symbol.section) == applies_to && symbol.kind != elf::STT_FUNC;
                // A label no offset can hold is taken for one past the code.
                let label =
                    || i64::try_from(code_of.start(symbol.value)).ok().and_then(|at| at.checked_add(relocation.addend)).unwrap_or(i64::MAX);
                let target = to_label.then(|| (label(), !explicit_addend));
                code_of.relocated.entry(applies_to).or_default().insert(relocation.offset, target);
            }
        }
        // The build's own code read from its machine code: a section's whole code, read
        // once, is the frame of each of its functions, which may branch anywhere in it.
        let mut section_frames: HashMap<usize, std::result::Result<u64, String>> = HashMap::new();

        // A node per function; a cold part (`f.cold`) belongs to `f`, whose frame it runs in.
        let mut function_of_symbol: HashMap<usize, usize> = HashMap::new();
        // Each function's node by its section and start, and by its name (the first of a name).
        let mut function_at: HashMap<(usize, u64), usize> = HashMap::new();
        let mut function_named: HashMap<&str, usize> = HashMap::new();
        let mut owners: HashMap<usize, BTreeSet<usize>> = HashMap::new();
        let mut cold_parts = Vec::new();
        let mut node_starts: HashMap<usize, u64> = HashMap::new();
        for (index, symbol) in symbols.iter().enumerate() {
            if symbol.kind != elf::STT_FUNC || symbol.section == 0 || !executable(usize::from(symbol.section)) {
                continue;
            }
            let name = symbol_name(symbol)?;
            let section_index = usize::from(symbol.section);
            if let Some((parent, _)) = name.split_once(".cold") {
                cold_parts.push((index, parent));
                continue;
            }
            let library = match source {
                FrameSource::MachineCode { archive } => Some(LibraryCode { archive: archive.to_string() }),
                FrameSource::StackUsage(_) | FrameSource::OwnCode => None,
            };
            let frame = match source {
                FrameSource::StackUsage(_) => Ok(frames.get(&su_name(name)).copied().unwrap_or(Frame::Missing)),
                FrameSource::OwnCode => {
                    let section = sections.get(section_index)?;
                    let code = section.bytes(bytes)?;
                    let read = section_frames.entry(section_index).or_insert_with(|| code_of.section_frame(section_index, code));
                    read.clone().map(Frame::Bytes)
                }
                FrameSource::MachineCode { .. } => {
                    let section = sections.get(section_index)?;
                    code_of.frame(machine, section_index, section.bytes(bytes)?, symbol.value).map(Frame::Bytes)
                }
            };
            let (frame, undecoded) = match frame {
                Ok(frame) => (frame, None),
                Err(why) => (Frame::Undecoded, Some(why)),
            };
            let start = code_of.start(symbol.value);
            if let Some(&node) = function_at.get(&(section_index, start)) {
                // A second name for the same code (identical functions folded into one, an alias):
                // one node, with the frame whichever name the compiler reported it under.
                if matches!(self.functions[node].frame, Frame::Missing) {
                    self.functions[node].frame = frame;
                }
                if symbol.binding != 0 {
                    self.global_functions.entry(name.to_string()).or_insert(node);
                }
                function_of_symbol.insert(index, node);
                function_named.entry(name).or_insert(node);
                continue;
            }
            let (calls, references) = (BTreeSet::new(), BTreeSet::new());
            let node = self.push_function(Function { name: name.to_string(), frame, calls, references, library, undecoded })?;
            if symbol.binding != 0 {
                self.global_functions.entry(name.to_string()).or_insert(node);
            }
            function_of_symbol.insert(index, node);
            function_at.insert((section_index, start), node);
            function_named.entry(name).or_insert(node);
            node_starts.insert(node, start);
            owners.entry(section_index).or_default().insert(node);
        }
        for (index, parent) in cold_parts {
            if let Some(&node) = function_named.get(parent) {
                function_of_symbol.insert(index, node);
                owners.entry(usize::from(symbols[index].section)).or_default().insert(node);
            }
        }
        if !matches!(source, FrameSource::MachineCode { .. }) {
            // Code several functions share: one node its calls are recorded in, which each of them calls,
            // so a relocation is recorded once however many functions the section holds.
            for (&section, nodes) in owners.iter_mut().filter(|(_, nodes)| nodes.len() > 1) {
                let name = format!("{} (code of {} functions)", names[section], nodes.len());
                let frame = Frame::Bytes(0);
                let shared = self.push_function(Function {
                    name,
                    frame,
                    calls: BTreeSet::new(),
                    references: BTreeSet::new(),
                    library: None,
                    undecoded: None,
                })?;
                for &node in nodes.iter() {
                    self.functions[node].calls.insert(Target::Function(shared));
                }
                *nodes = BTreeSet::from([shared]);
            }
        }
        let mut data_of_section: HashMap<usize, usize> = HashMap::new();
        let mut data_node = |program: &mut Program, section: usize| {
            *data_of_section.entry(section).or_insert_with(|| {
                program.data.push(BTreeSet::new());
                program.data.len() - 1
            })
        };
        for symbol in &symbols {
            let section = usize::from(symbol.section);
            if symbol.binding != 0 && symbol.kind != elf::STT_FUNC && section != 0 && is_data(section) {
                let node = data_node(self, section);
                self.global_data.entry(symbol_name(symbol)?.to_string()).or_insert(node);
            }
        }

        for table in relocation_tables(&header, &sections, bytes, |index| executable(index) || is_data(index)) {
            let (applies_to, explicit_addend, relocations) = table?;
            let in_code = executable(applies_to);
            let target_section = sections.get(applies_to)?;
            let contents = target_section.bytes(bytes)?;
            let code = if in_code { contents } else { &[] };
            for relocation in relocations {
                let usage = classify(machine, relocation.kind, code, relocation.offset);
                if usage == Use::Ignore || relocation.symbol == 0 {
                    continue;
                }
                // In a library's code, several functions may share a section: the call is the one around it's.
                let narrowed;
                let owners_here = match (source, in_code) {
                    (FrameSource::MachineCode { .. }, true) => {
                        let site = code_of.containing(applies_to, relocation.offset);
                        let nodes = owners.get(&applies_to).into_iter().flatten().copied();
                        let around: BTreeSet<usize> =
                            nodes.filter(|node| site.is_some() && node_starts.get(node) == site.as_ref()).collect();
                        // Code of no function's own (a cold part) may be any's.
                        if around.is_empty() {
                            &owners
                        } else {
                            narrowed = HashMap::from([(applies_to, around)]);
                            &narrowed
                        }
                    }
                    _ => &owners,
                };
                let symbol_index = usize::try_from(relocation.symbol).ok()?;
                let symbol = symbols.get(symbol_index)?;
                let section = usize::from(symbol.section);
                // Whether the target is a label or section rather than a function's own symbol.
                let mut is_label = false;
                let target = if section == 0 {
                    Target::Global(symbol_name(symbol)?.to_string())
                } else if let Some(&node) = function_of_symbol.get(&symbol_index) {
                    // A jump into a function's own cold part.
                    is_label = symbol_name(symbol)?.contains(".cold");
                    Target::Function(node)
                } else if executable(section) {
                    is_label = true;
                    // A section symbol points at a function only at that function's start:
                    // x86-64 PC-relative addends are 4 short of it.
                    let adjust = if machine == Machine::X86_64 && matches!(relocation.kind, 2 | 4) { 4 } else { 0 };
                    let addend = if explicit_addend {
                        relocation.addend
                    } else {
                        implicit_addend(machine, relocation.kind, contents, relocation.offset)
                    };
                    let offset = addend.checked_add(adjust)?;
                    let starts = u64::try_from(offset).ok().and_then(|offset| function_at.get(&(section, offset)));
                    // In a library's code, a branch to a label (RELA: exact) goes to the function around it.
                    let label_offset =
                        if symbol.kind == elf::STT_SECTION { Some(offset) } else { i64::try_from(symbol.value).ok()?.checked_add(offset) };
                    let around = match (source, explicit_addend, usage, label_offset) {
                        (FrameSource::MachineCode { .. }, true, Use::Call, Some(at)) => {
                            u64::try_from(at).ok().and_then(|at| code_of.containing(section, at))
                        }
                        _ => None,
                    };
                    if let Some(&node) = around.and_then(|start| function_at.get(&(section, start))) {
                        self.record(owners_here, applies_to, in_code, usage, Target::Function(node), true, &mut data_node);
                        continue;
                    }
                    match (symbol.kind == elf::STT_SECTION, starts, owners.get(&section)) {
                        (true, Some(&node), _) if usage == Use::Reference => Target::Function(node),
                        // Any other reference into code is a label: a jump table entry or a literal.
                        _ if usage == Use::Reference => continue,
                        (_, _, Some(nodes)) if nodes.len() == 1 => Target::Function(*nodes.iter().next()?),
                        // Code of several functions in one section: the call may be to any.
                        (_, _, Some(nodes)) => {
                            for &node in nodes {
                                self.record(owners_here, applies_to, in_code, usage, Target::Function(node), true, &mut data_node);
                            }
                            continue;
                        }
                        // Code no function symbol covers: nothing says what it does.
                        (_, _, None) => Target::Opaque(format!("a call into section `{}`, code no function symbol covers", names[section])),
                    }
                } else if is_data(section) {
                    Target::Data(data_node(self, section))
                } else {
                    continue;
                };
                self.record(owners_here, applies_to, in_code, usage, target, is_label, &mut data_node);
            }
        }
        Some(())
    }

    /// Records that section `section` (code or data) calls or references `target`.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        owners: &HashMap<usize, BTreeSet<usize>>,
        section: usize,
        in_code: bool,
        usage: Use,
        target: Target,
        is_label: bool,
        data_node: &mut impl FnMut(&mut Program, usize) -> usize,
    ) {
        if in_code {
            for &owner in owners.get(&section).into_iter().flatten() {
                // A branch within the function (to a label, its cold part) is no call.
                if is_label && target == Target::Function(owner) {
                    continue;
                }
                let function = &mut self.functions[owner];
                match usage {
                    Use::Call => function.calls.insert(target.clone()),
                    _ => function.references.insert(target.clone()),
                };
            }
        } else {
            let node = data_node(self, section);
            self.data[node].insert(target);
        }
    }

    /// The deepest stack a call of global function `root` takes, or why it is unknown.
    pub fn bound(&self, root: &str) -> StackBound {
        if let Some(why) = &self.unreadable {
            return StackBound::unknown(why.clone());
        }
        let Some(&node) = self.global_functions.get(root) else {
            return StackBound::unknown(format!("no compiled object defines `{root}`"));
        };
        match Walk::new(self).depth(node) {
            Ok(deepest) => StackBound { bytes: Some(deepest.bytes), unknown: None, path: deepest.frames() },
            Err(why) => StackBound::unknown(why),
        }
    }

    /// The function or data a target names, across objects; `None` for a symbol no object defines.
    fn resolve(&self, target: &Target) -> Option<Target> {
        match target {
            Target::Global(name) => match self.global_functions.get(name) {
                Some(&node) => Some(Target::Function(node)),
                None => self.global_data.get(name).map(|&node| Target::Data(node)),
            },
            other => Some(other.clone()),
        }
    }

    /// The functions data node `start` points at, through any data it points at.
    fn table_functions(&self, start: usize) -> BTreeSet<usize> {
        let (mut seen, mut todo, mut functions) = (BTreeSet::from([start]), vec![start], BTreeSet::new());
        while let Some(node) = todo.pop() {
            for target in &self.data[node] {
                match self.resolve(target) {
                    Some(Target::Function(function)) => {
                        functions.insert(function);
                    }
                    Some(Target::Data(data)) if seen.insert(data) => todo.push(data),
                    _ => {}
                }
            }
        }
        functions
    }
}

/// A depth below some function and the path that reaches it.
#[derive(Debug, Clone)]
struct Deepest {
    bytes: u64,
    path: Option<Rc<PathLink>>,
}

/// A deepest path, shared between the functions whose paths end in it: a
/// function's own frames, then the path below them.
#[derive(Debug)]
struct PathLink {
    frames: Vec<StackFrame>,
    below: Option<Rc<PathLink>>,
}

impl Drop for PathLink {
    /// Unlinks the path below one link at a time: dropped in turn, a long one would recurse.
    fn drop(&mut self) {
        let mut below = self.below.take();
        while let Some(link) = below {
            below = Rc::try_unwrap(link).ok().and_then(|mut link| link.below.take());
        }
    }
}

impl Deepest {
    fn new(bytes: u64, frames: Vec<StackFrame>, below: Option<Rc<PathLink>>) -> Deepest {
        Deepest { bytes, path: Some(Rc::new(PathLink { frames, below })) }
    }

    /// The path's frames, outermost first.
    fn frames(&self) -> Vec<StackFrame> {
        let mut frames = Vec::new();
        let mut next = self.path.as_deref();
        while let Some(path) = next {
            frames.extend(path.frames.iter().cloned());
            next = path.below.as_deref();
        }
        frames
    }

    /// The first frame of the path (the function's own).
    fn first(&self) -> Option<&StackFrame> {
        self.path.as_deref().and_then(|path| path.frames.first())
    }
}

/// What a function's depth is made of, before the functions it calls are walked.
struct Plan {
    frame: u64,
    callees: BTreeSet<Target>,
    /// Addresses its code takes that the callback runners it calls run.
    taken: BTreeSet<usize>,
    runs_callbacks: bool,
}

/// A function on the walk's current path, and the functions whose depth it needs.
struct Step {
    node: usize,
    plan: std::result::Result<Plan, String>,
    needs: Vec<usize>,
    next: usize,
}

/// One bound's depth-first walk, iterative (a call chain as deep as the
/// objects make it): results per function, and the functions on the current path.
struct Walk<'a> {
    program: &'a Program,
    memo: HashMap<usize, std::result::Result<Deepest, String>>,
    active: Vec<Step>,
    /// Each function on the current path, by its place in `active`.
    on_path: HashMap<usize, usize>,
}

impl Walk<'_> {
    fn new(program: &Program) -> Walk<'_> {
        Walk { program, memo: HashMap::new(), active: Vec::new(), on_path: HashMap::new() }
    }

    fn depth(&mut self, root: usize) -> std::result::Result<Deepest, String> {
        if !self.memo.contains_key(&root) {
            self.enter(root);
        }
        while let Some(step) = self.active.last_mut() {
            if let Some(&next) = step.needs.get(step.next) {
                step.next += 1;
                if !self.memo.contains_key(&next) && !self.on_path.contains_key(&next) {
                    self.enter(next);
                }
                continue;
            }
            let node = step.node;
            let result = self.depth_of(node);
            self.active.pop();
            self.on_path.remove(&node);
            self.memo.insert(node, result);
        }
        self.lookup(root)
    }

    fn enter(&mut self, node: usize) {
        let plan = self.plan(node);
        let needs = match &plan {
            Ok(plan) => {
                let callees = plan.callees.iter().filter_map(|callee| match callee {
                    Target::Function(f) => Some(*f),
                    _ => None,
                });
                let callbacks = plan.taken.iter().copied().filter(|_| plan.runs_callbacks);
                callees.chain(callbacks).collect()
            }
            Err(_) => Vec::new(),
        };
        self.on_path.insert(node, self.active.len());
        self.active.push(Step { node, plan, needs, next: 0 });
    }

    /// The depth of `node`, walked already, or the recursion that reaches it on the current path.
    fn lookup(&self, node: usize) -> std::result::Result<Deepest, String> {
        if let Some(done) = self.memo.get(&node) {
            return done.clone();
        }
        // Named by its first and last few calls: a message as long as the cycle would make every lookup cost that much.
        const SHOWN: usize = 4;
        let at = self.on_path.get(&node).copied().unwrap_or(self.active.len());
        let names = |steps: &[Step]| steps.iter().map(|step| self.program.functions[step.node].name.clone()).collect::<Vec<_>>();
        let cycle = &self.active[at..];
        let mut shown = names(&cycle[..cycle.len().min(SHOWN)]);
        if cycle.len() > 2 * SHOWN {
            shown.push(format!("… {} more …", cycle.len() - 2 * SHOWN));
        }
        shown.extend(names(&cycle[cycle.len().min(SHOWN).max(cycle.len().saturating_sub(SHOWN))..]));
        shown.push(self.program.functions[node].name.clone());
        Err(format!("recursion: {}", shown.join(" → ")))
    }

    /// A library function whose depth is not known falls back to its allowance, if it has one.
    fn depth_of(&self, node: usize) -> std::result::Result<Deepest, String> {
        let function = &self.program.functions[node];
        match (&function.library, self.walk(node)) {
            (Some(_), Err(why)) => external_depth(&function.name).map_err(|_| why),
            (_, walked) => walked,
        }
    }

    /// Function `node`'s frame and what it calls, or why its depth is not known.
    fn plan(&self, node: usize) -> std::result::Result<Plan, String> {
        let program = self.program;
        let function = &program.functions[node];
        let name = &function.name;
        if let Some((_, what)) = APPLICATION_CALLS.iter().find(|(n, _)| n == name) {
            return Err(format!("`{name}` calls {what}, whose stack is the application's"));
        }
        let frame = match (function.frame, &function.library) {
            (Frame::Bytes(bytes), _) => bytes,
            (Frame::Dynamic, _) => return Err(format!("`{name}` has a dynamic frame (alloca or a variable-length array)")),
            (Frame::Undecoded, library) => {
                let why = function.undecoded.as_deref().unwrap_or_default();
                return Err(match library {
                    Some(code) => format!("the frame of `{}` ({}) is not read from its code: {why}", readable(name), code.archive),
                    None => format!(
                        "the frame of `{name}` is not read from its code, compiled without -fstack-usage \
                         (as under a compiler wrapper such as sccache, or prebuilt): {why}"
                    ),
                });
            }
            (Frame::Missing, _) => return Err(format!("the compiler reported no frame for `{name}` (no -fstack-usage line)")),
        };
        // Addresses the code takes, and the tables it reads (whose functions it may call).
        let mut taken = BTreeSet::new();
        let mut callees: BTreeSet<Target> = function.calls.iter().filter_map(|t| program.resolve(t).or(Some(t.clone()))).collect();
        let is_reader = ADDRESS_READERS.contains(&name.as_str());
        for target in &function.references {
            match program.resolve(target) {
                Some(Target::Function(f)) => {
                    taken.insert(f);
                }
                Some(Target::Data(data)) if !is_reader => {
                    callees.extend(program.table_functions(data).into_iter().map(Target::Function));
                }
                _ => {}
            }
        }
        let calls_any = |names: &[&str]| {
            callees.iter().any(|t| matches!(t, Target::Function(f) if names.contains(&program.functions[*f].name.as_str())))
        };
        let runs_callbacks = calls_any(CALLBACK_RUNNERS);
        let gives_addresses = calls_any(ADDRESS_READERS);
        if gives_addresses {
            taken.remove(&node);
        }
        if let (Some(&first), false) = (taken.iter().next(), runs_callbacks || gives_addresses) {
            return Err(format!(
                "`{name}` takes the address of `{}` and passes it to no function known to call it",
                program.functions[first].name
            ));
        }
        Ok(Plan { frame, callees, taken, runs_callbacks })
    }

    /// Function `node`'s depth, once every function it needs is walked (or on the current path).
    fn walk(&self, node: usize) -> std::result::Result<Deepest, String> {
        let program = self.program;
        let function = &program.functions[node];
        let name = &function.name;
        let step = self.active.last().filter(|step| step.node == node);
        let Plan { frame, callees, taken, runs_callbacks } = match step.map(|step| &step.plan) {
            Some(Ok(plan)) => plan,
            Some(Err(why)) => return Err(why.clone()),
            None => return Err(format!("`{name}` was not planned")),
        };
        let (own_frame, mut frame) = (*frame, *frame);
        // A register-saving helper's frame stays until the caller returns: it is part of the caller's.
        let mut kept = Vec::new();
        for callee in callees {
            if let Target::Function(helper) = callee {
                if program.functions[*helper].name.starts_with(FRAME_EXTENDER) {
                    let below = self.lookup(*helper)?;
                    frame = frame.checked_add(below.bytes).ok_or_else(|| format!("the stack below `{name}` overflows 64 bits"))?;
                    kept.extend(below.frames());
                }
            }
        }
        let mut deepest = Deepest { bytes: 0, path: None };
        for callee in callees {
            let below = match callee {
                Target::Function(f) if program.functions[*f].name.starts_with(FRAME_EXTENDER) => continue,
                Target::Function(f) if *runs_callbacks && CALLBACK_RUNNERS.contains(&program.functions[*f].name.as_str()) => {
                    self.runner_depth(*f, taken)?
                }
                Target::Function(f) => self.lookup(*f)?,
                Target::Global(external) => external_depth(external)?,
                Target::Data(_) => return Err(format!("`{name}` calls into data")),
                Target::Opaque(why) => return Err(format!("`{name}` makes {why}")),
            };
            if below.bytes > deepest.bytes || deepest.path.is_none() {
                deepest = below;
            }
        }
        let bytes = frame.checked_add(deepest.bytes).ok_or_else(|| format!("the stack below `{name}` overflows 64 bits"))?;
        let shown = match &function.library {
            Some(code) => format!("{} ({})", readable(name), code.archive),
            None => name.clone(),
        };
        let mut frames = vec![StackFrame { function: shown, bytes: own_frame }];
        frames.extend(kept);
        Ok(Deepest::new(bytes, frames, deepest.path))
    }

    /// A callback runner called with `callbacks`: its frame, then the deepest of its own callees and the callbacks.
    fn runner_depth(&self, runner: usize, callbacks: &BTreeSet<usize>) -> std::result::Result<Deepest, String> {
        let own = self.lookup(runner)?;
        let first = own.first().cloned();
        let frame = first.as_ref().map_or(0, |step| step.bytes);
        let mut deepest = own;
        for &callback in callbacks {
            let below = self.lookup(callback)?;
            let bytes = frame.checked_add(below.bytes).ok_or("the stack overflows 64 bits")?;
            if bytes > deepest.bytes {
                deepest = Deepest::new(bytes, first.clone().into_iter().collect(), below.path);
            }
        }
        Ok(deepest)
    }
}

/// RISC-V's `-msave-restore` helpers (`call t0, __riscv_save_4`): they lower
/// the stack pointer for their caller and return without raising it.
const FRAME_EXTENDER: &str = "__riscv_save_";

/// A Rust (v0-mangled) symbol's last name (`compiler_builtins::float::mul::__mulsf3` → `__mulsf3`); other names as they are.
fn readable(symbol: &str) -> &str {
    // LLVM's `.llvm.<hash>` suffix of a promoted local symbol is no part of the mangling.
    let Some(mut rest) = symbol.strip_prefix("_R").map(|rest| rest.split('.').next().unwrap_or_default()) else { return symbol };
    let mut last = symbol;
    while let Some(first) = rest.bytes().next() {
        if first.is_ascii_digit() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let Ok(len) = rest[..digits].parse::<usize>() else { return symbol };
            rest = &rest[digits..];
            rest = rest.strip_prefix('_').unwrap_or(rest);
            let Some(identifier) = rest.get(..len) else { return symbol };
            (last, rest) = (identifier, &rest[len..]);
        } else if first == b's' {
            // A disambiguator: `s<base-62>_`.
            let Some(end) = rest.find('_') else { return symbol };
            rest = &rest[end + 1..];
        } else {
            rest = &rest[1..];
        }
    }
    last
}

/// A call into a function no object defines: its allowance, or why the bound is unknown.
fn external_depth(name: &str) -> std::result::Result<Deepest, String> {
    match library_allowance(name) {
        Some((bytes, what)) => Ok(Deepest::new(bytes, vec![StackFrame { function: format!("{name} ({what} allowance)"), bytes }], None)),
        None => Err(format!("`{name}` is defined by no compiled object and mlf-build has no allowance for it")),
    }
}

/// What sizes the generated Rust's frames at opt-level above 0 on an
/// architecture: its calling convention's word, the registers a function
/// may have to save (callee-saved and the return address) and the stack's
/// alignment. Floating-point registers are not counted: the wrappers hold
/// no float value, so they allocate none (no `vpush` at any opt-level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RustAbi {
    /// Cargo's name of the architecture (`CARGO_CFG_TARGET_ARCH`).
    arch: &'static str,
    word: u64,
    saved_registers: u64,
    alignment: u64,
}

/// The calling conventions mlf-build knows, by architecture: those whose C
/// objects the bound reads.
const RUST_ABIS: [RustAbi; 5] = [
    // AAPCS: r4–r11 and lr; 8-byte aligned.
    RustAbi { arch: "arm", word: 4, saved_registers: 9, alignment: 8 },
    // ILP32/LP64: ra and s0–s11; 16-byte aligned.
    RustAbi { arch: "riscv32", word: 4, saved_registers: 13, alignment: 16 },
    RustAbi { arch: "riscv64", word: 8, saved_registers: 13, alignment: 16 },
    // System V: rbx, rbp, r12–r15 and the return address the call pushes; 16-byte aligned.
    RustAbi { arch: "x86_64", word: 8, saved_registers: 7, alignment: 16 },
    // AAPCS64: x19–x28, the frame pointer x29 and the link register x30; 16-byte aligned.
    RustAbi { arch: "aarch64", word: 8, saved_registers: 12, alignment: 16 },
];

impl RustAbi {
    /// The calling convention of Cargo's architecture `arch`, if mlf-build knows it.
    pub fn of(arch: &str) -> Option<RustAbi> {
        RUST_ABIS.into_iter().find(|abi| abi.arch == arch)
    }

    /// Bytes of the frames of the generated Rust for `tensors` inputs and
    /// outputs: `run`, `run_raw` or an operator wrapper saving at most every
    /// register it may have to and holding the arrays of a pointer per
    /// tensor it passes to `invoke`; then `invoke`, which at opt-level `s`
    /// or `z` stays out of line when several wrappers call it: its return
    /// address, frame pointer, result pointer and status code, and the
    /// arrays again, spilled when they came in registers.
    fn wrapper_bytes(self, tensors: u64) -> Option<u64> {
        let frame = |words: u64| self.word.checked_mul(words)?.checked_next_multiple_of(self.alignment);
        frame(self.saved_registers.checked_add(tensors)?)?.checked_add(frame(tensors.checked_add(4)?)?)
    }
}

/// Bytes the unoptimised generated Rust is allowed, and per input and output:
/// it keeps every value in its frames. Measured in README.md.
const RUST_WRAPPER_UNOPTIMISED: (u64, u64) = (1024, 64);

/// `bound` (of the C entry point) with the generated Rust's frames on top
/// for a module of `tensors` inputs and outputs: an allowance, not a
/// reading of compiled code, since the Rust is compiled after the build
/// script. `optimised` is the calling convention of Rust compiled at an
/// opt-level above 0; `None` (opt-level 0, outside a build script, an
/// architecture mlf-build does not know) gets the unoptimised allowance.
/// `tests/corpus_qemu.rs` measures it with the rest on every core.
pub(crate) fn with_rust_wrapper(bound: StackBound, tensors: usize, optimised: Option<RustAbi>) -> StackBound {
    let Some(bytes) = bound.bytes else { return bound };
    let tensors = u64::try_from(tensors).ok();
    let allowance = match optimised {
        Some(abi) => tensors.and_then(|tensors| abi.wrapper_bytes(tensors)),
        None => {
            let (base, per_tensor) = RUST_WRAPPER_UNOPTIMISED;
            tensors.and_then(|tensors| tensors.checked_mul(per_tensor)?.checked_add(base))
        }
    };
    let Some((allowance, total)) = allowance.and_then(|allowance| Some((allowance, allowance.checked_add(bytes)?))) else {
        return StackBound::unknown("the bound overflows 64 bits");
    };
    let what = optimised.map_or_else(|| "unoptimised".to_string(), |abi| format!("optimised, {}", abi.arch));
    let mut path = vec![StackFrame { function: format!("Rust run/run_raw ({what} allowance)"), bytes: allowance }];
    path.extend(bound.path);
    StackBound { bytes: Some(total), unknown: None, path }
}

impl Program {
    /// Adds, as the linker would pull them in, the members of `libraries`
    /// (in link order: the first that defines a symbol provides it) that
    /// define what the objects read so far call or reference.
    pub fn add_library_code(&mut self, libraries: &[Arc<Archive>]) {
        let mut looked_up = HashSet::new();
        let mut added = HashSet::new();
        loop {
            let wanted: Vec<String> = self.undefined().into_iter().filter(|name| looked_up.insert(name.clone())).collect();
            if wanted.is_empty() {
                return;
            }
            for name in wanted {
                let defining =
                    libraries.iter().enumerate().find_map(|(index, archive)| Some((index, archive, archive.member_defining(&name)?)));
                if let Some((index, archive, (offset, bytes))) = defining {
                    if added.insert((index, offset)) {
                        self.add_library_member(&archive.name, &bytes);
                    }
                }
            }
        }
    }

    /// The symbols the functions and data call or reference that no object read so far defines.
    fn undefined(&self) -> BTreeSet<String> {
        let targets = self.functions.iter().flat_map(|f| f.calls.iter().chain(&f.references)).chain(self.data.iter().flatten());
        targets
            .filter_map(|target| match target {
                Target::Global(name) if self.resolve(target).is_none() => Some(name.clone()),
                _ => None,
            })
            .collect()
    }
}

/// The bound of `f0` in a program of functions `f0`..`f4095` read from
/// `bytes` (for the `stack` fuzz target): each 4 bytes are a call from one
/// function to another (little-endian 12-bit numbers), one numbered past
/// the functions being a call to `memcpy`; function `i` has an `8 * i`-byte frame.
#[cfg(feature = "fuzzing")]
pub(crate) fn graph_bound(bytes: &[u8]) -> StackBound {
    const FUNCTIONS: usize = 4096;
    let mut program = Program::default();
    for node in 0..FUNCTIONS {
        let name = format!("f{node}");
        program.global_functions.insert(name.clone(), node);
        let frame = Frame::Bytes(8 * node as u64);
        let (calls, references) = (BTreeSet::new(), BTreeSet::new());
        program.functions.push(Function { name, frame, calls, references, library: None, undecoded: None });
    }
    for edge in bytes.chunks_exact(4) {
        let number = |at: usize| usize::from(u16::from_le_bytes([edge[at], edge[at + 1]]) & 0x1fff);
        let (from, to) = (number(0) % FUNCTIONS, number(2));
        let target = if to < FUNCTIONS { Target::Function(to) } else { Target::Global("memcpy".to_string()) };
        program.functions[from].calls.insert(target);
    }
    program.bound("f0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// A program of `(name, frame, calls, addresses taken)`; names no function has are external.
    fn program(functions: &[(&str, Frame, &[&str], &[&str])]) -> Program {
        let mut program = Program::default();
        for (name, frame, ..) in functions {
            program.global_functions.insert(name.to_string(), program.functions.len());
            program.functions.push(Function {
                name: name.to_string(),
                frame: *frame,
                calls: BTreeSet::new(),
                references: BTreeSet::new(),
                library: None,
                undecoded: None,
            });
        }
        for (node, (_, _, calls, taken)) in functions.iter().enumerate() {
            program.functions[node].calls = calls.iter().map(|name| Target::Global(name.to_string())).collect();
            program.functions[node].references = taken.iter().map(|name| Target::Global(name.to_string())).collect();
        }
        program
    }

    fn names(bound: &StackBound) -> Vec<&str> {
        bound.path.iter().map(|step| step.function.as_str()).collect()
    }

    #[test]
    fn reads_stack_usage_lines() {
        let frames = parse_stack_usage(
            "a.c:4:5:fn2\t184\tstatic\nb.c:1:38:helper.constprop\t56\tstatic\nb.c:9:38:helper.constprop\t72\tstatic\n\
             c.c:2:5:vla\t32\tdynamic\nc.c:3:5:bounded\t48\tdynamic,bounded\nnot a line\n",
        );
        assert_eq!(frames["fn2"], Frame::Bytes(184));
        assert_eq!(frames["helper.constprop"], Frame::Bytes(72), "a repeated clone name keeps the largest frame");
        assert_eq!(frames["vla"], Frame::Dynamic);
        assert_eq!(frames["bounded"], Frame::Bytes(48));
        assert_eq!(frames.len(), 4);
        assert_eq!(su_name("helper.constprop.0"), "helper.constprop");
        assert_eq!(su_name("f.part.1.isra.0"), "f.part.isra");
    }

    #[test]
    fn tells_x86_calls_from_address_loads() {
        // call rel32, jmp rel32, jne rel32, then lea rax, [rip + rel32].
        let code = [0xe8, 0, 0, 0, 0, 0xe9, 0, 0, 0, 0, 0x0f, 0x85, 0, 0, 0, 0, 0x48, 0x8d, 0x05, 0, 0, 0, 0];
        assert_eq!(classify(Machine::X86_64, 2, &code, 1), Use::Call);
        assert_eq!(classify(Machine::X86_64, 2, &code, 6), Use::Call);
        assert_eq!(classify(Machine::X86_64, 2, &code, 12), Use::Call);
        assert_eq!(classify(Machine::X86_64, 2, &code, 19), Use::Reference);
        assert_eq!(classify(Machine::Arm, 10, &[], 0), Use::Call);
        assert_eq!(classify(Machine::Arm, 2, &[], 0), Use::Reference);
        assert_eq!(classify(Machine::Riscv, 19, &[], 0), Use::Call);
        assert_eq!(classify(Machine::Riscv, 51, &[], 0), Use::Ignore);
    }

    #[test]
    fn bounds_the_deepest_path_with_allowances() {
        let program = program(&[
            ("invoke", Frame::Bytes(16), &["mlf_support_call"], &["entry"]),
            ("mlf_support_call", Frame::Bytes(120), &["setjmp"], &[]),
            ("entry", Frame::Bytes(8), &["op_a", "op_b"], &[]),
            ("op_a", Frame::Bytes(100), &["memset"], &[]),
            ("op_b", Frame::Bytes(40), &["expf"], &[]),
        ]);
        let bound = program.bound("invoke");
        // invoke 16 + runner 120 + entry 8 + max(op_a 100 + memset 32, op_b 40 + expf 256).
        assert_eq!(bound.bytes, Some(16 + 120 + 8 + 40 + 256));
        assert_eq!(names(&bound), ["invoke", "mlf_support_call", "entry", "op_b", "expf (C maths library allowance)"]);
        let wrapped = with_rust_wrapper(bound.clone(), 2, RustAbi::of("arm"));
        assert_eq!(wrapped.bytes, Some(16 + 120 + 8 + 40 + 256 + 72));
        assert_eq!(names(&wrapped)[0], "Rust run/run_raw (optimised, arm allowance)");
        let unoptimised = with_rust_wrapper(bound, 2, None);
        assert_eq!(unoptimised.bytes, Some(16 + 120 + 8 + 40 + 256 + 1024 + 2 * 64));
    }

    #[test]
    fn the_optimised_rust_allowance_follows_the_calling_convention() {
        let bytes = |arch: &str, tensors: u64| RustAbi::of(arch).and_then(|abi| abi.wrapper_bytes(tensors));
        // Thumb: r4–r11, lr and the pointers (8-aligned), then invoke's 4 words and the pointers again.
        assert_eq!(bytes("arm", 2), Some(48 + 24));
        assert_eq!(bytes("arm", 3), Some(48 + 32));
        assert_eq!(bytes("arm", 4), Some(56 + 32));
        // Above what rustc 1.95 emitted for three tensors at opt-level 1, 2, 3, s and z: on Armv6-M at
        // `z`, run_raw pushes 8 registers (32 bytes) and the out-of-line invoke 6 (24).
        assert!(bytes("arm", 3).unwrap() >= 32 + 24);
        // RV32: ra, s0–s11 and the pointers, then invoke's, each 16-aligned.
        assert_eq!(bytes("riscv32", 2), Some(64 + 32));
        assert_eq!(bytes("riscv32", 5), Some(80 + 48));
        assert_eq!(bytes("riscv64", 2), Some(128 + 48));
        assert_eq!(bytes("x86_64", 2), Some(80 + 48));
        assert_eq!(bytes("aarch64", 2), Some(112 + 48));
        assert_eq!(RustAbi::of("xtensa"), None);
        assert_eq!(bytes("arm", u64::MAX), None);
    }

    #[test]
    fn a_rel_word_into_code_is_read_as_the_offset_it_points_at() {
        // A Thumb jump table entry: label 0x236 with the Thumb bit, after another word.
        let contents = [0, 0, 0, 0, 0x37, 0x02, 0, 0];
        assert_eq!(implicit_addend(Machine::Arm, 2, &contents, 4), 0x236);
        assert_eq!(implicit_addend(Machine::X86, 1, &contents, 4), 0x237);
        // Other kinds, and a word past the section's end, keep the addend 0.
        assert_eq!(implicit_addend(Machine::Arm, 10, &contents, 4), 0);
        assert_eq!(implicit_addend(Machine::Arm, 2, &contents, 6), 0);
    }

    #[test]
    fn unknown_for_recursion_dynamic_frames_and_unknown_callees() {
        let recursive = program(&[("a", Frame::Bytes(8), &["b"], &[]), ("b", Frame::Bytes(8), &["a"], &[])]);
        assert_eq!(recursive.bound("a").unknown.as_deref(), Some("recursion: a → b → a"));
        let dynamic = program(&[("a", Frame::Bytes(8), &["b"], &[]), ("b", Frame::Dynamic, &[], &[])]);
        assert!(dynamic.bound("a").unknown.unwrap().contains("`b` has a dynamic frame"));
        let missing = program(&[("a", Frame::Missing, &[], &[])]);
        assert!(missing.bound("a").unknown.unwrap().contains("no frame for `a`"));
        let external = program(&[("a", Frame::Bytes(8), &["my_kernel"], &[])]);
        assert!(external.bound("a").unknown.unwrap().contains("`my_kernel` is defined by no compiled object"));
        let pointer = program(&[("a", Frame::Bytes(8), &[], &["b"]), ("b", Frame::Bytes(8), &[], &[])]);
        assert!(pointer.bound("a").unknown.unwrap().contains("`a` takes the address of `b`"));
        let hook = program(&[("a", Frame::Bytes(8), &["TVMLogf"], &[]), ("TVMLogf", Frame::Bytes(300), &[], &[])]);
        assert!(hook.bound("a").unknown.unwrap().contains("log hook"));
        assert!(program(&[]).bound("a").unknown.unwrap().contains("no compiled object defines `a`"));
    }

    #[test]
    fn a_table_of_functions_is_called_by_its_reader() {
        let mut program =
            program(&[("entry", Frame::Bytes(8), &[], &[]), ("op_a", Frame::Bytes(100), &[], &[]), ("op_b", Frame::Bytes(200), &[], &[])]);
        program.data.push(BTreeSet::from([Target::Global("op_a".into()), Target::Data(1)]));
        program.data.push(BTreeSet::from([Target::Function(2)]));
        program.functions[0].references.insert(Target::Data(0));
        let bound = program.bound("entry");
        assert_eq!(bound.bytes, Some(208));
        assert_eq!(names(&bound), ["entry", "op_b"]);
    }

    #[test]
    fn allowances_name_library_functions() {
        assert_eq!(library_allowance("memcpy"), Some((32, "C library")));
        assert_eq!(library_allowance("__aeabi_uldivmod"), Some((128, "compiler runtime")));
        assert_eq!(library_allowance("__divdi3"), Some((128, "compiler runtime")));
        assert_eq!(library_allowance("__floatsisf"), Some((128, "compiler runtime")));
        assert_eq!(library_allowance("tanhf"), Some((256, "C maths library")));
        assert_eq!(library_allowance("arm_convolve_s8"), None);
        assert_eq!(library_allowance("__my_Helper"), None);
    }

    /// The host compiler's object of a small program, read as the Builder reads the model's.
    #[test]
    fn reads_a_compiled_object() {
        let dir = crate::test_support::scratch("stack-object");
        let source = dir.join("calls.c");
        std::fs::write(
            &source,
            "#include <string.h>\nstatic int leaf(char *p, int n) { volatile char buf[64]; for (int i = 0; i < 64; i++) buf[i] = n; \
             return buf[p[0] & 63] + (int)strlen(p); }\n\
             static int cb(void *c) { return *(int *)c; }\nint mlf_support_call(int (*f)(void *), void *c);\n\
             int root(char *p, int n) { return leaf(p, n) + mlf_support_call(cb, &n); }\n",
        )
        .unwrap();
        let object = dir.join("calls.o");
        let status = std::process::Command::new("cc")
            .args(["-O1", "-fno-inline", "-fstack-usage", "-ffunction-sections", "-c"])
            .arg(&source)
            .arg("-o")
            .arg(&object)
            .status();
        if !status.is_ok_and(|status| status.success()) {
            crate::test_support::skip("no host C compiler (cc)");
            return;
        }
        let mut program = Program::default();
        let usage = std::fs::read_to_string(dir.join("calls.su")).unwrap();
        program.add_object("calls.o", &std::fs::read(&object).unwrap(), Some(&usage)).unwrap();
        // Without the runner's object, nothing is known to call `cb`.
        let unknown = program.bound("root").unknown.unwrap();
        assert!(unknown.contains("`root` takes the address of `cb`"), "{unknown}");
        let runner = "int mlf_support_call(int (*f)(void *), void *c) { return f(c); }\n";
        std::fs::write(dir.join("runner.c"), runner).unwrap();
        let status = std::process::Command::new("cc")
            .args(["-O1", "-fstack-usage", "-ffunction-sections", "-c"])
            .arg(dir.join("runner.c"))
            .arg("-o")
            .arg(dir.join("runner.o"))
            .status()
            .unwrap();
        assert!(status.success());
        let usage = std::fs::read_to_string(dir.join("runner.su")).unwrap();
        program.add_object("runner.o", &std::fs::read(dir.join("runner.o")).unwrap(), Some(&usage)).unwrap();
        let bound = program.bound("root");
        assert!(bound.bytes.is_some(), "{bound:?}");
        let path = names(&bound);
        assert_eq!(path[0], "root");
        assert!(path.contains(&"leaf") || path.contains(&"mlf_support_call"), "{path:?}");
        let leaf = program.functions.iter().find(|f| f.name == "leaf").unwrap();
        assert!(matches!(leaf.frame, Frame::Bytes(bytes) if bytes >= 64), "{:?}", leaf.frame);
    }

    /// Functions of every kind of frame, compiled for real targets with
    /// `-fstack-usage`; read as library code, each frame must be the compiler's.
    const FRAMES_C: &str = "extern float g(float);\nextern void use(volatile char *);\n\
        int leaf(int a, int b) { return a * b + 3; }\n\
        int locals(int n) { volatile char buf[100]; for (int i = 0; i < n && i < 100; i++) buf[i] = i; return buf[n % 100]; }\n\
        int big(int n) { volatile char buf[5000]; buf[n] = 1; use(buf); return buf[n / 2]; }\n\
        float keeps_floats(float x) { float a = g(x); float b = g(a * x); return a + b + g(b); }\n\
        double doubles(double x, double y) { return x / y + (double)(long long)x; }\n\
        int calls(int n) { return leaf(n, n) + locals(n); }\n";

    /// Compiles [`FRAMES_C`] with `compiler` and `flags`; `None` (after a SKIP line) without the compiler.
    fn compiled_frames(compiler: &str, flags: &[&str]) -> Option<(Program, BTreeMap<String, Frame>)> {
        let dir = crate::test_support::scratch(&format!("stack-frames-{compiler}"));
        std::fs::write(dir.join("frames.c"), FRAMES_C).unwrap();
        let status = std::process::Command::new(compiler)
            .args(flags)
            .args(["-O2", "-fstack-usage", "-ffunction-sections", "-c", "frames.c", "-o", "frames.o"])
            .current_dir(&dir)
            .status();
        if !status.is_ok_and(|status| status.success()) {
            crate::test_support::skip(&format!("no {compiler}"));
            return None;
        }
        let mut program = Program::default();
        program.add_library_member("libframes.a", &std::fs::read(dir.join("frames.o")).unwrap());
        Some((program, parse_stack_usage(&std::fs::read_to_string(dir.join("frames.su")).unwrap())))
    }

    fn decoded(program: &Program, name: &str) -> Frame {
        program.functions.iter().find(|f| f.name == name).unwrap().frame
    }

    /// RV32 objects leave their branches to the linker (relaxation): a loop
    /// back to a decrement is found through the branch's relocation.
    #[test]
    fn relocated_branches_back_to_a_decrement_are_unknown() {
        let dir = crate::test_support::scratch("stack-relocated-loop");
        let asm = ".text\n.globl looped\n.type looped, @function\nlooped:\n.Lback:\naddi sp, sp, -16\naddi a0, a0, -1\nbnez a0, .Lback\naddi sp, sp, 16\nret\n\
                   .size looped, .-looped\n.globl straight\n.type straight, @function\nstraight:\naddi sp, sp, -16\n.Lloop:\naddi a0, a0, -1\n\
                   bnez a0, .Lloop\naddi sp, sp, 16\nret\n.size straight, .-straight\n";
        std::fs::write(dir.join("loops.s"), asm).unwrap();
        let status = std::process::Command::new("riscv64-unknown-elf-gcc")
            .args(["-march=rv32imac", "-mabi=ilp32", "-c", "loops.s", "-o", "loops.o"])
            .current_dir(&dir)
            .status();
        if !status.is_ok_and(|status| status.success()) {
            crate::test_support::skip("no riscv64-unknown-elf-gcc");
            return;
        }
        let bytes = std::fs::read(dir.join("loops.o")).unwrap();
        // A prebuilt object of the archive: its decrements must be proven to run once.
        let mut program = Program::default();
        program.add_object("loops.o", &bytes, None).unwrap();
        assert_eq!(decoded(&program, "looped"), Frame::Undecoded);
        // The toolchain's own libraries are read function by function, as compilers write frames.
        let mut program = Program::default();
        program.add_library_member("libloops.a", &bytes);
        assert_eq!(decoded(&program, "straight"), Frame::Bytes(16));
        assert_eq!(decoded(&program, "looped"), Frame::Bytes(16));
    }

    #[test]
    fn machine_code_frames_are_the_compilers() {
        let targets: [(&str, &[&str]); 3] = [
            ("arm-none-eabi-gcc", &["-mthumb", "-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]),
            ("arm-none-eabi-gcc", &["-mthumb", "-mcpu=cortex-m0plus"]),
            ("riscv64-unknown-elf-gcc", &["-march=rv32imac", "-mabi=ilp32"]),
        ];
        for (compiler, flags) in targets {
            let Some((program, stack_usage)) = compiled_frames(compiler, flags) else { continue };
            assert_eq!(stack_usage.len(), 6, "{stack_usage:?}");
            // Cortex-M0+'s `big` sets its frame with `ldr r4, =-5000; add sp, r4`.
            for (name, frame) in &stack_usage {
                assert_eq!(decoded(&program, name), *frame, "{name} for {flags:?}");
            }
        }
    }

    /// Every object a build of `case` for `target` compiled with its `.su` file (path, bytes, text).
    fn corpus_objects(case: &Path, target: &str) -> Vec<(PathBuf, Vec<u8>, String)> {
        let out_dir = crate::test_support::scratch(&format!("stack-corpus-{target}"));
        let host = std::env::var("HOST").unwrap_or_else(|_| "x86_64-unknown-linux-gnu".to_string());
        let built = crate::Builder::new(case.join("model.tar")).out_dir(&out_dir).target(target).host(host).cargo_metadata(false).build();
        built.unwrap_or_else(|e| panic!("{} for {target}: {e}", case.display()));
        let mut lists = Vec::new();
        let mut pending = vec![out_dir.join("mlf")];
        while let Some(dir) = pending.pop() {
            for path in std::fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().path()) {
                match path.extension().and_then(|e| e.to_str()) {
                    _ if path.is_dir() => pending.push(path),
                    Some("objects") => lists.push(path),
                    _ => {}
                }
            }
        }
        let listed = lists.iter().flat_map(|list| {
            let text = std::fs::read_to_string(list).unwrap();
            crate::toolchain::compile::listed_objects(&text).map(|listed| listed.unwrap().1.to_path_buf()).collect::<Vec<_>>()
        });
        listed
            .filter_map(|object| {
                let text = std::fs::read_to_string(object.with_extension("su")).ok()?;
                Some((object.clone(), std::fs::read(&object).unwrap(), text))
            })
            .collect()
    }

    /// The corpus's C (TVM's operators, the glue, mlf-build's runtime)
    /// compiled for Thumb (Armv7E-M with an FPU, Armv6-M) and RV32: each
    /// function's frame read from its machine code, as for an object a
    /// compiler wrapper compiled without `-fstack-usage`, is the compiler's.
    #[test]
    fn corpus_frames_from_machine_code_are_the_compilers() {
        let Some(corpus) = crate::test_support::corpus_dir() else { return };
        let compilers = [
            ("thumbv7em-none-eabihf", "arm-none-eabi-gcc"),
            ("thumbv6m-none-eabi", "arm-none-eabi-gcc"),
            ("riscv32imac-unknown-none-elf", "riscv64-unknown-elf-gcc"),
        ];
        for (target, compiler) in compilers {
            if std::process::Command::new(compiler).arg("--version").output().is_err() {
                crate::test_support::skip(&format!("no {compiler}"));
                continue;
            }
            let mut compared = 0;
            for case in ["kws_int8-aot_c_nousmp", "cnn_f32-aot_c"] {
                for (object, bytes, text) in corpus_objects(&corpus.join("tvm-0.18").join(case), target) {
                    let stack_usage = parse_stack_usage(&text);
                    let mut program = Program::default();
                    program.add_object("corpus.o", &bytes, None).unwrap();
                    for function in &program.functions {
                        let Some(&frame) = stack_usage.get(&su_name(&function.name)) else { continue };
                        let expected = match (frame, target) {
                            // gcc's `.su` leaves out the r0–r3 a variadic function pushes on Arm; the code counts them.
                            (Frame::Bytes(bytes), "thumbv7em-none-eabihf" | "thumbv6m-none-eabi") if function.name == "TVMLogf" => {
                                Frame::Bytes(bytes + 16)
                            }
                            (frame, _) => frame,
                        };
                        let what = format!("{} in {} ({case}, {target})", function.name, object.display());
                        // A jump table (Armv6-M's `mov pc, rN`, RV32's `jr`) may go where the code cannot show: unknown, never lower.
                        if function.frame == Frame::Undecoded
                            && function.undecoded.as_deref().is_some_and(|why| why.contains("jumps through a register"))
                        {
                            continue;
                        }
                        assert_eq!(function.frame, expected, "{what}: {:?}", function.undecoded);
                        compared += 1;
                    }
                }
            }
            assert!(compared > 50, "only {compared} frames compared for {target}");
        }
    }

    /// `gcc <flags> -print-file-name=<name>`, when the compiler has it.
    fn toolchain_file(compiler: &str, flags: &[&str], name: &str) -> Option<PathBuf> {
        let output = std::process::Command::new(compiler).args(flags).arg(format!("-print-file-name={name}")).output().ok()?;
        Some(PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())).filter(|path| path.is_absolute() && path.is_file())
    }

    /// A root calling `expf`, bound with the toolchain's libraries.
    fn bound_through_libraries(libraries: &[PathBuf], root_object: &[u8]) -> StackBound {
        let mut program = Program::default();
        program.add_object("root.o", root_object, Some("root.c:2:7:root\t8\tstatic\n")).unwrap();
        let archives: Vec<Arc<Archive>> = libraries.iter().filter_map(|path| Archive::open(path)).collect();
        assert_eq!(archives.len(), libraries.len(), "{libraries:?}");
        program.add_library_code(&archives);
        program.bound("root")
    }

    fn compiled_root(compiler: &str, flags: &[&str]) -> Option<Vec<u8>> {
        let dir = crate::test_support::scratch(&format!("stack-root-{compiler}"));
        std::fs::write(dir.join("root.c"), "float expf(float);\nfloat root(float x) { return expf(x) * 2.0f; }\n").unwrap();
        let status =
            std::process::Command::new(compiler).args(flags).args(["-O2", "-c", "root.c", "-o", "root.o"]).current_dir(&dir).status();
        status.is_ok_and(|status| status.success()).then(|| std::fs::read(dir.join("root.o")).unwrap())
    }

    #[test]
    fn newlib_expf_is_read_from_libm() {
        let flags = ["-mthumb", "-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"];
        let (Some(root), Some(libm), Some(libc)) = (
            compiled_root("arm-none-eabi-gcc", &flags),
            toolchain_file("arm-none-eabi-gcc", &flags, "libm.a"),
            toolchain_file("arm-none-eabi-gcc", &flags, "libc.a"),
        ) else {
            crate::test_support::skip("no arm-none-eabi-gcc with newlib");
            return;
        };
        let bound = bound_through_libraries(&[libm, libc], &root);
        // newlib's expf: push {r3, r4, r5, lr}, then __ieee754_expf, finitef, __errno...
        assert_eq!(names(&bound)[..2], ["root", "expf (libm.a)"], "{bound:?}");
        assert_eq!(bound.path[1].bytes, 16);
        let bytes = bound.bytes.unwrap();
        assert!((8 + 16..8 + 256).contains(&bytes), "{bound:?}");
        assert!(!names(&bound).iter().any(|name| name.contains("allowance")), "{bound:?}");
    }

    #[test]
    fn picolibc_expf_keeps_its_save_restore_frame() {
        let flags = ["-march=rv32imac", "-mabi=ilp32"];
        let compiler = "riscv64-unknown-elf-gcc";
        let (Some(root), Some(libgcc)) = (compiled_root(compiler, &flags), toolchain_file(compiler, &flags, "libgcc.a")) else {
            crate::test_support::skip("no riscv64-unknown-elf-gcc");
            return;
        };
        // picolibc's libraries exist for gcc only through its specs, in the multilib directory.
        let multilib = std::process::Command::new(compiler).args(flags).args(["--specs=picolibc.specs", "-print-multi-directory"]).output();
        let multilib = multilib.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
        let libc = PathBuf::from("/usr/lib/picolibc/riscv64-unknown-elf/lib").join(multilib).join("libc.a");
        if !libc.is_file() {
            crate::test_support::skip("no picolibc for riscv64-unknown-elf");
            return;
        }
        let bound = bound_through_libraries(&[libc, libgcc], &root);
        let path = names(&bound);
        // expf saves its registers with `call t0, __riscv_save_7` (64 bytes read from the helper), then calls __mulsf3...
        // (__divsf3's jump table, a `jr` the frame cannot be proven past, gives it the runtime allowance).
        assert_eq!(path[..3], ["root", "expf (libc.a)", "__riscv_save_7 (libgcc.a)"], "{bound:?}");
        assert_eq!(bound.path[2].bytes, 64);
        assert!(path.len() > 3, "{bound:?}");
    }

    #[test]
    fn rust_symbols_are_shown_by_their_last_name() {
        assert_eq!(readable("_RNvNtNtCseL1MqMlhvy0_17compiler_builtins5float3mul8___mulsf3"), "__mulsf3");
        assert_eq!(readable("_RNvNtNtCsjc7sn2q0iDy_17compiler_builtins3int19specialized_div_rem11u32_div_rem.llvm.58648"), "u32_div_rem");
        assert_eq!(readable("expf"), "expf");
    }

    /// A call chain thousands of functions deep is walked without recursion.
    #[test]
    fn a_deep_call_chain_is_walked_iteratively() {
        let names: Vec<String> = (0..200_000).map(|i| format!("f{i}")).collect();
        let calls: Vec<[&str; 1]> = names.iter().skip(1).map(|name| [name.as_str()]).chain([["memcpy"]]).collect();
        let functions: Vec<(&str, Frame, &[&str], &[&str])> =
            names.iter().zip(&calls).map(|(name, calls)| (name.as_str(), Frame::Bytes(8), &calls[..], &[][..])).collect();
        let bound = program(&functions).bound("f0");
        assert_eq!(bound.bytes, Some(8 * 200_000 + 32), "{:?}", bound.unknown);
        assert_eq!(bound.path.len(), 200_001);
    }

    /// 30 000 functions in one section, each calling the next, and 30 000
    /// cold parts: read in linear time (every relocation recorded once).
    #[test]
    fn many_functions_in_one_section_are_read_in_linear_time() {
        const COUNT: usize = 30_000;
        let mut text = String::from(".text\n");
        let mut usage = String::new();
        for i in 0..COUNT {
            text +=
                &format!(".globl f{i}\n.type f{i},@function\nf{i}:\ncall f{}\nret\n.type f{i}.cold,@function\nf{i}.cold:\nret\n", i + 1);
            usage += &format!("code.c:1:1:f{i}\t16\tstatic\n");
        }
        let Some(object) = crate::test_support::assembled("stack-many-functions", &text) else { return };
        let started = std::time::Instant::now();
        let mut program = Program::default();
        program.add_object("code.o", &object, Some(&usage)).unwrap();
        let bound = program.bound("f0");
        // They share their code, so each may call any: a cycle.
        assert!(bound.unknown.as_deref().is_some_and(|why| why.contains("recursion")), "{bound:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    }
}
