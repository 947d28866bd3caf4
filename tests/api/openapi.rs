//! The OpenAPI document: served, committed, well-formed, and covering every route.
//!
//! After an intended change of the contract: `OPENAPI_UPDATE=1 cargo test --test api openapi`
//! rewrites `docs/openapi.json`.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::pages::{BROWSER_ACCEPT, page};

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json");

async fn served(app: &TestApp) -> (String, Value) {
    let response = app.http.get(app.url("/openapi.json")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let text = response.text().await.unwrap();
    let document = serde_json::from_str(&text).unwrap();
    (text, document)
}

#[actix_web::test]
async fn the_served_document_is_the_committed_one() {
    let app = TestApp::spawn().await;
    let (text, _) = served(&app).await;
    assert_eq!(text, social_service::http::openapi::document_json());
    if std::env::var_os("OPENAPI_UPDATE").is_some() {
        std::fs::write(COMMITTED, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(COMMITTED).unwrap_or_default();
    assert!(
        committed == text,
        "docs/openapi.json differs from the served document; after an intended change run \
         `OPENAPI_UPDATE=1 cargo test --test api openapi`"
    );
}

/// Every `$ref` in `value`.
fn refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", Value::String(target)) => found.push(target),
                    _ => refs(value, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| refs(item, found)),
        _ => {}
    }
}

#[test]
fn the_document_is_well_formed_openapi_3_1() {
    let document: Value =
        serde_json::from_str(social_service::http::openapi::document_json()).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    assert!(document["info"]["title"].is_string());
    assert!(document["info"]["version"].is_string());
    let mut found = Vec::new();
    refs(&document, &mut found);
    assert!(!found.is_empty());
    for target in found {
        let pointer = target
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("external $ref {target}"));
        assert!(
            document.pointer(pointer).is_some(),
            "$ref {target} does not resolve"
        );
    }
    // Every operation names its answers, and every security requirement a declared scheme.
    let schemes = document["components"]["securitySchemes"]
        .as_object()
        .unwrap();
    for name in ["api_key", "session", "operator_token"] {
        assert!(schemes.contains_key(name), "{name}");
    }
    assert_eq!(schemes["api_key"]["in"], "header");
    assert_eq!(schemes["api_key"]["name"], "service-api-key");
    assert_eq!(schemes["session"]["in"], "cookie");
    assert_eq!(schemes["session"]["name"], "service_session");
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            assert!(!responses.is_empty(), "{method} {path}");
            for requirement in operation["security"].as_array().into_iter().flatten() {
                for scheme in requirement.as_object().unwrap().keys() {
                    assert!(schemes.contains_key(scheme), "{method} {path}: {scheme}");
                }
            }
            // A path parameter is declared for each `{name}` of the path.
            for name in path_params(path) {
                let declared = operation["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|p| p["name"] == name.as_str() && p["in"] == "path");
                assert!(declared, "{method} {path}: path parameter {name}");
            }
        }
    }
}

fn path_params(path: &str) -> Vec<String> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(str::to_string)
        .collect()
}

/// `{anything}` → `{}`, so that parameter names do not matter when comparing paths.
fn shape(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "{}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The paths the code registers, read from the route tables in `src/http` and
/// `src/dashboard` (`web::resource("…")`, `.route("…", …)` under their scope).
fn registered_paths() -> BTreeSet<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut paths = BTreeSet::new();
    for dir in ["src/http", "src/dashboard"] {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let file = entry.unwrap().path();
            if file.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let source = std::fs::read_to_string(&file).unwrap();
            let name = file.file_stem().unwrap().to_str().unwrap();
            // The dashboard's modules are configured inside its `/dashboard` scope.
            let mut scope = if dir == "src/dashboard" && name != "mod" {
                "/dashboard".to_string()
            } else {
                String::new()
            };
            for line in source.lines() {
                let line = line.trim();
                if line.starts_with("//") {
                    continue;
                }
                for (marker, is_scope) in [
                    ("web::scope(\"", true),
                    ("web::resource(\"", false),
                    (".route(\"", false),
                    ("cfg.route(\"", false),
                ] {
                    let Some(at) = line.find(marker) else {
                        continue;
                    };
                    let rest = &line[at + marker.len()..];
                    let literal = &rest[..rest.find('"').unwrap()];
                    if is_scope {
                        scope = literal.to_string();
                    } else {
                        paths.insert(format!("{scope}{literal}"));
                    }
                    break;
                }
            }
        }
    }
    // Registered through a constant.
    paths.insert(social_service::web::SIGN_IN_PATH.to_string());
    paths
}

#[test]
fn every_registered_route_is_documented() {
    let document: Value =
        serde_json::from_str(social_service::http::openapi::document_json()).unwrap();
    let documented: BTreeSet<String> = document["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(|p| shape(p))
        .collect();
    let registered: BTreeSet<String> = registered_paths().iter().map(|p| shape(p)).collect();
    // The scan found the route tables (a broken scan must not pass quietly).
    assert!(registered.len() > 40, "{registered:?}");
    let missing: Vec<_> = registered.difference(&documented).collect();
    assert!(
        missing.is_empty(),
        "registered but not documented: {missing:?}"
    );
    let extra: Vec<_> = documented.difference(&registered).collect();
    assert!(extra.is_empty(), "documented but not registered: {extra:?}");
}

#[actix_web::test]
async fn every_documented_operation_answers() {
    let app = TestApp::spawn().await;
    let (_, document) = served(&app).await;
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // A real file name: the stylesheet the sign-in page links (names carry a content hash).
    let signin = app.http.get(app.url("/signin")).send().await.unwrap();
    let signin = signin.text().await.unwrap();
    let at = signin.find("/static/").unwrap() + "/static/".len();
    let asset = &signin[at..at + signin[at..].find('"').unwrap()];
    let mut checked = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        let concrete: String = path
            .split('/')
            .map(|segment| match segment {
                "{platform}" => "facebook".to_string(),
                "{name}" => asset.to_string(),
                s if s.starts_with('{') => uuid::Uuid::new_v4().to_string(),
                s => s.to_string(),
            })
            .collect::<Vec<_>>()
            .join("/");
        for method in item.as_object().unwrap().keys() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let response = no_redirects
                .request(method.clone(), app.url(&concrete))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body = response.text().await.unwrap();
            assert_ne!(status, 405, "{method} {path}: {body}");
            assert!(
                !body.contains("No route for"),
                "{method} {path} ({concrete}): {status} {body}"
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
}

#[actix_web::test]
async fn the_reference_page_lists_every_operation() {
    let app = TestApp::spawn().await;
    let (_, document) = served(&app).await;
    let response = app
        .http
        .get(app.url("/docs/api"))
        .header("accept", BROWSER_ACCEPT)
        .send()
        .await
        .unwrap();
    let body = page(response).await;
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let heading = format!("<code>{} {}</code>", method.to_uppercase(), path);
            assert!(body.contains(&heading), "{heading} missing");
        }
    }
    assert!(body.contains("href=\"/openapi.json\""));
}

/// The committed document (equal to the served one, see above), read once.
fn committed() -> &'static Value {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    })
}

/// Where `value` breaks `schema` (the subset of JSON Schema the document uses: `$ref`,
/// `oneOf`/`anyOf`/`allOf`, `type`, `enum`, `properties`, `required`, `additionalProperties`,
/// `items`); empty when it conforms.
fn violations(doc: &Value, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    check(doc, schema, value, at, true, out);
}

/// The members `schema` names, through `$ref` and `allOf`.
fn named(doc: &Value, schema: &Value, names: &mut BTreeSet<String>) {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        return named(doc, &doc["components"]["schemas"][name], names);
    }
    if let Some(properties) = schema["properties"].as_object() {
        names.extend(properties.keys().cloned());
    }
    for part in schema["allOf"].as_array().into_iter().flatten() {
        named(doc, part, names);
    }
}

/// `strict`: a member the object's schema does not name is reported (off for the parts of an
/// `allOf`, whose members are named by the whole).
fn check(
    doc: &Value,
    schema: &Value,
    value: &Value,
    at: &str,
    strict: bool,
    out: &mut Vec<String>,
) {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        return check(
            doc,
            &doc["components"]["schemas"][name],
            value,
            at,
            strict,
            out,
        );
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(choices) = schema[key].as_array() {
            let fits = choices.iter().any(|choice| {
                let mut found = Vec::new();
                check(doc, choice, value, at, strict, &mut found);
                found.is_empty()
            });
            if !fits {
                out.push(format!("{at}: fits none of {key}"));
            }
        }
    }
    if let Some(parts) = schema["allOf"].as_array() {
        for part in parts {
            check(doc, part, value, at, false, out);
        }
        if strict && let Value::Object(members) = value {
            let mut names = BTreeSet::new();
            named(doc, schema, &mut names);
            for name in members.keys().filter(|name| !names.contains(*name)) {
                out.push(format!("{at}.{name}: not documented"));
            }
        }
    }
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let type_fits = types.is_empty()
        || types.contains(&kind)
        || (kind == "integer" && types.contains(&"number"));
    if !type_fits {
        out.push(format!("{at}: is {kind}, documented {types:?}"));
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        out.push(format!("{at}: {value} is not one of {allowed:?}"));
    }
    match value {
        Value::Object(members) => {
            for name in schema["required"].as_array().into_iter().flatten() {
                let name = name.as_str().unwrap_or_default();
                if !members.contains_key(name) {
                    out.push(format!("{at}: required `{name}` is absent"));
                }
            }
            for (name, member) in members {
                let at = format!("{at}.{name}");
                match schema["properties"].get(name) {
                    Some(property) => check(doc, property, member, &at, true, out),
                    None => match &schema["additionalProperties"] {
                        Value::Bool(false) => out.push(format!("{at}: not documented")),
                        Value::Object(_) => {
                            check(doc, &schema["additionalProperties"], member, &at, true, out)
                        }
                        // An object with documented properties and nothing about others: a
                        // member it does not name is a member the document forgot.
                        _ if strict && schema["properties"].is_object() => {
                            out.push(format!("{at}: not documented"))
                        }
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) if schema["items"].is_object() => {
            for (i, item) in items.iter().enumerate() {
                check(
                    doc,
                    &schema["items"],
                    item,
                    &format!("{at}[{i}]"),
                    true,
                    out,
                );
            }
        }
        _ => {}
    }
}

/// Fails unless `body` is what the document says `method path` answers with `status`
/// (`path` as documented, e.g. `/api/performance/post/{post_id}`).
pub(crate) fn assert_documented(method: &str, path: &str, status: u16, body: &Value) {
    let doc = committed();
    let schema = &doc["paths"][path][method]["responses"][status.to_string()]["content"]["application/json"]
        ["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} documents no JSON {status}"
    );
    let mut found = Vec::new();
    violations(doc, schema, body, "$", &mut found);
    assert!(
        found.is_empty(),
        "{method} {path} {status} breaks its schema: {found:#?}\n{body:#}"
    );
}

/// The checker itself: a member the schema does not name, a wrong type and a missing required
/// member are each caught.
#[test]
fn the_schema_check_catches_what_it_should() {
    let doc = committed();
    let schema = json!({"$ref": "#/components/schemas/BackfilledDate"});
    let good = json!({"date": "2026-11-20", "status": "failed", "data": null, "error": "x"});
    let mut found = Vec::new();
    violations(doc, &schema, &good, "$", &mut found);
    assert!(found.is_empty(), "{found:?}");
    for bad in [
        json!({"date": "2026-11-20", "status": "failed", "data": null}),
        json!({"date": "2026-11-20", "status": "failed", "data": 0, "error": "x"}),
        json!({"date": "2026-11-20", "status": "failed", "data": null, "error": "x", "more": 1}),
    ] {
        let mut found = Vec::new();
        violations(doc, &schema, &bad, "$", &mut found);
        assert!(!found.is_empty(), "{bad}");
    }
}
