//! Sign-in end to end against a certified OpenID Provider (the npm package `oidc-provider`,
//! started by `.ci/oidc` from `.ci/oidc-provider/`): the service's `/auth/login`, the provider's
//! own login and consent pages filled in as a browser would, the callback, and `/auth/me`.
//!
//! Runs only when `OIDC_PROVIDER_ISSUER` is set; `.ci/oidc` sets it and the rest:
//! `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET`, `OIDC_SERVICE_PORT` (the port the provider's
//! registered redirect URI names), `OIDC_USER_LOGIN` and `OIDC_USER_EMAIL`.

use reqwest::{Client, Response, Url};
use secrecy::SecretString;
use serde_json::Value;

use crate::helpers::TestApp;

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} must be set with OIDC_PROVIDER_ISSUER"))
}

/// The first form of an HTML page: its action and its inputs' names and values.
fn first_form(html: &str) -> Option<(String, Vec<(String, String)>)> {
    let start = html.find("<form")?;
    let end = start + html[start..].find("</form>")?;
    let form = &html[start..end];
    let action = attribute(&form[..form.find('>')?], "action")?;
    let inputs = form
        .match_indices("<input")
        .filter_map(|(at, _)| {
            let tag = &form[at..at + form[at..].find('>')?];
            Some((
                attribute(tag, "name")?,
                attribute(tag, "value").unwrap_or_default(),
            ))
        })
        .collect();
    Some((action, inputs))
}

/// An attribute's value in a tag, its HTML entities for `&` undone (all a URL needs).
fn attribute(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = start + tag[start..].find('"')?;
    Some(tag[start..end].replace("&amp;", "&"))
}

async fn submit(client: &Client, page: Response, login: &str) -> Response {
    let url = page.url().clone();
    let html = page.text().await.unwrap();
    let (action, inputs) = first_form(&html).unwrap_or_else(|| panic!("no form at {url}: {html}"));
    let fields: Vec<(String, String)> = inputs
        .into_iter()
        .map(|(name, value)| match name.as_str() {
            "login" => (name, login.to_string()),
            "password" => (name, "any password".to_string()),
            _ => (name, value),
        })
        .collect();
    let target: Url = url.join(&action).unwrap();
    client.post(target).form(&fields).send().await.unwrap()
}

#[actix_web::test]
async fn signs_in_through_a_certified_openid_provider() {
    let Ok(issuer) = std::env::var("OIDC_PROVIDER_ISSUER") else {
        eprintln!("skipped: OIDC_PROVIDER_ISSUER is not set (`bash .ci/oidc` sets it)");
        return;
    };
    let port = var("OIDC_SERVICE_PORT");
    let login = var("OIDC_USER_LOGIN");
    let email = var("OIDC_USER_EMAIL");
    let app = TestApp::spawn_with(|config| {
        // The provider only redirects to the registered URI, so the service takes that port.
        config.server.bind = format!("127.0.0.1:{port}");
        config.auth.issuer = issuer.clone();
        config.auth.client_id = var("OIDC_CLIENT_ID");
        config.auth.client_secret = Some(SecretString::from(var("OIDC_CLIENT_SECRET")));
        config.auth.operator_emails = vec![email.clone()];
    })
    .await;
    // One cookie store for the whole flow, as a browser: the provider's interaction cookies and
    // the service's own sign-in cookies all ride along.
    let client = Client::builder().cookie_store(true).build().unwrap();

    let mut page = client
        .get(app.url("/auth/login?return_to=/auth/me"))
        .send()
        .await
        .unwrap();
    // The login page, then the consent page; each submission redirects to the next step, the
    // last one back through the service's callback to `/auth/me`.
    for _ in 0..4 {
        assert_eq!(page.status(), 200, "at {}", page.url());
        if page.url().as_str().starts_with(&app.url("/")) {
            break;
        }
        page = submit(&client, page, &login).await;
    }
    assert_eq!(page.url().as_str(), app.url("/auth/me"));
    let me: Value = page.json().await.unwrap();
    assert_eq!(me["user"]["email"], email.as_str(), "{me}");

    // The provider asserted `email_verified`, so the listed address makes an operator.
    let operator_page = client
        .get(app.url("/dashboard/operator"))
        .send()
        .await
        .unwrap();
    assert_eq!(operator_page.url().as_str(), app.url("/dashboard/operator"));
    assert_eq!(operator_page.status(), 200);
}
