//! PTX text into tokens: words (`ld.global.f32`, `%rd1`, `.reg`, `$L__BB0_2`), numbers
//! (`64`, `0f3F800000`, `1.5`), strings and punctuation, each with its line.

use super::super::PtxError;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Tok<'a> {
    Word(&'a str),
    Num(&'a str),
    Str(&'a str),
    P(char),
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Token<'a> {
    pub tok: Tok<'a>,
    pub line: usize,
}

fn word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%' | b'.')
}

fn word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

pub(super) fn lex(text: &str) -> Result<Vec<Token<'_>>, PtxError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let start = line;
            i += 2;
            loop {
                if i + 1 >= b.len() {
                    return Err(PtxError {
                        line: start,
                        message: "a comment that never ends".into(),
                    });
                }
                if b[i] == b'*' && b[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
        } else if c == b'"' {
            let start = i + 1;
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += 1;
            }
            if i >= b.len() || b[i] != b'"' {
                return Err(PtxError {
                    line,
                    message: "a string that never ends".into(),
                });
            }
            out.push(Token {
                tok: Tok::Str(&text[start..i]),
                line,
            });
            i += 1;
        } else if word_start(c) {
            let start = i;
            i += 1;
            loop {
                if i < b.len() && word_char(b[i]) {
                    i += 1;
                } else if b[i..].starts_with(b"::") && i + 2 < b.len() && word_char(b[i + 2]) {
                    // Qualifiers such as `.L2::cache_hint`.
                    i += 2;
                } else {
                    break;
                }
            }
            out.push(Token {
                tok: Tok::Word(&text[start..i]),
                line,
            });
        } else if c.is_ascii_digit() {
            let start = i;
            let hex =
                b[i..].len() > 1 && matches!(b[i + 1], b'x' | b'X' | b'f' | b'F' | b'd' | b'D');
            i += 1;
            while i < b.len() {
                if word_char(b[i]) {
                    i += 1;
                } else if !hex && matches!(b[i - 1], b'e' | b'E') && matches!(b[i], b'+' | b'-') {
                    // The exponent's sign of a decimal float (`1.5e-3`).
                    i += 1;
                } else {
                    break;
                }
            }
            out.push(Token {
                tok: Tok::Num(&text[start..i]),
                line,
            });
        } else if c.is_ascii_punctuation() {
            out.push(Token {
                tok: Tok::P(c as char),
                line,
            });
            i += 1;
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(PtxError {
                line,
                message: format!("unexpected character {ch:?}"),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok<'_>> {
        lex(text).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn words_numbers_and_punctuation() {
        assert_eq!(
            toks("@!%p1 ld.global.nc.L1::no_allocate.f32 %f1, [%rd2+-4]; // c\n$L__BB0_2:"),
            vec![
                Tok::P('@'),
                Tok::P('!'),
                Tok::Word("%p1"),
                Tok::Word("ld.global.nc.L1::no_allocate.f32"),
                Tok::Word("%f1"),
                Tok::P(','),
                Tok::P('['),
                Tok::Word("%rd2"),
                Tok::P('+'),
                Tok::P('-'),
                Tok::Num("4"),
                Tok::P(']'),
                Tok::P(';'),
                Tok::Word("$L__BB0_2"),
                Tok::P(':'),
            ]
        );
        assert_eq!(
            toks(".reg .f32 %f<4>; /* x\ny */ 0f3F800000 1.5e-3 0x1F"),
            vec![
                Tok::Word(".reg"),
                Tok::Word(".f32"),
                Tok::Word("%f"),
                Tok::P('<'),
                Tok::Num("4"),
                Tok::P('>'),
                Tok::P(';'),
                Tok::Num("0f3F800000"),
                Tok::Num("1.5e-3"),
                Tok::Num("0x1F"),
            ]
        );
        let lines: Vec<usize> = lex("a\n/*\n*/ b\n\"s\"")
            .unwrap()
            .iter()
            .map(|t| t.line)
            .collect();
        assert_eq!(lines, vec![1, 3, 4]);
    }
}
