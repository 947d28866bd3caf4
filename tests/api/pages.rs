//! What the dashboard's page tests share: fetching a page as a browser does, the checks every
//! page must pass, and a same-origin form post.

use reqwest::{Response, header};

use crate::helpers::{Dashboard, TestApp, assert_nothing_inline};

/// The pages' Content-Security-Policy, written out here so that a weakened policy fails.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'";
/// What a browser's navigation sends as `Accept`.
pub const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// Checks what every page must be (HTML with the security headers, nothing inline that the
/// CSP would block) and returns its status and body.
pub async fn any_page(response: Response) -> (u16, String) {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let content_type = headers[header::CONTENT_TYPE].to_str().unwrap();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CSP);
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert_eq!(headers[header::REFERRER_POLICY], "same-origin");
    let body = response.text().await.unwrap();
    assert_nothing_inline(&body);
    (status, body)
}

/// [`any_page`] for a page that must answer 200; returns its body.
pub async fn page(response: Response) -> String {
    let url = response.url().clone();
    let (status, body) = any_page(response).await;
    assert_eq!(status, 200, "{url}:\n{body}");
    body
}

/// A page of the service as the signed-in browser gets it (redirects not followed).
pub async fn get(app: &TestApp, dashboard: &Dashboard, path: &str) -> (u16, String) {
    any_page(
        dashboard
            .no_redirect
            .get(app.url(path))
            .header(header::ACCEPT, BROWSER_ACCEPT)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// [`get`] for a page that must answer 200.
pub async fn get_page(app: &TestApp, dashboard: &Dashboard, path: &str) -> String {
    let (status, body) = get(app, dashboard, path).await;
    assert_eq!(status, 200, "{path}:\n{body}");
    body
}

/// A same-origin form post, as a browser sends it from our pages. The Compose form is posted
/// as a freshly rendered one is: with that rendering's one-time token (unless `form` brings its
/// own).
pub async fn post_form(
    app: &TestApp,
    dashboard: &Dashboard,
    path: &str,
    form: &[(&str, &str)],
) -> Response {
    let token;
    let mut form = form.to_vec();
    if path == "/dashboard/compose" && !form.iter().any(|(name, _)| *name == "form_token") {
        // A user without accounts is shown no form, and so no token.
        let rendered = get_page(app, dashboard, path).await;
        if rendered.contains("name=\"form_token\"") {
            token = form_token(&rendered);
            form.push(("form_token", &token));
        }
    }
    post_form_as_is(app, dashboard, path, &form).await
}

/// The one-time token of a rendered Compose form.
pub fn form_token(page: &str) -> String {
    let marker = "name=\"form_token\" value=\"";
    let at = page
        .find(marker)
        .expect("the form carries a one-time token")
        + marker.len();
    page[at..at + page[at..].find('"').unwrap()].to_string()
}

/// [`post_form`] with exactly the fields given.
pub async fn post_form_as_is(
    app: &TestApp,
    dashboard: &Dashboard,
    path: &str,
    form: &[(&str, &str)],
) -> Response {
    dashboard
        .no_redirect
        .post(app.url(path))
        .header(header::ORIGIN, app.state.public_url.clone())
        .header("sec-fetch-site", "same-origin")
        .header(header::ACCEPT, BROWSER_ACCEPT)
        .form(form)
        .send()
        .await
        .unwrap()
}

/// Where a 303 points.
pub fn see_other(response: &Response) -> String {
    assert_eq!(response.status(), 303, "expected a 303: {response:?}");
    response.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_string()
}
