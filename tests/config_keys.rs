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

/// Every `SERVICE__SECTION__KEY` in a file a user copies from, as the `section.key` it sets, with
/// whether it is the `_FILE` form. Placeholders (`SERVICE__SECTION__KEY`) and bare prefixes are
/// not variables.
fn variables_named(text: &str) -> Vec<(String, String, bool)> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices("SERVICE__") {
        let name: String = text[start..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if name.ends_with('_') || name.starts_with("SERVICE__SECTION__") {
            continue;
        }
        let body = name.trim_start_matches("SERVICE__");
        let (body, file_form) = match body.strip_suffix("_FILE") {
            Some(base) => (base, true),
            None => (body, false),
        };
        found.push((
            name.clone(),
            body.replace("__", ".").to_ascii_lowercase(),
            file_form,
        ));
    }
    found
}

#[test]
fn every_environment_variable_in_the_deployment_files_and_documents_sets_a_real_key() {
    let defaults = serde_json::to_value(social_service::config::Config::default())
        .expect("the configuration serializes");
    let mut keys = BTreeSet::new();
    keys_of("", &defaults, &mut keys);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![
        root.join("README.md"),
        root.join("config.toml"),
        root.join("compose.yaml"),
        root.join("Dockerfile"),
    ];
    for dir in ["docs", "contrib"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("the folder is readable") {
            let path = entry.expect("a folder entry").path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    let mut wrong = Vec::new();
    let mut seen = 0;
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue; // a screenshot
        };
        for (name, key, file_form) in variables_named(&text) {
            seen += 1;
            if !keys.contains(&key) {
                wrong.push(format!("{}: {name} sets no key ({key})", path.display()));
            } else if file_form && !social_service::config::has_file_form(&key) {
                wrong.push(format!(
                    "{}: {name}: {key} has no _FILE form",
                    path.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(seen > 20, "the scan found the variables: {seen}");
}

#[test]
fn variables_are_read_with_their_file_form_and_placeholders_are_skipped() {
    let found = variables_named(
        "SERVICE__SECTION__KEY=x SERVICE__OAUTH__ \
         SERVICE__SECRETS__SESSION_KEY_FILE=/run/secrets/a `SERVICE__SERVER__BIND`",
    );
    assert_eq!(
        found,
        vec![
            (
                "SERVICE__SECRETS__SESSION_KEY_FILE".to_string(),
                "secrets.session_key".to_string(),
                true
            ),
            (
                "SERVICE__SERVER__BIND".to_string(),
                "server.bind".to_string(),
                false
            ),
        ]
    );
}
