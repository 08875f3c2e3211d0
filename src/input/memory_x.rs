//! A cortex-m-rt style `memory.x`: its `MEMORY` regions, `REGION_ALIAS`es and
//! the `SECTIONS` entries that say which region an input section goes to.
//! Everything else in the file (symbol assignments, `INSERT`, `PROVIDE`) is
//! the linker's business and is skipped. Numbers are checked; an expression
//! this reader cannot evaluate is refused with its line. The file is a user's,
//! but may come from anywhere: its size, nesting and patterns are bounded.

use crate::error::{Error, ErrorKind, Result};

/// The largest `memory.x` read (real ones are a few KiB).
pub(crate) const MAX_BYTES: u64 = 4 << 20;
/// How deeply parentheses and unary minus may nest in one expression.
const MAX_EXPRESSION_DEPTH: usize = 64;
/// The longest input section pattern (a Rust function's section name can be a few hundred characters).
const MAX_PATTERN_CHARS: usize = 1024;
/// How many input section patterns all of `SECTIONS` may have.
const MAX_PATTERNS: usize = 1024;

/// One `MEMORY` region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// Its name, as `> NAME` and `ORIGIN(NAME)` use it.
    pub name: String,
    /// First address.
    pub origin: u64,
    /// Size in bytes.
    pub length: u64,
    /// The line of `memory.x` that declares it.
    pub line: usize,
}

/// An output section of a `SECTIONS` block: the input sections it takes and
/// the region it goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OutputSection {
    /// Input section name patterns (`.sram2`, `.sram2.*`).
    inputs: Vec<Glob>,
    /// `> REGION`, when given.
    region: Option<String>,
    line: usize,
}

/// Where the linker script sends an input section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement<'a> {
    /// An output section that takes it goes to this region.
    Region(&'a Region),
    /// An output section takes it but names no region (`> REGION`) at `line`.
    Unplaced { line: usize },
    /// No output section of the file takes it.
    NotTaken,
}

/// A parsed `memory.x`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryLayout {
    /// In the file's order.
    pub regions: Vec<Region>,
    /// `REGION_ALIAS("alias", REGION)` pairs.
    aliases: Vec<(String, String)>,
    sections: Vec<OutputSection>,
}

impl MemoryLayout {
    /// The region `name` names, directly or through `REGION_ALIAS`.
    pub fn region(&self, name: &str) -> Option<&Region> {
        let mut name = name;
        // Aliases of aliases, as far as there are aliases (no cycles can loop longer).
        for _ in 0..=self.aliases.len() {
            if let Some(region) = self.regions.iter().find(|r| r.name == name) {
                return Some(region);
            }
            name = self.aliases.iter().find(|(alias, _)| alias == name).map(|(_, target)| target.as_str())?;
        }
        None
    }

    /// The region the first output section taking input section `name` goes to.
    pub fn placement(&self, name: &str) -> Placement<'_> {
        let name: Vec<char> = name.chars().collect();
        let Some(section) = self.sections.iter().find(|s| s.inputs.iter().any(|pattern| pattern.matches(&name))) else {
            return Placement::NotTaken;
        };
        match section.region.as_deref().and_then(|region| self.region(region)) {
            Some(region) => Placement::Region(region),
            None => Placement::Unplaced { line: section.line },
        }
    }
}

/// Parses the text of a `memory.x`.
///
/// # Errors
/// A syntax error, an unknown region in `ORIGIN`/`LENGTH`, an overflowing or
/// unevaluable expression, a region declared twice, `INCLUDE`, or a limit
/// passed (expression nesting, pattern length and count), each with its line.
pub fn parse(text: &str) -> Result<MemoryLayout> {
    let tokens = tokenize(text)?;
    // Anywhere (in MEMORY and SECTIONS too): the included file would change what the linker sees.
    if let Some((_, line)) = tokens.iter().find(|(token, _)| matches!(token, Token::Word(word) if word == "INCLUDE")) {
        return Err(Error::new(ErrorKind::Config, format!("line {line}: `INCLUDE` is not followed"))
            .help("write the regions into memory.x itself, or give Builder::memory_x the included file"));
    }
    let mut parser = Parser { tokens: &tokens, at: 0, depth: 0, patterns: 0, layout: MemoryLayout::default() };
    parser.script()?;
    Ok(parser.layout)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A name, a number or a section pattern: ld's word characters.
    Word(String),
    /// A quoted string, quotes removed.
    Quoted(String),
    /// One punctuation character, or `<<`/`>>`.
    Punct(&'static str),
}

/// Characters that start or continue a name or a number, besides letters and digits.
const WORD_CHARS: &str = "_.$";
/// Wildcards that continue a section pattern (a word starting with `.`), where
/// in an expression they would be operators.
const PATTERN_CHARS: &str = "*?[]-^!";
/// One-character operators and brackets.
const PUNCTUATION: &str = "{}():;,=+*/%&|<>-~!?";

fn tokenize(text: &str) -> Result<Vec<(Token, usize)>> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            c if c.is_whitespace() => {}
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let start = line;
                let mut previous = ' ';
                loop {
                    match chars.next() {
                        Some('/') if previous == '*' => break,
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            previous = c;
                        }
                        None => return Err(syntax(start, "a comment is never closed (`*/`)")),
                    }
                }
            }
            '"' => {
                let mut word = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\n') | None => return Err(syntax(line, "a string is never closed (`\"`)")),
                        Some(c) => word.push(c),
                    }
                }
                tokens.push((Token::Quoted(word), line));
            }
            '<' | '>' if chars.peek() == Some(&c) => {
                chars.next();
                tokens.push((Token::Punct(if c == '<' { "<<" } else { ">>" }), line));
            }
            c if c.is_alphanumeric() || WORD_CHARS.contains(c) => {
                let mut word = String::from(c);
                while let Some(&next) = chars.peek() {
                    if next.is_alphanumeric() || WORD_CHARS.contains(next) || (c == '.' && PATTERN_CHARS.contains(next)) {
                        word.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push((Token::Word(word), line));
            }
            _ => match PUNCTUATION.find(c) {
                Some(index) => tokens.push((Token::Punct(&PUNCTUATION[index..=index]), line)),
                None => return Err(syntax(line, &format!("unexpected character `{}`", c.escape_default()))),
            },
        }
    }
    Ok(tokens)
}

fn syntax(line: usize, what: &str) -> Error {
    Error::new(ErrorKind::Config, format!("line {line}: {what}"))
        .help("memory.x is a GNU ld script fragment: MEMORY { NAME (rwx) : ORIGIN = 0x20000000, LENGTH = 64K } and optionally SECTIONS and REGION_ALIAS")
}

struct Parser<'t> {
    tokens: &'t [(Token, usize)],
    at: usize,
    /// Parentheses and unary minus open in the expression being read.
    depth: usize,
    /// Input section patterns read so far.
    patterns: usize,
    layout: MemoryLayout,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|(token, _)| token)
    }

    /// The line of the next token (of the last one at the end).
    fn line(&self) -> usize {
        self.tokens.get(self.at).or(self.tokens.last()).map_or(1, |(_, line)| *line)
    }

    fn next(&mut self) -> Option<&Token> {
        let token = self.tokens.get(self.at).map(|(token, _)| token);
        self.at += 1;
        token
    }

    fn expect(&mut self, punct: &str) -> Result<()> {
        let line = self.line();
        match self.next() {
            Some(Token::Punct(p)) if *p == punct => Ok(()),
            Some(other) => Err(syntax(line, &format!("expected `{punct}`, found {}", describe(other)))),
            None => Err(syntax(line, &format!("expected `{punct}`, found the end of the file"))),
        }
    }

    fn word(&mut self, what: &str) -> Result<String> {
        let line = self.line();
        match self.next() {
            Some(Token::Word(word)) => Ok(word.clone()),
            Some(other) => Err(syntax(line, &format!("expected {what}, found {}", describe(other)))),
            None => Err(syntax(line, &format!("expected {what}, found the end of the file"))),
        }
    }

    fn script(&mut self) -> Result<()> {
        while let Some(token) = self.peek() {
            match token {
                Token::Word(word) if word == "MEMORY" => {
                    self.at += 1;
                    self.memory()?;
                }
                Token::Word(word) if word == "SECTIONS" => {
                    self.at += 1;
                    self.sections()?;
                }
                Token::Word(word) if word == "REGION_ALIAS" => {
                    self.at += 1;
                    self.region_alias()?;
                }
                _ => self.skip_statement()?,
            }
        }
        Ok(())
    }

    /// Skips one statement this reader has no use for: to its `;`, or over its `{ }` block.
    fn skip_statement(&mut self) -> Result<()> {
        let line = self.line();
        let mut depth = 0usize;
        while let Some(token) = self.next() {
            match token {
                Token::Punct("(" | "{") => depth += 1,
                Token::Punct(")") => depth = depth.checked_sub(1).ok_or_else(|| syntax(line, "unbalanced `)`"))?,
                Token::Punct("}") => {
                    depth = depth.checked_sub(1).ok_or_else(|| syntax(line, "unbalanced `}`"))?;
                    if depth == 0 {
                        // A block statement may end with `;` too.
                        if self.peek() == Some(&Token::Punct(";")) {
                            self.at += 1;
                        }
                        return Ok(());
                    }
                }
                Token::Punct(";") if depth == 0 => return Ok(()),
                _ => {}
            }
        }
        if depth == 0 {
            Ok(())
        } else {
            Err(syntax(line, "this statement's brackets are never closed"))
        }
    }

    fn memory(&mut self) -> Result<()> {
        self.expect("{")?;
        loop {
            let line = self.line();
            if self.peek() == Some(&Token::Punct("}")) {
                self.at += 1;
                return Ok(());
            }
            let name = self.word("a region name or `}`")?;
            if self.peek() == Some(&Token::Punct("(")) {
                // Attributes: (rwx), (!w)...
                self.at += 1;
                while self.peek() != Some(&Token::Punct(")")) {
                    if self.next().is_none() {
                        return Err(syntax(line, "the region's attributes are never closed (`)`)"));
                    }
                }
                self.at += 1;
            }
            self.expect(":")?;
            let origin = self.attribute(&["ORIGIN", "org", "o"])?;
            if self.peek() == Some(&Token::Punct(",")) {
                self.at += 1;
            }
            let length = self.attribute(&["LENGTH", "len", "l"])?;
            if self.layout.regions.iter().any(|r| r.name == name) {
                return Err(syntax(line, &format!("region `{name}` is declared twice")));
            }
            if origin.checked_add(length).is_none_or(|end| end > 1 << 40) {
                return Err(syntax(line, &format!("region `{name}` ends past any address space ({origin:#x} + {length:#x})")));
            }
            self.layout.regions.push(Region { name, origin, length, line });
        }
    }

    /// `ORIGIN = expr` (or one of its other spellings).
    fn attribute(&mut self, spellings: &[&str]) -> Result<u64> {
        let line = self.line();
        let word = self.word(&format!("`{} =`", spellings[0]))?;
        if !spellings.contains(&word.as_str()) {
            return Err(syntax(line, &format!("expected `{} =`, found `{word}`", spellings[0])));
        }
        self.expect("=")?;
        self.expression()
    }

    fn region_alias(&mut self) -> Result<()> {
        let line = self.line();
        self.expect("(")?;
        let alias = match self.next() {
            Some(Token::Quoted(alias) | Token::Word(alias)) => alias.clone(),
            _ => return Err(syntax(line, "REGION_ALIAS takes (\"ALIAS\", REGION)")),
        };
        self.expect(",")?;
        let target = self.word("a region name")?;
        self.expect(")")?;
        if self.peek() == Some(&Token::Punct(";")) {
            self.at += 1;
        }
        self.layout.aliases.push((alias, target));
        Ok(())
    }

    /// A `SECTIONS { … }` block: each output section's input patterns and `> REGION`.
    fn sections(&mut self) -> Result<()> {
        self.expect("{")?;
        loop {
            let line = self.line();
            match self.peek() {
                None => return Err(syntax(line, "the SECTIONS block is never closed (`}`)")),
                Some(Token::Punct("}")) => {
                    self.at += 1;
                    return Ok(());
                }
                Some(Token::Punct(";")) => self.at += 1,
                Some(Token::Word(_)) if self.is_output_section() => self.output_section()?,
                _ => self.skip_statement()?,
            }
        }
    }

    /// Whether the next tokens start `NAME [address] [(TYPE)] : … {`, not an assignment.
    fn is_output_section(&self) -> bool {
        let rest = &self.tokens[self.at..];
        let mut depth = 0usize;
        for (token, _) in rest.iter().skip(1) {
            match token {
                Token::Punct("(") => depth += 1,
                Token::Punct(")") => depth = depth.saturating_sub(1),
                Token::Punct(":") if depth == 0 => return true,
                Token::Punct("=" | ";" | "{" | "}") if depth == 0 => return false,
                _ => {}
            }
        }
        false
    }

    fn output_section(&mut self) -> Result<()> {
        let line = self.line();
        // The name and everything up to the contents' `{`.
        while self.peek().is_some_and(|token| token != &Token::Punct("{")) {
            self.at += 1;
        }
        self.expect("{")?;
        let mut inputs = Vec::new();
        let mut depth = 1usize;
        let mut parens = 0usize;
        while depth > 0 {
            let token_line = self.line();
            match self.next() {
                None => return Err(syntax(line, "this output section's `{` is never closed")),
                Some(Token::Punct("{")) => depth += 1,
                Some(Token::Punct("}")) => depth -= 1,
                Some(Token::Punct("(")) => parens += 1,
                Some(Token::Punct(")")) => parens = parens.saturating_sub(1),
                // Inside `file(…)`: section name patterns (`KEEP`, `SORT` only add parentheses).
                Some(Token::Word(word)) if parens > 0 && (word.starts_with('.') || word.contains(['*', '?', '['])) => {
                    let glob = Glob::new(word).map_err(|why| syntax(token_line, &why))?;
                    self.patterns += 1;
                    if self.patterns > MAX_PATTERNS {
                        return Err(syntax(token_line, &format!("SECTIONS has more than {MAX_PATTERNS} input section patterns")));
                    }
                    inputs.push(glob);
                }
                Some(_) => {}
            }
        }
        // `> REGION`, `AT> LMA`, `:phdr`, `= fill`, in any combination.
        let mut region = None;
        loop {
            match self.peek() {
                Some(Token::Punct(">")) => {
                    self.at += 1;
                    region = Some(self.word("a region name after `>`")?);
                }
                Some(Token::Word(word)) if word == "AT" => {
                    self.at += 1;
                    self.expect(">")?;
                    self.word("a region name after `AT>`")?;
                }
                Some(Token::Punct(":")) => {
                    self.at += 1;
                    self.word("a program header name")?;
                }
                Some(Token::Punct("=")) => {
                    self.at += 1;
                    self.expression()?;
                }
                Some(Token::Punct(",")) => self.at += 1,
                _ => break,
            }
        }
        self.layout.sections.push(OutputSection { inputs, region, line });
        Ok(())
    }

    /// An expression of numbers, `ORIGIN(R)`, `LENGTH(R)` and C's integer operators
    /// (ld's precedence, which is C's), evaluated in checked 64-bit arithmetic.
    fn expression(&mut self) -> Result<u64> {
        self.binary(0)
    }

    fn binary(&mut self, level: usize) -> Result<u64> {
        const LEVELS: &[&[&str]] = &[&["|"], &["&"], &["<<", ">>"], &["+", "-"], &["*", "/", "%"]];
        let Some(operators) = LEVELS.get(level) else { return self.unary() };
        let mut value = self.binary(level + 1)?;
        while let Some(&Token::Punct(op)) = self.peek() {
            if !operators.contains(&op) {
                break;
            }
            let line = self.line();
            self.at += 1;
            let right = self.binary(level + 1)?;
            let result = match op {
                "|" => Some(value | right),
                "&" => Some(value & right),
                "<<" => u32::try_from(right).ok().and_then(|shift| value.checked_shl(shift)).filter(|v| v >> right == value),
                ">>" => u32::try_from(right).ok().and_then(|shift| value.checked_shr(shift)),
                "+" => value.checked_add(right),
                "-" => value.checked_sub(right),
                "*" => value.checked_mul(right),
                "/" => value.checked_div(right),
                _ => value.checked_rem(right),
            };
            value = result.ok_or_else(|| syntax(line, &format!("`{value:#x} {op} {right:#x}` overflows or divides by zero")))?;
        }
        Ok(value)
    }

    /// Opens one more level of parentheses or unary minus: the parser
    /// recurses once per level, so their depth is bounded.
    fn nest(&mut self, line: usize) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_EXPRESSION_DEPTH {
            return Err(syntax(
                line,
                &format!("the expression nests parentheses and unary minus deeper than {MAX_EXPRESSION_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<u64> {
        let line = self.line();
        match self.next().cloned() {
            Some(Token::Punct("(")) => {
                self.nest(line)?;
                let value = self.expression()?;
                self.expect(")")?;
                self.depth -= 1;
                Ok(value)
            }
            Some(Token::Punct("-")) => {
                self.nest(line)?;
                let value = self.unary()?;
                self.depth -= 1;
                if value == 0 {
                    Ok(0)
                } else {
                    Err(syntax(line, "a negative value is not an address or a size"))
                }
            }
            Some(Token::Word(word)) if matches!(word.as_str(), "ORIGIN" | "LENGTH") => {
                self.expect("(")?;
                let name = self.word("a region name")?;
                self.expect(")")?;
                let region = self
                    .layout
                    .region(&name)
                    .ok_or_else(|| syntax(line, &format!("`{word}({name})`: no region `{name}` is declared before this line")))?;
                Ok(if word == "ORIGIN" { region.origin } else { region.length })
            }
            Some(Token::Word(word)) => number(&word).ok_or_else(|| {
                syntax(line, &format!("`{word}` is not a number, ORIGIN(region) or LENGTH(region): mlf-build cannot evaluate it"))
            }),
            Some(other) => Err(syntax(line, &format!("expected a number, found {}", describe(&other)))),
            None => Err(syntax(line, "expected a number, found the end of the file")),
        }
    }
}

/// ld's integer syntax: decimal, `0x` hex, `0` octal, with an optional `K` or
/// `M` multiplier (`G` too, as newer ld accepts).
fn number(word: &str) -> Option<u64> {
    let (digits, scale) = match word.char_indices().last()? {
        (at, 'K' | 'k') => (&word[..at], 1 << 10),
        (at, 'M' | 'm') => (&word[..at], 1 << 20),
        (at, 'G' | 'g') => (&word[..at], 1 << 30),
        _ => (word, 1),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    value.checked_mul(scale)
}

fn describe(token: &Token) -> String {
    match token {
        Token::Word(word) => format!("`{word}`"),
        Token::Quoted(text) => format!("\"{text}\""),
        Token::Punct(p) => format!("`{p}`"),
    }
}

/// One piece of an input section pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum GlobPart {
    /// `*`: any run of characters.
    Star,
    /// `?`: any one character.
    Any,
    /// `[…]`: one character in (or, negated, not in) the ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Literal(char),
}

/// An input section pattern with ld's wildcards: `*`, `?` and `[…]` classes
/// (with `^`/`!` negation and ranges), read once, matched in time bounded by
/// the pattern's length times the name's.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Glob(Vec<GlobPart>);

impl Glob {
    fn new(pattern: &str) -> std::result::Result<Glob, String> {
        let chars: Vec<char> = pattern.chars().collect();
        if chars.len() > MAX_PATTERN_CHARS {
            return Err(format!("an input section pattern of {} characters is longer than the limit of {MAX_PATTERN_CHARS}", chars.len()));
        }
        let mut parts = Vec::new();
        let mut at = 0;
        while at < chars.len() {
            let part = match chars[at] {
                // `**` matches what `*` does.
                '*' if parts.last() == Some(&GlobPart::Star) => None,
                '*' => Some(GlobPart::Star),
                '?' => Some(GlobPart::Any),
                '[' => match chars[at + 1..].iter().skip(1).position(|&c| c == ']').map(|p| at + 2 + p) {
                    Some(close) => {
                        let (negated, class) = match chars[at + 1] {
                            '^' | '!' => (true, &chars[at + 2..close]),
                            _ => (false, &chars[at + 1..close]),
                        };
                        let mut ranges = Vec::new();
                        let mut i = 0;
                        while i < class.len() {
                            if i + 2 < class.len() && class[i + 1] == '-' {
                                ranges.push((class[i], class[i + 2]));
                                i += 3;
                            } else {
                                ranges.push((class[i], class[i]));
                                i += 1;
                            }
                        }
                        at = close;
                        Some(GlobPart::Class { negated, ranges })
                    }
                    // An unclosed `[` is itself.
                    None => Some(GlobPart::Literal('[')),
                },
                c => Some(GlobPart::Literal(c)),
            };
            parts.extend(part);
            at += 1;
        }
        Ok(Glob(parts))
    }

    fn matches_one(part: &GlobPart, c: char) -> bool {
        match part {
            GlobPart::Star => false,
            GlobPart::Any => true,
            GlobPart::Class { negated, ranges } => ranges.iter().any(|&(low, high)| (low..=high).contains(&c)) != *negated,
            GlobPart::Literal(literal) => *literal == c,
        }
    }

    /// Whether `name` matches: on a mismatch after a `*`, the `*` takes one
    /// more character and matching resumes after it; only the last `*` is
    /// ever retried, which is enough because a later `*` can take whatever an
    /// earlier one would have.
    fn matches(&self, name: &[char]) -> bool {
        let parts = &self.0;
        let (mut p, mut n) = (0, 0);
        // The part after the last `*` seen, and the first name character it has not taken.
        let mut retry: Option<(usize, usize)> = None;
        while n < name.len() {
            match parts.get(p) {
                Some(GlobPart::Star) => {
                    p += 1;
                    retry = Some((p, n));
                }
                Some(part) if Glob::matches_one(part, name[n]) => {
                    p += 1;
                    n += 1;
                }
                _ => match retry {
                    Some((after_star, taken)) => {
                        p = after_star;
                        n = taken + 1;
                        retry = Some((after_star, n));
                    }
                    None => return false,
                },
            }
        }
        parts[p..].iter().all(|part| *part == GlobPart::Star)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORTEX_M_RT: &str = "
/* Linker script for the STM32F303VCT6 */
MEMORY
{
  /* NOTE 1 K = 1 KiBi = 1024 bytes */
  FLASH : ORIGIN = 0x08000000, LENGTH = 256K
  RAM : ORIGIN = 0x20000000, LENGTH = 40K
  CCRAM (rwx) : org = 0x10000000, len = 8 * 1024
  SRAM2 : ORIGIN = ORIGIN(RAM) + LENGTH(RAM), LENGTH = 0x2000 - 4 * (2 + 2)
}

_stack_start = ORIGIN(CCRAM) + LENGTH(CCRAM);

SECTIONS
{
  .ccmram (NOLOAD) : ALIGN(4)
  {
    *(.ccmram .ccmram.*);
    . = ALIGN(4);
  } > CCRAM
  .sram2 (NOLOAD) : { KEEP(*(.sram2*)) } >SRAM2 AT> FLASH
  .unplaced : { *(.nowhere) }
} INSERT AFTER .bss;
REGION_ALIAS(\"REGION_BSS\", RAM);
";

    #[test]
    fn reads_regions_expressions_aliases_and_placements() {
        let layout = parse(CORTEX_M_RT).unwrap();
        let names: Vec<(&str, u64, u64, usize)> = layout.regions.iter().map(|r| (r.name.as_str(), r.origin, r.length, r.line)).collect();
        assert_eq!(
            names,
            [
                ("FLASH", 0x0800_0000, 256 * 1024, 6),
                ("RAM", 0x2000_0000, 40 * 1024, 7),
                ("CCRAM", 0x1000_0000, 8192, 8),
                ("SRAM2", 0x2000_a000, 0x2000 - 16, 9)
            ]
        );
        assert_eq!(layout.region("REGION_BSS").map(|r| r.name.as_str()), Some("RAM"));
        assert_eq!(layout.placement(".sram2").clone(), Placement::Region(&layout.regions[3]));
        assert_eq!(layout.placement(".sram2.workspace"), Placement::Region(&layout.regions[3]));
        assert_eq!(layout.placement(".ccmram.x"), Placement::Region(&layout.regions[2]));
        assert_eq!(layout.placement(".nowhere"), Placement::Unplaced { line: 22 });
        assert_eq!(layout.placement(".bss"), Placement::NotTaken);
    }

    #[test]
    fn numbers_take_ld_suffixes_and_bases() {
        assert_eq!(number("64K"), Some(65536));
        assert_eq!(number("2M"), Some(2 << 20));
        assert_eq!(number("0x1000"), Some(4096));
        assert_eq!(number("010"), Some(8));
        assert_eq!(number("0"), Some(0));
        assert_eq!(number("RAM"), None);
        assert_eq!(number("99999999999999999999K"), None);
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("MEMORY {\n RAM : ORIGIN = 0x2000, LENGTH = 4K\n RAM : ORIGIN = 0, LENGTH = 1\n}", "line 3: region `RAM` is declared twice"),
            ("MEMORY {\n RAM : ORIGIN = _start, LENGTH = 4K\n}", "line 2: `_start` is not a number"),
            ("MEMORY {\n RAM : ORIGIN = ORIGIN(FLASH), LENGTH = 4K\n}", "line 2: `ORIGIN(FLASH)`: no region `FLASH`"),
            ("MEMORY {\n RAM : ORIGIN = 0xffffffffffffffff + 1, LENGTH = 4K\n}", "line 2: `0xffffffffffffffff + 0x1` overflows"),
            ("MEMORY {\n RAM : LENGTH = 4K\n}", "line 2: expected `ORIGIN =`, found `LENGTH`"),
            ("MEMORY {\n RAM : ORIGIN = 0, LENGTH = 4K\n", "line 2: expected a region name or `}`, found the end of the file"),
            ("/* never closed\nMEMORY {}", "line 1: a comment is never closed"),
            ("MEMORY {\n RAM : ORIGIN = 0, LENGTH = 4K / 0\n}", "divides by zero"),
            ("INCLUDE other.x", "`INCLUDE` is not followed"),
        ];
        for (text, expected) in cases {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn nesting_patterns_and_include_are_bounded() {
        let started = std::time::Instant::now();
        let region = |expression: &str| format!("MEMORY {{\n RAM : ORIGIN = 0,\n LENGTH = {expression}\n}}");
        let deep = 100_000;
        let parens = region(&format!("{}4K{}", "(".repeat(deep), ")".repeat(deep)));
        let minus = region(&format!("{}0", "-".repeat(deep)));
        let mixed = region(&"-(".repeat(deep));
        for text in [parens, minus, mixed] {
            let error = parse(&text).unwrap_err().to_string();
            assert!(
                error.contains(&format!(
                    "line 3: the expression nests parentheses and unary minus deeper than {MAX_EXPRESSION_DEPTH} levels"
                )),
                "{error}"
            );
        }
        let nested = region(&format!("{}4K{}", "(".repeat(MAX_EXPRESSION_DEPTH), ")".repeat(MAX_EXPRESSION_DEPTH)));
        assert_eq!(parse(&nested).unwrap().regions[0].length, 4096);
        assert_eq!(parse(&region(&format!("{}0 + 8", "-".repeat(MAX_EXPRESSION_DEPTH)))).unwrap().regions[0].length, 8);

        // A pattern of many stars that almost matches: no backtracking blow-up.
        let stars = format!("SECTIONS {{\n .x : {{ *(.{}b) }} > RAM\n}}", "*a".repeat(120));
        let layout = parse(&format!("{}\n{stars}", region("4K"))).unwrap();
        assert_eq!(layout.placement(&format!(".{}", "a".repeat(10_000))), Placement::NotTaken);
        assert!(matches!(layout.placement(&format!(".{}b", "a".repeat(10_000))), Placement::Region(_)));
        let long = format!("SECTIONS {{\n .x : {{ *(.{}) }}\n}}", "*".repeat(MAX_PATTERN_CHARS));
        let error = parse(&long).unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "line 2: an input section pattern of {} characters is longer than the limit of {MAX_PATTERN_CHARS}",
                MAX_PATTERN_CHARS + 1
            )),
            "{error}"
        );
        let many = format!("SECTIONS {{\n .x : {{ *({}) }}\n}}", ".a ".repeat(MAX_PATTERNS + 1));
        let error = parse(&many).unwrap_err().to_string();
        assert!(error.contains(&format!("line 2: SECTIONS has more than {MAX_PATTERNS} input section patterns")), "{error}");

        for (text, line) in [
            ("SECTIONS {\n .x : { *(.x) }\n INCLUDE more.x\n}", 3),
            ("MEMORY {\n INCLUDE regions.x\n}", 2),
            ("SECTIONS {\n .x : {\n  INCLUDE inputs.x\n }\n}", 3),
        ] {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.contains(&format!("line {line}: `INCLUDE` is not followed")), "{text:?}: {error}");
        }
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    }

    fn glob_matches(pattern: &str, name: &str) -> bool {
        Glob::new(pattern).unwrap().matches(&name.chars().collect::<Vec<_>>())
    }

    #[test]
    fn globs_match_as_ld_does() {
        assert!(glob_matches(".sram2*", ".sram2"));
        assert!(glob_matches(".sram2*", ".sram2.x"));
        assert!(!glob_matches(".sram2.*", ".sram2"));
        assert!(glob_matches(".bss.[a-c]?", ".bss.b1"));
        assert!(!glob_matches(".bss.[!a-c]?", ".bss.b1"));
        assert!(glob_matches("*", ".anything"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches(".a*b*c", ".axxbyybc"));
        assert!(!glob_matches(".a*b*c", ".axxbyybcd"));
        assert!(glob_matches(".a[bc", ".a[bc"));
        assert!(glob_matches("*.data.*x", ".data.yx.data.zx"));
        assert!(glob_matches("[]]", "]"));
    }
}
