//! A household's people on TauBar, as the tests sign them in: each with their own token,
//! made as a person makes it (`tau people token NAME`).

use serde_json::Value;

use super::Tau;
use super::serve::{Api, Serve};

/// A person's own TauBar token.
pub fn token(tau: &Tau, config: &std::path::Path, name: &str) -> String {
    let args = [
        "--config",
        config.to_str().unwrap(),
        "people",
        "token",
        name,
    ];
    let run = tau.run(&args, "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout.trim().to_owned()
}

/// TauBar of `serve` as the holder of `token`.
pub fn as_person(serve: &Serve, token: String) -> Api {
    Api {
        addr: serve.addr,
        token,
    }
}

/// The `id` of each row of a listing.
pub fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|row| row["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Keeps a passkey for `person` in the home, as an enrollment on TauBar would.
pub fn with_a_passkey(tau: &Tau, person: &str) {
    std::fs::create_dir_all(tau.home()).unwrap();
    let store = tau_state::StateDb::open(&tau.home().join("state.db"))
        .unwrap()
        .passkeys();
    let secret = tau_web::enroll_secret(&store, person).unwrap();
    let passkey = tau_state::StoredPasskey {
        id: "00ff".into(),
        person: person.into(),
        credential: "{}".into(),
        created_at: 0,
        last_used_at: None,
    };
    let now = jiff::Timestamp::now().as_second();
    assert!(store.enroll(&secret, &passkey, now).unwrap());
}
