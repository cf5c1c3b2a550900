//! VAPID (RFC 8292): the push service learns which server sends, by a JSON Web Token
//! (ES256, RFC 7515/7519) signed with the key pair kept in the home, whose public half
//! each device was subscribed with. Signed here with `p256`'s ECDSA: the token is three
//! fixed fields, and a general JWT crate would bring RSA and other curves along for them.

use base64ct::{Base64UrlUnpadded, Encoding};
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::sec1::ToEncodedPoint;

/// How long a signed token is good for. RFC 8292 allows at most 24 hours.
pub(crate) const TOKEN_SECONDS: i64 = 12 * 60 * 60;

/// The key pair TauBar signs its pushes with.
pub(crate) struct VapidKey {
    signing: SigningKey,
    /// The public key, uncompressed (65 bytes), base64url: what `GET /api/push/key` gives
    /// and every `Authorization` header names.
    public: String,
}

/// The key file does not hold a key.
#[derive(Debug, thiserror::Error)]
#[error("the push key is not a P-256 private key (remove the file and subscribe again)")]
pub struct NotAKey;

impl VapidKey {
    /// The key from the home's push key file: 32 bytes, hex.
    pub(crate) fn from_hex(text: &str) -> Result<Self, NotAKey> {
        let text = text.trim();
        if text.len() != 64 {
            return Err(NotAKey);
        }
        let bytes = (0..32)
            .map(|i| {
                text.get(2 * i..2 * i + 2)
                    .and_then(|pair| u8::from_str_radix(pair, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()
            .ok_or(NotAKey)?;
        let signing = SigningKey::from_slice(&bytes).map_err(|_| NotAKey)?;
        let point = signing.verifying_key().as_affine().to_encoded_point(false);
        Ok(Self {
            public: Base64UrlUnpadded::encode_string(point.as_bytes()),
            signing,
        })
    }

    pub(crate) fn public(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header for a push to a resource of `audience` (its origin,
    /// `https://host[:port]`), good until `expires` (seconds since the epoch); `contact`
    /// is the `sub` claim, how the push service can reach whoever runs this tau.
    pub(crate) fn authorization(&self, audience: &str, expires: i64, contact: &str) -> String {
        let header = Base64UrlUnpadded::encode_string(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({ "aud": audience, "exp": expires, "sub": contact });
        let claims = Base64UrlUnpadded::encode_string(claims.to_string().as_bytes());
        let signed = format!("{header}.{claims}");
        let signature: Signature = self.signing.sign(signed.as_bytes());
        let signature = Base64UrlUnpadded::encode_string(&signature.to_bytes());
        format!("vapid t={signed}.{signature}, k={}", self.public)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;
    use pretty_assertions::assert_eq;

    const KEY: &str = "c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721";

    #[test]
    fn only_32_hex_bytes_make_a_key() {
        assert!(VapidKey::from_hex(KEY).is_ok());
        assert!(VapidKey::from_hex(&format!("{KEY}\n")).is_ok());
        for bad in [
            "",
            "00",
            &KEY[..62],
            &format!("{KEY}00"),
            &KEY.replace('c', "g"),
        ] {
            assert!(VapidKey::from_hex(bad).is_err(), "{bad}");
        }
        // Zero is no private key.
        assert!(VapidKey::from_hex(&"0".repeat(64)).is_err());
    }

    #[test]
    fn the_token_is_an_es256_jwt_the_public_key_verifies() {
        let key = VapidKey::from_hex(KEY).unwrap();
        let header = key.authorization("https://push.example.net", 1_800_000_000, "mailto:a@b.c");
        let (token, public) = header
            .strip_prefix("vapid t=")
            .unwrap()
            .split_once(", k=")
            .unwrap();
        assert_eq!(public, key.public());
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let decode = |part: &str| Base64UrlUnpadded::decode_vec(part).unwrap();
        let header: serde_json::Value = serde_json::from_slice(&decode(parts[0])).unwrap();
        let claims: serde_json::Value = serde_json::from_slice(&decode(parts[1])).unwrap();
        assert_eq!(header, serde_json::json!({"typ": "JWT", "alg": "ES256"}));
        assert_eq!(
            claims,
            serde_json::json!({"aud": "https://push.example.net", "exp": 1_800_000_000, "sub": "mailto:a@b.c"})
        );
        let verifying = VerifyingKey::from_sec1_bytes(&decode(public)).unwrap();
        let signature = Signature::from_slice(&decode(parts[2])).unwrap();
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert!(verifying.verify(signed.as_bytes(), &signature).is_ok());
    }
}
