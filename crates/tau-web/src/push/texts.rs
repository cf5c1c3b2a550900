//! What a person reads of push: the Push switch's words (push.js) and the notification a
//! push shows (sw.js), pinned; and the manifest that makes TauBar installable.

use serde_json::Value;

/// The JSON object a script keeps on its line `const NAME = {...};`.
fn texts_of(script: &str, name: &str) -> Value {
    let prefix = format!("const {name} = ");
    let line = script
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no line `const {name} = ...`"));
    serde_json::from_str(line.trim_end_matches(';')).unwrap()
}

#[test]
fn push_texts_are_pinned() {
    // Keys sorted: the order a JSON object keeps depends on which crates share serde_json.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!(
            "push_texts",
            serde_json::json!({
                "switch": texts_of(crate::PUSH_JS, "PUSH_TEXTS"),
                "notification": texts_of(crate::SERVICE_WORKER_JS, "TEXTS"),
            })
        );
    });
}

#[test]
fn the_notification_says_nothing_of_the_call() {
    let notification = texts_of(crate::SERVICE_WORKER_JS, "TEXTS").to_string();
    for word in ["tool", "argument", "device", "{"] {
        assert!(!notification[1..].contains(word), "{word}: {notification}");
    }
}

#[test]
fn the_manifest_names_icons_tau_serves() {
    let manifest: Value = serde_json::from_str(crate::MANIFEST).unwrap();
    let icons: Vec<&str> = manifest["icons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|icon| icon["src"].as_str().unwrap())
        .collect();
    assert_eq!(icons, ["/icon.svg", "/icon-maskable.svg"]);
    assert_eq!(manifest["start_url"], "/");
    assert_eq!(manifest["display"], "standalone");
    for svg in [crate::ICON_SVG, crate::ICON_MASKABLE_SVG] {
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    }
}
