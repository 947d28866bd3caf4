//! `docs/configuration.md` lists every configuration key the service reads, and only those: the
//! keys of the default configuration (as the loader sees it, serialized) are compared with the
//! keys the document's tables name.

use std::{collections::BTreeSet, path::Path};

use serde_json::Value;

fn keys_of(prefix: &str, value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                keys_of(&path, value, out);
            }
        }
        _ => {
            out.insert(prefix.to_string());
        }
    }
}

/// The keys named in the first column of the document's tables: "| `section.key` | …".
fn documented_keys(document: &str) -> BTreeSet<String> {
    document
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(key, _)| key.to_string())
        .filter(|key| key.contains('.'))
        .collect()
}

#[test]
fn every_configuration_key_is_documented_and_every_documented_key_exists() {
    let defaults = serde_json::to_value(social_service::config::Config::default())
        .expect("the configuration serializes");
    let mut in_code = BTreeSet::new();
    keys_of("", &defaults, &mut in_code);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
    let document = std::fs::read_to_string(&path).expect("docs/configuration.md is readable");
    let documented = documented_keys(&document);
    let undocumented: Vec<_> = in_code.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&in_code).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "keys the code reads but docs/configuration.md does not list: {undocumented:?}\n\
         keys docs/configuration.md lists that the code does not read: {unknown:?}"
    );
    assert!(
        in_code.len() > 100,
        "the walk found the keys: {}",
        in_code.len()
    );
}

#[test]
fn the_documented_keys_are_read_from_table_rows_only() {
    let document = "| Key | Default | Meaning |\n|---|---|---|\n| `server.bind` | `x` | y |\n\
                    text with `auth.issuer` in it\n";
    let keys = documented_keys(document);
    assert_eq!(keys.into_iter().collect::<Vec<_>>(), vec!["server.bind"]);
}
