//! Who may talk to TauBar: a request must name this server in `Host` (so a DNS name that
//! was rebound to 127.0.0.1 gets nowhere), carry the token (`Authorization: Bearer`) or
//! the cookie the page got for it, and, when it changes anything, come from this origin.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use sha2::{Digest, Sha256};

use crate::App;
use crate::api::error;
use crate::peers::Connection;

/// The cookie the page holds instead of the token.
pub(crate) const COOKIE: &str = "tau_web";

/// The page's content security policy: its own script and style, nothing inline, no
/// frames, no other origin; its own manifest and service worker (for pushes).
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; img-src 'self' data:; manifest-src 'self'; worker-src 'self'; base-uri 'none'; \
form-action 'self'; frame-ancestors 'none'";

/// The person of the household a request speaks for: the holder of TauBar's token (and
/// its cookie) is the household's first person (`owner` when nobody is named); a person's
/// own token (`tau people token NAME`) is that person's alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Speaker(pub(crate) tau_protocol::PersonName);

/// How a request proved it may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    Bearer,
    Cookie,
}

pub(crate) struct Auth {
    token: String,
    cookie: String,
    hosts: Vec<String>,
    /// People's own tokens, kept as their SHA-256 (none in a test without a store).
    people: Option<tau_state::People>,
}

/// Equal without telling, through timing, how much of it was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Auth {
    pub(crate) fn new(token: &str, hosts: Vec<String>) -> Self {
        // The cookie is derived from the token: it outlives a restart, and it is not the
        // token itself.
        let digest = Sha256::digest(format!("tau-web-cookie\n{token}").as_bytes());
        let cookie = digest.iter().map(|b| format!("{b:02x}")).collect();
        Self {
            token: token.to_owned(),
            cookie,
            hosts,
            people: None,
        }
    }

    /// Also takes people's own tokens, looked up in `people` by their SHA-256.
    pub(crate) fn with_people(mut self, people: Option<tau_state::People>) -> Self {
        self.people = people;
        self
    }

    /// The person whose own token the request carries as its bearer, if it does.
    fn person_token(&self, headers: &HeaderMap) -> Option<tau_protocol::PersonName> {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))?
            .trim();
        if given.is_empty() {
            return None;
        }
        let people = self.people.as_ref()?;
        match people.person_of_token(&tau_state::secret_sha256(given)) {
            Ok(person) => person,
            Err(error) => {
                tracing::warn!(%error, "cannot read people's tokens");
                None
            }
        }
    }

    /// How the request proved it may ask, and for whom (`first`: the household's first
    /// person, whose TauBar's own token is).
    pub(crate) fn speaker(
        &self,
        headers: &HeaderMap,
        first: &tau_protocol::PersonName,
    ) -> Option<(Via, Speaker)> {
        if let Some(via) = self.via(headers) {
            return Some((via, Speaker(first.clone())));
        }
        self.person_token(headers)
            .map(|person| (Via::Bearer, Speaker(person)))
    }

    pub(crate) fn host_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .is_some_and(|host| self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
    }

    pub(crate) fn bearer(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .is_some_and(|given| same(given.trim().as_bytes(), self.token.as_bytes()))
    }

    fn cookie(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|h| h.to_str().ok())
            .flat_map(|h| h.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == COOKIE && same(value.as_bytes(), self.cookie.as_bytes()))
    }

    pub(crate) fn via(&self, headers: &HeaderMap) -> Option<Via> {
        if self.bearer(headers) {
            Some(Via::Bearer)
        } else if self.cookie(headers) {
            Some(Via::Cookie)
        } else {
            None
        }
    }

    /// A browser always sends `Origin` with a POST; it must be this server (reached over
    /// `https` too, through a proxy that gives the page the secure context a service worker
    /// needs). Without one (a script), only the bearer token counts, never the cookie.
    pub(crate) fn origin_ok(&self, headers: &HeaderMap, via: Via) -> bool {
        match headers.get(header::ORIGIN).and_then(|h| h.to_str().ok()) {
            Some(origin) => origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .is_some_and(|host| self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))),
            None => via == Via::Bearer,
        }
    }

    /// `Set-Cookie` for the page.
    pub(crate) fn set_cookie(&self) -> HeaderValue {
        HeaderValue::from_str(&format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie
        ))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

/// Every request passes here first.
pub(crate) async fn guard(State(app): State<App>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    // The path is the client's: capped before it reaches the log.
    let path = tau_core::flood::capped(request.uri().path(), 120);
    let peer = request
        .extensions()
        .get::<Arc<Connection>>()
        .map(|c| c.peer.ip());
    let response = checked(&app, request, next).await;
    tracing::debug!(%method, path = %tau_core::display(&path), status = response.status().as_u16(), peer = ?peer, "web request");
    response
}

async fn checked(app: &App, request: Request, next: Next) -> Response {
    let headers = request.headers();
    // The token and the cookie the page traded it for speak for the implicit person; a
    // passkey's signed-in session for the person who signed in.
    let first = app.hub.household().first();
    let speaking = match app.auth.speaker(headers, &first) {
        Some(found) => Some(found),
        None => crate::signin::session_person(app, headers)
            .and_then(|person| tau_protocol::PersonName::parse(&person).ok())
            .map(|person| (Via::Cookie, Speaker(person))),
    };
    let mut response = if !app.auth.host_ok(headers) {
        error(
            StatusCode::FORBIDDEN,
            "this server does not answer to that Host",
        )
        .into_response()
    } else if request.uri().path().starts_with("/api/") {
        let changes = !matches!(*request.method(), Method::GET | Method::HEAD);
        match speaking {
            None => {
                let mut response =
                    error(StatusCode::UNAUTHORIZED, "the token is required").into_response();
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                response
            }
            Some((via, _)) if changes && !app.auth.origin_ok(headers, via) => error(
                StatusCode::FORBIDDEN,
                "a request that changes something must come from this page",
            )
            .into_response(),
            Some((_, speaker)) => {
                if let Some(connection) = request.extensions().get::<Arc<Connection>>() {
                    connection.prove();
                }
                let mut request = request;
                request
                    .extensions_mut()
                    .insert(crate::signin::Person(speaker.0.as_str().to_owned()));
                request.extensions_mut().insert(speaker);
                next.run(request).await
            }
        }
    } else {
        // The page and its files: a browser's first request on a connection is often one
        // of these, and its cookie proves the connection as well as an API call would.
        if speaking.is_some()
            && let Some(connection) = request.extensions().get::<Arc<Connection>>()
        {
            connection.prove();
        }
        next.run(request).await
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn token_cookie_host_and_origin() {
        let auth = Auth::new(
            "s3cret",
            vec!["127.0.0.1:7878".into(), "localhost:7878".into()],
        );
        let cookie = auth.cookie.clone();
        assert_ne!(cookie, "s3cret");
        assert!(auth.host_ok(&headers(&[(header::HOST, "LOCALHOST:7878")])));
        assert!(!auth.host_ok(&headers(&[(header::HOST, "evil.example:7878")])));
        assert!(!auth.host_ok(&HeaderMap::new()));
        assert_eq!(
            auth.via(&headers(&[(header::AUTHORIZATION, "Bearer s3cret")])),
            Some(Via::Bearer)
        );
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "s3cret",
            "Bearer ",
        ] {
            assert_eq!(
                auth.via(&headers(&[(header::AUTHORIZATION, wrong)])),
                None,
                "{wrong}"
            );
        }
        let with_cookie = headers(&[(header::COOKIE, &format!("a=b; {COOKIE}={cookie}"))]);
        assert_eq!(auth.via(&with_cookie), Some(Via::Cookie));
        assert_eq!(
            auth.via(&headers(&[(header::COOKIE, &format!("{COOKIE}=s3cret"))])),
            None,
            "the token is not the cookie"
        );
        let origin = |o: &str| headers(&[(header::ORIGIN, o)]);
        assert!(auth.origin_ok(&origin("http://127.0.0.1:7878"), Via::Cookie));
        assert!(auth.origin_ok(&origin("https://localhost:7878"), Via::Cookie));
        assert!(!auth.origin_ok(&origin("https://evil.example"), Via::Cookie));
        assert!(!auth.origin_ok(&origin("ftp://127.0.0.1:7878"), Via::Cookie));
        assert!(!auth.origin_ok(&origin("http://evil.example"), Via::Cookie));
        assert!(!auth.origin_ok(&origin("http://evil.example"), Via::Bearer));
        assert!(!auth.origin_ok(&origin("null"), Via::Cookie));
        assert!(!auth.origin_ok(&HeaderMap::new(), Via::Cookie));
        assert!(auth.origin_ok(&HeaderMap::new(), Via::Bearer));
    }
}
