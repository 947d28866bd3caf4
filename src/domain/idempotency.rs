//! The `Idempotency-Key` of `POST /v2/posts` (IETF httpapi draft "The Idempotency-Key HTTP
//! Header Field"): what a well-formed key is, in either of the two forms a client may send it.

use std::fmt;

/// The most characters a key may have (after unquoting).
pub const MAX_KEY_LEN: usize = 255;

/// A client's idempotency key: 1–255 printable ASCII characters (0x20–0x7E). The draft's
/// structured-field string (`"abc"`, with `\"` and `\\` escapes) and the bare value (`abc`)
/// name the same key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

/// Why a header value is not a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("Idempotency-Key is empty")]
    Empty,
    #[error("Idempotency-Key is longer than 255 characters")]
    TooLong,
    #[error("Idempotency-Key may hold only printable ASCII characters (0x20-0x7E)")]
    NotPrintableAscii,
    #[error("Idempotency-Key is a quoted string that is not well formed")]
    BadQuoting,
}

impl IdempotencyKey {
    /// Reads a header value: a quoted string (it starts with `"`) is unquoted, anything else is
    /// the key as sent.
    pub fn parse(raw: &[u8]) -> Result<Self, KeyError> {
        if !raw.iter().all(|b| (0x20..=0x7e).contains(b)) {
            return Err(KeyError::NotPrintableAscii);
        }
        // Printable ASCII only: every byte is a char.
        let text: String = raw.iter().map(|&b| char::from(b)).collect();
        let key = match text.strip_prefix('"') {
            Some(quoted) => unquote(quoted)?,
            None => text,
        };
        if key.is_empty() {
            return Err(KeyError::Empty);
        }
        if key.len() > MAX_KEY_LEN {
            return Err(KeyError::TooLong);
        }
        Ok(Self(key))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The rest of an sf-string after its opening quote: up to the closing quote, which must end
/// the value; `\"` and `\\` are the only escapes.
fn unquote(rest: &str) -> Result<String, KeyError> {
    let mut key = String::with_capacity(rest.len());
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('"' | '\\')) => key.push(escaped),
                _ => return Err(KeyError::BadQuoting),
            },
            '"' if chars.as_str().is_empty() => return Ok(key),
            '"' => return Err(KeyError::BadQuoting),
            c => key.push(c),
        }
    }
    // No closing quote.
    Err(KeyError::BadQuoting)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn key(raw: &str) -> Result<String, KeyError> {
        IdempotencyKey::parse(raw.as_bytes()).map(|k| k.as_str().to_string())
    }

    #[test]
    fn the_quoted_and_the_bare_form_name_the_same_key() {
        assert_eq!(key("\"abc\"").unwrap(), "abc");
        assert_eq!(key("abc").unwrap(), "abc");
        assert_eq!(key(r#""a\"b\\c""#).unwrap(), r#"a"b\c"#);
        assert_eq!(key("a b").unwrap(), "a b");
        assert_eq!(key("\" \"").unwrap(), " ");
        // Not quoted (it does not start with a quote): the key as sent.
        assert_eq!(key("a\"b").unwrap(), "a\"b");
    }

    #[test]
    fn malformed_values_are_refused() {
        assert_eq!(key(""), Err(KeyError::Empty));
        assert_eq!(key("\"\""), Err(KeyError::Empty));
        assert_eq!(key(&"k".repeat(256)), Err(KeyError::TooLong));
        assert_eq!(
            key(&format!("\"{}\"", "k".repeat(256))),
            Err(KeyError::TooLong)
        );
        assert!(key(&"k".repeat(255)).is_ok());
        assert!(key(&format!("\"{}\"", "k".repeat(255))).is_ok());
        assert_eq!(
            IdempotencyKey::parse("clé".as_bytes()),
            Err(KeyError::NotPrintableAscii)
        );
        assert_eq!(key("a\tb"), Err(KeyError::NotPrintableAscii));
        for bad in ["\"abc", "\"a\"b\"", r#""a\nb""#, "\"abc\\\""] {
            assert_eq!(key(bad), Err(KeyError::BadQuoting), "{bad}");
        }
    }
}
