//! Logical lines of a transcript (continuations joined, comments split off) and the clause
//! citations in a comment.

/// One logical line: the first physical line number, the code and the trailing comment.
pub(super) struct Line {
    pub(super) number: usize,
    pub(super) code: String,
    pub(super) comment: String,
}

/// Splits `text` at the first `#` outside a double-quoted string.
fn split_comment(text: &str) -> (&str, &str) {
    let mut in_str = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        } else if c == '#' {
            return (&text[..i], &text[i + 1..]);
        }
    }
    (text, "")
}

/// The clause ids cited in a comment: every `[ID]` whose content is a clause id.
pub fn cited_clauses(comment: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = comment;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else { break };
        let inner = &after[..close];
        if is_clause_id(inner) {
            out.push(inner.to_owned());
        }
        rest = &after[close..];
    }
    out
}

/// Whether `text` is a clause id: `[A-Z][A-Z_]*(\.[A-Z][A-Z_]*)+\.[1-9][0-9]*`.
pub fn is_clause_id(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    let Some((number, words)) = parts.split_last() else {
        return false;
    };
    if words.len() < 2 {
        return false;
    }
    let word_ok = |w: &&str| {
        let mut chars = w.chars();
        chars.next().is_some_and(|c| c.is_ascii_uppercase())
            && chars.all(|c| c.is_ascii_uppercase() || c == '_')
    };
    let number_ok = number
        .chars()
        .next()
        .is_some_and(|c| matches!(c, '1'..='9'))
        && number.chars().all(|c| c.is_ascii_digit());
    number_ok && words.iter().all(word_ok)
}

/// Joins continuation lines (indented lines after a step) and strips comments. Lines inside a
/// `c1 < {` block are never joined: each is one pattern.
pub(super) fn logical_lines(text: &str) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut in_block = false;
    for (i, raw) in text.lines().enumerate() {
        let (code, comment) = split_comment(raw);
        let trimmed = code.trim();
        if trimmed.is_empty() {
            // A comment-only line adds its citations to nothing; skip it.
            continue;
        }
        let continuation = raw.starts_with([' ', '\t']) && !in_block && !out.is_empty();
        if continuation {
            if let Some(last) = out.last_mut() {
                last.code.push(' ');
                last.code.push_str(trimmed);
                if !comment.is_empty() {
                    last.comment.push(' ');
                    last.comment.push_str(comment);
                }
            }
            continue;
        }
        if trimmed.ends_with(" < {") || trimmed == "< {" {
            in_block = true;
        } else if trimmed == "}" {
            in_block = false;
        }
        out.push(Line {
            number: i + 1,
            code: trimmed.to_owned(),
            comment: comment.to_owned(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clause_ids_are_recognised() {
        assert!(is_clause_id("INPUT.ENCODE.KEY.10"));
        assert!(is_clause_id("FRAME.TYPE.1"));
        assert!(!is_clause_id("FRAME.1"));
        assert!(!is_clause_id("FRAME.TYPE.0"));
        assert!(!is_clause_id("frame.type.1"));
        // `\x5b` is `[`: written so, this file does not itself cite the example ids.
        assert_eq!(
            cited_clauses("see \x5bA.B.1], [u8; 4] and \x5bC.D_E.12]"),
            ["A.B.1", "C.D_E.12"]
        );
        assert_eq!(split_comment("a \"#\" b # c"), ("a \"#\" b ", " c"));
    }
}
