//! Checks derived from `data/threads/threads-api.postman_collection.json`, the official Threads
//! Postman collection (`fbsamples/threads_api`).
//!
//! Each request of the collection becomes a route: its method and path template, its query
//! parameters (a disabled one is optional; one every example of the route sends is required,
//! except Graph-wide ones such as `fields` and `limit`) and, for GETs, the `fields` it asks for
//! (the collection's `{{fields_threads}}`, `{{fields_replies}}`… variables, resolved): the fields
//! that node or edge has. The collection calls the API without a version prefix.
//!
//! Placeholders keep the collection's variable names, so the simulator can tell a thread
//! (`{thread_id}`, which `{reply_thread_id}` and `{quote_post_id}` also are) from a container
//! (`{container_id}`) or a location (`{location_id}`); `me` is the user (`{user_id}`).

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::LazyLock,
};

use serde_json::Value;

use super::meta::{GRAPH_WIDE_PARAMS, Problem, field_names};

const COLLECTION: &str = include_str!("data/threads/threads-api.postman_collection.json");

/// One route of the collection.
#[derive(Debug, Default, Clone)]
pub struct Route {
    /// Every query parameter any example of the route sends, with whether it is required.
    pub params: BTreeMap<String, bool>,
    /// The fields the route's examples ask for (empty: the collection asks for none).
    pub fields: BTreeSet<String>,
}

/// (method, template), e.g. `("GET", "{user_id}/threads")`.
type RouteKey = (String, String);
/// One example request's enabled and disabled query parameter names.
type Example = (BTreeSet<String>, BTreeSet<String>);

/// Routes by (method, template).
static ROUTES: LazyLock<HashMap<RouteKey, Route>> = LazyLock::new(parse);

/// The route `method` `template` (`{user_id}/threads`, `{thread_id}/insights`, `{user_id}`).
pub fn route(method: &str, template: &str) -> Option<&'static Route> {
    ROUTES.get(&(method.to_ascii_uppercase(), template.to_string()))
}

/// A placeholder of the collection → the simulator's name for that kind of id.
fn placeholder(segment: &str) -> String {
    if segment == "me" {
        return "{user_id}".into();
    }
    match segment
        .strip_prefix("{{")
        .and_then(|s| s.strip_suffix("}}"))
    {
        Some("reply_thread_id" | "quote_post_id") => "{thread_id}".into(),
        Some(name) => format!("{{{name}}}"),
        None => segment.to_string(),
    }
}

/// Replaces `{{name}}` with the collection variable's value (once: values hold no variables).
fn resolve(text: &str, variables: &HashMap<String, String>) -> String {
    let mut out = text.to_string();
    for (name, value) in variables {
        out = out.replace(&format!("{{{{{name}}}}}"), value);
    }
    out
}

fn requests<'a>(items: &'a [Value], out: &mut Vec<&'a Value>) {
    for item in items {
        match item["item"].as_array() {
            Some(children) => requests(children, out),
            None => out.push(&item["request"]),
        }
    }
}

fn parse() -> HashMap<RouteKey, Route> {
    let collection: Value = serde_json::from_str(COLLECTION).unwrap_or_default();
    let variables: HashMap<String, String> = collection["variable"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| Some((v["key"].as_str()?.into(), v["value"].as_str()?.into())))
        .collect();
    let mut all = Vec::new();
    requests(
        collection["item"].as_array().map_or(&[][..], Vec::as_slice),
        &mut all,
    );
    // (method, template) → every example's enabled and disabled parameter names.
    let mut examples: HashMap<RouteKey, Vec<Example>> = HashMap::new();
    let mut fields: HashMap<RouteKey, BTreeSet<String>> = HashMap::new();
    for request in all {
        let Some(method) = request["method"].as_str() else {
            continue;
        };
        let path: Vec<&str> = request["url"]["path"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|s| !s.is_empty())
            .collect();
        let template = path
            .iter()
            .map(|s| placeholder(s))
            .collect::<Vec<_>>()
            .join("/");
        let key = (method.to_ascii_uppercase(), template);
        let (mut enabled, mut disabled) = (BTreeSet::new(), BTreeSet::new());
        for q in request["url"]["query"].as_array().into_iter().flatten() {
            let Some(name) = q["key"].as_str() else {
                continue;
            };
            if q["disabled"].as_bool() == Some(true) {
                disabled.insert(name.to_string());
            } else {
                enabled.insert(name.to_string());
            }
            if name == "fields"
                && let Some(value) = q["value"].as_str()
            {
                fields
                    .entry(key.clone())
                    .or_default()
                    .extend(field_names(&resolve(value, &variables)));
            }
        }
        examples.entry(key).or_default().push((enabled, disabled));
    }
    examples
        .into_iter()
        .map(|(key, examples)| {
            let mut params = BTreeMap::new();
            for (enabled, disabled) in &examples {
                for name in enabled.iter().chain(disabled) {
                    let required = !GRAPH_WIDE_PARAMS.contains(&name.as_str())
                        && examples.iter().all(|(e, _)| e.contains(name));
                    params.insert(name.clone(), required);
                }
            }
            let fields = fields.remove(&key).unwrap_or_default();
            (key, Route { params, fields })
        })
        .collect()
}

/// Checks a request to the route `method` `template` (parameters as name, value) against the
/// collection; `Ok` when the collection does not have the route. The same rules as Graph's
/// ([`super::meta::check`]): requested fields must be the route's, a POST may carry only the
/// route's or Graph-wide parameters (our strict choice), and required parameters must be there.
/// `node` names the node type in the error message (`ThreadsMedia`, `ThreadsUser`…).
pub fn check(
    method: &str,
    template: &str,
    node: &str,
    params: &[(String, String)],
) -> Result<(), Problem> {
    let Some(route) = route(method, template) else {
        return Ok(());
    };
    let value = |name: &str| {
        params
            .iter()
            .find(|(k, v)| k == name && !v.trim().is_empty())
            .map(|(_, v)| v.as_str())
    };
    if let Some(asked) = value("fields")
        && !route.fields.is_empty()
        && let Some(field) = field_names(asked)
            .into_iter()
            .find(|f| !route.fields.contains(f))
    {
        return Err(Problem::UnknownField {
            field,
            node: node.to_string(),
        });
    }
    if method.eq_ignore_ascii_case("POST")
        && let Some((name, _)) = params.iter().find(|(name, _)| {
            !route.params.contains_key(name) && !GRAPH_WIDE_PARAMS.contains(&name.as_str())
        })
    {
        return Err(Problem::UnknownParam {
            param: name.clone(),
        });
    }
    if let Some((missing, _)) = route
        .params
        .iter()
        .find(|(name, required)| **required && value(name).is_none())
    {
        return Err(Problem::MissingParam {
            param: missing.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn facts_the_simulator_relies_on() {
        let threads = route("GET", "{user_id}/threads").expect("list of threads");
        assert!(threads.fields.contains("permalink"));
        assert!(threads.fields.contains("poll_attachment"));
        assert!(!threads.fields.contains("is_reply"));
        let replies = route("GET", "{thread_id}/replies").expect("replies");
        assert!(replies.fields.contains("is_reply"));
        let create = route("POST", "{user_id}/threads").expect("container");
        assert_eq!(create.params.get("media_type"), Some(&true));
        assert_eq!(create.params.get("text"), Some(&false));
        assert_eq!(create.params.get("reply_to_id"), Some(&false));
        let publish = route("POST", "{user_id}/threads_publish").expect("publish");
        assert_eq!(publish.params.get("creation_id"), Some(&true));
        let container = route("GET", "{container_id}").expect("container status");
        assert_eq!(
            container.fields.iter().collect::<Vec<_>>(),
            ["error_message", "id", "status"]
        );
        assert_eq!(
            route("GET", "{thread_id}/insights")
                .expect("post insights")
                .params
                .get("metric"),
            Some(&true)
        );
        // `fields` and `limit` are in every example but optional (Graph-wide).
        assert_eq!(threads.params.get("limit"), Some(&false));
        // The token routes, without the version prefix.
        let code = route("POST", "oauth/access_token").expect("code exchange");
        for name in [
            "client_id",
            "client_secret",
            "code",
            "grant_type",
            "redirect_uri",
        ] {
            assert_eq!(code.params.get(name), Some(&true), "{name}");
        }
        let exchange = route("GET", "access_token").expect("long-lived exchange");
        assert_eq!(exchange.params.get("grant_type"), Some(&true));
        assert_eq!(exchange.params.get("client_secret"), Some(&true));
        assert!(route("GET", "refresh_access_token").is_some());
    }

    #[test]
    fn check_refuses_what_the_collection_does_not_have() {
        assert_eq!(
            check(
                "GET",
                "{user_id}/threads",
                "ThreadsMedia",
                &pairs(&[("fields", "id,is_reply")])
            ),
            Err(Problem::UnknownField {
                field: "is_reply".into(),
                node: "ThreadsMedia".into()
            })
        );
        assert_eq!(
            check(
                "POST",
                "{user_id}/threads",
                "ThreadsUser",
                &pairs(&[("media_type", "TEXT"), ("txt", "hi")])
            ),
            Err(Problem::UnknownParam {
                param: "txt".into()
            })
        );
        assert_eq!(
            check("POST", "{user_id}/threads_publish", "ThreadsUser", &[]),
            Err(Problem::MissingParam {
                param: "creation_id".into()
            })
        );
        assert!(
            check(
                "GET",
                "{user_id}/threads",
                "ThreadsMedia",
                &pairs(&[("fields", "id,text,permalink"), ("limit", "5")])
            )
            .is_ok()
        );
    }
}
