//! TauBar as a WebAuthn relying party (webauthn-rs, user verification required): the
//! relying party drawn from TauBar's own origin, enrollment, sign-in, and the step-up a
//! lock-class yes takes, whose challenge binds the question, its arguments and its card.
//!
//! The step-up's binding and its checks are `step_up.rs`. Every ceremony is stored (`tau-state`'s `passkey_ceremonies`) between its two halves and
//! taken once, so an assertion is never accepted twice.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tau_state::{Ceremony, CeremonyKind, Passkeys, StoredPasskey};
use webauthn_rs::prelude::{
    CreationChallengeResponse, Passkey, PasskeyAuthentication, PasskeyRegistration,
    PublicKeyCredential, RegisterPublicKeyCredential, RequestChallengeResponse, Url, Uuid,
    Webauthn, WebauthnBuilder,
};

/// How long a ceremony's first half waits for its second, in seconds.
pub(crate) const CEREMONY_SECONDS: i64 = 5 * 60;

/// What went wrong with a passkey, before or during a ceremony.
#[derive(Debug, thiserror::Error)]
pub enum PasskeyError {
    #[error("TauBar's address cannot name a relying party: {0}")]
    Origin(String),
    #[error("the passkey ceremony failed: {0}")]
    Ceremony(String),
    #[error(transparent)]
    Store(#[from] tau_state::StateError),
}

/// The seconds since the epoch now.
pub(crate) fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 32 random bytes as hex: an enrollment secret, a session id.
pub(crate) fn random_hex() -> Result<String, PasskeyError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| PasskeyError::Ceremony(e.to_string()))?;
    Ok(hex(&bytes))
}

/// The relying party's id: the first name TauBar is configured to answer to (`[web]
/// hosts`), else `localhost` (an address is never one: WebAuthn takes names only). Its
/// origins are every `Host` TauBar accepts under that name.
pub(crate) fn relying_party(
    hosts: &[String],
    configured: &[String],
) -> Result<Webauthn, PasskeyError> {
    // A host as a URL: its name, when it is a name and not an address.
    let url_of = |host: &str| Url::parse(&format!("http://{host}")).ok();
    let name_of = |url: &Url| {
        url.host_str()
            .filter(|h| !h.starts_with('[') && h.parse::<std::net::Ipv4Addr>().is_err())
            .map(str::to_ascii_lowercase)
    };
    let rp_id = configured
        .iter()
        .filter_map(|host| url_of(host))
        .find_map(|url| name_of(&url))
        .unwrap_or_else(|| "localhost".to_owned());
    let origins: Vec<Url> = hosts
        .iter()
        .filter_map(|host| url_of(host))
        .filter(|url| name_of(url).as_deref() == Some(rp_id.as_str()))
        .collect();
    let Some((first, rest)) = origins.split_first() else {
        return Err(PasskeyError::Origin(format!(
            "no address TauBar answers to is named {rp_id}"
        )));
    };
    let mut builder = WebauthnBuilder::new(&rp_id, first)
        .map_err(|e| PasskeyError::Origin(e.to_string()))?
        .rp_name("TauBar");
    for origin in rest {
        builder = builder.append_allowed_origin(origin);
    }
    builder
        .build()
        .map_err(|e| PasskeyError::Origin(e.to_string()))
}

/// A person's stable WebAuthn user handle, from their name.
fn user_handle(person: &str) -> Uuid {
    let digest = Sha256::digest(format!("tau-person\n{person}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(digest.get(..16).unwrap_or(&[0u8; 16]));
    Uuid::from_bytes(bytes)
}

pub(crate) fn ceremony_error(error: impl std::fmt::Display) -> PasskeyError {
    PasskeyError::Ceremony(error.to_string())
}

fn stored_passkeys(
    store: &Passkeys,
    person: Option<&str>,
) -> Result<Vec<(String, Passkey)>, PasskeyError> {
    Ok(store
        .list(person)?
        .into_iter()
        .filter_map(|stored| {
            let passkey = serde_json::from_str::<Passkey>(&stored.credential).ok()?;
            Some((stored.person, passkey))
        })
        .collect())
}

/// Starts enrolling a passkey for `person`: the options for `navigator.credentials.create`
/// and the ceremony's id.
pub(crate) fn start_enrollment(
    rp: &Webauthn,
    store: &Passkeys,
    person: &str,
) -> Result<(String, CreationChallengeResponse), PasskeyError> {
    let existing: Vec<_> = stored_passkeys(store, Some(person))?
        .iter()
        .map(|(_, passkey)| passkey.cred_id().clone())
        .collect();
    let (options, state) = rp
        .start_passkey_registration(user_handle(person), person, person, Some(existing))
        .map_err(ceremony_error)?;
    let id = hex(&options.public_key.challenge);
    let state = serde_json::to_string(&state).map_err(ceremony_error)?;
    let now = now();
    store.add_ceremony(
        &id,
        CeremonyKind::Register,
        &Ceremony {
            person: Some(person.to_owned()),
            approval_id: None,
            state,
            expires_at: now + CEREMONY_SECONDS,
        },
        now,
    )?;
    Ok((id, options))
}

/// Finishes an enrollment: the ceremony is taken (once), the credential checked, and the
/// passkey kept for the person the secret names, using the secret up. `Ok(None)`: the
/// ceremony or the secret was not (or no longer) good; nothing was kept.
pub(crate) fn finish_enrollment(
    rp: &Webauthn,
    store: &Passkeys,
    secret: &str,
    ceremony: &str,
    credential: &RegisterPublicKeyCredential,
) -> Result<Option<String>, PasskeyError> {
    let now = now();
    let Some(taken) = store.take_ceremony(ceremony, CeremonyKind::Register, now)? else {
        return Ok(None);
    };
    let Some(person) = taken.person else {
        return Ok(None);
    };
    if store.enrollment_person(secret, now)?.as_deref() != Some(person.as_str()) {
        return Ok(None);
    }
    let state: PasskeyRegistration = serde_json::from_str(&taken.state).map_err(ceremony_error)?;
    let passkey = rp
        .finish_passkey_registration(credential, &state)
        .map_err(ceremony_error)?;
    let stored = StoredPasskey {
        id: hex(passkey.cred_id()),
        person: person.clone(),
        credential: serde_json::to_string(&passkey).map_err(ceremony_error)?,
        created_at: now,
        last_used_at: None,
    };
    Ok(store.enroll(secret, &stored, now)?.then_some(person))
}

/// What an assertion proves once it checked out: whose passkey signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Asserted {
    pub person: String,
}

/// The state kept for an assertion ceremony: the relying party's, and for a step-up the
/// random part of its challenge.
#[derive(Serialize, Deserialize)]
pub(crate) struct AssertionState {
    auth: PasskeyAuthentication,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nonce: Option<String>,
}

/// Makes a step-up's challenge from the relying party's random one.
pub(crate) type Bind<'a> = &'a dyn Fn(&[u8]) -> Vec<u8>;

/// An assertion ceremony's first half: the challenge, the options for the browser and the
/// state to keep.
pub(crate) struct Started {
    pub(crate) challenge: Vec<u8>,
    pub(crate) options: RequestChallengeResponse,
    pub(crate) state: String,
}

/// Starts an assertion over every enrolled passkey, with the challenge `bind` makes in
/// place of the relying party's random one when it is given (a step-up's bound challenge).
pub(crate) fn start_assertion(
    rp: &Webauthn,
    store: &Passkeys,
    bind: Option<Bind<'_>>,
) -> Result<Started, PasskeyError> {
    let passkeys: Vec<Passkey> = stored_passkeys(store, None)?
        .into_iter()
        .map(|(_, passkey)| passkey)
        .collect();
    if passkeys.is_empty() {
        return Err(PasskeyError::Ceremony("no passkey is enrolled".into()));
    }
    let (mut options, auth) = rp
        .start_passkey_authentication(&passkeys)
        .map_err(ceremony_error)?;
    let random = options.public_key.challenge.clone();
    let Some(bind) = bind else {
        let state =
            serde_json::to_string(&AssertionState { auth, nonce: None }).map_err(ceremony_error)?;
        return Ok(Started {
            challenge: random,
            options,
            state,
        });
    };
    // The relying party draws its challenge itself: the bound one replaces it in what the
    // browser signs and in what the signature is checked against.
    let challenge = bind(&random);
    options.public_key.challenge = challenge.clone();
    let mut auth = serde_json::to_value(&auth).map_err(ceremony_error)?;
    let swapped = serde_json::to_value(&options.public_key)
        .map_err(ceremony_error)?
        .get("challenge")
        .cloned()
        .ok_or_else(|| ceremony_error("the options carry no challenge"))?;
    match auth.get_mut("ast").and_then(|ast| ast.get_mut("challenge")) {
        Some(slot) => *slot = swapped,
        None => {
            return Err(ceremony_error(
                "the relying party's state carries no challenge",
            ));
        }
    }
    let auth: PasskeyAuthentication = serde_json::from_value(auth).map_err(ceremony_error)?;
    let state = serde_json::to_string(&AssertionState {
        auth,
        nonce: Some(hex(&random)),
    })
    .map_err(ceremony_error)?;
    Ok(Started {
        challenge,
        options,
        state,
    })
}

/// Checks `credential` against a taken ceremony's state; the passkey that signed it is
/// kept with its counter moved on.
pub(crate) fn finish_assertion(
    rp: &Webauthn,
    store: &Passkeys,
    state: &AssertionState,
    credential: &PublicKeyCredential,
) -> Result<Asserted, PasskeyError> {
    let result = rp
        .finish_passkey_authentication(credential, &state.auth)
        .map_err(ceremony_error)?;
    if !result.user_verified() {
        return Err(PasskeyError::Ceremony("the person was not verified".into()));
    }
    let id = hex(result.cred_id());
    let mut signer = None;
    for (person, mut passkey) in stored_passkeys(store, None)? {
        if passkey.cred_id() == result.cred_id() {
            passkey.update_credential(&result);
            let json = serde_json::to_string(&passkey).map_err(ceremony_error)?;
            store.used(&id, &json, now())?;
            signer = Some(person);
        }
    }
    signer
        .map(|person| Asserted { person })
        .ok_or_else(|| ceremony_error("the passkey is no longer enrolled"))
}

/// Starts a sign-in: the options for `navigator.credentials.get` and the ceremony's id.
pub(crate) fn start_sign_in(
    rp: &Webauthn,
    store: &Passkeys,
) -> Result<(String, RequestChallengeResponse), PasskeyError> {
    let Started {
        challenge,
        options,
        state,
    } = start_assertion(rp, store, None)?;
    let id = hex(&challenge);
    let now = now();
    store.add_ceremony(
        &id,
        CeremonyKind::SignIn,
        &Ceremony {
            person: None,
            approval_id: None,
            state,
            expires_at: now + CEREMONY_SECONDS,
        },
        now,
    )?;
    Ok((id, options))
}

/// Finishes a sign-in; `Ok(None)` when the ceremony is unknown, used or expired.
pub(crate) fn finish_sign_in(
    rp: &Webauthn,
    store: &Passkeys,
    ceremony: &str,
    credential: &PublicKeyCredential,
) -> Result<Option<Asserted>, PasskeyError> {
    let Some(taken) = store.take_ceremony(ceremony, CeremonyKind::SignIn, now())? else {
        return Ok(None);
    };
    let state: AssertionState = serde_json::from_str(&taken.state).map_err(ceremony_error)?;
    finish_assertion(rp, store, &state, credential).map(Some)
}

#[cfg(test)]
#[path = "passkey_tests.rs"]
mod tests;
