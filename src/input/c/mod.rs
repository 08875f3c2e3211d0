//! The C front end: one [lexer] for an archive's C text, the text
//! primitives the scanners share built on it ([`text`]), and the limits a C
//! text must keep before any of them reads it ([`limits`]).

pub(crate) mod lexer;
pub(crate) mod limits;
pub(crate) mod text;
// The build reads it from plan33 step 3 (`CFiles::parse`) on; until then
// its tests and the `c_parser` fuzz target do.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) mod parser;

pub(crate) use limits::{check_macros, check_source, define_lines};
pub(crate) use text::{
    called_functions, closing, function_definitions, integer, is_static, split_top_level, strip_comments, trailing_identifier_start,
    FunctionIndex,
};
