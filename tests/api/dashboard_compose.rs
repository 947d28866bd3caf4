//! The Compose and Scheduled pages at the HTTP level (a cookie client, no browser): publishing
//! and scheduling through the form (the same path and metering as `POST /v2/posts`), refusals
//! next to their field with the catalogue's code, the scheduled list with its filters and both
//! times, cancel through its confirmation, the cross-site refusal, the security headers, and
//! the upload form that works without scripts (files stored, their URLs in the media field).

use chrono::{Duration, Utc};
use chrono_tz::Tz;
use reqwest::{
    header,
    multipart::{Form, Part},
};
use serde_json::Value;

use crate::helpers::{Dashboard, Publisher, TestApp, status_and_json};
use crate::pages::{
    BROWSER_ACCEPT, any_page, form_token, get_page, page, post_form, post_form_as_is, see_other,
};

/// The part of `body` from the element with `id` to the end of its line (a field's refusal is
/// rendered on the line of its field).
fn element<'a>(body: &'a str, id: &str) -> &'a str {
    let at = body
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in:\n{body}"));
    let end = body[at..].find('\n').map_or(body.len(), |end| at + end);
    &body[at..end]
}

async fn scheduled_api(app: &TestApp, publisher: &Publisher) -> Vec<Value> {
    let (status, body) = status_and_json(
        app.http
            .get(app.url("/api/scheduled-posts"))
            .header("service-api-key", &publisher.key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["posts"].as_array().unwrap().clone()
}

async fn current_usage(app: &TestApp, dashboard: &Dashboard) -> i64 {
    let (_, status) = status_and_json(
        dashboard
            .client
            .get(app.url("/api/subscription/status"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    status["api_usage"]["current_usage"].as_i64().unwrap()
}

/// A wall-clock time for the `datetime-local` input, `ahead` from the app's clock, in `zone`.
fn local_input(app: &TestApp, ahead: Duration, zone: Tz) -> (String, chrono::DateTime<Utc>) {
    let at = app.clock_now() + ahead;
    let at = at - Duration::seconds(i64::from(chrono::Timelike::second(&at)));
    let at = at - Duration::nanoseconds(i64::from(chrono::Timelike::nanosecond(&at)));
    (
        at.with_timezone(&zone).format("%Y-%m-%dT%H:%M").to_string(),
        at,
    )
}

#[actix_web::test]
async fn publishing_now_through_the_form_publishes_and_shows_the_post_id() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "free").await;
    let account = publisher.account.id.to_string();

    let form = get_page(&app, &publisher.dashboard, "/dashboard/compose").await;
    assert!(form.contains(&format!("value=\"{account}\"")), "{form}");
    assert!(form.contains("facebook demo (Facebook)"), "{form}");
    assert!(form.contains("aria-current=\"page\""), "{form}");
    assert_eq!(current_usage(&app, &publisher.dashboard).await, 0);

    let response = post_form(
        &app,
        &publisher.dashboard,
        "/dashboard/compose",
        &[
            ("account", &account),
            ("text", "Hello from the compose page"),
            ("media", ""),
            ("tz", "UTC"),
        ],
    )
    .await;
    let body = page(response).await;
    let published = app.published(&publisher.sim);
    assert_eq!(published.len(), 1, "{body}");
    assert_eq!(
        published[0].text.as_deref(),
        Some("Hello from the compose page")
    );
    let history = app.history(&publisher.dashboard).await;
    let post_id = history["posts"][0]["post_id"].as_str().unwrap();
    assert!(
        element(&body, "result-title").contains("Published to Facebook."),
        "{body}"
    );
    assert!(
        body.contains(&format!("<code class=\"post-id\">{post_id}</code>")),
        "the post id:\n{body}"
    );
    // The same metering as POST /v2/posts: one call counted.
    assert_eq!(current_usage(&app, &publisher.dashboard).await, 1);
    // A success empties the form, so a second click does not send the same post again.
    assert!(!body.contains(">Hello from the compose page</textarea>"));
}

#[actix_web::test]
async fn a_thread_is_split_on_separator_lines() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("threads", "pro").await;
    let account = publisher.account.id.to_string();
    let body = page(
        post_form(
            &app,
            &publisher.dashboard,
            "/dashboard/compose",
            &[
                ("account", &account),
                ("text", "first part\n---\nsecond part"),
                ("tz", "UTC"),
            ],
        )
        .await,
    )
    .await;
    let texts: Vec<_> = app
        .published(&publisher.sim)
        .into_iter()
        .filter_map(|item| item.text)
        .collect();
    assert_eq!(texts, ["first part", "second part"], "{body}");
}

#[actix_web::test]
async fn refusals_are_shown_next_to_their_field_and_nothing_is_published() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let account = publisher.account.id.to_string();
    let (past, _) = local_input(&app, Duration::minutes(-30), Tz::UTC);
    let cases = [
        (
            "empty text",
            vec![("text", ""), ("media", "")],
            "err-text",
            "TextRequired",
        ),
        (
            "a bad media URL",
            vec![("text", "keep me typed"), ("media", "not a url at all")],
            "err-media",
            "InvalidMediaUrl",
        ),
        (
            "a schedule time in the past",
            vec![("text", "keep me typed"), ("schedule_at", past.as_str())],
            "err-schedule",
            "InvalidRequest",
        ),
    ];
    for (name, fields, id, code) in cases {
        let mut form = vec![("account", account.as_str()), ("tz", "UTC")];
        form.extend(fields.iter().copied());
        let body =
            page(post_form(&app, &publisher.dashboard, "/dashboard/compose", &form).await).await;
        let shown = element(&body, id);
        assert!(
            shown.contains(&format!("<code title=\"Error code\">{code}</code>")),
            "{name}: {shown}"
        );
        assert!(
            body.contains("aria-invalid=\"true\""),
            "{name}: the field is marked"
        );
        for (field, value) in &fields {
            if *field == "text" && !value.is_empty() {
                assert!(
                    body.contains(&format!(">{value}</textarea>")),
                    "{name}: what was typed is kept:\n{body}"
                );
            }
        }
        assert!(!body.contains("id=\"result-title\""), "{name}: no result");
    }
    assert!(app.published(&publisher.sim).is_empty());
    assert!(scheduled_api(&app, &publisher).await.is_empty());
}

#[actix_web::test]
async fn a_scheduled_post_is_listed_in_both_zones_filters_work_and_it_can_be_cancelled() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let dashboard = &publisher.dashboard;
    let account = publisher.account.id.to_string();
    let taipei: Tz = "Asia/Taipei".parse().unwrap();
    let (input, at) = local_input(&app, Duration::hours(3), taipei);

    let empty = get_page(&app, dashboard, "/dashboard/scheduled").await;
    assert!(empty.contains("Nothing is scheduled yet"), "{empty}");

    let body = page(
        post_form(
            &app,
            dashboard,
            "/dashboard/compose",
            &[
                ("account", &account),
                ("text", "Later, from Taipei"),
                ("schedule_at", &input),
                ("tz", "Asia/Taipei"),
            ],
        )
        .await,
    )
    .await;
    let posts = scheduled_api(&app, &publisher).await;
    assert_eq!(posts.len(), 1, "{body}");
    let id = posts[0]["scheduled_post_id"].as_str().unwrap().to_string();
    let scheduled_at: chrono::DateTime<Utc> =
        posts[0]["scheduled_at"].as_str().unwrap().parse().unwrap();
    assert_eq!(scheduled_at, at, "the wall-clock time read in Asia/Taipei");
    assert!(
        body.contains(&format!("<code class=\"scheduled-id\">{id}</code>")),
        "{body}"
    );
    assert!(app.published(&publisher.sim).is_empty());

    // The zone picked in the filter form is remembered (a cookie) for the next visit.
    let local = at
        .with_timezone(&taipei)
        .format("%Y-%m-%d %H:%M CST")
        .to_string();
    let utc = at.format("%Y-%m-%d %H:%M UTC").to_string();
    let list = get_page(&app, dashboard, "/dashboard/scheduled?tz=Asia%2FTaipei").await;
    let row = element(&list, &format!("post-{id}"));
    assert!(list.contains("Time (Asia/Taipei)"), "{list}");
    let row_block = &list[list.find(row).unwrap()..];
    let row_block = &row_block[..row_block.find("</tr>").unwrap()];
    assert!(row_block.contains(&local), "{row_block}");
    assert!(row_block.contains(&utc), "{row_block}");
    assert!(row_block.contains("Later, from Taipei"));
    assert!(row_block.contains(&format!("/dashboard/scheduled/{id}/cancel")));
    let again = get_page(&app, dashboard, "/dashboard/scheduled").await;
    assert!(again.contains(&local), "the zone cookie:\n{again}");

    // Filters (a GET form): matching and not matching.
    for (query, listed) in [
        ("?status=scheduled", true),
        ("?status=cancelled", false),
        ("?platform=facebook", true),
        ("?platform=instagram", false),
        ("?status=scheduled&platform=facebook", true),
    ] {
        let list = get_page(&app, dashboard, &format!("/dashboard/scheduled{query}")).await;
        assert_eq!(list.contains(&format!("post-{id}")), listed, "{query}");
        if !listed {
            assert!(
                list.contains("No scheduled post matches these filters"),
                "{query}"
            );
        }
    }

    // Cancel: the confirmation page, then its POST.
    let cancel_path = format!("/dashboard/scheduled/{id}/cancel");
    let confirm = get_page(&app, dashboard, &cancel_path).await;
    assert!(confirm.contains("Cancel this scheduled post?"), "{confirm}");
    assert!(confirm.contains(&format!("action=\"{cancel_path}\"")));
    assert_eq!(
        scheduled_api(&app, &publisher).await[0]["status"],
        "scheduled"
    );
    let response = post_form(&app, dashboard, &cancel_path, &[]).await;
    assert_eq!(
        see_other(&response),
        "/dashboard/scheduled?notice=cancelled"
    );
    assert_eq!(
        scheduled_api(&app, &publisher).await[0]["status"],
        "cancelled"
    );
    let list = get_page(&app, dashboard, "/dashboard/scheduled?notice=cancelled").await;
    assert!(list.contains("The scheduled post was cancelled."), "{list}");
    assert!(
        !list.contains(&format!("href=\"{cancel_path}\"")),
        "no cancel any more"
    );
    // A second cancel is refused as §3.1 says, with a notice.
    let response = post_form(&app, dashboard, &cancel_path, &[]).await;
    assert_eq!(
        see_other(&response),
        "/dashboard/scheduled?notice=not_cancellable"
    );
}

#[actix_web::test]
async fn another_users_scheduled_post_cannot_be_seen_or_cancelled() {
    let app = TestApp::spawn().await;
    let owner = app.publisher("facebook", "pro").await;
    let (input, _) = local_input(&app, Duration::hours(2), Tz::UTC);
    let account = owner.account.id.to_string();
    post_form(
        &app,
        &owner.dashboard,
        "/dashboard/compose",
        &[
            ("account", &account),
            ("text", "mine"),
            ("schedule_at", &input),
            ("tz", "UTC"),
        ],
    )
    .await;
    let id = scheduled_api(&app, &owner).await[0]["scheduled_post_id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = app.sign_in("other@example.com").await;
    let path = format!("/dashboard/scheduled/{id}/cancel");
    let response = other.no_redirect.get(app.url(&path)).send().await.unwrap();
    assert_eq!(see_other(&response), "/dashboard/scheduled?notice=missing");
    let response = post_form(&app, &other, &path, &[]).await;
    assert_eq!(see_other(&response), "/dashboard/scheduled?notice=missing");
    // And publishing to someone else's account is refused on the account field.
    let body = page(
        post_form(
            &app,
            &other,
            "/dashboard/compose",
            &[("account", &account), ("text", "not yours"), ("tz", "UTC")],
        )
        .await,
    )
    .await;
    assert!(body.contains("No account can be published to"), "{body}");
    assert!(
        element(&body, "form-problem").contains("InvalidAccountId")
            || body.contains("InvalidAccountId"),
        "{body}"
    );
    assert_eq!(scheduled_api(&app, &owner).await[0]["status"], "scheduled");
    assert!(app.published(&owner.sim).is_empty());
}

#[actix_web::test]
async fn cross_site_posts_are_refused_and_change_nothing() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let account = publisher.account.id.to_string();
    let (input, _) = local_input(&app, Duration::hours(2), Tz::UTC);
    post_form(
        &app,
        &publisher.dashboard,
        "/dashboard/compose",
        &[
            ("account", &account),
            ("text", "planned"),
            ("schedule_at", &input),
            ("tz", "UTC"),
        ],
    )
    .await;
    let id = scheduled_api(&app, &publisher).await[0]["scheduled_post_id"]
        .as_str()
        .unwrap()
        .to_string();
    let writes = [
        (
            "/dashboard/compose".to_string(),
            vec![("account", account.as_str()), ("text", "planted")],
        ),
        (format!("/dashboard/scheduled/{id}/cancel"), vec![]),
    ];
    for (path, form) in &writes {
        for (name, value) in [
            ("origin", "https://evil.example"),
            ("sec-fetch-site", "cross-site"),
        ] {
            let response = publisher
                .dashboard
                .no_redirect
                .post(app.url(path))
                .header(name, value)
                .form(form)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 403, "{path} with {name}: {value}");
        }
    }
    assert!(app.published(&publisher.sim).is_empty());
    assert_eq!(
        scheduled_api(&app, &publisher).await[0]["status"],
        "scheduled"
    );
}

#[actix_web::test]
async fn the_pages_need_a_session_and_speak_both_languages() {
    let app = TestApp::spawn().await;
    let anonymous = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for path in ["/dashboard/compose", "/dashboard/scheduled"] {
        let response = anonymous
            .get(app.url(path))
            .header(header::ACCEPT, BROWSER_ACCEPT)
            .send()
            .await
            .unwrap();
        assert_eq!(see_other(&response), "/signin", "{path}");
    }
    let dashboard = app.sign_in("lang@example.com").await;
    let compose = get_page(&app, &dashboard, "/dashboard/compose?lang=zh-TW").await;
    assert!(compose.contains("撰寫貼文"), "{compose}");
    assert!(
        compose.contains("前往帳號頁面"),
        "the empty state:\n{compose}"
    );
    let scheduled = get_page(&app, &dashboard, "/dashboard/scheduled").await;
    assert!(scheduled.contains("排程貼文"), "{scheduled}");
    assert!(scheduled.contains("前往撰寫頁面"), "{scheduled}");
}

#[actix_web::test]
async fn a_bad_reel_cover_is_shown_on_the_cover_field() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("instagram", "pro").await;
    let account = publisher.account.id.to_string();
    let mp4 = app.media_url("sample.mp4");
    let body = page(
        post_form(
            &app,
            &publisher.dashboard,
            "/dashboard/compose",
            &[
                ("account", &account),
                ("text", "a reel"),
                ("media", &mp4),
                ("cover", "file:///etc/passwd"),
                ("tz", "UTC"),
            ],
        )
        .await,
    )
    .await;
    let shown = element(&body, "err-cover");
    assert!(shown.contains("InvalidMediaUrl"), "{shown}");
    assert!(!body.contains("id=\"err-media\""), "{body}");
    assert!(
        body.contains("value=\"file:///etc/passwd\""),
        "kept:\n{body}"
    );
    assert!(app.published(&publisher.sim).is_empty());
}

#[actix_web::test]
async fn an_unconfirmed_publish_is_shown_as_unconfirmed_never_as_success() {
    let app = TestApp::spawn_with(|c| {
        c.platforms.processing_timeout_secs = 1;
        c.publishing.unconfirmed_check_interval_ms = 100;
    })
    .await;
    let publisher = app.publisher("threads", "pro").await;
    app.sim.state().set_faults(
        &publisher.sim.platform,
        &publisher.sim.external_id,
        service_sim::state::FaultSpec {
            processing: service_sim::state::Processing::Never,
            ..Default::default()
        },
    );
    let account = publisher.account.id.to_string();
    let mp4 = app.media_url("sample.mp4");
    let body = page(
        post_form(
            &app,
            &publisher.dashboard,
            "/dashboard/compose",
            &[
                ("account", &account),
                ("text", "A video"),
                ("media", &mp4),
                ("tz", "UTC"),
            ],
        )
        .await,
    )
    .await;
    let result = element(&body, "result-title");
    assert!(result.contains("status-unconfirmed"), "{body}");
    assert!(
        !body.contains("result-ok"),
        "never shown as success:\n{body}"
    );
    assert!(
        element(&body, "result-problem").contains("PublishUnconfirmed"),
        "{body}"
    );
    let history = app.history(&publisher.dashboard).await;
    let id = history["posts"][0]["post_submission_id"].as_str().unwrap();
    assert!(
        body.contains(&format!("<code class=\"submission-id\">{id}</code>")),
        "{body}"
    );
}

#[actix_web::test]
async fn the_same_compose_form_sent_twice_publishes_once() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let account = publisher.account.id.to_string();
    let rendered = get_page(&app, &publisher.dashboard, "/dashboard/compose").await;
    let token = form_token(&rendered);
    let form = [
        ("account", account.as_str()),
        ("text", "Clicked twice"),
        ("tz", "UTC"),
        ("form_token", token.as_str()),
    ];
    let first =
        page(post_form(&app, &publisher.dashboard, "/dashboard/compose", &form).await).await;
    assert!(
        element(&first, "result-title").contains("Published to Facebook."),
        "{first}"
    );
    // The browser sends the same form again (a resend after reload, a second click).
    let (status, again) =
        any_page(post_form(&app, &publisher.dashboard, "/dashboard/compose", &form).await).await;
    assert_eq!(status, 409);
    assert!(
        element(&again, "result-title").contains("This form was already submitted"),
        "{again}"
    );
    assert!(again.contains("href=\"/dashboard/history\""), "{again}");
    assert_eq!(app.published(&publisher.sim).len(), 1);

    // A double click: both submissions of one rendering race; one publishes.
    let token = form_token(&get_page(&app, &publisher.dashboard, "/dashboard/compose").await);
    let form = [
        ("account", account.as_str()),
        ("text", "Double click"),
        ("tz", "UTC"),
        ("form_token", token.as_str()),
    ];
    let (a, b) = tokio::join!(
        post_form(&app, &publisher.dashboard, "/dashboard/compose", &form),
        post_form(&app, &publisher.dashboard, "/dashboard/compose", &form),
    );
    let mut statuses = [a.status().as_u16(), b.status().as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409]);
    let texts: Vec<_> = app
        .published(&publisher.sim)
        .into_iter()
        .filter_map(|p| p.text)
        .collect();
    assert_eq!(texts, ["Clicked twice", "Double click"]);
    assert_eq!(
        app.history(&publisher.dashboard).await["posts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[actix_web::test]
async fn a_compose_form_without_a_valid_token_publishes_nothing_and_keeps_the_text() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let account = publisher.account.id.to_string();
    let other = app.publisher("threads", "pro").await;
    let theirs = form_token(&get_page(&app, &other.dashboard, "/dashboard/compose").await);
    for token in [None, Some("forged.token"), Some(theirs.as_str())] {
        let mut form = vec![
            ("account", account.as_str()),
            ("text", "Typed before the form expired"),
            ("tz", "UTC"),
        ];
        form.push(("form_token", token.unwrap_or("")));
        let (status, body) = any_page(
            post_form_as_is(&app, &publisher.dashboard, "/dashboard/compose", &form).await,
        )
        .await;
        assert_eq!(status, 400, "{token:?}");
        assert!(
            element(&body, "form-problem").contains("This form has expired"),
            "{token:?}: {body}"
        );
        assert!(
            body.contains(">Typed before the form expired</textarea>"),
            "the text is kept: {body}"
        );
    }
    assert!(app.published(&publisher.sim).is_empty());
}

/// The upload form's one-time token on a rendered Compose page.
pub(crate) fn upload_token(page: &str) -> String {
    let at = page
        .find("action=\"/dashboard/compose/media\"")
        .unwrap_or_else(|| panic!("no upload form in:\n{page}"));
    form_token(&page[at..])
}

/// A file as the upload form sends it: its bytes, its name and its declared type.
type Picked<'a> = (&'a [u8], &'a str, &'a str);

/// The upload form's body: its token (when given), the media field as rendered, then the files,
/// in the order a browser sends them.
fn upload_body(token: Option<&str>, media: &str, files: &[Picked]) -> Form {
    let mut form = Form::new();
    if let Some(token) = token {
        form = form.text("form_token", token.to_string());
    }
    form = form.text("media", media.to_string());
    for (bytes, name, declared) in files {
        let part = Part::bytes(bytes.to_vec())
            .file_name(name.to_string())
            .mime_str(declared)
            .unwrap();
        form = form.part("file", part);
    }
    form
}

/// Posts the upload form as the browser does from our page (same origin), unless `headers`
/// say otherwise.
async fn send_upload(
    app: &TestApp,
    dashboard: &Dashboard,
    form: Form,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = dashboard
        .no_redirect
        .post(app.url("/dashboard/compose/media"))
        .header(header::ACCEPT, BROWSER_ACCEPT)
        .multipart(form);
    let origin = app.state.public_url.clone();
    let same_origin = [
        ("origin", origin.as_str()),
        ("sec-fetch-site", "same-origin"),
    ];
    for (name, value) in if headers.is_empty() {
        &same_origin[..]
    } else {
        headers
    } {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

/// The `media` and `uploaded` values of a redirect back to Compose.
fn prefilled(location: &str) -> (String, String) {
    let url = url::Url::parse(&format!("http://service.test{location}")).unwrap();
    assert_eq!(url.path(), "/dashboard/compose", "{location}");
    let value = |name: &str| {
        url.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default()
    };
    (value("media"), value("uploaded"))
}

/// The files in the media store, and the user's library as the API lists it.
async fn stored(app: &TestApp, publisher: &Publisher) -> (usize, u64) {
    let files = app.media_objects().list().await.unwrap().len();
    let (status, library) = status_and_json(
        app.http
            .get(app.url("/v2/media"))
            .header("service-api-key", &publisher.key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{library}");
    (files, library["total"].as_u64().unwrap())
}

#[actix_web::test]
async fn files_uploaded_without_scripts_fill_the_media_field_and_are_published() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let dashboard = &publisher.dashboard;
    let account = publisher.account.id.to_string();
    let rendered = get_page(&app, dashboard, "/dashboard/compose").await;
    assert!(
        rendered.contains("enctype=\"multipart/form-data\" class=\"upload\""),
        "{rendered}"
    );
    assert!(rendered.contains(
        "name=\"file\" type=\"file\" multiple required accept=\"image/jpeg,image/png,image/webp,video/mp4,video/quicktime\""
    ));
    assert!(rendered.contains("up to 100 MB each"), "{rendered}");

    let jpeg = service_sim::media::SAMPLE_JPG;
    let form = upload_body(
        Some(&upload_token(&rendered)),
        "",
        &[(jpeg, "photo.jpg", "image/jpeg")],
    );
    let response = send_upload(&app, dashboard, form, &[]).await;
    let location = see_other(&response);
    let (media, uploaded) = prefilled(&location);
    assert_eq!(uploaded, "1");
    assert!(
        media.starts_with(&format!("{}/media/", app.base)) && media.ends_with(".jpg"),
        "{media}"
    );
    let first = media.clone();
    assert_eq!(stored(&app, &publisher).await, (1, 1));
    let served = app.http.get(&first).send().await.unwrap();
    assert_eq!(served.bytes().await.unwrap().as_ref(), jpeg);

    // Back on Compose: the URL is in the media field (and in the upload form, to keep).
    let back = get_page(&app, dashboard, &location).await;
    assert!(back.contains(&format!(">{first}</textarea>")), "{back}");
    assert!(back.contains(&format!("name=\"media\" value=\"{first}\"")));
    assert!(
        back.contains(
            "<p class=\"notice\" role=\"status\">Uploaded 1 file(s). Their addresses are in Media URLs.</p>"
        ),
        "{back}"
    );

    // A second file from that page keeps the first and comes after it.
    let form = upload_body(
        Some(&upload_token(&back)),
        &first,
        &[(service_sim::media::SAMPLE_PNG, "second.png", "image/png")],
    );
    let location = see_other(&send_upload(&app, dashboard, form, &[]).await);
    let (media, _) = prefilled(&location);
    let lines: Vec<&str> = media.lines().collect();
    assert_eq!(lines.len(), 2, "{media}");
    assert_eq!(lines[0], first);
    assert!(lines[1].ends_with(".png"), "{media}");

    // The compose form publishes them as it would typed URLs: an album, in that order.
    let body = page(
        post_form(
            &app,
            dashboard,
            "/dashboard/compose",
            &[
                ("account", &account),
                ("text", "Two uploaded photos"),
                ("media", &media),
                ("tz", "UTC"),
            ],
        )
        .await,
    )
    .await;
    assert!(
        element(&body, "result-title").contains("Published to Facebook."),
        "{body}"
    );
    let published = app.published(&publisher.sim);
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].kind, "album");
    assert_eq!(published[0].media, lines);
}

#[actix_web::test]
async fn an_upload_from_another_site_or_without_its_form_token_stores_nothing() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let dashboard = &publisher.dashboard;
    let jpeg: &[u8] = service_sim::media::SAMPLE_JPG;
    let file = [(jpeg, "photo.jpg", "image/jpeg")];
    let token = upload_token(&get_page(&app, dashboard, "/dashboard/compose").await);

    for headers in [
        [("origin", "https://evil.example")],
        [("sec-fetch-site", "cross-site")],
    ] {
        let form = upload_body(Some(&token), "", &file);
        let response = send_upload(&app, dashboard, form, &headers).await;
        assert_eq!(response.status(), 403, "{headers:?}");
    }
    let other = app.publisher("threads", "pro").await;
    let theirs = upload_token(&get_page(&app, &other.dashboard, "/dashboard/compose").await);
    for sent in [None, Some("forged.token"), Some(theirs.as_str())] {
        let form = upload_body(sent, "https://kept.example/a.jpg", &file);
        let (status, body) = any_page(send_upload(&app, dashboard, form, &[]).await).await;
        assert_eq!(status, 400, "{sent:?}");
        assert!(
            element(&body, "err-upload").contains("This form has expired"),
            "{sent:?}: {body}"
        );
        assert!(
            body.contains(">https://kept.example/a.jpg</textarea>"),
            "{body}"
        );
    }
    assert_eq!(stored(&app, &publisher).await, (0, 0));

    // The cross-site attempts did not spend the page's token; sent twice, it stores once.
    let first = send_upload(&app, dashboard, upload_body(Some(&token), "", &file), &[]).await;
    see_other(&first);
    let again = send_upload(&app, dashboard, upload_body(Some(&token), "", &file), &[]).await;
    let (status, body) = any_page(again).await;
    assert_eq!(status, 409);
    assert!(
        body.contains("This form was already submitted, so nothing was done again."),
        "{body}"
    );
    assert_eq!(stored(&app, &publisher).await, (1, 1));
}

#[actix_web::test]
async fn a_file_that_is_not_media_is_refused_by_the_upload_form_and_nothing_is_kept() {
    let app = TestApp::spawn().await;
    let publisher = app.publisher("facebook", "pro").await;
    let dashboard = &publisher.dashboard;
    let kept = "https://kept.example/a.jpg";
    let notes: &[u8] = b"not a picture, only words\n";
    let cases: [(&str, &[Picked], &str); 3] = [
        (
            "a text file",
            &[(notes, "notes.txt", "text/plain")],
            "InvalidMediaType",
        ),
        (
            "text declared as an image",
            &[(notes, "notes.jpg", "image/jpeg")],
            "InvalidMediaType",
        ),
        (
            "no file chosen",
            &[(&b""[..], "", "application/octet-stream")],
            "MissingParameter",
        ),
    ];
    for (name, files, code) in cases {
        let token = upload_token(&get_page(&app, dashboard, "/dashboard/compose").await);
        let form = upload_body(Some(&token), kept, files);
        let (status, body) = any_page(send_upload(&app, dashboard, form, &[]).await).await;
        assert_eq!(status, 400, "{name}: {body}");
        let shown = element(&body, "err-upload");
        assert!(
            shown.contains(&format!("<code title=\"Error code\">{code}</code>")),
            "{name}: {shown}"
        );
        assert!(body.contains("aria-invalid=\"true\""), "{name}");
        assert!(
            body.contains(&format!(">{kept}</textarea>")),
            "{name}: {body}"
        );
        if name == "no file chosen" {
            assert!(shown.contains("Choose a file to upload."), "{shown}");
        }
    }
    assert_eq!(stored(&app, &publisher).await, (0, 0));
    // The reason reads in the page's language.
    let token = upload_token(&get_page(&app, dashboard, "/dashboard/compose?lang=zh-TW").await);
    let form = upload_body(
        Some(&token),
        "",
        &[(&b""[..], "", "application/octet-stream")],
    );
    let (_, body) = any_page(send_upload(&app, dashboard, form, &[]).await).await;
    assert!(
        element(&body, "err-upload").contains("請選擇要上傳的檔案。"),
        "{body}"
    );
    assert!(body.contains("上傳媒體檔案"), "{body}");
}
