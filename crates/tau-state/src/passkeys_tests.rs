use pretty_assertions::assert_eq;

use super::*;

fn passkey(id: &str, person: &str) -> StoredPasskey {
    StoredPasskey {
        id: id.into(),
        person: person.into(),
        credential: format!("{{\"cred\":\"{id}\"}}"),
        created_at: 100,
        last_used_at: None,
    }
}

#[test]
fn an_enrollment_secret_enrolls_one_passkey_once_before_it_expires() {
    for test_store in crate::test_stores::stores() {
        let store = test_store.open().passkeys();
        store.add_enrollment("s3cret", "ana", 100, 200).unwrap();
        assert_eq!(
            store.enrollment_person("s3cret", 150).unwrap(),
            Some("ana".into())
        );
        assert_eq!(store.enrollment_person("s3cret", 200).unwrap(), None);
        assert_eq!(store.enrollment_person("other", 150).unwrap(), None);
        assert!(!store.any().unwrap());
        // Another person's name with the secret enrolls nothing.
        assert!(!store.enroll("s3cret", &passkey("k1", "bo"), 150).unwrap());
        assert!(store.enroll("s3cret", &passkey("k1", "ana"), 150).unwrap());
        assert!(!store.enroll("s3cret", &passkey("k2", "ana"), 151).unwrap());
        assert_eq!(store.enrollment_person("s3cret", 150).unwrap(), None);
        let mut listed = passkey("k1", "ana");
        listed.created_at = 150;
        assert_eq!(store.list(None).unwrap(), vec![listed.clone()]);
        assert_eq!(store.list(Some("ana")).unwrap(), vec![listed]);
        assert_eq!(store.list(Some("bo")).unwrap(), vec![]);
        assert!(store.any().unwrap());
        store.add_enrollment("late", "ana", 100, 120).unwrap();
        assert!(!store.enroll("late", &passkey("k3", "ana"), 130).unwrap());
    }
}

#[test]
fn only_the_secrets_hash_is_kept() {
    for test_store in crate::test_stores::stores() {
        let store = test_store.open().passkeys();
        store.add_enrollment("s3cret", "ana", 100, 200).unwrap();
        store.add_session("sess1", "ana", 100, 200).unwrap();
        let kept: Vec<String> = store
            .db
            .read(|c| {
                c.query_map(
                    "SELECT secret_sha256 FROM passkey_enrollments UNION ALL SELECT id_sha256 FROM web_sessions",
                    rusqlite::params![],
                    |r| r.get(0),
                )
            })
            .unwrap();
        assert_eq!(kept, vec![secret_sha256("s3cret"), secret_sha256("sess1")]);
    }
}

#[test]
fn a_passkey_is_removed_only_by_its_person() {
    for test_store in crate::test_stores::stores() {
        let store = test_store.open().passkeys();
        store.add_enrollment("a", "ana", 100, 200).unwrap();
        assert!(store.enroll("a", &passkey("k1", "ana"), 150).unwrap());
        assert!(!store.remove("bo", "k1").unwrap());
        assert!(store.remove("ana", "k1").unwrap());
        assert!(!store.any().unwrap());
    }
}

#[test]
fn a_session_lasts_until_it_expires_or_ends() {
    for test_store in crate::test_stores::stores() {
        let store = test_store.open().passkeys();
        store.add_session("sess1", "ana", 100, 200).unwrap();
        assert_eq!(
            store.session_person("sess1", 199).unwrap(),
            Some("ana".into())
        );
        assert_eq!(store.session_person("sess1", 200).unwrap(), None);
        assert_eq!(store.session_person("sess2", 150).unwrap(), None);
        store.end_session("sess1").unwrap();
        assert_eq!(store.session_person("sess1", 150).unwrap(), None);
    }
}

#[test]
fn a_ceremony_is_taken_once_by_its_kind_before_it_expires() {
    for test_store in crate::test_stores::stores() {
        let store = test_store.open().passkeys();
        let ceremony = Ceremony {
            person: Some("ana".into()),
            approval_id: Some("ap_1".into()),
            state: "{}".into(),
            expires_at: 200,
        };
        store
            .add_ceremony("c1", CeremonyKind::StepUp, &ceremony, 100)
            .unwrap();
        assert_eq!(
            store
                .take_ceremony("c1", CeremonyKind::SignIn, 150)
                .unwrap(),
            None
        );
        assert_eq!(
            store
                .take_ceremony("c1", CeremonyKind::StepUp, 150)
                .unwrap(),
            Some(ceremony.clone())
        );
        assert_eq!(
            store
                .take_ceremony("c1", CeremonyKind::StepUp, 151)
                .unwrap(),
            None,
            "single use"
        );
        store
            .add_ceremony("c2", CeremonyKind::StepUp, &ceremony, 100)
            .unwrap();
        assert_eq!(
            store
                .take_ceremony("c2", CeremonyKind::StepUp, 200)
                .unwrap(),
            None,
            "expired"
        );
    }
}

#[test]
fn a_forgotten_person_keeps_no_passkey_session_or_link() {
    for test_store in crate::test_stores::stores() {
        let store = test_store.open().passkeys();
        store.add_enrollment("s3cret", "ana", 100, 200).unwrap();
        assert!(store.enroll("s3cret", &passkey("k1", "ana"), 150).unwrap());
        store.add_enrollment("s4", "bo", 100, 200).unwrap();
        assert!(store.enroll("s4", &passkey("k2", "bo"), 150).unwrap());
        store.add_enrollment("later", "ana", 100, 300).unwrap();
        store.add_session("sess-ana", "ana", 100, 300).unwrap();
        store.add_session("sess-bo", "bo", 100, 300).unwrap();
        // Her passkey, her session, her unused link and the row of the link she used.
        assert_eq!(store.forget_person("ana").unwrap(), 4);
        assert_eq!(store.list(Some("ana")).unwrap(), vec![]);
        assert_eq!(store.session_person("sess-ana", 150).unwrap(), None);
        assert_eq!(store.enrollment_person("later", 150).unwrap(), None);
        // Another person's are as they were.
        assert_eq!(store.list(Some("bo")).unwrap().len(), 1);
        assert_eq!(
            store.session_person("sess-bo", 150).unwrap(),
            Some("bo".into())
        );
        assert_eq!(store.forget_person("ana").unwrap(), 0);
    }
}
