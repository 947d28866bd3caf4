//! The simulator's Meta and Threads checks derived from the official specs (codegen node files,
//! `enum_types.json`, the Threads Postman collection) and the hand-written permission rules:
//! each refusal carries the platform's error and is recorded as a protocol violation. Also the
//! scopes a Meta or Threads login grants, carried to the tokens the flow hands out.

use reqwest::{RequestBuilder, StatusCode};
use serde_json::Value;
use service_sim::{SimConfig, Simulator, state::SimAccount};

use crate::adapters::Harness;

async fn send(request: RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

fn graph(h: &Harness, path: &str) -> String {
    format!("{}/graph/v24.0/{path}", h.sim.base_url)
}

fn threads(h: &Harness, path: &str) -> String {
    format!("{}/threads/v1.0/{path}", h.sim.base_url)
}

/// Asserts Meta's error object with `code` and a message containing `needle`, and that the
/// simulator recorded exactly the violation `rule`.
fn assert_refused(
    h: &Harness,
    (status, body): (StatusCode, Value),
    expected: (StatusCode, i64, &str),
    needle: &str,
    rule: &str,
) {
    let (want_status, code, kind) = expected;
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["type"], kind, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(needle),
        "{message} should contain {needle}"
    );
    assert_eq!(h.take_violation_rules(), [rule], "{body}");
}

fn limit_scopes(h: &Harness, account: &SimAccount, scopes: &[&str]) {
    h.sim.state().grant_scopes(
        &account.access_token,
        scopes.iter().map(|s| s.to_string()).collect(),
    );
}

const BAD: StatusCode = StatusCode::BAD_REQUEST;
const FORBIDDEN: StatusCode = StatusCode::FORBIDDEN;

#[actix_web::test]
async fn facebook_unknown_field_param_missing_param_and_scope_are_refused() {
    let h = Harness::start().await;
    let page = h.account("facebook", "Spec Page");
    let token = page.access_token.as_str();
    let id = page.external_id.as_str();

    // A field the Page node does not have (Page.json).
    let answer = send(
        h.http
            .get(graph(&h, id))
            .query(&[("fields", "id,name,impressions"), ("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "(#100) Tried accessing nonexisting field (impressions) on node type (Page)",
        "unknown_field",
    );
    // A field of the posts the `posts` edge returns (PagePost.json), `shares` included.
    let (status, body) = send(h.http.get(graph(&h, &format!("{id}/posts"))).query(&[
        (
            "fields",
            "id,message,shares,reactions.summary(total_count).limit(0)",
        ),
        ("access_token", token),
    ]))
    .await;
    assert_eq!(status, 200, "{body}");
    let answer = send(
        h.http
            .get(graph(&h, &format!("{id}/posts")))
            .query(&[("fields", "id,like_count"), ("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "nonexisting field (like_count) on node type (Post)",
        "unknown_field",
    );

    // A parameter the feed edge does not have: refused (our strict choice).
    let answer = send(
        h.http
            .post(graph(&h, &format!("{id}/feed")))
            .form(&[("mesage", "typo"), ("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "(#100) Param mesage is not a valid parameter",
        "unknown_parameter",
    );
    // A value of the wrong type (`published` is a bool).
    let answer = send(h.http.post(graph(&h, &format!("{id}/feed"))).form(&[
        ("message", "hi"),
        ("published", "maybe"),
        ("access_token", token),
    ]))
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "published",
        "invalid_parameter_type",
    );
    // A period outside the Page insights enum (`pageinsights_period_enum_param`).
    let answer = send(h.http.get(graph(&h, &format!("{id}/insights"))).query(&[
        ("metric", "page_media_view"),
        ("period", "fortnight"),
        ("access_token", token),
    ]))
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "period must be one of the following values: day, days_28, lifetime",
        "invalid_enum_value",
    );

    // The page token was not granted read_insights.
    limit_scopes(
        &h,
        &page,
        &[
            "pages_show_list",
            "pages_read_engagement",
            "pages_manage_posts",
        ],
    );
    let answer = send(
        h.http
            .get(graph(&h, &format!("{id}/insights")))
            .query(&[("metric", "page_media_view"), ("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (FORBIDDEN, 10, "OAuthException"),
        "(#10) This endpoint requires the 'read_insights' permission",
        "missing_scope",
    );
    // What it was granted still works.
    let (status, body) = send(
        h.http
            .post(graph(&h, &format!("{id}/feed")))
            .form(&[("message", "granted"), ("access_token", token)]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    limit_scopes(&h, &page, &["pages_show_list", "pages_read_engagement"]);
    let answer = send(
        h.http
            .post(graph(&h, &format!("{id}/feed")))
            .form(&[("message", "not granted"), ("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (FORBIDDEN, 200, "OAuthException"),
        "(#200) Requires pages_manage_posts permission",
        "missing_scope",
    );
}

#[actix_web::test]
async fn instagram_unknown_field_enum_missing_param_and_scope_are_refused() {
    let h = Harness::start().await;
    let ig = h.account("instagram", "Spec Insta");
    let token = ig.access_token.as_str();
    let id = ig.external_id.as_str();

    // `impressions` is no field of IGMedia (IGMedia.json), on the media list as on one media.
    let answer = send(h.http.get(graph(&h, &format!("{id}/media"))).query(&[
        ("fields", "id,like_count,impressions"),
        ("access_token", token),
    ]))
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "Tried accessing nonexisting field (impressions) on node type (IGMedia)",
        "unknown_field",
    );
    // A metric outside `shadowiguserinsights_metric_enum_param`, named by its index.
    let answer = send(h.http.get(graph(&h, &format!("{id}/insights"))).query(&[
        ("metric", "reach,impressions"),
        ("period", "day"),
        ("access_token", token),
    ]))
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "(#100) metric[1] must be one of the following values: accounts_engaged",
        "invalid_enum_value",
    );
    // `period` is required on IG user insights (IGUser.json).
    let answer = send(
        h.http
            .get(graph(&h, &format!("{id}/insights")))
            .query(&[("metric", "reach"), ("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "(#100) The parameter period is required",
        "missing_parameter",
    );
    // `creation_id` is required to publish.
    let answer = send(
        h.http
            .post(graph(&h, &format!("{id}/media_publish")))
            .form(&[("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "(#100) The parameter creation_id is required",
        "missing_parameter",
    );
    // A container parameter IGUser `media` does not have.
    let image = format!("{}/media/sample.jpg", h.sim.base_url);
    let answer = send(h.http.post(graph(&h, &format!("{id}/media"))).form(&[
        ("image_url", image.as_str()),
        ("caption_text", "typo"),
        ("access_token", token),
    ]))
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "OAuthException"),
        "Param caption_text is not a valid parameter",
        "unknown_parameter",
    );
    // Feed images keep from 4:5 to 1.91:1; the size is read from the image's header.
    let image_of = |size: &str| format!("{}/media/image/{size}.png", h.sim.base_url);
    for size in ["1080x1920", "2000x1000"] {
        let answer = send(h.http.post(graph(&h, &format!("{id}/media"))).form(&[
            ("image_url", image_of(size).as_str()),
            ("access_token", token),
        ]))
        .await;
        assert_eq!(
            answer.1["error"]["error_subcode"], 2_207_009,
            "{}",
            answer.1
        );
        assert_refused(
            &h,
            answer,
            (BAD, 36_003, "OAuthException"),
            "The aspect ratio is not supported",
            "unsupported_aspect_ratio",
        );
    }
    for size in ["1080x1350", "1910x1000"] {
        let (status, body) = send(h.http.post(graph(&h, &format!("{id}/media"))).form(&[
            ("image_url", image_of(size).as_str()),
            ("access_token", token),
        ]))
        .await;
        assert_eq!(status, 200, "{size}: {body}");
    }

    // Granted instagram_basic only: insights need instagram_manage_insights, publishing
    // instagram_content_publish.
    limit_scopes(&h, &ig, &["instagram_basic"]);
    let answer = send(h.http.get(graph(&h, &format!("{id}/insights"))).query(&[
        ("metric", "reach"),
        ("period", "day"),
        ("access_token", token),
    ]))
    .await;
    assert_refused(
        &h,
        answer,
        (FORBIDDEN, 10, "IGApiException"),
        "'instagram_manage_insights'",
        "missing_scope",
    );
    let answer = send(
        h.http
            .post(graph(&h, &format!("{id}/media")))
            .form(&[("image_url", image.as_str()), ("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (FORBIDDEN, 200, "IGApiException"),
        "instagram_content_publish",
        "missing_scope",
    );
    let (status, body) = send(
        h.http
            .get(graph(&h, &format!("{id}/media")))
            .query(&[("fields", "id,caption"), ("access_token", token)]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[actix_web::test]
async fn threads_unknown_field_param_missing_param_and_scope_are_refused() {
    let h = Harness::start().await;
    let account = h.account("threads", "Spec Threads");
    let token = account.access_token.as_str();

    // `is_reply` is a field of the reply edges only (the collection's `fields_replies`).
    let answer = send(
        h.http
            .get(threads(&h, "me/threads"))
            .query(&[("fields", "id,text,is_reply"), ("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "THApiException"),
        "Tried accessing nonexisting field (is_reply) on node type (ThreadsMedia)",
        "unknown_field",
    );
    // The collection's `fields_threads`, nested `poll_attachment{…}` included, are fine.
    let (status, body) = send(h.http.get(threads(&h, "me/threads")).query(&[
        (
            "fields",
            "id,text,permalink,poll_attachment{option_a,option_b}",
        ),
        ("access_token", token),
    ]))
    .await;
    assert_eq!(status, 200, "{body}");
    let answer = send(h.http.post(threads(&h, "me/threads")).form(&[
        ("media_type", "TEXT"),
        ("txt", "typo"),
        ("access_token", token),
    ]))
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "THApiException"),
        "Param txt is not a valid parameter",
        "unknown_parameter",
    );
    let answer = send(
        h.http
            .post(threads(&h, "me/threads_publish"))
            .form(&[("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (BAD, 100, "THApiException"),
        "The parameter creation_id is required",
        "missing_parameter",
    );

    limit_scopes(&h, &account, &["threads_basic", "threads_content_publish"]);
    let answer = send(
        h.http
            .get(threads(&h, "me/threads_insights"))
            .query(&[("metric", "views"), ("access_token", token)]),
    )
    .await;
    assert_refused(
        &h,
        answer,
        (FORBIDDEN, 10, "THApiException"),
        "'threads_manage_insights'",
        "missing_scope",
    );
}

/// The scopes asked for at Meta's and Threads' authorize are what the tokens of the flow carry:
/// the user token, the page token `/me/accounts` hands out, the long-lived tokens.
#[actix_web::test]
async fn login_scopes_are_carried_to_every_token_of_the_flow() {
    let sim = Simulator::start(SimConfig {
        idp_clients: vec![("app".into(), "secret".into())],
        ..SimConfig::default()
    })
    .unwrap();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let base = sim.base_url.clone();
    let code = |app: &'static str, scope: &'static str| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let response = http
                .get(format!("{base}/oauth/{app}/authorize"))
                .query(&[
                    ("client_id", "app"),
                    ("redirect_uri", "http://localhost/cb"),
                    ("scope", scope),
                    ("login_hint", "Scoped Person"),
                ])
                .send()
                .await
                .unwrap();
            let location = response.headers()["location"].to_str().unwrap().to_string();
            let url = url::Url::parse(&location).unwrap();
            url.query_pairs()
                .find(|(k, _)| k == "code")
                .unwrap()
                .1
                .into_owned()
        }
    };
    let json = async |request: RequestBuilder| -> (u16, Value) {
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    };

    // Meta: pages_show_list and pages_read_engagement only.
    let code_value = code("meta", "pages_show_list,pages_read_engagement").await;
    let (status, token) = json(
        http.get(format!("{base}/graph/v24.0/oauth/access_token"))
            .query(&[
                ("client_id", "app"),
                ("client_secret", "secret"),
                ("redirect_uri", "http://localhost/cb"),
                ("code", code_value.as_str()),
            ]),
    )
    .await;
    assert_eq!(status, 200, "{token}");
    let user_token = token["access_token"].as_str().unwrap().to_string();
    let (status, pages) = json(http.get(format!("{base}/graph/v24.0/me/accounts")).query(&[
        ("fields", "id,name,access_token,instagram_business_account"),
        ("access_token", user_token.as_str()),
    ]))
    .await;
    assert_eq!(status, 200, "{pages}");
    let page = &pages["data"][0];
    let page_id = page["id"].as_str().unwrap();
    let page_token = page["access_token"].as_str().unwrap();
    let (status, body) = json(
        http.get(format!("{base}/graph/v24.0/{page_id}"))
            .query(&[("fields", "name"), ("access_token", page_token)]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = json(
        http.get(format!("{base}/graph/v24.0/{page_id}/insights"))
            .query(&[("metric", "page_media_view"), ("access_token", page_token)]),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("read_insights"),
        "{body}"
    );
    let rules: Vec<String> = sim
        .state()
        .take_violations()
        .into_iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, ["missing_scope"]);

    // A login without pages_show_list cannot list the pages.
    let code_value = code("meta", "pages_read_engagement").await;
    let (_, token) = json(
        http.get(format!("{base}/graph/v24.0/oauth/access_token"))
            .query(&[
                ("client_id", "app"),
                ("client_secret", "secret"),
                ("redirect_uri", "http://localhost/cb"),
                ("code", code_value.as_str()),
            ]),
    )
    .await;
    let (status, body) = json(
        http.get(format!("{base}/graph/v24.0/me/accounts"))
            .query(&[("access_token", token["access_token"].as_str().unwrap())]),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pages_show_list")
    );
    let rules: Vec<String> = sim
        .state()
        .take_violations()
        .into_iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, ["missing_scope"]);

    // Threads: threads_basic only, kept by the long-lived exchange.
    let code_value = code("threads", "threads_basic").await;
    let (status, short) = json(
        http.post(format!("{base}/threads/oauth/access_token"))
            .form(&[
                ("client_id", "app"),
                ("client_secret", "secret"),
                ("grant_type", "authorization_code"),
                ("redirect_uri", "http://localhost/cb"),
                ("code", code_value.as_str()),
            ]),
    )
    .await;
    assert_eq!(status, 200, "{short}");
    let (status, long) = json(http.get(format!("{base}/threads/access_token")).query(&[
        ("grant_type", "th_exchange_token"),
        ("client_secret", "secret"),
        ("access_token", short["access_token"].as_str().unwrap()),
    ]))
    .await;
    assert_eq!(status, 200, "{long}");
    let long_token = long["access_token"].as_str().unwrap();
    let (status, body) = json(
        http.get(format!("{base}/threads/v1.0/me"))
            .query(&[("fields", "id,username"), ("access_token", long_token)]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = json(http.post(format!("{base}/threads/v1.0/me/threads")).form(&[
        ("media_type", "TEXT"),
        ("text", "hi"),
        ("access_token", long_token),
    ]))
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("threads_content_publish"),
        "{body}"
    );
    let rules: Vec<String> = sim
        .state()
        .take_violations()
        .into_iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, ["missing_scope"]);
}

/// The Threads token routes follow the Postman collection: the code exchange needs its
/// `grant_type`, and takes no parameter the collection does not list.
#[actix_web::test]
async fn threads_token_routes_check_the_collections_parameters() {
    let sim = Simulator::start(SimConfig {
        idp_clients: vec![("app".into(), "secret".into())],
        ..SimConfig::default()
    })
    .unwrap();
    let http = reqwest::Client::new();
    let url = format!("{}/threads/oauth/access_token", sim.base_url);
    let base = [
        ("client_id", "app"),
        ("client_secret", "secret"),
        ("code", "some-code"),
        ("redirect_uri", "http://localhost/cb"),
    ];
    let (status, body) = send(http.post(&url).form(&base)).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("The parameter grant_type is required"),
        "{body}"
    );
    let mut extra = base.to_vec();
    extra.push(("grant_type", "authorization_code"));
    extra.push(("scope", "threads_basic"));
    let (status, body) = send(http.post(&url).form(&extra)).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Param scope is not a valid parameter"),
        "{body}"
    );
    let rules: Vec<String> = sim
        .state()
        .take_violations()
        .into_iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, ["missing_parameter", "unknown_parameter"]);
}

/// Facebook's code exchange needs the `redirect_uri` the code was issued for.
#[actix_web::test]
async fn meta_code_exchange_requires_the_redirect_uri() {
    let sim = Simulator::start(SimConfig {
        idp_clients: vec![("app".into(), "secret".into())],
        ..SimConfig::default()
    })
    .unwrap();
    let (status, body) = send(
        reqwest::Client::new()
            .get(format!("{}/graph/v24.0/oauth/access_token", sim.base_url))
            .query(&[
                ("client_id", "app"),
                ("client_secret", "secret"),
                ("code", "some-code"),
            ]),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["message"], "Missing redirect_uri parameter.");
    let rules: Vec<String> = sim
        .state()
        .take_violations()
        .into_iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, ["missing_parameter"]);
}
