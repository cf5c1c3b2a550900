//! tau-secret: keeping secrets out of what tau writes.
//!
//! Owns the one scrubber every error text passes through before it is logged, stored or
//! shown when that text may quote a URL or a body from a server tau talks to: a model
//! endpoint, the Telegram Bot API, or a proxy in between that answers with an error page of
//! its own. Knows no server and no channel: the secrets a caller holds are handed in, and
//! the shapes that carry a secret whatever its value are recognised by themselves.
//!
//! What [`Scrubber::scrub`] replaces with [`REDACTED`]:
//! 1. every secret it was given, as it is and percent-encoded (as it appears in a URL);
//! 2. a Bot API token (`123456789:AA…`, digits, a colon, 20 or more of `A-Za-z0-9_-`),
//!    wherever it stands (in `/bot<token>/getUpdates` too);
//! 3. the user and password of a URL (`https://user:pass@host` -> `https://[redacted]@host`);
//! 4. the value of a query parameter that names a secret (`key`, `api_key`, `apikey`,
//!    `token`, `access_token`, `secret`, `password`, `sig`, `signature`);
//! 5. what follows `Bearer ` (a proxy that echoes the request's headers).
//!
//! Total: never panics, whatever the text.

/// What stands where a secret was.
pub const REDACTED: &str = "[redacted]";

/// A value shorter than this is a placeholder, not a secret worth scrubbing everywhere.
const MIN_SECRET_CHARS: usize = 4;
/// A Bot API token's secret part is 35 characters; shorter runs are not taken for one.
const MIN_TOKEN_TAIL: usize = 20;
/// Digits before a token's colon (a bot's id).
const MIN_TOKEN_ID: usize = 5;

/// Query parameters whose value is a secret.
const SECRET_PARAMETERS: &[&str] = &[
    "key",
    "api_key",
    "apikey",
    "token",
    "access_token",
    "secret",
    "password",
    "sig",
    "signature",
];

/// The secrets a part of tau holds, and the one way to keep them out of a text.
#[derive(Clone, Default)]
pub struct Scrubber {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scrubber({} secrets)", self.secrets.len())
    }
}

impl Scrubber {
    /// A scrubber for these secrets (placeholders shorter than 4 characters are ignored).
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut known: Vec<String> = Vec::new();
        for secret in secrets {
            let secret = secret.as_ref();
            if secret.chars().count() < MIN_SECRET_CHARS {
                continue;
            }
            for form in [secret.to_owned(), percent_encoded(secret)] {
                if !known.contains(&form) {
                    known.push(form);
                }
            }
        }
        // The longest first, so a secret that contains another goes whole.
        known.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self { secrets: known }
    }

    /// `text` with every secret in it replaced (see the crate's text).
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        let out = bot_tokens(&out);
        let out = url_passwords(&out);
        let out = secret_parameters(&out);
        bearer_values(&out)
    }
}

/// [`Scrubber::scrub`] with no secrets of its own: only the shapes that carry one.
pub fn scrub(text: &str) -> String {
    Scrubber::default().scrub(text)
}

/// `text` as it appears in a URL: everything but `A-Za-z0-9-._~` percent-encoded.
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `digits:tail` with at least [`MIN_TOKEN_ID`] digits and [`MIN_TOKEN_TAIL`] tail
/// characters, not inside a longer number (`/bot<token>` counts).
fn bot_tokens(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let starts_number = i == 0 || !chars.get(i - 1).is_some_and(char::is_ascii_digit);
        if starts_number && let Some(end) = token_end(&chars, i) {
            out.push_str(REDACTED);
            i = end;
            continue;
        }
        if let Some(c) = chars.get(i) {
            out.push(*c);
        }
        i += 1;
    }
    out
}

/// Where a token that starts at `start` ends, if one does.
fn token_end(chars: &[char], start: usize) -> Option<usize> {
    let digits = chars
        .get(start..)?
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    if digits < MIN_TOKEN_ID || chars.get(start + digits) != Some(&':') {
        return None;
    }
    let tail_start = start + digits + 1;
    let tail = chars
        .get(tail_start..)?
        .iter()
        .take_while(|c| is_token_char(**c))
        .count();
    (tail >= MIN_TOKEN_TAIL).then_some(tail_start + tail)
}

/// `scheme://user:pass@host` -> `scheme://[redacted]@host`.
fn url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let authority_end = after
            .find(|c: char| {
                c == '/'
                    || c == '?'
                    || c == '#'
                    || c.is_whitespace()
                    || c == '"'
                    || c == '\''
                    || c == '<'
                    || c == '>'
            })
            .unwrap_or(after.len());
        let (authority, tail) = after.split_at(authority_end);
        match authority.rfind('@') {
            Some(user_end) => {
                out.push_str(REDACTED);
                out.push_str(authority.get(user_end..).unwrap_or_default());
            }
            None => out.push_str(authority),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// `?key=VALUE` / `&token=VALUE` -> the value redacted.
fn secret_parameters(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = rest.find(['?', '&']);
        let Some(at) = next else {
            out.push_str(rest);
            return out;
        };
        let (before, after) = rest.split_at(at + 1);
        out.push_str(before);
        let name_end = after.find('=').filter(|end| {
            after.get(..*end).is_some_and(|name| {
                SECRET_PARAMETERS
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(name))
            })
        });
        match name_end {
            Some(end) => {
                let (name, value) = after.split_at(end + 1);
                out.push_str(name);
                let value_end = value
                    .find(|c: char| {
                        c == '&'
                            || c == '#'
                            || c.is_whitespace()
                            || c == '"'
                            || c == '\''
                            || c == '<'
                            || c == '>'
                    })
                    .unwrap_or(value.len());
                if value_end > 0 {
                    out.push_str(REDACTED);
                }
                rest = value.get(value_end..).unwrap_or_default();
            }
            None => rest = after,
        }
    }
}

/// `Bearer VALUE` -> `Bearer [redacted]`.
fn bearer_values(text: &str) -> String {
    const BEARER: &str = "Bearer ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(BEARER) {
        let (before, after) = rest.split_at(at + BEARER.len());
        out.push_str(before);
        let end = after
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '<' || c == ',')
            .unwrap_or(after.len());
        if end > 0 && after.get(..end) != Some(REDACTED) {
            out.push_str(REDACTED);
        } else {
            out.push_str(after.get(..end).unwrap_or_default());
        }
        rest = after.get(end..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const TOKEN: &str = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";

    #[test]
    fn a_proxy_error_page_quoting_the_bot_url_loses_the_token() {
        let page = format!(
            "<html><body><h1>502 Bad Gateway</h1><p>upstream error for GET https://api.telegram.org/bot{TOKEN}/getUpdates?offset=3&timeout=30</p></body></html>"
        );
        let scrubbed = Scrubber::new([TOKEN]).scrub(&page);
        assert_eq!(
            scrubbed,
            "<html><body><h1>502 Bad Gateway</h1><p>upstream error for GET https://api.telegram.org/bot[redacted]/getUpdates?offset=3&timeout=30</p></body></html>"
        );
        assert_eq!(scrub(&page), scrubbed, "the shape alone is enough");
    }

    #[test]
    fn known_secrets_go_as_they_are_and_percent_encoded() {
        let scrubber = Scrubber::new(["sk-live 42/x", "abc", ""]);
        assert_eq!(
            scrubber.scrub("key sk-live 42/x, in a URL sk-live%2042%2Fx; abc stays"),
            "key [redacted], in a URL [redacted]; abc stays"
        );
    }

    #[test]
    fn shapes_that_carry_a_secret_lose_it() {
        let cases = [
            (
                "cannot reach https://me:hunter2@proxy.example:8080/v1/chat",
                "cannot reach https://[redacted]@proxy.example:8080/v1/chat",
            ),
            (
                "GET /v1beta/models?key=AIzaSyD-secret&alt=sse failed",
                "GET /v1beta/models?key=[redacted]&alt=sse failed",
            ),
            (
                "https://x.example/a?Token=t0k3n#frag and &api_key=k\"",
                "https://x.example/a?Token=[redacted]#frag and &api_key=[redacted]\"",
            ),
            (
                "echo: Authorization: Bearer sk-abc.def, Host: x",
                "echo: Authorization: Bearer [redacted], Host: x",
            ),
            (
                "a token 123:short and 1234567:also-too-short",
                "a token 123:short and 1234567:also-too-short",
            ),
            ("no secret here: a=1&b=2?c", "no secret here: a=1&b=2?c"),
            ("", ""),
            ("Bearer ", "Bearer "),
            ("é://@ ?key= &", "é://[redacted]@ ?key= &"),
        ];
        for (text, expected) in cases {
            assert_eq!(scrub(text), expected, "{text}");
        }
    }

    #[test]
    fn the_debug_form_names_no_secret() {
        let scrubber = Scrubber::new([TOKEN]);
        assert_eq!(format!("{scrubber:?}"), "Scrubber(2 secrets)");
    }
}
