//! The C front end: one [lexer] for an archive's C text, the text
//! primitives the scanners share built on it ([`text`]), and the limits a C
//! text must keep before any of them reads it ([`limits`]).

pub(crate) mod lexer;
pub(crate) mod limits;
pub(crate) mod text;

pub(crate) use limits::{check_macros, check_source, define_lines};
pub(crate) use text::{
    called_functions, closing, function_definitions, integer, is_static, split_top_level, strip_comments, trailing_identifier_start,
    FunctionIndex,
};
