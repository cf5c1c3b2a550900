//! What a device's push subscription must be before tau keeps it: an `https` endpoint (a
//! push service on the internet), or plain `http` to this machine's own loopback (a push
//! service run beside tau for tests; never another host), and the two keys RFC 8291
//! needs, of their exact sizes. Checked once, here, when it is given.

use base64ct::{Base64UrlUnpadded, Encoding};
use reqwest::Url;
use reqwest::header::HeaderValue;
use serde::Deserialize;
use web_push_native::Auth;
use web_push_native::p256::PublicKey;

/// The longest endpoint kept. The push services' own are well under it.
const MAX_ENDPOINT_BYTES: usize = 1024;

/// A subscription as the browser's `PushSubscription.toJSON()` gives it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Given {
    pub endpoint: String,
    /// When the browser says it will end, if it does; tau learns it from the push service.
    #[serde(default, rename = "expirationTime")]
    pub _expiration_time: Option<serde_json::Value>,
    pub keys: GivenKeys,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GivenKeys {
    pub p256dh: String,
    pub auth: String,
}

/// Why a subscription is refused, in words for the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("the endpoint must be an https URL (or http on this machine's loopback)")]
    Endpoint,
    #[error("keys.p256dh must be a P-256 public key, base64url")]
    PublicKey,
    #[error("keys.auth must be 16 bytes, base64url")]
    Auth,
}

/// A subscription tau may push to: the endpoint parsed, the keys decoded.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub endpoint: Url,
    pub public_key: PublicKey,
    pub auth: Auth,
}

/// The endpoint, when tau may send to it.
pub(crate) fn endpoint(text: &str) -> Result<Url, Refused> {
    if text.len() > MAX_ENDPOINT_BYTES || HeaderValue::from_str(text).is_err() {
        return Err(Refused::Endpoint);
    }
    let url = Url::parse(text).map_err(|_| Refused::Endpoint)?;
    if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
        return Err(Refused::Endpoint);
    }
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => return Err(Refused::Endpoint),
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(Refused::Endpoint),
    }
}

fn decode(text: &str) -> Option<Vec<u8>> {
    Base64UrlUnpadded::decode_vec(text.trim_end_matches('=')).ok()
}

/// The device's public key: an uncompressed P-256 point.
pub(crate) fn public_key(text: &str) -> Result<PublicKey, Refused> {
    let bytes = decode(text).ok_or(Refused::PublicKey)?;
    if bytes.len() != 65 {
        return Err(Refused::PublicKey);
    }
    PublicKey::from_sec1_bytes(&bytes).map_err(|_| Refused::PublicKey)
}

/// The device's authentication secret: 16 bytes.
pub(crate) fn auth(text: &str) -> Result<Auth, Refused> {
    let bytes = decode(text).ok_or(Refused::Auth)?;
    Auth::from_exact_iter(bytes).ok_or(Refused::Auth)
}

/// A kept subscription, read back (checked again: the row is only text).
pub(crate) fn target(
    endpoint_text: &str,
    p256dh: &str,
    auth_text: &str,
) -> Result<Target, Refused> {
    Ok(Target {
        endpoint: endpoint(endpoint_text)?,
        public_key: public_key(p256dh)?,
        auth: auth(auth_text)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A browser's keys (the RFC 8291 example's).
    const P256DH: &str =
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";
    const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";

    #[test]
    fn only_https_or_loopback_http_endpoints() {
        for ok in [
            "https://fcm.googleapis.com/fcm/send/abc",
            "https://updates.push.services.mozilla.com/wpush/v2/x",
            "http://127.0.0.1:8090/notify/x",
            "http://localhost:8090/notify/x",
            "http://[::1]:8090/notify/x",
        ] {
            assert!(endpoint(ok).is_ok(), "{ok}");
        }
        let long = format!("https://push.example/{}", "a".repeat(MAX_ENDPOINT_BYTES));
        for bad in [
            "http://push.example/x",
            "http://192.168.1.2/x",
            "http://localhost.example/x",
            "ftp://localhost/x",
            "https://user:pw@push.example/x",
            "https://push.example/x#frag",
            "https://push.example/x\ny",
            "/notify/x",
            "",
            long.as_str(),
        ] {
            assert_eq!(endpoint(bad).map(|_| ()), Err(Refused::Endpoint), "{bad}");
        }
    }

    #[test]
    fn keys_of_their_exact_size() {
        assert!(public_key(P256DH).is_ok());
        assert!(auth(AUTH).is_ok());
        assert!(auth("BTBZMqHH6r4Tts7J_aSIgg==").is_ok());
        assert_eq!(auth("BTBZMqHH6r4Tts7J").map(|_| ()), Err(Refused::Auth));
        assert_eq!(auth("not base64!").map(|_| ()), Err(Refused::Auth));
        assert_eq!(public_key(AUTH).map(|_| ()), Err(Refused::PublicKey));
        // 65 bytes, but not a point on the curve.
        let off_curve = Base64UrlUnpadded::encode_string(&[4u8; 65]);
        assert_eq!(public_key(&off_curve).map(|_| ()), Err(Refused::PublicKey));
    }
}
