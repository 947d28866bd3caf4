//! No page takes the operator token: `/admin/actors` redirects to the dashboard's operator page,
//! which needs a dashboard session and the operator role, and no form trades the operator token
//! for a cookie.

use reqwest::header;

use crate::helpers::{OPERATOR_TOKEN, TestApp};

#[actix_web::test]
async fn the_operator_token_in_the_address_opens_no_page() {
    let app = TestApp::spawn().await;
    let url = app.url(&format!("/admin/actors?token={OPERATOR_TOKEN}"));
    // Whoever asks, with the token in the address, as a browser, or with the bearer header, is
    // sent to the dashboard's operator page, and gets no cookie and no data on the way.
    let requests = [
        app.http.get(&url),
        app.http
            .get(&url)
            .header(header::ACCEPT, "text/html,application/xhtml+xml"),
        app.http
            .get(app.url("/admin/actors"))
            .bearer_auth(OPERATOR_TOKEN),
    ];
    for request in requests {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 303);
        assert_eq!(response.headers()[header::LOCATION], "/dashboard/operator");
        assert!(!response.headers().contains_key(header::SET_COOKIE));
        assert_eq!(response.text().await.unwrap(), "");
    }
}

#[actix_web::test]
async fn no_form_trades_the_operator_token_for_a_cookie() {
    let app = TestApp::spawn().await;
    for (method, path) in [
        (reqwest::Method::GET, "/admin/login"),
        (reqwest::Method::POST, "/admin/login"),
        (reqwest::Method::POST, "/admin/logout"),
    ] {
        let response = app
            .http
            .request(method.clone(), app.url(path))
            .form(&[("token", OPERATOR_TOKEN)])
            .send()
            .await
            .unwrap();
        // Under `/admin`, where everything needs the operator's bearer header: refused as any
        // other unauthenticated call, with no cookie and no form.
        assert_eq!(response.status(), 401, "{method} {path}");
        assert!(!response.headers().contains_key(header::SET_COOKIE));
        let body = response.text().await.unwrap();
        assert!(!body.contains("<form"), "{body}");
    }
}
