//! `GET /docs/api`: the OpenAPI document rendered for people, server-side (no script, no CDN),
//! in the dashboard's layout and under its Content-Security-Policy.

use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use utoipa::openapi::{
    OpenApi as Document, RefOr, Required,
    path::{Operation, ParameterIn},
};

use crate::web::{
    Layout, Nav,
    i18n::{Msg, T},
    locale_of, render,
};

/// One operation as the page lists it.
pub struct OperationView {
    pub method: &'static str,
    pub path: String,
    pub anchor: String,
    pub summary: String,
    pub tags: String,
    pub security: String,
    pub params: Vec<ParamView>,
    pub request: Option<String>,
    pub responses: Vec<ResponseView>,
}

pub struct ParamView {
    pub name: String,
    pub location: &'static str,
    pub required: bool,
    pub description: String,
}

pub struct ResponseView {
    pub status: String,
    pub description: String,
    pub content: String,
}

#[derive(Template)]
#[template(path = "api_reference.html")]
struct ApiReferencePage {
    layout: Layout,
    title: String,
    version: String,
    operations: Vec<OperationView>,
}

/// Registers `/docs/api`, the reference page of the OpenAPI document.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/docs/api")
            .wrap(actix_web::middleware::from_fn(crate::web::page_headers))
            .route(web::get().to(page)),
    );
}

pub async fn page(req: HttpRequest) -> HttpResponse {
    let document = super::openapi::document();
    let page = ApiReferencePage {
        layout: Layout::anonymous(T(locale_of(&req))),
        title: document.info.title.clone(),
        version: document.info.version.clone(),
        operations: operations(document),
    };
    render(&req, page)
}

/// Every operation of the document, by path then method.
pub fn operations(document: &Document) -> Vec<OperationView> {
    let mut views = Vec::new();
    for (path, item) in &document.paths.paths {
        let methods = [
            ("GET", &item.get),
            ("POST", &item.post),
            ("PUT", &item.put),
            ("DELETE", &item.delete),
            ("PATCH", &item.patch),
        ];
        for (method, operation) in methods {
            if let Some(operation) = operation {
                views.push(view(method, path, operation));
            }
        }
    }
    views
}

fn view(method: &'static str, path: &str, operation: &Operation) -> OperationView {
    let anchor: String = format!("{method}{path}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let summary = operation
        .summary
        .clone()
        .or_else(|| operation.description.clone())
        .unwrap_or_default();
    let security = operation
        .security
        .iter()
        .flatten()
        .filter_map(|requirement| {
            serde_json::to_value(requirement)
                .ok()
                .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()))
        })
        .flatten()
        .collect::<Vec<_>>()
        .join(" or ");
    let params = operation
        .parameters
        .iter()
        .flatten()
        .filter_map(|param| match param {
            RefOr::T(param) => Some(ParamView {
                name: param.name.clone(),
                location: match param.parameter_in {
                    ParameterIn::Path => "path",
                    ParameterIn::Query => "query",
                    ParameterIn::Header => "header",
                    ParameterIn::Cookie => "cookie",
                    _ => "query string",
                },
                required: matches!(param.required, Required::True),
                description: param.description.clone().unwrap_or_default(),
            }),
            RefOr::Ref(_) => None,
        })
        .collect();
    let request = operation.request_body.as_ref().map(|body| match body {
        RefOr::T(body) => content_names(body.content.iter()),
        RefOr::Ref(r) => r.ref_location.clone(),
    });
    let responses = operation
        .responses
        .responses
        .iter()
        .map(|(status, response)| match response {
            RefOr::T(response) => ResponseView {
                status: status.clone(),
                description: response.description.clone(),
                content: content_names(response.content.iter()),
            },
            RefOr::Ref(r) => ResponseView {
                status: status.clone(),
                description: String::new(),
                content: r.ref_location.clone(),
            },
        })
        .collect();
    OperationView {
        method,
        path: path.to_string(),
        anchor,
        summary,
        tags: operation
            .tags
            .iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        security,
        params,
        request,
        responses,
    }
}

/// `media type: schema` for each content of a body.
fn content_names<'a>(
    content: impl Iterator<Item = (&'a String, &'a RefOr<utoipa::openapi::Content>)>,
) -> String {
    content
        .map(|(media, content)| {
            let schema = match content {
                RefOr::T(content) => match &content.schema {
                    Some(RefOr::Ref(r)) => r
                        .ref_location
                        .rsplit('/')
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    Some(RefOr::T(schema)) => serde_json::to_value(schema)
                        .ok()
                        .and_then(|v| v.get("type").map(|t| t.to_string().replace('"', "")))
                        .unwrap_or_else(|| "schema".to_string()),
                    None => String::new(),
                },
                RefOr::Ref(r) => r.ref_location.clone(),
            };
            if schema.is_empty() {
                media.clone()
            } else {
                format!("{media}: {schema}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}
