//! Checks derived from `data/youtube/`: the YouTube Data API v3 and YouTube Analytics API v2
//! discovery documents. Each is parsed once into a table of its methods: HTTP method and path,
//! query parameters (the method's own and the document's global ones) with type, enum,
//! `required`, `repeated` and bounds, and the OAuth scopes any one of which authorizes a call.
//! Request bodies are described by the document's `schemas` ([`Api::body`]), and the values of a
//! `part` parameter are the top-level properties of the method's resource schema ([`Api::parts`]).
//!
//! Two rules are not in the documents and are written here by hand, from the references:
//! - Analytics `reports.query` requires `ids`, `startDate`, `endDate` and `metrics`
//!   (<https://developers.google.com/youtube/analytics/reference/reports/query>); the discovery
//!   document does not mark them.
//! - `status.containsSyntheticMedia` of a Video (REST reference, revision 2024-10-30,
//!   <https://developers.google.com/youtube/v3/docs/videos#status.containsSyntheticMedia>) is in
//!   no discovery copy: accepted.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::LazyLock,
};

use serde_json::Value;

use super::params::{BodyShape, Kind, Param};

const DATA_DOC: &str = include_str!("data/youtube/youtube.v3.json");
const ANALYTICS_DOC: &str = include_str!("data/youtube/youtubeAnalytics.v2.json");

/// `reports.query` parameters the Analytics reference requires (the document does not say so).
const ANALYTICS_REQUIRED: [&str; 4] = ["ids", "startDate", "endDate", "metrics"];

/// Properties of a resource that are not parts (`part=kind` is refused).
const NOT_PARTS: [&str; 2] = ["kind", "etag"];

/// One method of a discovery document.
#[derive(Debug, Clone)]
pub struct Method {
    /// e.g. `youtube.videos.list`.
    pub id: String,
    pub http_method: String,
    /// Relative to the service root, e.g. `youtube/v3/videos`.
    pub path: String,
    /// The media upload path (`/upload/youtube/v3/videos`), for methods that take one.
    pub upload_path: Option<String>,
    /// Query parameters: the method's and the document's global ones.
    pub params: BTreeMap<String, Param>,
    /// Any one of these authorizes the call.
    pub scopes: Vec<String>,
    /// The schema of the request body, if the method takes one.
    pub request: Option<String>,
    /// The schema of the response (whose properties are the `part` values).
    pub response: Option<String>,
}

/// A parsed discovery document.
#[derive(Debug)]
pub struct Api {
    pub methods: Vec<Method>,
    schemas: Value,
}

static DATA: LazyLock<Api> = LazyLock::new(|| parse(DATA_DOC, false));
static ANALYTICS: LazyLock<Api> = LazyLock::new(|| parse(ANALYTICS_DOC, true));

/// The YouTube Data API v3.
pub fn data_api() -> &'static Api {
    &DATA
}

/// The YouTube Analytics API v2.
pub fn analytics_api() -> &'static Api {
    &ANALYTICS
}

fn parse(raw: &str, analytics: bool) -> Api {
    // The documents are compiled in and pinned by the tests below: an unreadable one gives
    // empty tables, which those tests (and every handler, answering 500) would show.
    let doc: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
    let global = params_of(&doc["parameters"]);
    let mut methods = Vec::new();
    collect_methods(&doc["resources"], &global, &mut methods);
    if analytics {
        for method in methods
            .iter_mut()
            .filter(|m| m.id == "youtubeAnalytics.reports.query")
        {
            for name in ANALYTICS_REQUIRED {
                if let Some(param) = method.params.get_mut(name) {
                    param.required = true;
                }
            }
        }
    }
    let mut schemas = doc["schemas"].clone();
    if let Some(status) = schemas["VideoStatus"]["properties"].as_object_mut() {
        status.insert(
            "containsSyntheticMedia".into(),
            serde_json::json!({"type": "boolean"}),
        );
    }
    Api { methods, schemas }
}

fn collect_methods(resources: &Value, global: &BTreeMap<String, Param>, out: &mut Vec<Method>) {
    let Some(resources) = resources.as_object() else {
        return;
    };
    for resource in resources.values() {
        for method in resource["methods"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            let mut params = global.clone();
            params.extend(params_of(&method["parameters"]));
            out.push(Method {
                id: method["id"].as_str().unwrap_or_default().to_string(),
                http_method: method["httpMethod"].as_str().unwrap_or("GET").to_string(),
                path: method["path"].as_str().unwrap_or_default().to_string(),
                upload_path: method["mediaUpload"]["protocols"]["simple"]["path"]
                    .as_str()
                    .map(str::to_string),
                params,
                scopes: strings(&method["scopes"]),
                request: method["request"]["$ref"].as_str().map(str::to_string),
                response: method["response"]["$ref"].as_str().map(str::to_string),
            });
        }
        collect_methods(&resource["resources"], global, out);
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The query parameters of a `parameters` object (path parameters are the route's business).
fn params_of(parameters: &Value) -> BTreeMap<String, Param> {
    let mut out = BTreeMap::new();
    for (name, spec) in parameters.as_object().into_iter().flatten() {
        if spec["location"].as_str() != Some("query") {
            continue;
        }
        let mut param = Param::new(Kind::from_spec(spec["type"].as_str()));
        param.enum_values = strings(&spec["enum"]);
        param.required = spec["required"].as_bool().unwrap_or(false);
        param.repeated = spec["repeated"].as_bool().unwrap_or(false);
        // Discovery documents write bounds as strings.
        let bound = |v: &Value| v.as_str().and_then(|s| s.parse::<f64>().ok());
        param.minimum = bound(&spec["minimum"]);
        param.maximum = bound(&spec["maximum"]);
        out.insert(name.clone(), param);
    }
    out
}

impl Api {
    /// The method with this id (`youtube.videos.list`).
    pub fn method(&self, id: &str) -> Option<&Method> {
        self.methods.iter().find(|m| m.id == id)
    }

    /// The method serving `http_method` on `path` (with or without a leading `/`; upload
    /// paths match the method's media upload path).
    pub fn find(&self, http_method: &str, path: &str) -> Option<&Method> {
        let path = path.trim_start_matches('/');
        self.methods.iter().find(|m| {
            m.http_method.eq_ignore_ascii_case(http_method)
                && (m.path == path
                    || m.upload_path
                        .as_deref()
                        .is_some_and(|u| u.trim_start_matches('/') == path))
        })
    }

    /// The values `part` takes for a method answering `schema`: its resource's top-level
    /// properties, less `kind` and `etag`. For a list method (`VideoListResponse`) the resource
    /// is the schema of its `items`.
    pub fn parts(&self, schema: &str) -> Vec<String> {
        let items = &self.schemas[schema]["properties"]["items"]["items"]["$ref"];
        let resource = items.as_str().unwrap_or(schema);
        self.schemas[resource]["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, _)| name.clone())
            .filter(|name| !NOT_PARTS.contains(&name.as_str()))
            .collect()
    }

    /// The properties a body of `schema` may have, object by object (`$ref`s followed; maps and
    /// open objects not checked).
    pub fn body(&self, schema: &str) -> BodyShape {
        let mut shape = BodyShape::default();
        self.shape_of(schema, "", &mut shape, &mut Vec::new());
        shape
    }

    fn shape_of(&self, schema: &str, path: &str, shape: &mut BodyShape, seen: &mut Vec<String>) {
        // Schemas nest themselves (comments, playlists): stop at a cycle.
        if seen.iter().any(|s| s == schema) {
            return;
        }
        let Some(properties) = self.schemas[schema]["properties"].as_object() else {
            return;
        };
        seen.push(schema.to_string());
        let names: BTreeSet<String> = properties.keys().cloned().collect();
        shape.objects.insert(path.to_string(), names);
        for (name, spec) in properties {
            if let Some(inner) = spec["$ref"].as_str() {
                let here = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                self.shape_of(inner, &here, shape, seen);
            }
        }
        seen.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::params::{ParamError, check_query};

    fn pairs(raw: &[(&str, &str)]) -> Vec<(String, String)> {
        raw.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn videos_list_requires_part_and_bounds_max_results() {
        let list = data_api()
            .method("youtube.videos.list")
            .expect("videos.list");
        assert_eq!(list.path, "youtube/v3/videos");
        assert!(list.params["part"].required);
        assert_eq!(list.params["maxResults"].maximum, Some(50.0));
        assert!(list.params.contains_key("prettyPrint"), "global parameters");
        assert!(
            list.scopes
                .contains(&"https://www.googleapis.com/auth/youtube.readonly".to_string())
        );
        assert!(matches!(
            check_query(&list.params, &pairs(&[("id", "x")])),
            Err(ParamError::Missing { .. })
        ));
        let parts = data_api().parts(list.response.as_deref().unwrap_or_default());
        assert!(parts.contains(&"processingDetails".to_string()));
        assert!(!parts.contains(&"kind".to_string()));
    }

    #[test]
    fn uploads_are_found_by_their_upload_path() {
        let insert = data_api()
            .find("POST", "/upload/youtube/v3/videos")
            .expect("videos.insert");
        assert_eq!(insert.id, "youtube.videos.insert");
        assert!(
            insert
                .scopes
                .contains(&"https://www.googleapis.com/auth/youtube.upload".to_string())
        );
        let body = data_api().body(insert.request.as_deref().unwrap_or_default());
        assert_eq!(
            body.unknown_field(&serde_json::json!({"snippet": {"title": "t"}})),
            None
        );
        assert_eq!(
            body.unknown_field(&serde_json::json!({"status": {"containsSyntheticMedia": false}})),
            None
        );
        assert_eq!(
            body.unknown_field(&serde_json::json!({"snippet": {"titel": "t"}})),
            Some("snippet.titel".to_string())
        );
        let thumbnails = data_api()
            .find("POST", "upload/youtube/v3/thumbnails/set")
            .expect("thumbnails.set");
        assert!(thumbnails.params["videoId"].required);
    }

    #[test]
    fn analytics_query_takes_sort_and_max_results_and_requires_the_reference_four() {
        let query = analytics_api()
            .method("youtubeAnalytics.reports.query")
            .expect("reports.query");
        assert_eq!(query.path, "v2/reports");
        for name in ["maxResults", "sort", "startIndex", "filters"] {
            assert!(query.params.contains_key(name), "{name}");
        }
        for name in ANALYTICS_REQUIRED {
            assert!(query.params[name].required, "{name}");
        }
        assert_eq!(query.params["maxResults"].kind, Kind::Integer);
        assert!(
            query
                .scopes
                .contains(&"https://www.googleapis.com/auth/yt-analytics.readonly".to_string())
        );
    }
}
