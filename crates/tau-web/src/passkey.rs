//! TauBar as a WebAuthn relying party (webauthn-rs, user verification required): the
//! relying party drawn from TauBar's own origin, enrollment, sign-in, and the step-up a
//! lock-class yes takes, whose challenge binds the question, its arguments and its card.
//!
//! Every ceremony is stored (`tau-state`'s `passkey_ceremonies`) between its two halves and
//! taken once, so an assertion is never accepted twice.

use serde::{Deserialize, Serialize};
use serde_json::Value;
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

fn ceremony_error(error: impl std::fmt::Display) -> PasskeyError {
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
struct AssertionState {
    auth: PasskeyAuthentication,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nonce: Option<String>,
}

/// Makes a step-up's challenge from the relying party's random one.
type Bind<'a> = &'a dyn Fn(&[u8]) -> Vec<u8>;

/// An assertion ceremony's first half: the challenge, the options for the browser and the
/// state to keep.
struct Started {
    challenge: Vec<u8>,
    options: RequestChallengeResponse,
    state: String,
}

/// Starts an assertion over every enrolled passkey, with the challenge `bind` makes in
/// place of the relying party's random one when it is given (a step-up's bound challenge).
fn start_assertion(
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
fn finish_assertion(
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

/// What a step-up's challenge binds: one question, as it reads now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binding<'a> {
    pub approval_id: &'a str,
    pub arguments_sha256: &'a str,
    pub card_sha256: &'a str,
}

/// The challenge a step-up for `binding` signs: the SHA-256 of the question's id, its
/// arguments' and its card's hashes, and `nonce`, the relying party's random part. Another
/// question, other arguments or another card give another challenge.
pub(crate) fn step_up_challenge(binding: Binding<'_>, nonce: &[u8]) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hasher.update(b"tau step-up\n");
    for part in [
        binding.approval_id,
        binding.arguments_sha256,
        binding.card_sha256,
    ] {
        hasher.update(part.as_bytes());
        hasher.update(b"\n");
    }
    hasher.update(nonce);
    hasher.finalize().to_vec()
}

/// Starts a step-up for the question `binding` names, expiring with it (`deadline`, in
/// seconds) or sooner: the ceremony's id and the options to sign.
pub(crate) fn start_step_up(
    rp: &Webauthn,
    store: &Passkeys,
    binding: Binding<'_>,
    deadline: i64,
) -> Result<(String, RequestChallengeResponse), PasskeyError> {
    let bind = |nonce: &[u8]| step_up_challenge(binding, nonce);
    let Started {
        challenge,
        options,
        state,
    } = start_assertion(rp, store, Some(&bind))?;
    let id = hex(&challenge);
    let now = now();
    store.add_ceremony(
        &id,
        CeremonyKind::StepUp,
        &Ceremony {
            person: None,
            approval_id: Some(binding.approval_id.to_owned()),
            state,
            expires_at: deadline.min(now + CEREMONY_SECONDS),
        },
        now,
    )?;
    Ok((id, options))
}

/// Why a step-up did not approve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepUpRefusal {
    /// A yes without an assertion, where one is needed.
    Missing,
    /// The challenge is not one TauBar offered, was used before, or expired.
    Unknown,
    /// The challenge was offered for another question.
    OtherQuestion,
    /// The question's arguments or card are not what the challenge bound.
    Changed,
    /// The assertion did not check out: its signature, origin, challenge or the person's
    /// verification.
    Failed,
}

impl StepUpRefusal {
    /// `refused` in the 422's body.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Self::Missing => "step_up_missing",
            Self::Unknown => "step_up_unknown",
            Self::OtherQuestion => "step_up_other_question",
            Self::Changed => "step_up_changed",
            Self::Failed => "step_up_failed",
        }
    }

    /// The 422's `error`.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Self::Missing => {
                "this question takes a passkey: ask for its challenge (POST /api/approvals/{id}/step_up), sign it and send it as \"step_up\"; nothing was decided"
            }
            Self::Unknown => {
                "that passkey challenge is not one TauBar offered, or it was used or expired: ask for a new one; nothing was decided"
            }
            Self::OtherQuestion => {
                "that passkey challenge was offered for another question; nothing was decided"
            }
            Self::Changed => {
                "the question is not the one the passkey challenge was offered for (its arguments or its card changed); nothing was decided"
            }
            Self::Failed => {
                "the passkey did not confirm it (the signature, the page it came from or the person's verification did not check out); nothing was decided"
            }
        }
    }

    /// The `answer_refused` line's `reason`.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::Missing => "a yes without the passkey it takes",
            Self::Unknown => "a passkey assertion for a challenge not offered, used or expired",
            Self::OtherQuestion => "a passkey assertion for another question",
            Self::Changed => "a passkey assertion for other arguments or another card",
            Self::Failed => "a passkey assertion that did not verify",
        }
    }
}

/// A step-up assertion as the answer carries it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepUpAnswer {
    /// The ceremony's id, as `POST .../step_up` gave it.
    pub ceremony: String,
    /// What `navigator.credentials.get` gave back.
    pub credential: Value,
}

/// Checks a step-up for the question `binding` names as it reads now: the ladder, top to
/// bottom, ends in a refusal for anything that fails.
pub(crate) fn finish_step_up(
    rp: &Webauthn,
    store: &Passkeys,
    binding: Binding<'_>,
    answer: &StepUpAnswer,
) -> Result<Asserted, StepUpRefusal> {
    // 1. a challenge TauBar offered, not used and not expired (taken now: single use)
    let taken = match store.take_ceremony(&answer.ceremony, CeremonyKind::StepUp, now()) {
        Ok(Some(taken)) => taken,
        Ok(None) => return Err(StepUpRefusal::Unknown),
        Err(error) => {
            tracing::error!(%error, "a step-up could not be read");
            return Err(StepUpRefusal::Unknown);
        }
    };
    // 2. offered for this question
    if taken.approval_id.as_deref() != Some(binding.approval_id) {
        return Err(StepUpRefusal::OtherQuestion);
    }
    let Ok(state) = serde_json::from_str::<AssertionState>(&taken.state) else {
        return Err(StepUpRefusal::Unknown);
    };
    // 3. the question still reads as it did when the challenge was drawn
    let nonce = state.nonce.as_deref().and_then(unhex);
    let bound = nonce.map(|nonce| hex(&step_up_challenge(binding, &nonce)));
    if bound.as_deref() != Some(answer.ceremony.as_str()) {
        return Err(StepUpRefusal::Changed);
    }
    // 4. the assertion signs exactly that challenge, on this origin, with the person
    //    verified
    let Ok(credential) = serde_json::from_value::<PublicKeyCredential>(answer.credential.clone())
    else {
        return Err(StepUpRefusal::Failed);
    };
    finish_assertion(rp, store, &state, &credential).map_err(|error| {
        tracing::info!(%error, approval_id = binding.approval_id, "a step-up that did not verify");
        StepUpRefusal::Failed
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
#[path = "passkey_tests.rs"]
mod tests;
