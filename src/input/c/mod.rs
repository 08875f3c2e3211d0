//! The C front end: one [lexer] for an archive's C text, the [parser] that
//! reads each file once, the archive's files parsed together ([`files`]),
//! the text primitives the older scanners share ([`text`]), and the limits a
//! C text must keep ([`limits`]).

pub(crate) mod files;
pub(crate) mod lexer;
pub(crate) mod limits;
pub(crate) mod parser;
pub(crate) mod text;

pub(crate) use files::{CFiles, CTexts};
pub(crate) use text::{
    called_functions, closing, function_definitions, integer, split_top_level, strip_comments, trailing_identifier_start, FunctionIndex,
};
