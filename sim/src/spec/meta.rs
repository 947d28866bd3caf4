//! Checks derived from `data/meta/`: the facebook-business-sdk-codegen specs of the Graph API
//! nodes the simulator serves (`Page`, `PagePost`, `Photo`, `AdVideo`, `User`, `IGUser`,
//! `IGMedia`, `ShadowIGMediaBuilder`, `InstagramInsightsResult`) and `enum_types.json`.
//!
//! Each node file has `fields` (name, type) and `apis`: one entry per (HTTP method, edge), the
//! node itself having no `endpoint`, with its `params` (name, type, required) and the node type
//! it `return`s. A parameter whose type names an enum (`shadowiguserinsights_metric_enum_param`,
//! or `list<…>` of one) takes the values `enum_types.json` lists under that name.
//!
//! What codegen does not carry is hand-written here with its source: the Graph-wide parameters
//! ([`GRAPH_WIDE_PARAMS`]) and the multipart `source` upload of photos and videos.

use std::{
    collections::{BTreeSet, HashMap},
    sync::LazyLock,
};

use serde_json::Value;

/// The spec files, embedded so a fresh clone checks against exactly what `data/` holds.
const NODE_FILES: [(&str, &str); 9] = [
    ("AdVideo", include_str!("data/meta/AdVideo.json")),
    ("IGMedia", include_str!("data/meta/IGMedia.json")),
    ("IGUser", include_str!("data/meta/IGUser.json")),
    (
        "InstagramInsightsResult",
        include_str!("data/meta/InstagramInsightsResult.json"),
    ),
    ("Page", include_str!("data/meta/Page.json")),
    ("PagePost", include_str!("data/meta/PagePost.json")),
    ("Photo", include_str!("data/meta/Photo.json")),
    (
        "ShadowIGMediaBuilder",
        include_str!("data/meta/ShadowIGMediaBuilder.json"),
    ),
    ("User", include_str!("data/meta/User.json")),
];
const ENUM_FILE: &str = include_str!("data/meta/enum_types.json");

/// Parameters every Graph call may carry, which codegen leaves out: the token and its proof
/// (<https://developers.facebook.com/docs/graph-api/securing-requests>), `fields`
/// (<https://developers.facebook.com/docs/graph-api/guides/field-expansion>), cursor, time and
/// offset paging (<https://developers.facebook.com/docs/graph-api/results>) and the debug and
/// formatting switches (<https://developers.facebook.com/docs/graph-api/guides/debugging>,
/// <https://developers.facebook.com/docs/graph-api/overview#request-parameters>).
pub const GRAPH_WIDE_PARAMS: [&str; 14] = [
    "access_token",
    "appsecret_proof",
    "appsecret_time",
    "fields",
    "limit",
    "after",
    "before",
    "since",
    "until",
    "offset",
    "pretty",
    "suppress_http_code",
    "date_format",
    "debug",
];

/// One parameter of an edge.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    /// The codegen type (`string`, `bool`, `list<…>`, an enum name…).
    pub kind: String,
    pub required: bool,
    /// Whether the type is `list<…>` (values may come comma separated or as a JSON array).
    pub list: bool,
    /// The allowed values when the type names an enum of `enum_types.json`.
    pub values: Option<Vec<String>>,
}

/// One (method, edge) of a node: its parameters and the node type it answers.
#[derive(Debug, Clone)]
pub struct Edge {
    pub params: Vec<Param>,
    pub returns: Option<String>,
}

impl Edge {
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// A node type: its fields and its edges by (`GET`/`POST`/`DELETE`, edge name or `None` for the
/// node itself).
#[derive(Debug, Default)]
pub struct Node {
    pub fields: BTreeSet<String>,
    pub edges: HashMap<(String, Option<String>), Edge>,
}

impl Node {
    pub fn edge(&self, method: &str, edge: Option<&str>) -> Option<&Edge> {
        self.edges
            .get(&(method.to_ascii_uppercase(), edge.map(str::to_string)))
    }

    /// Whether `name` may be asked for in `fields`: a field, or an edge read by field expansion
    /// (`insights.metric(reach)`, `comments.summary(true)`).
    pub fn has_field(&self, name: &str) -> bool {
        self.fields.contains(name) || self.edge("GET", Some(name)).is_some()
    }
}

static NODES: LazyLock<HashMap<&'static str, Node>> = LazyLock::new(parse);

/// The node type `name` (`Page`, `IGUser`…), if `data/meta/` has it.
pub fn node(name: &str) -> Option<&'static Node> {
    NODES.get(name)
}

fn parse() -> HashMap<&'static str, Node> {
    let enums: HashMap<String, Vec<String>> = serde_json::from_str::<Value>(ENUM_FILE)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| {
            let name = e["name"].as_str()?.to_ascii_lowercase();
            let values = e["values"]
                .as_array()?
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            Some((name, values))
        })
        .collect();
    NODE_FILES
        .iter()
        .map(|(name, text)| {
            // The files are embedded and pinned by the unit tests below: a parse failure there
            // fails the tests, and here leaves an empty node rather than a panicking simulator.
            let spec: Value = serde_json::from_str(text).unwrap_or_default();
            let fields = spec["fields"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f["name"].as_str().map(str::to_string))
                .collect();
            let edges = spec["apis"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|api| {
                    let method = api["method"].as_str()?.to_ascii_uppercase();
                    let endpoint = api["endpoint"].as_str().map(str::to_string);
                    let params = api["params"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|p| {
                            let kind = p["type"].as_str().unwrap_or("string").to_string();
                            let inner = kind
                                .strip_prefix("list<")
                                .and_then(|k| k.strip_suffix('>'))
                                .unwrap_or(&kind);
                            Some(Param {
                                name: p["name"].as_str()?.to_string(),
                                required: p["required"].as_bool().unwrap_or(false),
                                list: kind.starts_with("list<"),
                                values: enums.get(&inner.to_ascii_lowercase()).cloned(),
                                kind,
                            })
                        })
                        .collect();
                    let returns = api["return"].as_str().map(str::to_string);
                    Some(((method, endpoint), Edge { params, returns }))
                })
                .collect();
            (*name, Node { fields, edges })
        })
        .collect()
}

/// A `fields` value split at its top-level commas (`a,b{c,d},insights.metric(x,y)` → `a`,
/// `b{c,d}`, `insights.metric(x,y)`): commas inside braces and parentheses belong to the nested
/// part. Items are trimmed; empty ones are dropped.
pub fn top_level_fields(fields: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in fields.chars() {
        match c {
            '{' | '(' => depth += 1,
            '}' | ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The top-level names of a `fields` value: `a,b{c,d},insights.metric(x,y)` → `a`, `b`,
/// `insights`.
pub fn field_names(fields: &str) -> Vec<String> {
    top_level_fields(fields)
        .into_iter()
        .filter_map(|f| {
            let base = f.split(['.', '{', '(']).next()?.trim().to_string();
            (!base.is_empty()).then_some(base)
        })
        .collect()
}

/// The values of a list parameter: a JSON array (`["a","b"]`) or comma separated (`a,b`).
pub fn list_values(raw: &str) -> Vec<String> {
    let raw = raw.trim();
    if raw.starts_with('[')
        && let Ok(Value::Array(items)) = serde_json::from_str::<Value>(raw)
    {
        return items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect();
    }
    raw.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// What is wrong with a request, in the terms of the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// `fields` names something the node type does not have.
    UnknownField { field: String, node: String },
    /// A POST carries a parameter the edge does not have.
    UnknownParam { param: String },
    /// A required parameter is absent.
    MissingParam { param: String },
    /// An enum parameter's value (`index` within a list) is not one of `allowed`.
    NotInEnum {
        param: String,
        index: Option<usize>,
        allowed: Vec<String>,
    },
    /// A `bool` or integer parameter whose value is not one.
    WrongType { param: String, kind: String },
}

impl Problem {
    /// The rule recorded with the violation.
    pub fn rule(&self) -> &'static str {
        match self {
            Self::UnknownField { .. } => "unknown_field",
            Self::UnknownParam { .. } => "unknown_parameter",
            Self::MissingParam { .. } => "missing_parameter",
            Self::NotInEnum { .. } => "invalid_enum_value",
            Self::WrongType { .. } => "invalid_parameter_type",
        }
    }

    /// The Graph API's message for it (after the `(#100) ` prefix the caller adds).
    pub fn message(&self) -> String {
        match self {
            Self::UnknownField { field, node } => {
                format!("Tried accessing nonexisting field ({field}) on node type ({node})")
            }
            Self::UnknownParam { param } => format!("Param {param} is not a valid parameter"),
            Self::MissingParam { param } => format!("The parameter {param} is required"),
            Self::NotInEnum {
                param,
                index,
                allowed,
            } => {
                let at = index.map_or_else(String::new, |i| format!("[{i}]"));
                format!(
                    "{param}{at} must be one of the following values: {}",
                    allowed.join(", ")
                )
            }
            Self::WrongType { param, kind } => format!("Param {param} must be a valid {kind}"),
        }
    }
}

/// How a node type is named in the Graph API's error messages, where it differs from the codegen
/// file name (`AdVideo.json` describes what Graph calls a `Video`, `PagePost.json` a `Post`).
pub fn display_name(node: &str) -> &str {
    match node {
        "AdVideo" => "Video",
        "PagePost" => "Post",
        other => other,
    }
}

/// Checks a request to `node_type` (`method`, `edge`) with its parameters (name, value) against
/// the spec; `Ok` when the spec does not know the node or edge (nothing to check against).
///
/// - every name in `fields` must be a field (or an expandable edge) of the node the call answers
///   with: the node itself, or the edge's `return` type when `data/meta/` has it;
/// - on a POST, every parameter must be the edge's or Graph-wide: Graph ignores unknown
///   parameters on some edges and refuses them on others; the simulator refuses them everywhere
///   (our strict choice, so a misspelt parameter cannot pass silently);
/// - every `required` parameter must be present;
/// - an enum parameter's values must be among the enum's (each item of a list);
/// - a `bool` must be `true`/`false`/`1`/`0`, an `int`/`unsigned int` digits.
pub fn check(
    node_type: &str,
    method: &str,
    edge: Option<&str>,
    params: &[(String, String)],
) -> Result<(), Problem> {
    let Some(node) = node(node_type) else {
        return Ok(());
    };
    let Some(spec) = node.edge(method, edge) else {
        return Ok(());
    };
    let value = |name: &str| {
        params
            .iter()
            .find(|(k, v)| k == name && !v.trim().is_empty())
            .map(|(_, v)| v.as_str())
    };
    if let Some(fields) = value("fields") {
        let (answer_type, answer) = match edge {
            None => (node_type, Some(node)),
            Some(_) => match spec.returns.as_deref() {
                Some(returns) => (returns, self::node(returns)),
                None => (node_type, None),
            },
        };
        if let Some(answer) = answer
            && let Some(field) = field_names(fields)
                .into_iter()
                .find(|f| !answer.has_field(f))
        {
            return Err(Problem::UnknownField {
                field,
                node: display_name(answer_type).to_string(),
            });
        }
    }
    if method.eq_ignore_ascii_case("POST")
        && let Some((name, _)) = params.iter().find(|(name, _)| {
            let base = name.split('[').next().unwrap_or(name);
            spec.param(base).is_none() && !GRAPH_WIDE_PARAMS.contains(&base)
        })
    {
        return Err(Problem::UnknownParam {
            param: name.clone(),
        });
    }
    if let Some(missing) = spec
        .params
        .iter()
        .find(|p| p.required && value(&p.name).is_none() && !has_indexed(params, &p.name))
    {
        return Err(Problem::MissingParam {
            param: missing.name.clone(),
        });
    }
    for param in &spec.params {
        let Some(raw) = value(&param.name) else {
            continue;
        };
        if let Some(allowed) = &param.values {
            let items = if param.list {
                list_values(raw)
            } else {
                vec![raw.trim().to_string()]
            };
            if let Some((i, _)) = items
                .iter()
                .enumerate()
                .find(|(_, v)| !allowed.iter().any(|a| a == *v))
            {
                return Err(Problem::NotInEnum {
                    param: param.name.clone(),
                    index: param.list.then_some(i),
                    allowed: allowed.clone(),
                });
            }
        }
        let raw = raw.trim();
        let well_typed = match param.kind.as_str() {
            "bool" => ["true", "false", "1", "0"].contains(&raw.to_ascii_lowercase().as_str()),
            "int" => raw.parse::<i64>().is_ok(),
            "unsigned int" => raw.parse::<u64>().is_ok(),
            _ => true,
        };
        if !well_typed {
            return Err(Problem::WrongType {
                param: param.name.clone(),
                kind: param.kind.clone(),
            });
        }
    }
    Ok(())
}

/// Whether a list parameter came in form-array encoding (`children[0]=…`).
fn has_indexed(params: &[(String, String)], name: &str) -> bool {
    let prefix = format!("{name}[");
    params.iter().any(|(k, _)| k.starts_with(&prefix))
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
    fn every_file_parses_into_fields_and_edges() {
        for (name, _) in NODE_FILES {
            let node = node(name).expect(name);
            assert!(!node.fields.is_empty(), "{name} has no fields");
        }
    }

    #[test]
    fn facts_the_simulator_relies_on() {
        assert!(node("IGMedia").unwrap().fields.contains("like_count"));
        assert!(!node("IGMedia").unwrap().fields.contains("impressions"));
        let insights = node("IGUser")
            .unwrap()
            .edge("GET", Some("insights"))
            .unwrap();
        let metric = insights.param("metric").unwrap();
        assert!(metric.required && metric.list);
        assert!(
            metric
                .values
                .as_ref()
                .unwrap()
                .contains(&"profile_views".to_string())
        );
        let metric_type = insights.param("metric_type").unwrap().values.clone();
        assert_eq!(
            metric_type.unwrap(),
            ["default", "time_series", "total_value"]
        );
        let feed = node("Page").unwrap().edge("POST", Some("feed")).unwrap();
        assert!(feed.param("message").is_some());
        let publish = node("IGUser")
            .unwrap()
            .edge("POST", Some("media_publish"))
            .unwrap();
        assert!(publish.param("creation_id").unwrap().required);
        assert_eq!(
            node("User")
                .unwrap()
                .edge("GET", Some("accounts"))
                .unwrap()
                .returns
                .as_deref(),
            Some("Page")
        );
    }

    #[test]
    fn field_names_ignore_nested_commas() {
        assert_eq!(
            field_names(
                "id,poll_attachment{option_a,option_b},insights.metric(reach,views),reactions.summary(total_count).limit(0)"
            ),
            ["id", "poll_attachment", "insights", "reactions"]
        );
    }

    #[test]
    fn check_refuses_what_the_spec_does_not_have() {
        assert_eq!(
            check(
                "IGMedia",
                "GET",
                None,
                &pairs(&[("fields", "id,impressions")])
            ),
            Err(Problem::UnknownField {
                field: "impressions".into(),
                node: "IGMedia".into()
            })
        );
        // An edge by field expansion is fine.
        assert!(
            check(
                "IGMedia",
                "GET",
                None,
                &pairs(&[("fields", "id,insights.metric(reach)")])
            )
            .is_ok()
        );
        // A GET edge's fields are those of the node it returns.
        assert!(
            check(
                "IGUser",
                "GET",
                Some("media"),
                &pairs(&[("fields", "id,like_count")])
            )
            .is_ok()
        );
        assert_eq!(
            check(
                "Page",
                "POST",
                Some("feed"),
                &pairs(&[("message", "hi"), ("mesage", "x")])
            ),
            Err(Problem::UnknownParam {
                param: "mesage".into()
            })
        );
        assert_eq!(
            check(
                "IGUser",
                "GET",
                Some("insights"),
                &pairs(&[("period", "day")])
            ),
            Err(Problem::MissingParam {
                param: "metric".into()
            })
        );
        let Err(Problem::NotInEnum { param, index, .. }) = check(
            "IGUser",
            "GET",
            Some("insights"),
            &pairs(&[("metric", "reach,impressions"), ("period", "day")]),
        ) else {
            panic!("impressions is not an IG user metric");
        };
        assert_eq!((param.as_str(), index), ("metric", Some(1)));
        assert_eq!(
            check(
                "IGUser",
                "POST",
                Some("media_publish"),
                &pairs(&[("creation_id", "abc")])
            ),
            Err(Problem::WrongType {
                param: "creation_id".into(),
                kind: "unsigned int".into()
            })
        );
        // Graph-wide parameters are accepted on any edge.
        assert!(
            check(
                "Page",
                "POST",
                Some("feed"),
                &pairs(&[
                    ("message", "hi"),
                    ("access_token", "t"),
                    ("appsecret_proof", "p")
                ])
            )
            .is_ok()
        );
    }
}
