//! How far a library function's machine code moves the stack pointer down,
//! read from its instructions: for functions the C library, libgcc or Rust's
//! `compiler_builtins` define, which no `-fstack-usage` file describes. Pure:
//! the caller hands in the function's code.
//!
//! Every instruction that lowers the stack pointer by a constant counts, on
//! every path at once: Thumb/Thumb-2 `push` (16- and 32-bit), `stmdb sp!`,
//! `str`/`strd` with a lowered `sp` written back, `sub sp, #imm` (all
//! encodings), `vpush`/`vstmdb sp!` and `add sp, rN` with a constant in rN
//! (Armv6-M's large frames: `ldr rN, =-N`); RV32/RV64 `addi sp, sp, -N`,
//! `c.addi16sp`, `c.addi sp` and `sub`/`add sp, sp, <register holding a
//! constant the code loaded>. Instructions that raise it (`pop`, `add sp`)
//! do not give bytes back, so a function whose paths push differently is
//! counted as if one path pushed everything: never less than any path. A
//! stack pointer set from anything else (a register not known to be a frame
//! pointer, an unknown amount as `alloca` does) makes the frame unknown; so
//! does A32 code and any other machine. Each decrement counts once, so one
//! that could run again makes the frame unknown (a branch at or after it
//! back to it or before it), and so does code that lowers the stack pointer
//! and jumps through a register (not a return) or out of its code, or any
//! branch into the middle of an instruction: code not read may run. A
//! return through a link register (`lr`, RISC-V's `ra` or `t0`) the function
//! wrote itself, other than by a call or by loading it back from the stack,
//! is such a jump: it may go anywhere.

use crate::objects::Machine;

/// A function's code, in pieces: the Thumb or RISC-V instructions between its
/// start and the next function's, less the data (literal pools) an Arm
/// object's `$d` mapping symbols mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// Instructions: `bytes`, at `offset` of `section`, whose literal pools
    /// the PC-relative loads read.
    Code { bytes: &'a [u8], section: &'a [u8], offset: usize },
    /// A32 instructions (`$a`), which this reader does not decode.
    Arm,
}

/// Where the branches a relocation completes go, by their offset in the
/// section: `Some` of the target's offset (a label in the section) and
/// whether the branch's encoded displacement adds to it (ELF REL's implicit
/// addend), `None` when they leave it (a function, another section, a
/// symbol defined elsewhere).
pub(crate) type Relocated = std::collections::HashMap<u64, Option<(i64, bool)>>;

/// The bytes `pieces` lower the stack pointer by on `machine`, or why that is not known.
/// With `from_toolchain` (a member of the toolchain's own libraries, not the
/// archive's code) each decrement is taken to run once, as compilers write
/// frames, without proving it (`Frame::runs_once`): jump tables there would
/// otherwise trade read frames for allowances.
pub(crate) fn frame(machine: Machine, pieces: &[Piece<'_>], relocated: Option<&Relocated>, from_toolchain: bool) -> Result<u64, String> {
    let mut frame = Frame::default();
    for piece in pieces {
        let Piece::Code { bytes, section, offset } = *piece else {
            return Err("it has A32 (Arm-state) code, which is not read".to_string());
        };
        match machine {
            Machine::Arm => thumb(bytes, Literals { section, offset }, &mut frame)?,
            Machine::Riscv => riscv(bytes, offset, &mut frame)?,
            other => return Err(format!("{} machine code is not read (Thumb and RISC-V code is)", other.name())),
        }
    }
    let code = || {
        pieces
            .iter()
            .filter_map(|piece| if let Piece::Code { bytes, offset, .. } = piece { Some((*offset, offset + bytes.len())) } else { None })
    };
    if !from_toolchain {
        frame.returns_through_written_links();
        frame.runs_once(code().map(|(start, _)| start).min().unwrap_or(0), code().map(|(_, end)| end).max().unwrap_or(0), relocated)?;
    }
    Ok(frame.bytes)
}

/// What the instructions read so far say.
#[derive(Debug, Default)]
struct Frame {
    /// Every constant decrement of the stack pointer.
    bytes: u64,
    /// A frame pointer holds a value derived from the stack pointer, so
    /// setting the stack pointer back from it restores, never lowers.
    frame_pointer: bool,
    /// The offset (in its section) of the instruction being read.
    at: usize,
    /// The offsets of the instructions that lowered the stack pointer, in order.
    lowered_at: Vec<usize>,
    /// The offset of every instruction read, in order.
    starts: Vec<usize>,
    /// Every transfer of control other than a return or a call: its offset
    /// and its target, `None` when a register holds it.
    jumps: Vec<(usize, Option<i64>)>,
    /// The link registers (by number) the code writes other than by a call
    /// or by loading them back from the stack.
    links_written: Vec<u16>,
    /// Every return through a link register: its offset and the register.
    returns: Vec<(usize, u16)>,
}

impl Frame {
    /// A return through a link register the code wrote itself goes wherever
    /// it was set to: a jump through a register.
    fn returns_through_written_links(&mut self) {
        let written = self.returns.iter().filter(|(_, register)| self.links_written.contains(register));
        self.jumps.extend(written.map(|&(at, _)| (at, None)));
    }

    fn lower(&mut self, bytes: u64) -> Result<(), String> {
        self.bytes = self.bytes.checked_add(bytes).ok_or("its frame overflows 64 bits")?;
        self.lowered_at.push(self.at);
        Ok(())
    }

    /// Whether the instructions read are all that run and every decrement
    /// runs at most once, as counting each once assumes. Unknown when a
    /// direct branch lands inside an instruction; when the code lowers the
    /// stack pointer and jumps through a register (to anywhere) or branches
    /// out of its code (`start..end`, from which code may come back); or when
    /// a branch at or after a decrement goes back to it or before it. A
    /// branch to itself is a relocation's placeholder (its target is another
    /// function) or a `b .` that stays.
    fn runs_once(&self, start: usize, end: usize, relocated: Option<&Relocated>) -> Result<(), String> {
        let lowers = !self.lowered_at.is_empty();
        let code = start as i64..end as i64;
        for &(from, to) in &self.jumps {
            // A relocated branch goes where its symbol and addend say.
            let to = match (to, relocated.and_then(|map| map.get(&(from as u64)))) {
                (Some(_), Some(None)) => continue,
                (Some(to), Some(&Some((base, plus_encoded)))) => {
                    Some(if plus_encoded { base.saturating_add(to - from as i64) } else { base })
                }
                (to, _) => to,
            };
            let last = self.lowered_at.get(self.lowered_at.partition_point(|&at| at <= from).wrapping_sub(1));
            let why = match to {
                None if lowers => "jumps through a register, which may go anywhere".to_string(),
                Some(to) if to == from as i64 => continue,
                Some(to) if code.contains(&to) && usize::try_from(to).map_or(true, |to| self.starts.binary_search(&to).is_err()) => {
                    format!("branches into the middle of an instruction at {to:#x}")
                }
                Some(to) if lowers && !code.contains(&to) => format!("branches out of its code to {to:#x}"),
                Some(to) if last.is_some_and(|&last| to <= last as i64) => format!("branches back to {to:#x}"),
                _ => continue,
            };
            let lowered = self.lowered_at.first().map_or(String::new(), |at| format!(" (it lowers the stack pointer at {at:#x})"));
            return Err(format!(
                "the instruction at {from:#x} {why}, so a decrement may run more than once or code not read may run{lowered}"
            ));
        }
        Ok(())
    }

    /// The stack pointer set from register `from`: a restore when that is the frame pointer.
    fn set_from(&self, from: &str, is_frame_pointer: bool) -> Result<(), String> {
        if is_frame_pointer && self.frame_pointer {
            Ok(())
        } else {
            Err(format!("it sets the stack pointer from {from}"))
        }
    }
}

/// Thumb's registers 7 and 11: the frame pointers gcc and LLVM use.
fn is_thumb_frame_pointer(register: u16) -> bool {
    register == 7 || register == 11
}

/// `ThumbExpandImm` of a Thumb-2 modified immediate (`i:imm3:imm8`).
fn thumb_expand_imm(imm12: u32) -> u32 {
    let imm8 = imm12 & 0xff;
    match imm12 >> 8 {
        0 => imm8,
        1 => (imm8 << 16) | imm8,
        2 => (imm8 << 24) | (imm8 << 8),
        3 => (imm8 << 24) | (imm8 << 16) | (imm8 << 8) | imm8,
        _ => (0x80 | (imm12 & 0x7f)).rotate_right(imm12 >> 7),
    }
}

/// Where a piece of Thumb code lies in its section: for the literal pools
/// `ldr rN, [pc, #imm]` reads.
#[derive(Clone, Copy)]
struct Literals<'a> {
    section: &'a [u8],
    offset: usize,
}

impl Literals<'_> {
    /// The word `ldr rN, [pc, #imm8 * 4]` at `at` of the piece loads.
    fn load(&self, at: usize, imm8: u16) -> Option<i64> {
        let address = (self.offset.checked_add(at)?.checked_add(4)? & !3).checked_add(4 * usize::from(imm8))?;
        let word = self.section.get(address..address.checked_add(4)?)?;
        Some(i64::from(i32::from_le_bytes([word[0], word[1], word[2], word[3]])))
    }
}

/// Constants in r0–r7 as far as Armv6-M's large frames need them
/// (`ldr r4, =-712; add sp, r4`; `movs r3, #169; lsls r3, r3, #2; add sp,
/// r3`). A value holds only within straight-line code: every branch target
/// and every instruction that transfers control or is not understood here
/// forgets them all.
type LowConstants = [Option<i64>; 8];

/// The jumps in `code` (offsets within it): direct branches (`b`,
/// `b<cond>`, `cbz`, `cbnz`, `b.w`, `b<cond>.w`, and `bl`/`blx` into `code`) with their targets,
/// and jumps through a register that are not returns (`bx`/`mov pc`/`add pc`
/// with a register other than lr, `ldr pc` and `ldm` into pc other than a
/// pop) without. `tbb`/`tbh` only go forward, like the code after them.
fn thumb_jumps(code: &[u8]) -> Vec<(usize, Option<i64>)> {
    let halfword = |at: usize| code.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let mut jumps = Vec::new();
    let mut at = 0;
    while let Some(hw) = halfword(at) {
        let pc = at as i64 + 4;
        if matches!(hw >> 11, 0b11101..=0b11111) {
            let Some(hw2) = halfword(at + 2) else { break };
            let loads_pc = hw & 0xff70 == 0xf850 && hw2 >> 12 == 15 && !(hw == 0xf85d && hw2 == 0xfb04);
            let ldm_pc = matches!(hw & 0xffd0, 0xe890 | 0xe910) && hw2 & 0x8000 != 0 && hw != 0xe8bd;
            if loads_pc || ldm_pc {
                jumps.push((at, None));
            } else if hw >> 11 == 0b11110 && hw2 & 0xc000 == 0x8000 && !(hw2 & 0x1000 == 0 && (hw >> 7) & 7 == 7) {
                // (A condition of 111x is not b<cond>.w but msr, mrs, dmb and the other hints.)
                let offset = if hw2 & 0x1000 != 0 {
                    thumb_long_branch_offset(hw, hw2)
                } else {
                    // b<cond>.w (T3): S:J2:J1:imm6:imm11:0.
                    let s = u32::from(hw >> 10 & 1);
                    let (j1, j2) = (u32::from(hw2 >> 13 & 1), u32::from(hw2 >> 11 & 1));
                    sign_extend((s << 20) | (j2 << 19) | (j1 << 18) | (u32::from(hw & 0x3f) << 12) | (u32::from(hw2 & 0x7ff) << 1), 21)
                };
                jumps.push((at, Some(pc + offset)));
            } else if let Some(to) = thumb_local_call(code, at, hw, hw2) {
                // A call the assembler resolved runs this code again: a branch there.
                jumps.push((at, Some(to)));
            }
            at += 4;
            continue;
        }
        let target = if hw & 0xf800 == 0xe000 {
            Some(pc + sign_extend(u32::from(hw & 0x7ff) << 1, 12))
        } else if hw & 0xf000 == 0xd000 && hw & 0x0e00 != 0x0e00 {
            Some(pc + sign_extend(u32::from(hw & 0xff) << 1, 9))
        } else if hw & 0xf500 == 0xb100 {
            Some(pc + i64::from(((hw >> 3) & 0x40) | ((hw >> 2) & 0x3e)))
        } else {
            None
        };
        // bx rm, mov pc, rm and add pc, rm (rm other than lr).
        let register_jump = (hw & 0xff87 == 0x4700 || hw & 0xff87 == 0x4687 || hw & 0xff87 == 0x4487) && (hw >> 3) & 0xf != 14;
        if register_jump || target.is_some() {
            jumps.push((at, target));
        }
        at += 2;
    }
    jumps
}

/// Where `bl` or `blx` at `at` goes when that is into `code` and not to
/// itself (a relocation's placeholder): a call into the function's own code.
fn thumb_local_call(code: &[u8], at: usize, hw: u16, hw2: u16) -> Option<i64> {
    let to = at as i64 + 4 + thumb_long_branch_offset(hw, hw2);
    let call = hw >> 11 == 0b11110 && hw2 & 0xc000 == 0xc000;
    (call && to != at as i64 && (0..code.len() as i64).contains(&to)).then_some(to)
}

/// How far `b.w` (T4), `bl` and `blx` go from the PC: S:I1:I2:imm10:imm11:0, I = NOT(J xor S).
fn thumb_long_branch_offset(hw: u16, hw2: u16) -> i64 {
    let s = u32::from(hw >> 10 & 1);
    let (j1, j2) = (u32::from(hw2 >> 13 & 1), u32::from(hw2 >> 11 & 1));
    let (i1, i2) = (1 ^ (j1 ^ s), 1 ^ (j2 ^ s));
    sign_extend((s << 24) | (i1 << 23) | (i2 << 22) | (u32::from(hw & 0x3ff) << 12) | (u32::from(hw2 & 0x7ff) << 1), 25)
}

fn thumb(code: &[u8], literals: Literals<'_>, frame: &mut Frame) -> Result<(), String> {
    let halfword = |at: usize| code.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let jumps = thumb_jumps(code);
    let targets: std::collections::BTreeSet<i64> = jumps.iter().filter_map(|&(_, to)| to).collect();
    let in_section = |at: i64| at + literals.offset as i64;
    frame.jumps.extend(jumps.iter().map(|&(from, to)| (literals.offset + from, to.map(in_section))));
    let mut constants: LowConstants = [None; 8];
    let mut at = 0;
    while let Some(hw) = halfword(at) {
        frame.at = literals.offset + at;
        frame.starts.push(frame.at);
        if targets.contains(&(at as i64)) {
            constants = [None; 8];
        }
        if matches!(hw >> 11, 0b11101..=0b11111) {
            let Some(hw2) = halfword(at + 2) else { break };
            thumb32(hw, hw2, frame)?;
            // A call into this code leaves lr pointing into it: a return through lr goes there.
            if thumb_local_call(code, at, hw, hw2).is_some() || thumb32_writes_lr(hw, hw2) {
                frame.links_written.push(LR);
            }
            constants = [None; 8];
            at += 4;
        } else {
            // mov lr, rm and add lr, rm; bx lr and mov pc, lr return through it.
            if hw & 0xff87 == 0x4686 || hw & 0xff87 == 0x4486 {
                frame.links_written.push(LR);
            }
            if hw == 0x4770 || hw == 0x46f7 {
                frame.returns.push((frame.at, LR));
            }
            thumb16(hw, frame, &constants)?;
            thumb16_constants(hw, &mut constants, |imm8| literals.load(at, imm8));
            at += 2;
        }
    }
    Ok(())
}

/// What a 16-bit Thumb instruction leaves in r0–r7.
fn thumb16_constants(hw: u16, constants: &mut LowConstants, literal: impl Fn(u16) -> Option<i64>) {
    let low = |field: u16| usize::from(field & 7);
    let wrap = |value: i64| i64::from(value as i32);
    match hw >> 11 {
        // lsls rd, rm, #imm5
        0b00000 => {
            let value = constants[low(hw >> 3)].map(|v| wrap(v << (hw >> 6 & 31)));
            constants[low(hw)] = value;
        }
        // lsrs, asrs; adds/subs with a register or imm3
        0b00001..=0b00011 => constants[low(hw)] = None,
        // movs rd, #imm8
        0b00100 => constants[low(hw >> 8)] = Some(i64::from(hw & 0xff)),
        // cmp rn, #imm8
        0b00101 => {}
        // adds/subs rdn, #imm8
        0b00110 | 0b00111 => {
            let sign = if hw >> 11 == 0b00110 { 1 } else { -1 };
            let register = low(hw >> 8);
            constants[register] = constants[register].map(|v| wrap(v + sign * i64::from(hw & 0xff)));
        }
        // Data processing on registers: rsbs rd, rn, #0 negates; tst, cmp, cmn write nothing; the rest write rdn.
        0b01000 if hw & 0x0400 == 0 => match hw >> 6 & 0xf {
            0b1001 => constants[low(hw)] = constants[low(hw >> 3)].map(|v| wrap(-v)),
            0b1000 | 0b1010 | 0b1011 => {}
            _ => constants[low(hw)] = None,
        },
        // add/cmp/mov with high registers, bx/blx.
        0b01000 => match hw >> 8 & 3 {
            0b00 | 0b10 => {
                let rd = ((hw >> 4) & 8) | (hw & 7);
                if rd < 8 {
                    constants[usize::from(rd)] = None;
                }
                if rd == 15 {
                    *constants = [None; 8];
                }
            }
            0b01 => {}
            _ => *constants = [None; 8],
        },
        // ldr rt, [pc, #imm8 * 4]
        0b01001 => constants[low(hw >> 8)] = literal(hw & 0xff),
        // Loads and stores with a register or immediate offset: the loads write rt.
        0b01010..=0b10001 => constants[low(hw)] = None,
        // ldr/str rt, [sp, #imm8 * 4]; adr / add rd, sp, #imm8 * 4.
        0b10010..=0b10101 => constants[low(hw >> 8)] = None,
        // Miscellaneous: push and sp arithmetic keep r0–r7; pop, extends, rev and the rest do not.
        0b10110 | 0b10111 => {
            // Hints (nop, wfi) keep them; `it` makes what follows conditional.
            if !(hw & 0xfe00 == 0xb400 || hw & 0xff00 == 0xb000 || hw & 0xff0f == 0xbf00) {
                *constants = [None; 8];
            }
        }
        // stm/ldm, conditional branches, svc, b: anything may follow.
        _ => *constants = [None; 8],
    }
}

fn thumb16(hw: u16, frame: &mut Frame, constants: &LowConstants) -> Result<(), String> {
    if hw & 0xfe00 == 0xb400 {
        // push {reglist[, lr]}
        frame.lower(4 * u64::from((hw & 0x1ff).count_ones()))?;
    } else if hw & 0xff80 == 0xb080 {
        // sub sp, #imm7 * 4
        frame.lower(4 * u64::from(hw & 0x7f))?;
    } else if hw & 0xf800 == 0xa800 && is_thumb_frame_pointer((hw >> 8) & 7) {
        // add r7, sp, #imm8 * 4
        frame.frame_pointer = true;
    } else if hw & 0xff00 == 0x4600 || hw & 0xff00 == 0x4400 {
        // mov/add (register) with four-bit registers: Rd = D:Rd, Rm.
        let (rd, rm) = (((hw >> 4) & 8) | (hw & 7), (hw >> 3) & 0xf);
        let is_mov = hw & 0xff00 == 0x4600;
        if is_mov && rm == 13 && is_thumb_frame_pointer(rd) {
            frame.frame_pointer = true;
        } else if rd == 13 && is_mov {
            frame.set_from(&format!("r{rm}"), is_thumb_frame_pointer(rm))?;
        } else if rd == 13 {
            let constant = constants.get(usize::from(rm)).copied().flatten();
            move_sp(frame, constant.ok_or_else(|| format!("it adds r{rm} to the stack pointer"))?)?;
        }
    }
    Ok(())
}

fn thumb32(hw1: u16, hw2: u16, frame: &mut Frame) -> Result<(), String> {
    let rn = hw1 & 0xf;
    let rd = (hw2 >> 8) & 0xf;
    if hw1 == 0xe92d {
        // push.w / stmdb sp!, {reglist}
        frame.lower(4 * u64::from(hw2.count_ones()))?;
    } else if hw1 & 0xffbf == 0xed2d && hw2 & 0x0e00 == 0x0a00 {
        // vpush / vstmdb sp!, {s or d registers}: imm8 words.
        frame.lower(4 * u64::from(hw2 & 0xff))?;
    } else if hw1 & 0xff90 == 0xf800 && rn == 13 && hw2 & 0x0900 == 0x0900 {
        // str/strb/strh Rt, [sp, #±imm8]! or [sp], #±imm8: U (bit 9) clear lowers sp.
        if hw2 & 0x0200 == 0 {
            frame.lower(u64::from(hw2 & 0xff))?;
        }
    } else if hw1 & 0xfe50 == 0xe840 && rn == 13 && hw1 & 0x0020 != 0 {
        // strd Rt, Rt2, [sp, #±imm8*4]! or [sp], #±imm8*4.
        if hw1 & 0x0080 == 0 {
            frame.lower(4 * u64::from(hw2 & 0xff))?;
        }
    } else if hw1 & 0xfa00 == 0xf000 && hw2 & 0x8000 == 0 {
        // Data processing with a modified immediate: op in bits 8..5.
        let imm = thumb_expand_imm((u32::from(hw1 & 0x0400) << 1) | (u32::from(hw2 & 0x7000) >> 4) | u32::from(hw2 & 0xff));
        let op = (hw1 >> 5) & 0xf;
        thumb_sp_arithmetic(frame, op == 0b1101, op == 0b1000, rn, rd, imm)?;
    } else if hw1 & 0xfa00 == 0xf200 && hw2 & 0x8000 == 0 {
        // Plain binary immediate: addw (op 00000) and subw (01010) take i:imm3:imm8.
        let imm = (u32::from(hw1 & 0x0400) << 1) | (u32::from(hw2 & 0x7000) >> 4) | u32::from(hw2 & 0xff);
        let op = (hw1 >> 4) & 0x1f;
        thumb_sp_arithmetic(frame, op == 0b01010, op == 0b00000, rn, rd, imm)?;
    } else if hw1 & 0xfe00 == 0xea00 && rd == 13 {
        // Data processing with a register: mov.w sp, Rm (orr with Rn = pc, no shift) restores from a frame pointer.
        let rm = hw2 & 0xf;
        let plain_mov = (hw1 >> 5) & 0xf == 0b0010 && rn == 15 && hw2 & 0x70f0 == 0;
        if plain_mov {
            frame.set_from(&format!("r{rm}"), is_thumb_frame_pointer(rm))?;
        } else {
            return Err(format!("it computes the stack pointer from r{rm}"));
        }
    } else if hw1 & 0xfe00 == 0xf800 && hw1 & 0x0010 != 0 && rn == 13 && hw1 & 0x0080 == 0 && hw2 & 0x0900 == 0x0900 {
        // ldr/ldrb/ldrh/ldrs* Rt, [sp, #±imm8]! or [sp], #±imm8: U clear lowers sp; Rt = sp is no constant.
        if hw2 >> 12 == 13 {
            return Err(format!("it loads the stack pointer from memory ({hw1:04x} {hw2:04x})"));
        }
        if hw2 & 0x0200 == 0 {
            frame.lower(u64::from(hw2 & 0xff))?;
        }
    } else if thumb32_writes_sp(hw1, hw2) {
        return Err(format!("it sets the stack pointer with instruction {hw1:04x} {hw2:04x}"));
    }
    Ok(())
}

/// Whether a 32-bit Thumb instruction the reader does not account for may
/// write the stack pointer: any encoding with sp as a destination register
/// (a load, a move from a coprocessor or special register, arithmetic), a
/// base sp written back lowering it or by an amount not known, or `msr` to a
/// stack pointer or to CONTROL (which selects the stack pointer). Raising sp
/// by a constant (`pop`, `ldm sp!`, `vpop`, post-indexed loads) is allowed:
/// it gives no bytes back to the count.
fn thumb32_writes_sp(hw1: u16, hw2: u16) -> bool {
    let rn = hw1 & 0xf;
    let (rt, rd, rm) = (hw2 >> 12, (hw2 >> 8) & 0xf, hw2 & 0xf);
    let load = hw1 & 0x0010 != 0;
    let writeback = hw1 & 0x0020 != 0;
    match hw1 >> 9 {
        // Load/store multiple: sp in a loaded list, or sp written back downwards (ldmdb/stmdb sp!, but push is counted).
        0b1110100 if hw1 & 0x0040 == 0 => {
            let decrements = hw1 & 0x0180 == 0x0100;
            (load && hw2 & 0x2000 != 0) || (writeback && rn == 13 && decrements)
        }
        // Load/store dual and exclusive, table branch.
        0b1110100 => {
            let exclusive = hw1 & 0x0120 == 0;
            let loaded = load && (rt == 13 || rd == 13);
            // strex's status register is in bits 11..8; strexb/h/d's in bits 3..0.
            let status = exclusive && !load && if hw1 & 0x0080 == 0 { rd == 13 } else { rm == 13 };
            let lowered = writeback && rn == 13 && hw1 & 0x0080 == 0;
            loaded || status || lowered
        }
        // Data processing with a shifted register: the cases handled above.
        0b1110101 => rd == 13,
        // Coprocessor, floating point and SIMD.
        0b1110110 | 0b1110111 | 0b1111110 | 0b1111111 => {
            let memory = hw1 & 0x0e00 == 0x0c00 && hw1 & 0x01e0 != 0x0040;
            if memory {
                // vldm/vstm/ldc/stc with sp written back downwards (vpush is counted).
                writeback && rn == 13 && hw1 & 0x0080 == 0
            } else if hw1 & 0x0fe0 == 0x0c40 {
                // mcrr/mrrc, vmov rt, rt2, dm: two core registers.
                load && (rt == 13 || rn == 13)
            } else {
                // mrc, vmov rt, sn, vmrs: into a core register.
                hw1 & 0x0f00 == 0x0e00 && load && hw2 & 0x0010 != 0 && rt == 13
            }
        }
        // Data processing with an immediate (handled above); branches and miscellaneous control.
        0b1111000..=0b1111011 if hw2 & 0x8000 == 0 => rd == 13,
        0b1111000..=0b1111011 => {
            let (msr, mrs) = (hw1 & 0xffe0 == 0xf380 && hw2 & 0xd000 == 0x8000, hw1 & 0xffe0 == 0xf3e0 && hw2 & 0xd000 == 0x8000);
            // MSP, PSP, CONTROL and their non-secure aliases; a banked register (A-profile) may be any sp.
            let sysm = hw2 & 0x7f;
            (msr && (matches!(sysm, 8 | 9 | 0x14) || hw2 & 0x0020 != 0)) || (mrs && rd == 13)
        }
        // Loads and stores of one register: into sp, or sp written back downwards (a store lowering it is counted).
        0b1111100 => {
            let indexed = hw1 & 0x0080 == 0 && hw2 & 0x0800 != 0;
            (load && rt == 13) || (indexed && rn == 13 && hw2 & 0x0100 != 0 && hw2 & 0x0200 == 0 && load)
        }
        // Data processing with registers, multiplies (rd), long multiplies and divides (rdlo too).
        0b1111101 => rd == 13 || (hw1 & 0x0080 != 0 && rt == 13),
        _ => false,
    }
}

/// Thumb's link register, r14.
const LR: u16 = 14;

/// Whether a 32-bit Thumb instruction may write `lr` other than as a call
/// (`bl`, `blx`) or a load from the stack (`pop.w`, `ldr lr, [sp], #4`,
/// `ldrd` from sp): a load through another base, a base written back, a
/// move from a coprocessor or special register, arithmetic.
fn thumb32_writes_lr(hw1: u16, hw2: u16) -> bool {
    let rn = hw1 & 0xf;
    let (rt, rd, rm) = (hw2 >> 12, (hw2 >> 8) & 0xf, hw2 & 0xf);
    let load = hw1 & 0x0010 != 0;
    let writeback = hw1 & 0x0020 != 0;
    let from_stack = rn == 13;
    match hw1 >> 9 {
        // Load/store multiple: lr in a list loaded from elsewhere than the stack, or lr as a base written back.
        0b1110100 if hw1 & 0x0040 == 0 => (load && hw2 & 0x4000 != 0 && !from_stack) || (writeback && rn == LR),
        // Load/store dual and exclusive (strex's status register in bits 11..8 or 3..0), table branch.
        0b1110100 => {
            let exclusive = hw1 & 0x0120 == 0;
            // ldrd from the stack restores; ldrex from anywhere does not.
            let loaded = load && (rt == LR || rd == LR) && (exclusive || !from_stack);
            let status = exclusive && !load && if hw1 & 0x0080 == 0 { rd == LR } else { rm == LR };
            loaded || status || (writeback && rn == LR)
        }
        0b1110101 => rd == LR,
        0b1110110 | 0b1110111 | 0b1111110 | 0b1111111 => {
            let memory = hw1 & 0x0e00 == 0x0c00 && hw1 & 0x01e0 != 0x0040;
            if memory {
                writeback && rn == LR
            } else if hw1 & 0x0fe0 == 0x0c40 {
                load && (rt == LR || rn == LR)
            } else {
                hw1 & 0x0f00 == 0x0e00 && load && hw2 & 0x0010 != 0 && rt == LR
            }
        }
        0b1111000..=0b1111011 if hw2 & 0x8000 == 0 => rd == LR,
        // Branches and control: `mrs lr` only (bl and blx are calls).
        0b1111000..=0b1111011 => hw1 & 0xffe0 == 0xf3e0 && hw2 & 0xd000 == 0x8000 && rd == LR,
        // Loads of one register: into lr from elsewhere than the stack, or lr as a base written back.
        0b1111100 => {
            let indexed = hw1 & 0x0080 == 0 && hw2 & 0x0800 != 0 && hw2 & 0x0100 != 0;
            (load && rt == LR && !from_stack) || (indexed && rn == LR)
        }
        0b1111101 => rd == LR || (hw1 & 0x0080 != 0 && rt == LR),
        _ => false,
    }
}

/// `sub`/`add` (`is_sub`/`is_add`) of `imm` from register `rn` into `rd`, as far as the stack pointer goes.
fn thumb_sp_arithmetic(frame: &mut Frame, is_sub: bool, is_add: bool, rn: u16, rd: u16, imm: u32) -> Result<(), String> {
    if rd == 13 {
        match (rn, is_sub, is_add) {
            (13, true, _) => frame.lower(u64::from(imm))?,
            (13, _, true) => {}
            (rn, true, _) | (rn, _, true) => frame.set_from(&format!("r{rn}"), is_thumb_frame_pointer(rn))?,
            _ => return Err("it computes the stack pointer with a bit operation".to_string()),
        }
    } else if rn == 13 && (is_add || is_sub) && is_thumb_frame_pointer(rd) {
        frame.frame_pointer = true;
    }
    Ok(())
}

/// RISC-V's `sp` (x2) and `s0` (x8), the frame pointer.
const SP: usize = 2;
const S0: usize = 8;

/// What the RISC-V code has put in the integer registers, as far as the stack pointer needs.
struct Registers {
    /// Constants loaded with `li`/`lui`/`addi` (`sub sp, sp, t1` after `li t1, -32`).
    constants: [Option<i64>; 32],
}

impl Registers {
    fn write(&mut self, register: usize, value: Option<i64>, frame: &mut Frame) {
        if register == S0 {
            frame.frame_pointer = false;
        }
        if let Some(slot) = self.constants.get_mut(register).filter(|_| register != 0) {
            *slot = value;
        }
    }

    fn constant(&self, register: usize) -> Option<i64> {
        if register == 0 {
            Some(0)
        } else {
            self.constants.get(register).copied().flatten()
        }
    }
}

/// Sign-extends the low `bits` bits of `value`.
fn sign_extend(value: u32, bits: u32) -> i64 {
    let shift = 32 - bits;
    i64::from(((value << shift) as i32) >> shift)
}

/// The stack pointer moved by `delta` bytes (negative: lowered).
fn move_sp(frame: &mut Frame, delta: i64) -> Result<(), String> {
    if delta < 0 {
        frame.lower(delta.unsigned_abs())?;
    }
    Ok(())
}

/// `code` lies at `offset` of its section.
fn riscv(code: &[u8], offset: usize, frame: &mut Frame) -> Result<(), String> {
    let mut registers = Registers { constants: [None; 32] };
    let mut at = 0;
    while let Some(low) = code.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]])) {
        frame.at = offset + at;
        frame.starts.push(frame.at);
        let (jump, link, call_link) = if low & 3 == 3 {
            let Some(word) = code.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])) else { break };
            riscv32(word, frame, &mut registers)?;
            at += 4;
            let next = code.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            let call_link = Some(((word >> 7) & 31) as u16).filter(|&rd| word & 0x7f == 0x6f && is_riscv_link(u32::from(rd)));
            (riscv32_jump(word), riscv32_link(word, next), call_link)
        } else {
            riscv16(low, frame, &mut registers)?;
            at += 2;
            // c.jal writes ra.
            (riscv16_jump(low), riscv16_link(low), (low & 0xe003 == 0x2001).then_some(1))
        };
        // A call into this code (jal, c.jal) leaves its link register pointing into it.
        let start = (frame.at - offset) as i64;
        if let (Some(register), Some(Some(by))) = (call_link, jump) {
            if by != 0 && (0..code.len() as i64).contains(&(start + by)) {
                frame.links_written.push(register);
            }
        }
        match link {
            Some(Link::Written(register)) => frame.links_written.push(register),
            Some(Link::Return(register)) => frame.returns.push((frame.at, register)),
            None => {}
        }
        if let Some(by) = jump {
            frame.jumps.push((frame.at, by.map(|by| frame.at as i64 + by)));
        }
    }
    Ok(())
}

/// What a RISC-V instruction does with a link register (`ra`, `t0`).
enum Link {
    /// Writes it other than by a call (`jal`, `jalr`, `c.jal`, `c.jalr`) or a load from the stack.
    Written(u16),
    /// Returns through it (`jalr x0, 0(ra)`, `c.jr t0`).
    Return(u16),
}

fn is_riscv_link(register: u32) -> bool {
    register == 1 || register == 5
}

/// `next` is the instruction after `word`: `auipc ra, hi` followed by
/// `jalr ra, lo(ra)` is a call (`call`, `jal t0` through `auipc t0`).
fn riscv32_link(word: u32, next: Option<u32>) -> Option<Link> {
    let (rd, rs1) = ((word >> 7) & 31, (word >> 15) & 31);
    let calls_through = |next: u32| next & 0x707f == 0x0067 && (next >> 7) & 31 == rd && (next >> 15) & 31 == rd;
    if word & 0x7f == 0x17 && next.is_some_and(calls_through) {
        return None;
    }
    let funct5 = word >> 27;
    let integer_destination = match word & 0x7f {
        // jal, jalr: a call (rd a link register) or a return (rd x0, rs1 one).
        0x6f => false,
        0x67 if rd == 0 && is_riscv_link(rs1) => return Some(Link::Return(rs1 as u16)),
        0x67 => false,
        // Loads: from the stack they restore.
        0x03 => rs1 != SP as u32,
        // Stores, branches, fences, FP loads and fused multiplies write no integer register.
        0x23 | 0x63 | 0x0f | 0x07 | 0x27 | 0x43 | 0x47 | 0x4b | 0x4f => false,
        // FP operations: compares, conversions to integer, fmv.x and fclass do.
        0x53 => matches!(funct5, 0x14 | 0x18 | 0x1c),
        // System: the CSR instructions.
        0x73 => (word >> 12) & 7 != 0,
        _ => true,
    };
    (integer_destination && is_riscv_link(rd)).then_some(Link::Written(rd as u16))
}

fn riscv16_link(half: u16) -> Option<Link> {
    let bits = u32::from(half);
    let rd = (bits >> 7) & 31;
    let rs2 = (bits >> 2) & 31;
    let writes = match (bits & 3, bits >> 13) {
        // c.addi, c.li, c.lui (c.jal, funct3 1, is a call).
        (1, 0 | 2 | 3) => true,
        // c.slli; c.lwsp/c.ldsp restore.
        (2, 0) => true,
        (2, 4) => match (bits & 0x1000 != 0, rs2) {
            (false, 0) if is_riscv_link(rd) => return Some(Link::Return(rd as u16)),
            // c.jr, c.jalr (a call), c.ebreak
            (_, 0) => false,
            // c.mv, c.add
            _ => true,
        },
        _ => false,
    };
    (writes && is_riscv_link(rd)).then_some(Link::Written(rd as u16))
}

/// Whether a register (not `ra` or `t0`, the link registers) holds where `jalr x0` goes: not a return.
fn riscv_register_jump(rs1: u32) -> Option<Option<i64>> {
    (rs1 != 1 && rs1 != 5).then_some(None)
}

/// A 32-bit RISC-V jump: `jal` (a call too: it may target this code) and
/// the branches with how far they go, `jalr x0` through a register that is
/// not a link register with `None`.
fn riscv32_jump(word: u32) -> Option<Option<i64>> {
    let bit = |from: u32, to: u32| ((word >> from) & 1) << to;
    let bits = |from: u32, count: u32, to: u32| ((word >> from) & ((1 << count) - 1)) << to;
    match word & 0x7f {
        0x6f => Some(Some(sign_extend(bit(31, 20) | bits(12, 8, 12) | bit(20, 11) | bits(21, 10, 1), 21))),
        0x63 => Some(Some(sign_extend(bit(31, 12) | bit(7, 11) | bits(25, 6, 5) | bits(8, 4, 1), 13))),
        0x67 if (word >> 7) & 31 == 0 => riscv_register_jump((word >> 15) & 31),
        _ => None,
    }
}

/// A compressed RISC-V jump: `c.j`, `c.jal` (RV32's call, which may target
/// this code; RV64's `c.addiw` read as one can only make the frame unknown),
/// `c.beqz`, `c.bnez`, and `c.jr` not through a link register.
fn riscv16_jump(half: u16) -> Option<Option<i64>> {
    let half = u32::from(half);
    let bit = |from: u32, to: u32| ((half >> from) & 1) << to;
    let bits = |from: u32, count: u32, to: u32| ((half >> from) & ((1 << count) - 1)) << to;
    match (half & 3, half >> 13) {
        (1, 1 | 5) => {
            let imm = bit(12, 11) | bit(11, 4) | bits(9, 2, 8) | bit(8, 10) | bit(7, 6) | bit(6, 7) | bits(3, 3, 1) | bit(2, 5);
            Some(Some(sign_extend(imm, 12)))
        }
        (1, 6 | 7) => Some(Some(sign_extend(bit(12, 8) | bits(10, 2, 3) | bits(5, 2, 6) | bits(3, 2, 1) | bit(2, 5), 9))),
        (2, 4) if half & 0x1000 == 0 && bits(2, 5, 0) == 0 && bits(7, 5, 0) != 0 => riscv_register_jump(bits(7, 5, 0)),
        _ => None,
    }
}

fn riscv32(word: u32, frame: &mut Frame, registers: &mut Registers) -> Result<(), String> {
    let opcode = word & 0x7f;
    let rd = ((word >> 7) & 31) as usize;
    let funct3 = (word >> 12) & 7;
    let rs1 = ((word >> 15) & 31) as usize;
    let rs2 = ((word >> 20) & 31) as usize;
    let imm_i = sign_extend(word >> 20, 12);
    match opcode {
        // Stores, branches, FP stores and system instructions write no integer register (csr ops aside, never into sp).
        0x23 | 0x63 | 0x27 | 0x0f => {}
        // addi
        0x13 if funct3 == 0 => match (rd, rs1) {
            (SP, SP) => move_sp(frame, imm_i)?,
            (SP, S0) => frame.set_from("s0", true)?,
            (SP, other) => frame.set_from(&format!("x{other}"), false)?,
            (S0, SP) => {
                registers.write(S0, None, frame);
                frame.frame_pointer = true;
            }
            (rd, rs1) => registers.write(rd, registers.constant(rs1).map(|c| c + imm_i), frame),
        },
        // andi sp, sp, -align: lowers by at most align - 1.
        0x13 if funct3 == 7 && rd == SP && rs1 == SP && imm_i < 0 => frame.lower(imm_i.unsigned_abs())?,
        // lui
        0x37 => registers.write(rd, Some(sign_extend(word & 0xffff_f000, 32)), frame),
        // add/sub
        0x33 if funct3 == 0 && (word >> 25 == 0 || word >> 25 == 0x20) => {
            let sub = word >> 25 == 0x20;
            if rd == SP {
                let amount = match (rs1, registers.constant(rs2)) {
                    (SP, Some(constant)) => constant,
                    _ if !sub && rs2 == SP => registers.constant(rs1).ok_or("it adds a register to the stack pointer")?,
                    _ => return Err(format!("it moves the stack pointer by x{rs2}, not a constant")),
                };
                move_sp(frame, if sub { -amount } else { amount })?;
            } else {
                let value = registers.constant(rs1).zip(registers.constant(rs2)).map(|(a, b)| if sub { a - b } else { a + b });
                registers.write(rd, value, frame);
            }
        }
        // Any other write to sp (a load, as longjmp does; jal, csr, amo...) is not understood.
        _ if rd == SP => return Err(format!("it writes the stack pointer with instruction {word:#010x}")),
        _ => registers.write(rd, None, frame),
    }
    Ok(())
}

fn riscv16(half: u16, frame: &mut Frame, registers: &mut Registers) -> Result<(), String> {
    let bits = u32::from(half);
    let funct3 = bits >> 13;
    let rd = ((bits >> 7) & 31) as usize;
    let rs2 = ((bits >> 2) & 31) as usize;
    // The three-bit register fields name x8..x15.
    let rd_short = 8 + ((bits >> 2) & 7) as usize;
    let rd_prime = 8 + ((bits >> 7) & 7) as usize;
    let imm6 = sign_extend(((bits >> 7) & 0x20) | ((bits >> 2) & 0x1f), 6);
    match (bits & 3, funct3) {
        // c.addi4spn rd', sp, imm: s0 becomes a frame pointer.
        (0, 0) => {
            registers.write(rd_short, None, frame);
            frame.frame_pointer |= rd_short == S0 && half != 0;
        }
        // c.lw, c.ld, c.flw/c.fld (an FP register, cleared all the same).
        (0, 1..=3) => registers.write(rd_short, None, frame),
        // c.addi rd, imm
        (1, 0) if rd == SP => move_sp(frame, imm6)?,
        (1, 0) => registers.write(rd, registers.constant(rd).map(|c| c + imm6), frame),
        // c.jal (RV32) / c.addiw (RV64): writes ra or rd.
        (1, 1) => registers.write(if rd == 0 { 1 } else { rd }, None, frame),
        (1, 2) if rd == SP => return Err("it loads a constant into the stack pointer".to_string()),
        (1, 2) => registers.write(rd, Some(imm6), frame),
        // c.addi16sp
        (1, 3) if rd == SP => {
            let imm = ((bits >> 3) & 0x200) | ((bits >> 2) & 0x10) | ((bits << 1) & 0x40) | ((bits << 4) & 0x180) | ((bits << 3) & 0x20);
            move_sp(frame, sign_extend(imm, 10))?;
        }
        // c.lui
        (1, 3) => registers.write(rd, Some(imm6 << 12), frame),
        // c.srli, c.srai, c.andi, c.sub, c.xor, c.or, c.and on rd'.
        (1, 4) => registers.write(rd_prime, None, frame),
        // c.slli, c.lwsp/c.ldsp into rd, c.fldsp/c.flwsp.
        (2, 0) | (2, 2) | (2, 3) if rd != SP => registers.write(rd, None, frame),
        // Into sp: c.lwsp/c.ldsp set it from memory (c.flwsp of f2 is taken for one).
        (2, 2) | (2, 3) => return Err("it loads the stack pointer from memory".to_string()),
        (2, 0) => return Err("it shifts the stack pointer".to_string()),
        (2, 4) => {
            let add = bits & 0x1000 != 0;
            match (add, rd, rs2) {
                // c.jr / c.jalr (writes ra) / c.ebreak
                (false, _, 0) => {}
                (true, _, 0) => registers.write(1, None, frame),
                // c.mv sp, rs2
                (false, SP, S0) => frame.set_from("s0", true)?,
                (false, SP, other) => frame.set_from(&format!("x{other}"), false)?,
                (false, S0, SP) => {
                    registers.write(S0, None, frame);
                    frame.frame_pointer = true;
                }
                (false, rd, rs2) => registers.write(rd, registers.constant(rs2), frame),
                // c.add sp, rs2
                (true, SP, rs2) => move_sp(frame, registers.constant(rs2).ok_or_else(|| format!("it adds x{rs2} to the stack pointer"))?)?,
                (true, rd, rs2) => registers.write(rd, registers.constant(rd).zip(registers.constant(rs2)).map(|(a, b)| a + b), frame),
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thumb_frame(halfwords: &[u16]) -> Result<u64, String> {
        let bytes: Vec<u8> = halfwords.iter().flat_map(|h| h.to_le_bytes()).collect();
        frame(Machine::Arm, &[Piece::Code { bytes: &bytes, section: &bytes, offset: 0 }], None, false)
    }

    fn riscv_frame(parcels: &[u32]) -> Result<u64, String> {
        // A parcel above 0xffff is a 32-bit instruction.
        let bytes: Vec<u8> =
            parcels.iter().flat_map(|&p| if p & 3 == 3 { p.to_le_bytes().to_vec() } else { (p as u16).to_le_bytes().to_vec() }).collect();
        frame(Machine::Riscv, &[Piece::Code { bytes: &bytes, section: &bytes, offset: 0 }], None, false)
    }

    #[test]
    fn reads_thumb_pushes_and_stack_subtractions() {
        // push {r3, r4, r5, lr}; mov r4, r0; pop {r3, r4, r5, pc}
        assert_eq!(thumb_frame(&[0xb538, 0x4604, 0xbd38]), Ok(16));
        // push {r4-r7, lr}; sub sp, #20; add sp, #20; pop
        assert_eq!(thumb_frame(&[0xb5f0, 0xb085, 0xb005, 0xbdf0]), Ok(40));
        // push.w {r4-r11, lr}; vpush {d8-d9}; sub.w sp, sp, #0x108; subw sp, sp, #0xabc
        assert_eq!(thumb_frame(&[0xe92d, 0x4ff0, 0xed2d, 0x8b04, 0xf5ad, 0x7d84, 0xf6ad, 0x2dbc]), Ok(36 + 16 + 0x108 + 0xabc));
        // vpush {s16-s17} (single registers), str.w lr, [sp, #-4]!, strd r4, r5, [sp, #-8]!
        assert_eq!(thumb_frame(&[0xed2d, 0x8a02, 0xf84d, 0xed04, 0xe96d, 0x4502]), Ok(8 + 4 + 8));
        // A 32-bit instruction is not read as two 16-bit ones: bl (f7ff fffe) then push {lr}.
        assert_eq!(thumb_frame(&[0xf7ff, 0xfffe, 0xb500]), Ok(4));
        assert_eq!(thumb_expand_imm(0x184), 0x0084_0084);
        assert_eq!(thumb_expand_imm(0xf84), 0x108);
    }

    /// A decrement counted once must run once: one a branch can reach again,
    /// and code jumping through a register or into an instruction, is unknown.
    #[test]
    fn thumb_decrements_that_may_run_again_are_unknown() {
        let unknown = [
            // f: push {r4, lr}; subs r0, #1; bne f; pop {r4, pc}
            ("push in a loop", &[0xb510, 0x3801, 0xd1fc, 0xbd10][..], "branches back to 0x0"),
            // push {lr}; g: sub sp, #8; subs r0, #1; b.w g; pop {pc}
            ("sub sp in a loop", &[0xb500, 0xb082, 0x3801, 0xf7ff, 0xbffc, 0xbd00], "branches back to 0x2"),
            // bx r3; push {lr}; pop {pc}
            ("bx before a push", &[0x4718, 0xb500, 0xbd00], "jumps through a register"),
            // push {lr}; mov pc, r3 (Armv6-M's jump table)
            ("mov pc after a push", &[0xb500, 0x469f], "jumps through a register"),
            ("ldr.w pc, [r0]", &[0xb500, 0xf8d0, 0xf000], "jumps through a register"),
            ("ldm r0, {r4, pc}", &[0xb500, 0xe890, 0x8010], "jumps through a register"),
            // push {lr}; b.n to 8, past the code
            ("a branch out", &[0xb500, 0xe001, 0xbd00], "branches out of its code to 0x8"),
            // b.n to 4, the second half of bl
            ("a branch into an instruction", &[0xe000, 0xf7ff, 0xfffe], "into the middle of an instruction at 0x4"),
        ];
        for (what, code, why) in unknown {
            let error = thumb_frame(code).expect_err(what);
            assert!(error.contains(why), "{what}: {error}");
        }
        // push {r4, lr}; sub sp, #8; loop: subs r0, #1; bne loop; add sp, #8; pop {r4, pc}
        assert_eq!(thumb_frame(&[0xb510, 0xb082, 0x3801, 0xd1fd, 0xb002, 0xbd10]), Ok(16));
        // push {lr}; ldr pc, [sp], #4 and pop {pc} return; tbb only goes forward; bl to a relocation's placeholder.
        assert_eq!(thumb_frame(&[0xb500, 0xe8df, 0xf000, 0xf7ff, 0xfffe, 0xf85d, 0xfb04, 0xbd00]), Ok(4));
        // A loop before any decrement: subs r0, #1; bne back; push {lr}; pop {pc}
        assert_eq!(thumb_frame(&[0x3801, 0xd1fd, 0xb500, 0xbd00]), Ok(4));
    }

    #[test]
    fn riscv_decrements_that_may_run_again_are_unknown() {
        let unknown = [
            // f: addi sp, sp, -16; addi a0, a0, -1; bnez a0, f; ret
            ("addi sp in a loop", &[0xff010113, 0xfff50513, 0xfe051ce3, 0x00008067][..], "branches back to 0x0"),
            // f: c.addi16sp sp, -32; c.addi a0, -1; c.bnez a0, f
            ("c.addi16sp in a loop", &[0x713d, 0x157d, 0xfd75, 0x6105, 0x8082], "branches back to 0x0"),
            // c.addi16sp; c.addi; c.nop; c.j to 0
            ("c.j back", &[0x713d, 0x157d, 0x0001, 0xbfed], "branches back to 0x0"),
            // c.addi16sp; c.addi; four c.nop; jal x0 to 0
            ("jal back", &[0x713d, 0x157d, 0x0001, 0x0001, 0x0001, 0x0001, 0xff5ff06f], "branches back to 0x0"),
            // c.jr a5; c.addi16sp sp, -32; c.addi16sp sp, 32; ret
            ("c.jr before a decrement", &[0x8782, 0x713d, 0x6105, 0x8082], "jumps through a register"),
            ("jr a5 before a decrement", &[0x00078067, 0x713d, 0x6105, 0x8082], "jumps through a register"),
        ];
        for (what, code, why) in unknown {
            let error = riscv_frame(code).expect_err(what);
            assert!(error.contains(why), "{what}: {error}");
        }
        // addi sp, sp, -16; loop: addi a0, a0, -1; bnez a0, loop; addi sp, sp, 16; ret
        assert_eq!(riscv_frame(&[0xff010113, 0xfff50513, 0xfe051ee3, 0x01010113, 0x00008067]), Ok(16));
        // c.addi16sp sp, -32; bnez a0 to a relocation's placeholder; c.jr t0 (a millicode return); c.jr ra
        assert_eq!(riscv_frame(&[0x713d, 0x00051063, 0x8282, 0x8082]), Ok(32));
    }

    /// A return through a link register the code wrote (not by a call or a
    /// load from the stack) may go anywhere; `c.jal` is a call that may target this code.
    #[test]
    fn returns_through_link_registers_the_code_wrote_are_unknown() {
        let thumb_unknown: [(&str, &[u16]); 3] = [
            // push {r4, lr}; ...; bx lr
            ("mov lr, r0", &[0xb510, 0x4686, 0x4770]),
            ("ldr.w lr, [r0]", &[0xb510, 0xf8d0, 0xe000, 0x4770]),
            ("add.w lr, lr, #4", &[0xb510, 0xf10e, 0x0e04, 0x46f7]),
        ];
        for (form, code) in thumb_unknown {
            assert!(thumb_frame(code).is_err_and(|why| why.contains("jumps through a register")), "{form}: {:?}", thumb_frame(code));
        }
        // push {r4, lr}; bl (a placeholder); pop.w {r4, lr}; bx lr
        assert_eq!(thumb_frame(&[0xb510, 0xf7ff, 0xfffe, 0xe8bd, 0x4010, 0x4770]), Ok(8));
        // str.w lr, [sp, #-4]!; ldr.w lr, [sp], #4; bx lr
        assert_eq!(thumb_frame(&[0xf84d, 0xed04, 0xf85d, 0xeb04, 0x4770]), Ok(4));
        // push {r4, lr}; mov lr, r0; pop {r4, pc}: the return is not through lr.
        assert_eq!(thumb_frame(&[0xb510, 0x4686, 0xbd10]), Ok(8));
        let riscv_unknown: [(&str, &[u32]); 5] = [
            // addi sp, sp, -16; ...; ret (or c.jr t0)
            ("mv ra, a0", &[0xff010113, 0x00050093, 0x00008067]),
            ("c.mv ra, a0", &[0xff010113, 0x80aa, 0x8082]),
            ("lw ra, 0(a0)", &[0xff010113, 0x00052083, 0x00008067]),
            ("addi t0, t0, 4", &[0xff010113, 0x00428293, 0x8282]),
            ("auipc ra, 0 then no call", &[0xff010113, 0x00000097, 0x00008067]),
        ];
        for (form, code) in riscv_unknown {
            assert!(riscv_frame(code).is_err_and(|why| why.contains("jumps through a register")), "{form}: {:?}", riscv_frame(code));
        }
        // addi sp, sp, -16; sw ra, 12(sp); jal ra (a placeholder); lw ra, 12(sp); addi sp, sp, 16; ret
        assert_eq!(riscv_frame(&[0xff010113, 0x00112623, 0x000000ef, 0x00c12083, 0x01010113, 0x00008067]), Ok(16));
        // call as auipc ra, 0; jalr ra, 0(ra): a call, then ret.
        assert_eq!(riscv_frame(&[0xff010113, 0x00112623, 0x00000097, 0x000080e7, 0x00c12083, 0x01010113, 0x00008067]), Ok(16));
        // A call into the function's own code leaves lr/ra pointing into it:
        // push {r4, lr}; bl to 6; bx lr. addi sp, sp, -16; jal ra to 8 (or c.jal to 6); ret.
        assert!(thumb_frame(&[0xb510, 0xf000, 0xf800, 0x4770]).is_err_and(|why| why.contains("jumps through a register")));
        assert!(riscv_frame(&[0xff010113, 0x004000ef, 0x00008067]).is_err_and(|why| why.contains("jumps through a register")));
        assert!(riscv_frame(&[0xff010113, 0x2009, 0x8082]).is_err_and(|why| why.contains("jumps through a register")));
        // push {lr}; bl back to it (resolved, no relocation): recursion the call graph does not see.
        assert!(thumb_frame(&[0xb500, 0xf7ff, 0xfffd, 0xbd00]).is_err_and(|why| why.contains("branches back to 0x0")));
        // c.addi16sp sp, -32; c.jal back to it.
        assert!(riscv_frame(&[0x713d, 0x3ffd]).is_err_and(|why| why.contains("branches back to 0x0")));
    }

    #[test]
    fn reads_armv6m_frames_set_from_constants() {
        // push {r4, lr}; ldr r4, [pc, #4]; subs r0, #20; add sp, r4; movs r3, #169; lsls r3, r3, #2;
        // add sp, r3; pop {r4, pc}; then the literal pool: .word -712.
        let mut bytes: Vec<u8> =
            [0xb510u16, 0x4c03, 0x3814, 0x44a5, 0x23a9, 0x009b, 0x449d, 0xbd10].iter().flat_map(|h| h.to_le_bytes()).collect();
        let code_len = bytes.len();
        bytes.extend((-712i32).to_le_bytes());
        let code = Piece::Code { bytes: &bytes[..code_len], section: &bytes, offset: 0 };
        assert_eq!(frame(Machine::Arm, &[code], None, false), Ok(8 + 712));
        // A branch target between the load and its use: the value may come from elsewhere.
        // push {r4, lr}; ldr r4, [pc, #4]; b.n +0 (to the next instruction); add sp, r4; pop.
        let mut bytes: Vec<u8> = [0xb510u16, 0x4c02, 0xe7ff, 0x44a5, 0xbd10, 0x46c0].iter().flat_map(|h| h.to_le_bytes()).collect();
        bytes.extend((-712i32).to_le_bytes());
        let code = Piece::Code { bytes: &bytes[..12], section: &bytes, offset: 0 };
        assert!(frame(Machine::Arm, &[code], None, false).unwrap_err().contains("adds r4"));
        // A load from memory (ldr r4, [r0]) is no constant.
        assert!(thumb_frame(&[0x6804, 0x44a5]).unwrap_err().contains("adds r4"));
    }

    #[test]
    fn thumb_frame_pointers_restore_and_other_registers_do_not() {
        // push {r7, lr}; add r7, sp, #0; ...; mov sp, r7; pop {r7, pc}
        assert_eq!(thumb_frame(&[0xb580, 0xaf00, 0x46bd, 0xbd80]), Ok(8));
        // push {r4, r6, r7, lr}; add r7, sp, #8; sub.w sp, r7, #8; pop
        assert_eq!(thumb_frame(&[0xb5d0, 0xaf02, 0xf1a7, 0x0d08, 0xbdd0]), Ok(16));
        // Thumb-1 alloca: mov r3, sp; subs r3, r3, r2; mov sp, r3.
        assert!(thumb_frame(&[0x466b, 0x1a9b, 0x469d]).unwrap_err().contains("from r3"));
        // sub.w sp, sp, r3
        assert!(thumb_frame(&[0xebad, 0x0d03]).unwrap_err().contains("from r3"));
        // add sp, r2
        assert!(thumb_frame(&[0x4495]).unwrap_err().contains("adds r2"));
        assert!(frame(Machine::Arm, &[Piece::Arm], None, false).unwrap_err().contains("A32"));
        assert!(frame(Machine::X86_64, &[Piece::Code { bytes: &[0x55], section: &[0x55], offset: 0 }], None, false)
            .unwrap_err()
            .contains("x86-64 machine code is not read"));
    }

    /// Every form that sets the Thumb stack pointer from something not a
    /// constant the reader counts makes the frame unknown, never smaller.
    #[test]
    fn thumb_stack_pointer_writes_it_cannot_count_are_unknown() {
        let unknown: [(&str, &[u16]); 22] = [
            ("ldr.w sp, [r0]", &[0xf8d0, 0xd000]),
            ("ldr sp, [r0, #-4]", &[0xf850, 0xdc04]),
            ("ldr.w sp, [pc, #8]", &[0xf8df, 0xd008]),
            ("mov sp, r0", &[0x4685]),
            ("add sp, r0", &[0x4485]),
            ("add.w sp, sp, r0", &[0xeb0d, 0x0d00]),
            ("sub.w sp, sp, r1", &[0xebad, 0x0d01]),
            ("mov.w sp, #4", &[0xf04f, 0x0d04]),
            ("movw sp, #100", &[0xf240, 0x0d64]),
            ("msr msp, r0", &[0xf380, 0x8808]),
            ("msr psp, r1", &[0xf381, 0x8809]),
            ("msr control, r0", &[0xf380, 0x8814]),
            ("msr msp_ns, r0", &[0xf380, 0x8888]),
            ("mrs sp, msp", &[0xf3ef, 0x8d08]),
            ("ldm r0, {r4, sp}", &[0xe890, 0x2010]),
            ("pop.w {r4, sp}", &[0xe8bd, 0x2010]),
            ("ldmdb sp!, {r0}", &[0xe93d, 0x0001]),
            ("ldrd sp, r1, [r0]", &[0xe9d0, 0xd100]),
            ("ldrex sp, [r0]", &[0xe850, 0xdf00]),
            ("strex sp, r1, [r0]", &[0xe840, 0x1d00]),
            ("vmov sp, s0", &[0xee10, 0xda10]),
            ("vmov sp, r1, d0", &[0xec51, 0xdb10]),
        ];
        for (form, code) in unknown {
            // push {r4, lr} first: the count so far must not stand.
            let code: Vec<u16> = [0xb510].iter().chain(code).copied().collect();
            assert!(thumb_frame(&code).is_err(), "{form}: {:?}", thumb_frame(&code));
        }
        let more: [(&str, &[u16]); 3] =
            [("vldmdb sp!, {d8}", &[0xed3d, 0x8b02]), ("sdiv sp, r0, r1", &[0xfb90, 0xfdf1]), ("umull sp, r1, r2, r3", &[0xfba2, 0xd103])];
        for (form, code) in more {
            assert!(thumb_frame(code).is_err(), "{form}: {:?}", thumb_frame(code));
        }
        // Raising it by a constant gives nothing back; a load lowering it with writeback is counted.
        let counted: [(&str, &[u16], u64); 5] = [
            ("pop.w {r4-r11, pc}", &[0xe8bd, 0x8ff0], 0),
            ("vpop {d8}", &[0xecbd, 0x8b02], 0),
            ("ldr.w r0, [sp], #4", &[0xf85d, 0x0b04], 0),
            ("ldr r0, [sp, #-8]!", &[0xf85d, 0x0d08], 8),
            ("msr primask, r0", &[0xf380, 0x8810], 0),
        ];
        for (form, code, bytes) in counted {
            assert_eq!(thumb_frame(code), Ok(bytes), "{form}");
        }
    }

    /// Every write to RISC-V's sp other than a constant adjustment makes the frame unknown.
    #[test]
    fn riscv_stack_pointer_writes_it_cannot_count_are_unknown() {
        let unknown: [(&str, &[u32]); 9] = [
            ("lw sp, 0(a0)", &[0x00052103]),
            ("c.lwsp sp, 0(sp)", &[0x4102]),
            ("csrrw sp, mscratch, sp", &[0x34011173]),
            ("jal sp, 0", &[0x0000016f]),
            ("mv sp, a0", &[0x00050113]),
            ("c.mv sp, a0", &[0x812a]),
            ("c.add sp, a0", &[0x912a]),
            ("add sp, sp, a0", &[0x00a10133]),
            ("c.li sp, 0", &[0x4101]),
        ];
        for (form, code) in unknown {
            let code: Vec<u32> = [0x1141].iter().chain(code).copied().collect();
            assert!(riscv_frame(&code).is_err(), "{form}: {:?}", riscv_frame(&code));
        }
    }

    #[test]
    fn reads_riscv_stack_adjustments() {
        // addi sp, sp, -48; sw ra, 44(sp); addi sp, sp, 48; ret
        assert_eq!(riscv_frame(&[0xfd010113, 0x02112623, 0x03010113, 0x8082]), Ok(48));
        // c.addi16sp sp, -64 (7139); c.addi sp, -16 (1141); c.addi16sp sp, 64 (6121)
        assert_eq!(riscv_frame(&[0x7139, 0x1141, 0x6121]), Ok(80));
        // c.addi16sp sp, -512 (7101)
        assert_eq!(riscv_frame(&[0x7101]), Ok(512));
        // lui t0, 1; sub sp, sp, t0 (a 4 KiB frame); li t1, -32; sub sp, sp, t1 (raises it).
        assert_eq!(riscv_frame(&[0x000012b7, 0x40510133, 0x5301, 0x40610133]), Ok(4096));
        // li t0, -2048 as addi t0, x0, -2048; add sp, sp, t0
        assert_eq!(riscv_frame(&[0x80000293, 0x00510133]), Ok(2048));
        // mv s0, sp as addi s0, sp, 0; ...; mv sp, s0 (c.mv)
        assert_eq!(riscv_frame(&[0x1141, 0x00010413, 0x8122]), Ok(16));
        // sub sp, sp, a0: alloca.
        assert!(riscv_frame(&[0x40a10133]).unwrap_err().contains("by x10"));
        // s0 clobbered (mv s0, a0) before mv sp, s0.
        assert!(riscv_frame(&[0x00010413, 0x842a, 0x8122]).unwrap_err().contains("from s0"));
    }
}
