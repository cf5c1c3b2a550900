use pretty_assertions::assert_eq;

use super::*;

#[test]
fn the_relying_party_is_taubars_configured_name_or_localhost() {
    let hosts: Vec<String> = [
        "127.0.0.1:9000",
        "[::1]:9000",
        "box.lan",
        "box.lan:9000",
        "localhost:9000",
    ]
    .map(String::from)
    .to_vec();
    let local = relying_party(&hosts, &[]).unwrap();
    assert_eq!(
        local
            .get_allowed_origins()
            .iter()
            .map(Url::as_str)
            .collect::<Vec<_>>(),
        ["http://localhost:9000/"]
    );
    let named = relying_party(&hosts, &["Box.lan".into()]).unwrap();
    assert_eq!(
        named
            .get_allowed_origins()
            .iter()
            .map(Url::as_str)
            .collect::<Vec<_>>(),
        ["http://box.lan/", "http://box.lan:9000/"]
    );
    assert!(relying_party(&["127.0.0.1:9000".into()], &[]).is_err());
}
