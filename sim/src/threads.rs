//! Threads API simulator under `/threads/{ver}/…` (`v1.0`; the version is optional, as in the
//! official Postman collection), per `../shared/design/platform-apis.md` §4 and
//! `threads-api.postman_collection.json`.
//!
//! - `POST /{user}/threads`: a container (TEXT, IMAGE, VIDEO, carousel item, CAROUSEL, reply);
//! - `GET /{container}?fields=id,status,error_message`: IN_PROGRESS → FINISHED | ERROR | EXPIRED,
//!   then PUBLISHED;
//! - `POST /{user}/threads_publish?creation_id=` → `{"id"}`;
//! - `GET /{user}/threads_publishing_limit`, `GET /me`, `GET /{media-id}`.
//!
//! `{user}` may be `me`. Errors use the Graph error object (shared with [`super::graph`]).
//!
//! Before a request is served, `check_threads_request` checks it against the Postman collection
//! ([`super::spec::threads`]: the route's fields, POST parameters, required parameters) and the
//! permission its token was granted (`threads_permission`, hand-written from the docs).

use actix_web::{
    HttpRequest, HttpResponse,
    http::{Method, StatusCode},
    web,
};
use chrono::Utc;
use serde_json::{Value, json};

use super::{
    graph::{
        MetaError, Params, Phase, carousel_children, claim_for_publish, fetch, meta_time,
        new_object, ok, phase, publish_refusal, quota_config, quota_usage, refusal,
        require_permission, segments, select_fields, spec_error,
    },
    state::{PublishedItem, SimAccount, SimState},
};

/// The Postman route template of `node` (and `edge`) as `account` sees it: its user
/// (`{user_id}`), a container it created (`{container_id}`) or one of its threads
/// (`{thread_id}`); with the node type Threads names in errors. `None` for ids it cannot see
/// (those get the "Unsupported request" answer further on).
fn threads_route(
    state: &SimState,
    account: &SimAccount,
    node: &str,
    edge: Option<&str>,
) -> Option<(String, &'static str)> {
    let (base, node_type) = if node == account.external_id {
        let node_type = match edge {
            None => "ThreadsUser",
            Some("threads" | "replies") => "ThreadsMedia",
            Some(_) => "ThreadsUser",
        };
        ("{user_id}", node_type)
    } else if state
        .object(node)
        .is_some_and(|o| o.kind == "threads_container" && o.owner == account.external_id)
    {
        ("{container_id}", "ThreadsMediaContainer")
    } else if super::insights::post(state, account, node).is_some() {
        ("{thread_id}", "ThreadsMedia")
    } else {
        return None;
    };
    Some(match edge {
        Some(edge) => (format!("{base}/{edge}"), node_type),
        None => (base.to_string(), node_type),
    })
}

/// The permission a Threads call needs, hand-written (the collection only lists all scopes in
/// its `scope` variable) from <https://developers.facebook.com/docs/threads/overview#permissions>,
/// <https://developers.facebook.com/docs/threads/insights> and
/// <https://developers.facebook.com/docs/threads/reply-management>: reading profile and threads
/// `threads_basic`, creating and publishing containers `threads_content_publish`, insights
/// `threads_manage_insights`, replies `threads_read_replies`.
fn threads_permission(template: &str, method: &Method) -> &'static str {
    let edge = template.split_once('/').map(|(_, e)| e);
    match edge {
        Some("threads_insights" | "insights") => "threads_manage_insights",
        Some("replies" | "conversation") => "threads_read_replies",
        Some("threads" | "threads_publish") if method == Method::POST => "threads_content_publish",
        _ if template.starts_with("{container_id}") => "threads_content_publish",
        _ => "threads_basic",
    }
}

/// The checks every Threads request goes through before it is served: the Postman collection's
/// fields, parameters and required parameters for the route, then the permission.
fn check_threads_request(
    state: &SimState,
    account: &SimAccount,
    token: &str,
    node: &str,
    method: &Method,
    edge: Option<&str>,
    params: &Params,
) -> Result<(), MetaError> {
    let Some((template, node_type)) = threads_route(state, account, node, edge) else {
        return Ok(());
    };
    super::spec::threads::check(method.as_str(), &template, node_type, params.pairs())
        .map_err(|p| spec_error(&p, "THApiException"))?;
    require_permission(
        state,
        token,
        method,
        &[threads_permission(&template, method)],
        "THApiException",
    )
}

const TEXT_LIMIT: usize = 500;
const POST_QUOTA: usize = 250;
const REPLY_QUOTA: usize = 1000;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/{tail:.*}", web::get().to(handle))
        .route("/{tail:.*}", web::post().to(handle));
}

async fn handle(req: HttpRequest, body: web::Bytes, state: web::Data<SimState>) -> HttpResponse {
    match serve(&req, &body, &state).await {
        Ok(response) => response,
        Err(error) => error.response("threads"),
    }
}

async fn serve(
    req: &HttpRequest,
    body: &[u8],
    state: &SimState,
) -> Result<HttpResponse, MetaError> {
    let params = Params::parse(req, body)?;
    let token = params.token(req);
    let account = state
        .admit(&["threads"], token.as_deref(), req.path())
        .await
        .map_err(|r| refusal(state, r, token.as_deref()))?;
    let parts = segments(req.match_info().query("tail"));
    let method = req.method().clone();
    let Some(node) = parts.first() else {
        return Err(MetaError::unknown_path("/"));
    };
    let node = if node == "me" {
        account.external_id.clone()
    } else {
        node.clone()
    };
    if parts.len() > 2 {
        return Err(MetaError::unknown_path(&format!(
            "/{}",
            parts[1..].join("/")
        )));
    }
    let edge = parts.get(1).map(String::as_str);
    check_threads_request(
        state,
        &account,
        token.as_deref().unwrap_or_default(),
        &node,
        &method,
        edge,
        &params,
    )?;

    if method == Method::GET
        && let Some(response) = super::meta_insights::answer(state, &account, &node, edge, &params)?
    {
        return Ok(response);
    }
    if node == account.external_id {
        return match (&method, edge) {
            (&Method::GET, None) => Ok(ok(
                &account,
                select_fields(
                    json!({"id": account.external_id, "username": account.username,
                           "name": account.name, "threads_profile_picture_url": Value::Null,
                           "threads_biography": Value::Null}),
                    &params.fields(),
                    &["id"],
                ),
            )),
            (&Method::POST, Some("threads")) => create_container(state, &account, &params).await,
            (&Method::POST, Some("threads_publish")) => publish(state, &account, &params),
            (&Method::GET, Some("threads_publishing_limit")) => Ok(ok(
                &account,
                json!({"data": [{
                    "quota_usage": quota_usage(state, &account, Some(false)),
                    "config": quota_config(POST_QUOTA),
                    "reply_quota_usage": quota_usage(state, &account, Some(true)),
                    "reply_config": quota_config(REPLY_QUOTA),
                }]}),
            )),
            (_, Some(edge)) => Err(MetaError::unknown_path(&format!("/{edge}"))),
            _ => Err(MetaError::unsupported("threads", &method, &node)),
        };
    }

    if method != Method::GET || edge.is_some() {
        return Err(MetaError::unsupported("threads", &method, &node));
    }
    if state
        .object(&node)
        .is_some_and(|o| o.kind == "threads_container" && o.owner == account.external_id)
    {
        let (status, error_message) = match phase(state, &node) {
            Some(Phase::InProgress) | None => ("IN_PROGRESS", Value::Null),
            Some(Phase::Finished) => ("FINISHED", Value::Null),
            Some(Phase::Error(text)) => ("ERROR", json!(text)),
            Some(Phase::Expired) => ("EXPIRED", Value::Null),
            Some(Phase::Published(_)) => ("PUBLISHED", Value::Null),
        };
        let all = json!({"id": node, "status": status, "error_message": error_message});
        return Ok(ok(&account, select_fields(all, &params.fields(), &["id"])));
    }
    if let Some(item) = state
        .published_item(&node)
        .filter(|i| i.platform == "threads" && i.account_id == account.external_id)
    {
        let media_type = match item.kind.as_str() {
            "text" => "TEXT_POST",
            "carousel" => "CAROUSEL_ALBUM",
            "video" => "VIDEO",
            _ => "IMAGE",
        };
        let all = json!({
            "id": item.id,
            "media_product_type": "THREADS",
            "media_type": media_type,
            "text": item.text,
            "media_url": item.media.first(),
            "permalink": format!("https://www.threads.net/@{}/post/{}", account.username, item.id),
            "owner": {"id": account.external_id},
            "username": account.username,
            "timestamp": meta_time(item.published_at),
            "shortcode": item.id,
            "is_quote_post": false,
        });
        return Ok(ok(&account, select_fields(all, &params.fields(), &["id"])));
    }
    Err(MetaError::unsupported("threads", &method, &node))
}

/// `POST /{user}/threads`.
async fn create_container(
    state: &SimState,
    account: &SimAccount,
    params: &Params,
) -> Result<HttpResponse, MetaError> {
    let media_type = params
        .get("media_type")
        .ok_or_else(|| {
            MetaError::param("The parameter media_type is required.").violation("missing_parameter")
        })?
        .to_ascii_uppercase();
    let text = params.get("text");
    if let Some(text) = text
        && text.chars().count() > TEXT_LIMIT
    {
        // Content over a limit is the user's, not a protocol error.
        return Err(MetaError::param(format!(
            "Param text must be at most {TEXT_LIMIT} characters long."
        ))
        .legitimate());
    }
    let is_item = params.flag("is_carousel_item").unwrap_or(false);
    let reply_to = params.get("reply_to_id");
    if let Some(parent) = reply_to
        && state
            .published_item(parent)
            .is_none_or(|i| i.platform != "threads")
    {
        // An unknown (or deleted) post: a business answer.
        return Err(MetaError::param(format!(
            "Param reply_to_id {parent} is not a valid Threads post."
        ))
        .legitimate());
    }
    let mut data = json!({
        "media_type": media_type,
        "text": text,
        "is_carousel_item": is_item,
        "reply_to_id": reply_to,
        "reply_control": params.get("reply_control"),
        "video": false,
        "fail_text": "UNKNOWN",
    });
    match media_type.as_str() {
        "TEXT" => {
            if text.is_none() {
                return Err(MetaError::param(
                    "The parameter text is required for TEXT posts.",
                ));
            }
        }
        "IMAGE" => {
            let url = params.get("image_url").ok_or_else(|| {
                MetaError::param("The parameter image_url is required.")
                    .violation("missing_parameter")
            })?;
            match fetch(state, url).await {
                Ok(ct) if ct.starts_with("image/") => {}
                Ok(ct) => return Err(MetaError::media_download(&format!("content type {ct}"))),
                Err(reason) => {
                    return Err(MetaError::media_download(&format!(
                        "The media could not be fetched from this URI: {reason}"
                    )));
                }
            }
            data["image_url"] = json!(url);
        }
        "VIDEO" => {
            let url = params.get("video_url").ok_or_else(|| {
                MetaError::param("The parameter video_url is required.")
                    .violation("missing_parameter")
            })?;
            data["video_url"] = json!(url);
            data["video"] = json!(true);
            data["fail_text"] = json!("FAILED_PROCESSING_VIDEO");
            // Downloaded during processing: a failure shows in the container's status.
            match fetch(state, url).await {
                Ok(ct) if ct.starts_with("video/") => {}
                Ok(_) => data["failure"] = json!("FAILED_PROCESSING_VIDEO"),
                Err(_) => data["failure"] = json!("FAILED_DOWNLOADING_VIDEO"),
            }
        }
        "CAROUSEL" => {
            let children = carousel_children(state, account, params, 2, 20, "threads_container")?;
            data["children"] = json!(children);
        }
        other => {
            return Err(MetaError::param(format!(
                "Param media_type {other} is not supported."
            )));
        }
    }
    // auto_publish_text: a TEXT container is published right away, within the same quota as
    // `threads_publish` (checked first: a refused post leaves no container behind).
    let auto_publish = media_type == "TEXT" && params.flag("auto_publish_text") == Some(true);
    if auto_publish {
        check_quota(state, account, reply_to.is_some())?;
    }
    if auto_publish {
        // Published by the platform as it is created: a text has nothing to process, so the
        // processing faults (which model media) do not hold it.
        data["settled"] = json!("FINISHED");
    }
    let id = state.next_id().to_string();
    if auto_publish {
        // Created already published: nothing else can see the container before it is stored,
        // so there is nothing to claim (and no copy of it to take back).
        let media_id = state.next_id().to_string();
        data["published_id"] = json!(media_id);
        record_published(state, account, &id, &media_id, &data);
        state.put_object(&id, new_object(account, "threads_container", data));
        return Ok(ok(account, json!({ "id": media_id })));
    }
    state.put_object(&id, new_object(account, "threads_container", data));
    Ok(ok(account, json!({ "id": id })))
}

/// `POST /{user}/threads_publish?creation_id=`.
fn publish(
    state: &SimState,
    account: &SimAccount,
    params: &Params,
) -> Result<HttpResponse, MetaError> {
    let creation_id = params.get("creation_id").ok_or_else(|| {
        MetaError::param("The parameter creation_id is required.").violation("missing_parameter")
    })?;
    let container = state
        .object(creation_id)
        .filter(|o| o.kind == "threads_container" && o.owner == account.external_id)
        .ok_or_else(|| MetaError::unsupported("threads", &Method::POST, creation_id))?;
    if container.data["is_carousel_item"] == json!(true) {
        return Err(MetaError::param(
            "A carousel item container cannot be published on its own.",
        ));
    }
    check_quota(state, account, !container.data["reply_to_id"].is_null())?;
    let media_id = publish_container(state, account, creation_id)?;
    Ok(ok(account, json!({ "id": media_id })))
}

/// The 24-hour publishing quota (250 posts, 1000 replies), for `threads_publish` and for a text
/// post published at creation (`auto_publish_text`).
fn check_quota(state: &SimState, account: &SimAccount, reply: bool) -> Result<(), MetaError> {
    let (used, total) = if reply {
        (quota_usage(state, account, Some(true)), REPLY_QUOTA)
    } else {
        (quota_usage(state, account, Some(false)), POST_QUOTA)
    };
    if used >= total {
        return Err(MetaError::new(
            9,
            "The maximum number of posts that can be published in 24 hours has been reached.",
        )
        .subcode(2_207_042)
        .status(StatusCode::BAD_REQUEST));
    }
    Ok(())
}

/// Publishes a FINISHED container and records the post.
fn publish_container(
    state: &SimState,
    account: &SimAccount,
    container_id: &str,
) -> Result<String, MetaError> {
    let media_id = state.next_id().to_string();
    let container = claim_for_publish(state, container_id, &media_id).map_err(publish_refusal)?;
    record_published(state, account, container_id, &media_id, &container.data);
    Ok(media_id)
}

/// Records the post that container `container_id` (whose document is `data`) became.
fn record_published(
    state: &SimState,
    account: &SimAccount,
    container_id: &str,
    media_id: &str,
    data: &Value,
) {
    let media_type = data["media_type"].as_str().unwrap_or("TEXT");
    let media: Vec<String> = match media_type {
        "CAROUSEL" => data["children"]
            .as_array()
            .map(|children| {
                children
                    .iter()
                    .filter_map(|c| state.object(c.as_str().unwrap_or_default()))
                    .filter_map(|c| media_url(&c.data))
                    .collect()
            })
            .unwrap_or_default(),
        _ => media_url(data).into_iter().collect(),
    };
    state.record_published(PublishedItem {
        platform: "threads".into(),
        account_id: account.external_id.clone(),
        id: media_id.to_string(),
        kind: media_type.to_ascii_lowercase(),
        text: data["text"].as_str().map(str::to_string),
        media,
        reply_to: data["reply_to_id"].as_str().map(str::to_string),
        extra: json!({
            "container_id": container_id,
            "children": data["children"],
            "reply_control": data["reply_control"],
        }),
        published_at: Utc::now(),
    });
}

fn media_url(data: &Value) -> Option<String> {
    data["image_url"]
        .as_str()
        .or(data["video_url"].as_str())
        .map(str::to_string)
}
