//! `GET /dashboard/keys` (create form and list), `POST /dashboard/keys` (create: the answer
//! shows the full key, once), delete (confirmation page, then POST).
//!
//! The full key only ever travels in the body of the POST's answer, marked `no-store`: no URL
//! carries it and no GET can show it again, so reloading the list or going back never does.

use actix_web::{
    HttpRequest, HttpResponse,
    http::header::{self, HeaderValue},
    web,
};
use askama::Template;
use serde::Deserialize;

use super::{
    Layout, Nav, When,
    i18n::{Msg, T},
    render, see_other,
};
use crate::domain::text::parse_uuid;
use crate::services::keys::{CreateKeyError, KeyName, MAX_NAME_CHARS, create_api_key};
use crate::{AppState, error::ApiError, web::auth::SessionUser};

const KEYS_PATH: &str = "/dashboard/keys";

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/keys")
            .route(web::get().to(page))
            .route(web::post().to(create)),
    )
    .service(
        web::resource("/keys/{id}/delete")
            .route(web::get().to(confirm_delete))
            .route(web::post().to(delete)),
    );
}

/// A key as the list shows it: never the full value.
pub struct KeyRow {
    pub id: String,
    pub name: String,
    pub preview: String,
    pub created: When,
    pub last_used: Option<When>,
}

/// The key just created: its name and full value, shown this once.
pub struct CreatedKey {
    pub title: String,
    pub value: String,
}

#[derive(Template)]
#[template(path = "keys.html")]
struct KeysPage {
    layout: Layout,
    created: Option<CreatedKey>,
    keys: Vec<KeyRow>,
    max_name: usize,
    /// What the user typed, given back when the form was refused.
    name_value: String,
}

async fn key_rows(state: &AppState, t: T, user_id: uuid::Uuid) -> Result<Vec<KeyRow>, ApiError> {
    let now = state.clock.now();
    Ok(state
        .store
        .list_active_keys(user_id)
        .await?
        .into_iter()
        .map(|key| KeyRow {
            id: key.id.to_string(),
            name: key.name,
            preview: key.key_preview,
            created: When::new(t, key.created_at, now),
            last_used: key.last_used_at.map(|at| When::new(t, at, now)),
        })
        .collect())
}

#[derive(Deserialize)]
struct NoticeQuery {
    notice: Option<String>,
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<NoticeQuery>,
) -> Result<HttpResponse, ApiError> {
    let mut layout = Layout::signed_in(&req, &session, Nav::Keys);
    let t = layout.t;
    layout.notice = match query.notice.as_deref() {
        Some("key_deleted") => Some(t.s(Msg::NoticeKeyDeleted).to_string()),
        Some("key_missing") => Some(t.s(Msg::NoticeKeyMissing).to_string()),
        _ => None,
    };
    let page = KeysPage {
        keys: key_rows(&state, t, session.user.id).await?,
        layout,
        created: None,
        max_name: MAX_NAME_CHARS,
        name_value: String::new(),
    };
    Ok(render(&req, page))
}

#[derive(Deserialize)]
struct CreateForm {
    name: Option<String>,
}

/// `POST /dashboard/keys`: the same service function as `POST /api/keys`. A refused name is
/// shown next to the form (200, so the page is not swapped for the JSON error body).
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn create(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    form: web::Form<CreateForm>,
) -> Result<HttpResponse, ApiError> {
    let mut layout = Layout::signed_in(&req, &session, Nav::Keys);
    let t = layout.t;
    let name = form.into_inner().name.unwrap_or_default();
    let mut name_value = String::new();
    // The form reports a bad name the same way as too many keys: both are the user's to fix.
    let attempt = match KeyName::parse(&name) {
        Ok(key_name) => {
            create_api_key(
                &state.store,
                state.clock.now(),
                state.config.auth.max_api_keys_per_user,
                session.user.id,
                &key_name,
            )
            .await
        }
        Err(error) => Err(error),
    };
    let created = match attempt {
        Ok((full, stored)) => Some(CreatedKey {
            title: t.fill(Msg::KeyCreatedTitle, &[("name", &stored.name)]),
            value: full,
        }),
        Err(error) => {
            let max = |max: String| t.fill(Msg::ErrorTooManyKeys, &[("max", &max)]);
            layout.error = Some(match error {
                CreateKeyError::NameEmpty => t.s(Msg::ErrorKeyNameEmpty).to_string(),
                CreateKeyError::NameTooLong => t.fill(
                    Msg::ErrorKeyNameTooLong,
                    &[("max", &MAX_NAME_CHARS.to_string())],
                ),
                CreateKeyError::NameHasNul(_) => t.s(Msg::ErrorKeyNameNul).to_string(),
                CreateKeyError::TooManyKeys { max: limit } => max(limit.to_string()),
                CreateKeyError::Internal(error) => return Err(error),
            });
            name_value = name.replace('\0', "");
            None
        }
    };
    let page = KeysPage {
        keys: key_rows(&state, t, session.user.id).await?,
        layout,
        created,
        max_name: MAX_NAME_CHARS,
        name_value,
    };
    let mut response = render(&req, page);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

#[derive(Template)]
#[template(path = "key_delete.html")]
struct DeletePage {
    layout: Layout,
    id: String,
    title: String,
    text: String,
}

fn key_missing() -> HttpResponse {
    see_other(&format!("{KEYS_PATH}?notice=key_missing"))
}

#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn confirm_delete(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let Some(key_id) = parse_uuid(&path) else {
        return Ok(key_missing());
    };
    let keys = state.store.list_active_keys(session.user.id).await?;
    let Some(key) = keys.into_iter().find(|key| key.id == key_id) else {
        return Ok(key_missing());
    };
    let layout = Layout::signed_in(&req, &session, Nav::Keys);
    let t = layout.t;
    let page = DeletePage {
        id: key.id.to_string(),
        title: t.fill(Msg::KeyDeleteTitle, &[("name", &key.name)]),
        text: t.fill(Msg::KeyDeleteText, &[("preview", &key.key_preview)]),
        layout,
    };
    Ok(render(&req, page))
}

/// `POST /dashboard/keys/{id}/delete`: the same store call as `DELETE /api/keys/{id}`.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn delete(
    state: web::Data<AppState>,
    session: SessionUser,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let Some(key_id) = parse_uuid(&path) else {
        return Ok(key_missing());
    };
    let deleted = state
        .store
        .deactivate_api_key(session.user.id, key_id, state.clock.now())
        .await?;
    if !deleted {
        return Ok(key_missing());
    }
    Ok(see_other(&format!("{KEYS_PATH}?notice=key_deleted")))
}
