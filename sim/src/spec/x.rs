//! Checks derived from `data/x/`: the X API v2 OpenAPI documents `openapi.json` (2.167, the
//! production pin) and `latest-openapi.json` (2.159). Each operation (path + method) becomes its
//! query parameters (`$ref`s to `components/parameters` followed) with type, enum (the items of
//! a comma-separated array are checked one by one), bounds and `required`; its request body's
//! properties, object by object; and the OAuth 2.0 user-context scopes of its `security`, all of
//! which the token must have.
//!
//! The two versions disagree on names (`post.fields` vs `tweet.fields`,
//! `edit_history_post_ids` vs `edit_history_tweet_ids`): the tables are their union, so either
//! name is accepted; a parameter or body property is required only if both require it, and a
//! scope only if both list it. The command form of `POST /2/media/upload`
//! (`command=INIT|APPEND|FINALIZE`) is in neither document (only the docs' quickstart,
//! <https://docs.x.com/x-api/media/quickstart/media-upload-chunked>): its fields are added by
//! hand ([`COMMAND_UPLOAD_FIELDS`]).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::LazyLock,
};

use serde_json::Value;

use super::params::{BodyShape, Kind, Param};

const PRODUCTION: &str = include_str!("data/x/openapi.json");
const LATEST: &str = include_str!("data/x/latest-openapi.json");

/// The fields of the command-style `POST /2/media/upload` (docs quickstart, not the specs).
pub const COMMAND_UPLOAD_FIELDS: [&str; 6] = [
    "command",
    "media_id",
    "total_bytes",
    "media_type",
    "segment_index",
    "media_category",
];

/// One operation of the API.
#[derive(Debug, Clone, Default)]
pub struct Operation {
    /// Query parameters (path parameters are the route's business).
    pub params: BTreeMap<String, Param>,
    /// OAuth 2.0 user-context scopes, all needed.
    pub scopes: Vec<String>,
    /// The request body's properties (JSON and multipart alike), if it takes one.
    pub body: Option<BodyShape>,
}

static OPERATIONS: LazyLock<BTreeMap<(String, String), Operation>> = LazyLock::new(|| {
    let mut merged = parse(PRODUCTION);
    for (key, operation) in parse(LATEST) {
        match merged.get_mut(&key) {
            Some(existing) => {
                for (name, param) in operation.params {
                    match existing.params.get_mut(&name) {
                        Some(mine) => mine.merge(&param),
                        None => {
                            existing.params.insert(name, param);
                        }
                    }
                }
                existing.scopes.retain(|s| operation.scopes.contains(s));
                match (&mut existing.body, operation.body) {
                    (Some(mine), Some(theirs)) => mine.merge(&theirs),
                    (mine @ None, theirs) => *mine = theirs,
                    (Some(_), None) => {}
                }
            }
            None => {
                merged.insert(key, operation);
            }
        }
    }
    merged
});

/// The operation for `method` on `path` as the spec writes it (`/2/tweets/{id}`).
pub fn operation(method: &str, path: &str) -> Option<&'static Operation> {
    OPERATIONS.get(&(method.to_ascii_uppercase(), path.to_string()))
}

fn parse(raw: &str) -> BTreeMap<(String, String), Operation> {
    // The documents are compiled in and pinned by the tests below: an unreadable one gives
    // empty tables, which those tests (and every handler, answering 500) would show.
    let doc: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
    let mut out = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            if !matches!(method.as_str(), "get" | "post" | "put" | "delete" | "patch") {
                continue;
            }
            let mut params = BTreeMap::new();
            for reference in op["parameters"].as_array().into_iter().flatten() {
                let spec = resolve(&doc, reference);
                if spec["in"].as_str() != Some("query") {
                    continue;
                }
                if let Some(name) = spec["name"].as_str() {
                    params.insert(name.to_string(), param_of(&doc, spec));
                }
            }
            let scopes = op["security"]
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|s| s["OAuth2UserToken"].as_array())
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect();
            let body = op["requestBody"]["content"].as_object().map(|content| {
                let mut shape: Option<BodyShape> = None;
                for media in content.values() {
                    let mut one = BodyShape::default();
                    shape_of(&doc, &media["schema"], "", &mut one, 0);
                    match &mut shape {
                        Some(s) => s.merge(&one),
                        None => shape = Some(one),
                    }
                }
                shape.unwrap_or_default()
            });
            out.insert(
                (method.to_ascii_uppercase(), path.clone()),
                Operation {
                    params,
                    scopes,
                    body,
                },
            );
        }
    }
    out
}

/// Follows a local `$ref` (`#/components/...`), once or more.
fn resolve<'a>(doc: &'a Value, mut value: &'a Value) -> &'a Value {
    for _ in 0..8 {
        let Some(reference) = value["$ref"].as_str() else {
            return value;
        };
        let pointer = reference.trim_start_matches('#');
        match doc.pointer(pointer) {
            Some(target) => value = target,
            None => return value,
        }
    }
    value
}

fn param_of(doc: &Value, spec: &Value) -> Param {
    let schema = resolve(doc, &spec["schema"]);
    let list = schema["type"].as_str() == Some("array");
    let item = if list {
        resolve(doc, &schema["items"])
    } else {
        schema
    };
    let mut param = Param::new(Kind::from_spec(item["type"].as_str()));
    param.list = list;
    param.required = spec["required"].as_bool().unwrap_or(false);
    param.enum_values = item["enum"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    param.minimum = item["minimum"].as_f64();
    param.maximum = item["maximum"].as_f64();
    if list {
        param.min_items = schema["minItems"].as_u64().map(|n| n as usize);
        param.max_items = schema["maxItems"].as_u64().map(|n| n as usize);
    }
    param
}

/// Collects the properties of `schema` at `path`, following `$ref`, `allOf`, `anyOf` and
/// `oneOf` (alternatives widen the set). Objects that allow additional properties stay open.
fn shape_of(doc: &Value, schema: &Value, path: &str, shape: &mut BodyShape, depth: usize) {
    if depth > 6 {
        return;
    }
    let schema = resolve(doc, schema);
    for key in ["allOf", "anyOf", "oneOf"] {
        for alternative in schema[key].as_array().into_iter().flatten() {
            let mut one = BodyShape::default();
            shape_of(doc, alternative, path, &mut one, depth + 1);
            for (object, names) in one.objects {
                shape.objects.entry(object).or_default().extend(names);
            }
            if path.is_empty() && shape.required.is_empty() {
                shape.required = one.required;
            }
        }
    }
    let Some(properties) = schema["properties"].as_object() else {
        return;
    };
    if schema["additionalProperties"] == Value::Bool(false) {
        let names: BTreeSet<String> = properties.keys().cloned().collect();
        shape
            .objects
            .entry(path.to_string())
            .or_default()
            .extend(names);
    }
    if path.is_empty() {
        shape.required = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
    }
    for (name, inner) in properties {
        let here = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        shape_of(doc, inner, &here, shape, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_me_needs_users_read_and_tweet_read() {
        let me = operation("GET", "/2/users/me").expect("users/me");
        let scopes: BTreeSet<&str> = me.scopes.iter().map(String::as_str).collect();
        assert_eq!(scopes, BTreeSet::from(["tweet.read", "users.read"]));
        assert!(me.params.contains_key("user.fields"));
    }

    #[test]
    fn tweet_fields_are_checked_item_by_item_under_both_names() {
        let get = operation("GET", "/2/tweets/{id}").expect("tweets/{id}");
        for name in ["tweet.fields", "post.fields"] {
            let fields = &get.params[name];
            assert!(fields.list, "{name}");
            assert!(
                fields.enum_values.contains(&"public_metrics".to_string()),
                "{name}"
            );
        }
        let lookup = operation("GET", "/2/tweets").expect("tweets");
        assert!(lookup.params["ids"].required);
        assert_eq!(lookup.params["ids"].max_items, Some(100));
    }

    #[test]
    fn create_post_body_and_scopes() {
        let create = operation("POST", "/2/tweets").expect("POST tweets");
        let scopes: BTreeSet<&str> = create.scopes.iter().map(String::as_str).collect();
        assert_eq!(
            scopes,
            BTreeSet::from(["tweet.read", "tweet.write", "users.read"])
        );
        let body = create.body.as_ref().expect("a body");
        let ok = serde_json::json!({"text": "hi", "media": {"media_ids": ["1"]},
            "reply": {"in_reply_to_tweet_id": "2"}});
        assert_eq!(body.unknown_field(&ok), None);
        assert_eq!(
            body.unknown_field(&serde_json::json!({"text": "hi", "txt": "x"})),
            Some("txt".to_string())
        );
        let status = operation("GET", "/2/media/upload").expect("media status");
        assert!(status.params["media_id"].required);
        assert_eq!(
            status.params["command"].enum_values,
            vec!["STATUS".to_string()]
        );
        assert_eq!(status.scopes, vec!["media.write".to_string()]);
    }
}
