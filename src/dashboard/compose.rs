//! `GET /dashboard/compose` (the form) and `POST /dashboard/compose` (publish now or schedule).
//!
//! The POST builds the very body `POST /v2/posts` takes (spec §4.1) and hands it to
//! [`PublishingService::handle_post`](crate::services::publishing::PublishingService::handle_post),
//! after counting the call with
//! [`UsageService::meter`](crate::services::usage::UsageService::meter), as the API key's
//! middleware does: a post from
//! this page is checked, published, scheduled and metered exactly as one sent with a key.
//!
//! Form → body:
//! - `text`: one textarea. For threads and x a line holding only `---` splits it into the parts
//!   of a thread (an array); with no such line it is one post. Other platforms get the text as
//!   typed (`---` included).
//! - `media`: one URL per line, blank lines dropped.
//! - `cover` (instagram only, `coverUrl`), `draft` (tiktok only, `tiktokOptions.draft`),
//!   `yt_title` and `yt_description` (youtube only: joined by one blank line into `text`, as
//!   §4.1 says the title and description travel).
//! - `schedule_at` (`datetime-local`, a wall-clock time) read in the zone `tz` → `scheduledAt`
//!   with its UTC offset.
//!
//! A refusal is shown next to the field it concerns ([`Field::of`]), with the catalogue's code
//! and message; the form keeps what was typed.
//!
//! Files: the page's upload form takes JPG, PNG, WEBP, MP4 and MOV files. With scripts on,
//! `static/app.js` sends each chosen or dropped file to `POST /v2/media` as soon as it is picked
//! and adds its URL to `media`; without, the form posts to [`super::compose_media`], which
//! comes back here with the URLs in `?media=` (and their count in `?uploaded=`).

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use askama::Template;
use chrono::{LocalResult, NaiveDateTime, TimeZone};
use chrono_tz::Tz;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Layout, Nav,
    accounts::platform_name,
    form_token::{self, Spent},
    i18n::Msg,
    render,
    scheduled::{ZoneOption, remember_zone, zone_of, zone_options},
};
use crate::domain::plan::Platform;
use crate::{
    AppState,
    error::{ApiError, ErrorCode},
    services::publishing::{PostOutcome, Publisher},
    web::auth::SessionUser,
};

/// Routes inside the `/dashboard` scope.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/compose")
            .route(web::get().to(page))
            .route(web::post().to(submit)),
    );
}

/// The line that separates the parts of a thread in the text box.
pub const THREAD_SEPARATOR: &str = "---";

/// The form as submitted (and as given back to the user when refused). Every field optional:
/// a missing one is the same as an empty one, and the service says what is required.
#[derive(Debug, Default, Deserialize)]
pub struct ComposeForm {
    #[serde(default)]
    account: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    media: String,
    #[serde(default)]
    cover: String,
    #[serde(default)]
    draft: Option<String>,
    #[serde(default)]
    yt_title: String,
    #[serde(default)]
    yt_description: String,
    #[serde(default)]
    schedule_at: String,
    #[serde(default)]
    tz: String,
    /// The rendered form's one-time token ([`form_token`]).
    #[serde(default)]
    form_token: String,
}

impl ComposeForm {
    /// An empty form in `zone` whose media field holds `media`.
    pub(super) fn with_media(media: String, zone: Tz) -> Self {
        Self {
            media,
            tz: zone.name().to_string(),
            ..Self::default()
        }
    }
}

/// What `GET /dashboard/compose` reads from its query: what the upload form sends back.
#[derive(Debug, Default, Deserialize)]
struct PageQuery {
    /// The media field's text, one URL per line.
    #[serde(default)]
    media: String,
    /// How many files were just uploaded (a number; anything else is ignored).
    #[serde(default)]
    uploaded: String,
}

/// The types the upload form offers (the media service decides from the bytes).
const ACCEPTED_TYPES: &str = "image/jpeg,image/png,image/webp,video/mp4,video/quicktime";
/// Where the page's script sends each file.
const UPLOAD_API: &str = "/v2/media";
/// The longest `?media=` read into the form; a longer one is left out.
const MAX_PREFILLED_MEDIA: usize = 16 * 1024;

/// Which field a refusal concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Account,
    Text,
    Media,
    Cover,
    Title,
    Schedule,
    /// The upload form (a file that is not media, too large, past the quota…).
    Upload,
    /// Not about one field (quota, plan, platform failure…): shown above the form.
    Top,
}

impl Field {
    /// The field a refusal of `POST /v2/posts` concerns. The service's errors carry a code and
    /// a message, not a field name, so the code decides, and for the codes several fields share
    /// (`InvalidRequest`, `MissingParameter`, the media probe's) the message's own naming of the
    /// field does.
    pub fn of(error: &ApiError, platform: Option<Platform>) -> Self {
        let message = error.message.as_str();
        let names = |needle: &str| message.contains(needle);
        match error.code {
            ErrorCode::InvalidAccountId
            | ErrorCode::AccountDisabled
            | ErrorCode::TokenExpired
            | ErrorCode::InvalidToken
            | ErrorCode::InvalidPlatform => Self::Account,
            ErrorCode::TextRequired | ErrorCode::TextTooLong | ErrorCode::InvalidTextFormat => {
                if platform == Some(Platform::Youtube) {
                    Self::Title
                } else {
                    Self::Text
                }
            }
            ErrorCode::MediaRequired
            | ErrorCode::InvalidCarouselSize
            | ErrorCode::MediaDownloadFailed
            | ErrorCode::InvalidMediaType
            | ErrorCode::InvalidMediaUrl
            | ErrorCode::MediaTooLarge => {
                if names("coverUrl") || names("cover") {
                    Self::Cover
                } else {
                    Self::Media
                }
            }
            ErrorCode::InvalidRequest | ErrorCode::MissingParameter => {
                if names("scheduledAt") {
                    Self::Schedule
                } else if names("accountId") {
                    Self::Account
                } else if names("coverUrl") {
                    Self::Cover
                } else if names("mediaUrls") {
                    Self::Media
                } else if names("text") {
                    Self::Text
                } else {
                    Self::Top
                }
            }
            _ => Self::Top,
        }
    }
}

/// A refusal, as shown: the catalogue's code and message (and `details` when given).
pub struct Problem {
    pub code: String,
    pub message: String,
    pub details: Option<String>,
    /// The history row to look at (an unconfirmed publish, a time-out).
    pub submission_id: Option<String>,
}

impl Problem {
    pub(super) fn of(error: &ApiError) -> Self {
        Self {
            code: error.code.as_str().to_string(),
            message: error.message.clone(),
            details: error.details.clone(),
            submission_id: error.submission_id.as_ref().map(|id| id.to_string()),
        }
    }
}

/// One account in the select.
pub struct AccountOption {
    pub id: String,
    pub label: String,
    pub selected: bool,
}

/// What the POST achieved.
pub enum Outcome {
    Published {
        post_id: String,
        submission_id: String,
        platform: String,
        /// The post's public address, where its id alone makes one.
        link: Option<String>,
    },
    Scheduled {
        id: String,
        at_utc: String,
        at_zone: String,
    },
    /// The final call went out but its result is not known (`PublishUnconfirmed`): never
    /// shown as success.
    Unconfirmed(Problem),
    Failed(Problem),
    /// This very form was submitted before (a double click, a resend): nothing was done.
    AlreadySubmitted,
}

#[derive(Template)]
#[template(path = "compose.html")]
struct ComposePage {
    layout: Layout,
    accounts: Vec<AccountOption>,
    zones: Vec<ZoneOption>,
    form: ComposeForm,
    /// This rendering's one-time token.
    token: String,
    /// The upload form's own one-time token.
    upload_token: String,
    /// The upload form's hint, with the size limit filled in.
    upload_hint: String,
    accepted_types: &'static str,
    upload_api: &'static str,
    draft_checked: bool,
    outcome: Option<Outcome>,
    /// The refusal and the field it concerns.
    field_error: Option<(Field, Problem)>,
    separator: &'static str,
}

impl ComposePage {
    /// The refusal shown next to `field`, if it concerns it.
    fn error_for(&self, field: Field) -> Option<&Problem> {
        self.field_error
            .as_ref()
            .filter(|(at, _)| *at == field)
            .map(|(_, problem)| problem)
    }

    fn account_error(&self) -> Option<&Problem> {
        self.error_for(Field::Account)
    }
    fn text_error(&self) -> Option<&Problem> {
        self.error_for(Field::Text)
    }
    fn media_error(&self) -> Option<&Problem> {
        self.error_for(Field::Media)
    }
    fn cover_error(&self) -> Option<&Problem> {
        self.error_for(Field::Cover)
    }
    fn title_error(&self) -> Option<&Problem> {
        self.error_for(Field::Title)
    }
    fn schedule_error(&self) -> Option<&Problem> {
        self.error_for(Field::Schedule)
    }
    fn top_error(&self) -> Option<&Problem> {
        self.error_for(Field::Top)
    }
    fn upload_error(&self) -> Option<&Problem> {
        self.error_for(Field::Upload)
    }
}

/// A byte count in words: whole megabytes (or kilobytes below one).
fn size_text(bytes: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = 1024 * KB;
    if bytes >= MB {
        format!("{} MB", bytes / MB)
    } else {
        format!("{} KB", bytes.div_ceil(KB))
    }
}

/// The accounts one can publish to: connected and with a valid token.
async fn account_options(
    state: &AppState,
    user_id: uuid::Uuid,
    selected: &str,
) -> Result<Vec<AccountOption>, ApiError> {
    Ok(state
        .store
        .list_connected_accounts(user_id)
        .await?
        .into_iter()
        // A token that does not open for its row is refused at publish: not offered either.
        .filter(|account| account.is_valid && crate::tokens::readable(&state.cipher, account))
        .map(|account| {
            let id = account.id.to_string();
            AccountOption {
                selected: id == selected,
                label: format!(
                    "{} ({})",
                    account.display_name,
                    platform_name(account.platform)
                ),
                id,
            }
        })
        .collect())
}

async fn render_page(
    req: &HttpRequest,
    state: &AppState,
    session: &SessionUser,
    form: ComposeForm,
    outcome: Option<Outcome>,
    field_error: Option<(Field, Problem)>,
) -> Result<HttpResponse, ApiError> {
    let layout = Layout::signed_in(req, session, Nav::Compose);
    render_in(req, state, session, layout, form, outcome, field_error).await
}

/// [`render_page`] in a frame of the caller's (one with a notice).
pub(super) async fn render_in(
    req: &HttpRequest,
    state: &AppState,
    session: &SessionUser,
    layout: Layout,
    form: ComposeForm,
    outcome: Option<Outcome>,
    field_error: Option<(Field, Problem)>,
) -> Result<HttpResponse, ApiError> {
    let accounts = account_options(state, session.user.id, &form.account).await?;
    // Without an account to choose, neither the account select nor the upload form is shown:
    // their refusals go on top.
    let field_error = match field_error {
        Some((Field::Account | Field::Upload, problem)) if accounts.is_empty() => {
            Some((Field::Top, problem))
        }
        other => other,
    };
    let zone = form.tz.parse::<Tz>().unwrap_or_else(|_| zone_of(req));
    let now = state.clock.now();
    let upload_hint = layout.t.fill(
        Msg::ComposeUploadHint,
        &[("size", &size_text(state.media.config().max_bytes))],
    );
    let page = ComposePage {
        layout,
        accounts,
        token: form_token::issue(&state.signer, session.user.id, now),
        upload_token: form_token::issue(&state.signer, session.user.id, now),
        upload_hint,
        accepted_types: ACCEPTED_TYPES,
        upload_api: UPLOAD_API,
        zones: zone_options(zone),
        draft_checked: form.draft.is_some(),
        form,
        outcome,
        field_error,
        separator: THREAD_SEPARATOR,
    };
    Ok(render(req, page))
}

/// `GET /dashboard/compose`: an empty form, or after the upload form, one whose media field
/// holds the uploaded files' URLs (`?media=`), with a notice of how many came in.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn page(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let PageQuery { media, uploaded } = query.into_inner();
    // Only pre-fills a field the user sees and sends; an oversized one is dropped whole.
    let media = if media.len() <= MAX_PREFILLED_MEDIA {
        media
    } else {
        String::new()
    };
    let form = ComposeForm::with_media(media, zone_of(&req));
    let mut layout = Layout::signed_in(&req, &session, Nav::Compose);
    if let Ok(count) = uploaded.parse::<u32>()
        && count > 0
    {
        let count = count.to_string();
        layout.notice = Some(layout.t.fill(Msg::NoticeUploaded, &[("count", &count)]));
    }
    render_in(&req, &state, &session, layout, form, None, None).await
}

/// Splits the text box into the parts of a thread at lines holding only `---`.
pub fn split_thread(text: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    for line in text.lines() {
        if line.trim() == THREAD_SEPARATOR {
            parts.push(String::new());
        } else if let Some(part) = parts.last_mut() {
            if !part.is_empty() {
                part.push('\n');
            }
            part.push_str(line);
        }
    }
    parts.into_iter().map(|p| p.trim().to_string()).collect()
}

/// The wall-clock `schedule_at` in `zone` → an RFC 3339 time with its offset. `Err` carries a
/// refusal for the schedule field (unreadable, or a time the zone skips).
fn scheduled_at(local: &str, zone: Tz) -> Result<String, ApiError> {
    let local = local.trim();
    let naive = NaiveDateTime::parse_from_str(local, "%Y-%m-%dT%H:%M")
        .or_else(|_| NaiveDateTime::parse_from_str(local, "%Y-%m-%dT%H:%M:%S"))
        .map_err(|_| {
            ApiError::invalid_request(format!(
                "scheduledAt '{local}' is not a date and time (YYYY-MM-DDTHH:MM)"
            ))
        })?;
    // At a clock change the earlier of two readings is taken; a time that does not exist is
    // refused rather than moved.
    let at = match zone.from_local_datetime(&naive) {
        LocalResult::Single(at) | LocalResult::Ambiguous(at, _) => at,
        LocalResult::None => {
            return Err(ApiError::invalid_request(format!(
                "scheduledAt '{local}' does not exist in {} (the clocks skip it)",
                zone.name()
            )));
        }
    };
    Ok(at.to_rfc3339())
}

/// The `POST /v2/posts` body the form stands for, given the chosen account's platform.
fn request_body(
    form: &ComposeForm,
    platform: Option<Platform>,
    zone: Tz,
) -> Result<Value, ApiError> {
    // An unknown account: the service refuses it with its own code (InvalidAccountId), so the
    // platform sent only needs to be a valid one.
    let platform = platform.unwrap_or(Platform::Facebook);
    let text = match platform {
        Platform::Threads | Platform::X
            if form.text.lines().any(|l| l.trim() == THREAD_SEPARATOR) =>
        {
            json!(split_thread(&form.text))
        }
        Platform::Youtube => {
            let title = form.yt_title.trim();
            let description = form.yt_description.trim();
            if description.is_empty() {
                json!(title)
            } else {
                json!(format!("{title}\n\n{description}"))
            }
        }
        _ => json!(form.text),
    };
    let media: Vec<&str> = form
        .media
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let mut content = json!({
        "platform": platform.as_str(),
        "text": text,
        "mediaUrls": media,
    });
    if platform == Platform::Instagram && !form.cover.trim().is_empty() {
        content["coverUrl"] = json!(form.cover.trim());
    }
    if !form.schedule_at.trim().is_empty() {
        content["scheduledAt"] = json!(scheduled_at(&form.schedule_at, zone)?);
    }
    let mut post = json!({
        "accountId": form.account.trim(),
        "content": content,
        "target": {"targetType": platform.as_str()},
    });
    if platform == Platform::Tiktok {
        post["tiktokOptions"] = json!({"draft": form.draft.is_some()});
    }
    Ok(json!({ "post": post }))
}

/// `POST /dashboard/compose`.
#[tracing::instrument(skip_all, fields(user_id = %session.user.id))]
async fn submit(
    req: HttpRequest,
    state: web::Data<AppState>,
    session: SessionUser,
    form: web::Form<ComposeForm>,
) -> Result<HttpResponse, ApiError> {
    let form = form.into_inner();
    let zone = form.tz.parse::<Tz>().unwrap_or_else(|_| zone_of(&req));
    let account = match uuid::Uuid::parse_str(form.account.trim()) {
        Ok(id) => state.store.find_owned_account(session.user.id, id).await?,
        Err(_) => None,
    };
    // Only a form naming one of the user's accounts can publish, so only such a form spends its
    // token; any other is refused below as the API refuses it (and a user without accounts is
    // shown no form to carry a token).
    let spent = match account {
        Some(_) => {
            form_token::spend(
                &state.store,
                &state.signer,
                &form.form_token,
                session.user.id,
                state.clock.now(),
            )
            .await?
        }
        None => Spent::Now,
    };
    match spent {
        Spent::Now => {}
        // Nothing is published; the page says so, with an empty form (its text went with the
        // first submission, whose outcome History shows).
        Spent::Before => {
            let fresh = ComposeForm {
                tz: zone.name().to_string(),
                ..ComposeForm::default()
            };
            let mut response = render_page(
                &req,
                &state,
                &session,
                fresh,
                Some(Outcome::AlreadySubmitted),
                None,
            )
            .await?;
            *response.status_mut() = actix_web::http::StatusCode::CONFLICT;
            return Ok(response);
        }
        // A form from before the token existed, or left open too long: nothing is published,
        // and what was typed comes back in a fresh form to check and send again.
        Spent::Unusable => {
            let expired = ApiError::invalid_request(
                "This form has expired. Nothing was published: check it and send it again.",
            );
            let mut response = render_page(
                &req,
                &state,
                &session,
                form,
                None,
                Some((Field::Top, Problem::of(&expired))),
            )
            .await?;
            *response.status_mut() = actix_web::http::StatusCode::BAD_REQUEST;
            return Ok(response);
        }
    }
    let platform = account.as_ref().map(|account| account.platform);
    let refuse = |error: ApiError| (Field::of(&error, platform), Problem::of(&error));
    let body = match request_body(&form, platform, zone) {
        Ok(body) => body,
        Err(error) => {
            let refused = Some(refuse(error));
            return render_page(&req, &state, &session, form, None, refused).await;
        }
    };
    let accept_language = req
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok());
    let result = match state.usage.meter(&session.user, accept_language).await {
        Ok((plan, _)) => {
            let publisher = Publisher {
                user: &session.user,
                plan,
            };
            state.publishing.handle_post(publisher, &body).await
        }
        Err(error) => Err(error),
    };
    let (outcome, refused) = match result {
        Ok(answer) => (Some(outcome_of(&answer, zone)), None),
        // A time-out goes on in the background: its outcome is as unknown as an unconfirmed
        // one, so it is shown the same way, never as a failure to retry.
        Err(error)
            if matches!(
                error.code,
                ErrorCode::PublishUnconfirmed | ErrorCode::Timeout
            ) =>
        {
            (Some(Outcome::Unconfirmed(Problem::of(&error))), None)
        }
        Err(error) => match Field::of(&error, platform) {
            // Not about anything typed: the publish itself failed (or the quota, the plan…).
            Field::Top if error.quota.is_some() => {
                let mut problem = Problem::of(&error);
                if let Some(quota) = &error.quota {
                    problem.message = quota.error.clone();
                }
                (None, Some((Field::Top, problem)))
            }
            Field::Top => (Some(Outcome::Failed(Problem::of(&error))), None),
            // The media probe names the failing URL, not the field: the cover's URL → cover.
            Field::Media
                if !form.cover.trim().is_empty()
                    && error.message.contains(form.cover.trim())
                    && !form
                        .media
                        .lines()
                        .map(str::trim)
                        .any(|url| !url.is_empty() && error.message.contains(url)) =>
            {
                (None, Some((Field::Cover, Problem::of(&error))))
            }
            field => (None, Some((field, Problem::of(&error)))),
        },
    };
    // A success empties the form (a reload must not invite a second post of the same text); a
    // refusal keeps what was typed.
    let scheduled = matches!(outcome, Some(Outcome::Scheduled { .. }));
    let form = if outcome
        .as_ref()
        .is_some_and(|o| matches!(o, Outcome::Published { .. } | Outcome::Scheduled { .. }))
    {
        ComposeForm {
            tz: zone.name().to_string(),
            ..ComposeForm::default()
        }
    } else {
        form
    };
    let mut response = render_page(&req, &state, &session, form, outcome, refused).await?;
    // The zone a post was scheduled in is the one the Scheduled page then shows it in.
    if scheduled {
        remember_zone(&mut response, zone, state.cookie_secure)?;
    }
    Ok(response)
}

fn outcome_of(answer: &PostOutcome, zone: Tz) -> Outcome {
    match answer {
        PostOutcome::Scheduled(scheduled) => {
            let at = scheduled.scheduled_at;
            Outcome::Scheduled {
                id: scheduled.scheduled_post_id.to_string(),
                at_utc: at.format("%Y-%m-%d %H:%M UTC").to_string(),
                at_zone: at
                    .with_timezone(&zone)
                    .format("%Y-%m-%d %H:%M %Z")
                    .to_string(),
            }
        }
        PostOutcome::Published(published) => {
            let receipt = &published.data;
            Outcome::Published {
                link: public_link(receipt.platform, &receipt.post_id),
                submission_id: receipt.post_submission_id.to_string(),
                platform: platform_name(receipt.platform).to_string(),
                post_id: receipt.post_id.clone(),
            }
        }
    }
}

/// The post's public address where the platform's id alone makes it: a YouTube video
/// (`watch?v=`) and an X post (`/i/web/status/`, which needs no user name). Facebook,
/// Instagram and Threads give theirs only as a `permalink` field of another call, and TikTok
/// answers a publish id, not the video's, so those have none here.
fn public_link(platform: Platform, post_id: &str) -> Option<String> {
    let safe = !post_id.is_empty()
        && post_id.len() <= 64
        && post_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !safe {
        return None;
    }
    match platform {
        Platform::Youtube => Some(format!("https://www.youtube.com/watch?v={post_id}")),
        Platform::X => Some(format!("https://x.com/i/web/status/{post_id}")),
        Platform::Facebook | Platform::Instagram | Platform::Threads | Platform::Tiktok => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn youtube_and_x_posts_link_to_their_public_address_and_nothing_odd_is_linked() {
        assert_eq!(
            public_link(Platform::Youtube, "dQw4w9WgXcQ").as_deref(),
            Some("https://www.youtube.com/watch?v=dQw4w9WgXcQ")
        );
        assert_eq!(
            public_link(Platform::X, "1460323737035677698").as_deref(),
            Some("https://x.com/i/web/status/1460323737035677698")
        );
        assert_eq!(public_link(Platform::Facebook, "1_2"), None);
        assert_eq!(public_link(Platform::X, "1/../evil"), None);
        assert_eq!(public_link(Platform::Youtube, ""), None);
    }

    #[test]
    fn sizes_read_in_whole_units() {
        let cases = [
            ("the default limit", 100 * 1024 * 1024, "100 MB"),
            (
                "a part of a megabyte is dropped",
                3 * 1024 * 1024 + 5,
                "3 MB",
            ),
            ("below a megabyte", 64 * 1024, "64 KB"),
            ("a few bytes", 10, "1 KB"),
        ];
        for (name, bytes, want) in cases {
            assert_eq!(size_text(bytes), want, "{name}");
        }
    }

    #[test]
    fn a_separator_line_splits_a_thread() {
        assert_eq!(
            split_thread("one\nstill one\n---\ntwo\n  ---  \nthree"),
            vec!["one\nstill one", "two", "three"]
        );
        assert_eq!(split_thread("a --- b"), vec!["a --- b"]);
    }

    #[test]
    fn a_wall_clock_time_is_read_in_its_zone() {
        let taipei: Tz = "Asia/Taipei".parse().unwrap();
        assert_eq!(
            scheduled_at("2026-12-01T09:30", taipei).unwrap(),
            "2026-12-01T09:30:00+08:00"
        );
        let new_york: Tz = "America/New_York".parse().unwrap();
        // 02:30 on 2026-03-08 does not exist in New York (clocks jump from 02:00 to 03:00).
        let skipped = scheduled_at("2026-03-08T02:30", new_york).unwrap_err();
        assert_eq!(Field::of(&skipped, None), Field::Schedule);
        assert!(scheduled_at("tomorrow", taipei).is_err());
    }

    #[test]
    fn refusals_land_on_their_field() {
        let cases = [
            (
                ApiError::missing_parameter("accountId"),
                None,
                Field::Account,
            ),
            (
                ApiError::new(ErrorCode::TextRequired, "Text is required"),
                Some(Platform::Facebook),
                Field::Text,
            ),
            (
                ApiError::new(ErrorCode::TextRequired, "Text is required"),
                Some(Platform::Youtube),
                Field::Title,
            ),
            (
                ApiError::new(ErrorCode::InvalidMediaUrl, "mediaUrls[0] is not a URL"),
                None,
                Field::Media,
            ),
            (
                ApiError::new(ErrorCode::InvalidMediaType, "coverUrl must be a JPG or PNG"),
                None,
                Field::Cover,
            ),
            (
                ApiError::invalid_request("scheduledAt must be at least 1 minute in the future"),
                None,
                Field::Schedule,
            ),
            (
                ApiError::new(ErrorCode::InsufficientPermissions, "x needs Ultra"),
                None,
                Field::Top,
            ),
        ];
        for (error, platform, want) in cases {
            assert_eq!(Field::of(&error, platform), want, "{}", error.message);
        }
    }
}
