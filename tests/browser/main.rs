//! The dashboard in a real browser: headless Chromium (Debian's `chromium`) driven through
//! WebDriver (`chromedriver`) against `service serve --demo`, one demo per journey.
//!
//! Run with `cargo test --features browser-tests --test browser` (`.ci/run` does, after
//! installing the two packages when they are missing). Without a browser every journey fails
//! and says what to install; plain `cargo test` does not build this target at all.
//!
//! Every step a journey photographs is also checked in the browser at desktop and at 360 px
//! phone width: no page wider than the phone, a label on every field, one `h1`, `lang` set,
//! and WCAG AA text contrast. The keyboard steps check that each focused element shows it.

// Test code: a failed unwrap is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/demo_process.rs"]
mod demo_process;
mod harness;

use chrono::{Duration as Days, Utc};
use harness::{Browser, Js, journey};
use reqwest::Method;
use serde_json::json;

/// The demo's sample image, which the simulator serves.
fn sample_jpeg(b: &Browser) -> String {
    b.demo.summary["sample_media"]["jpeg"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_leads_from_the_root_to_the_overview_in_either_language() {
    journey("sign-in", Js::On, async |b: &Browser| {
        b.goto("/").await;
        b.wait_path("/signin").await;
        b.shot("signed-out").await;
        // The page check is not blind: faint text on this page is caught.
        b.assert_check_catches_faint_text().await;
        // From the keyboard: the first Tab lands on the skip link, which leads to the content.
        b.tab_to("a.skip", 1).await;
        b.press_enter().await;
        b.wait_until("the skip link to reach main", async || {
            b.client
                .current_url()
                .await
                .ok()?
                .fragment()
                .filter(|f| *f == "main")
                .map(|_| ())
        })
        .await;
        // The identity provider's page: type the address and submit, as a person does.
        b.click("main a.button").await;
        b.fill("input[name=login_hint]", "demo@example.com").await;
        b.click("button[type=submit]").await;
        b.wait_path("/dashboard").await;
        assert!(b.text("header .email").await.contains("demo@example.com"));
        b.wait_text("main", "Ultra").await;
        b.shot("overview").await;
        // Signed in, `/` is the overview.
        b.goto("/").await;
        b.wait_path("/dashboard").await;
        b.click("nav.lang a[lang=zh-TW]").await;
        b.wait_text("h1", "總覽").await;
        let lang = b.find("html").await.attr("lang").await.unwrap();
        assert_eq!(lang.as_deref(), Some("zh-TW"));
        b.shot("overview-zh-tw").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_an_account_runs_the_simulators_oauth_and_lands_on_the_accounts_page() {
    journey("connect", Js::On, async |b: &Browser| {
        b.sign_in("demo@example.com").await;
        b.click("nav.nav a[href='/dashboard/accounts']").await;
        b.wait_path("/dashboard/accounts").await;
        let before = b.find_all("main table tbody tr").await.len();
        b.shot("accounts").await;
        b.click("ul.connect a[href*='/threads']").await;
        // Out to the simulator's authorize page and back through our callback.
        b.wait_path("/dashboard/accounts").await;
        b.wait_text("p.notice", "Connected 1 Threads account").await;
        let rows = b.find_all("main table tbody tr").await;
        assert_eq!(rows.len(), before + 1, "one more account");
        let row = b.wait_text("main table tbody tr", "sim_user").await;
        assert!(row.contains("Threads"), "{row}");
        b.shot("connected").await;
        // "Check token" on the new account: the platform says the token is valid.
        let check = "//main//tr[td[1][normalize-space(.)='sim_user'] and td[2][normalize-space(.)='Threads']]//a[contains(@href, '/token')]";
        b.client
            .find(fantoccini::Locator::XPath(check))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        b.wait_text("main dl.facts", "Yes").await;
        b.shot("token").await;
        // A callback the service did not start (a forged state) ends on the same page, with
        // the reason; an address that is no page is a page saying so, never JSON.
        b.goto("/api/connect/x/callback?code=abc&state=forged")
            .await;
        b.wait_path("/dashboard/accounts").await;
        b.wait_text("p.error", "").await;
        b.goto("/dashboard/nowhere").await;
        b.wait_text("h1", "Page not found").await;
        assert_eq!(b.text("code.error-code").await, "NotFound");
        b.shot("not-found").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_key_is_shown_once_and_never_again() {
    journey("api-key", Js::On, async |b: &Browser| {
        b.sign_in("demo@example.com").await;
        b.goto("/dashboard/keys").await;
        // Keyboard only: Tab to the name field, type, Enter.
        b.tab_to("#key-name", 40).await;
        b.client
            .active_element()
            .await
            .unwrap()
            .send_keys("from the browser")
            .await
            .unwrap();
        b.press_enter().await;
        let field = b.find("#new-key").await;
        let key = field.prop("value").await.unwrap().unwrap();
        assert!(key.len() > 20, "{key}");
        b.wait_text(".created .warning", "not be shown again").await;
        // With scripts on, the copy button appears.
        assert!(
            b.find("button[data-copy]")
                .await
                .is_displayed()
                .await
                .unwrap()
        );
        b.shot("created").await;
        // The key works…
        let me = reqwest::Client::new()
            .get(b.url("/v2/accounts"))
            .header("service-api-key", &key)
            .send()
            .await
            .unwrap();
        assert_eq!(me.status(), 200);
        // …and no page shows it again: the list has its name and a preview only.
        b.click("nav.nav a[href='/dashboard/keys']").await;
        b.wait_text("main table", "from the browser").await;
        assert!(!b.exists("#new-key").await);
        let source = b.client.source().await.unwrap();
        assert!(!source.contains(&key), "the key is on the page again");
        b.shot("listed").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_endpoint_is_added_tested_and_its_delivery_replayed() {
    journey("webhooks", Js::On, async |b: &Browser| {
        b.sign_in("demo@example.com").await;
        b.click("nav.nav a[href='/dashboard/webhooks']").await;
        b.wait_path("/dashboard/webhooks").await;
        // The simulator serves no page at this path: its 404 is what each attempt records.
        let url = format!("{}/hooks/browser", b.sim);
        b.fill("#wh-url", &url).await;
        b.fill("#wh-description", "from the browser").await;
        b.click("form.webhook-add button[type=submit]").await;
        let secret = b
            .find("#new-secret")
            .await
            .prop("value")
            .await
            .unwrap()
            .unwrap();
        assert!(secret.starts_with("whsec_"), "{secret}");
        b.wait_text(".created .warning", "not be shown again").await;
        b.shot("added").await;
        let row = format!("//main//tr[.//code[@class='webhook-url' and text()='{url}']]");
        let in_row = async |css: &str| {
            b.client
                .find(fantoccini::Locator::XPath(&row))
                .await
                .unwrap()
                .find(fantoccini::Locator::Css(css))
                .await
                .unwrap()
        };
        in_row("button.send-test").await.click().await.unwrap();
        b.wait_text("p.notice", "test message was queued").await;
        assert!(!b.client.source().await.unwrap().contains(&secret));
        in_row("a.log-link").await.click().await.unwrap();
        b.wait_text("h1", "Delivery log").await;
        // The attempt is made in the background: reload until the log shows it.
        b.wait_until("the test's attempt", async || {
            b.client.refresh().await.ok()?;
            let status = b.find_all("tr.attempt td.http-status").await;
            let first = status.first()?.text().await.ok()?;
            (first == "404").then_some(())
        })
        .await;
        b.wait_text("li.message code.event", "webhook.test").await;
        b.shot("log").await;
        b.click("li.message button.replay").await;
        b.wait_text("p.notice", "queued again").await;
        b.wait_until("the replay's attempt", async || {
            b.client.refresh().await.ok()?;
            (b.find_all("li.message tr.attempt").await.len() >= 2).then_some(())
        })
        .await;
        b.shot("replayed").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_post_shows_the_error_by_its_field_then_publishes() {
    journey("publish", Js::On, async |b: &Browser| {
        b.sign_in("demo@example.com").await;
        b.goto("/dashboard/compose").await;
        let facebook = b.demo_account("facebook")["account_id"].as_str().unwrap();
        b.select("#c-account", facebook).await;
        b.fill("#c-text", "Hello from a real browser").await;
        b.fill("#c-media", "not a url at all").await;
        b.click("form.compose button[type=submit]").await;
        let error = b.wait_text("#err-media", "InvalidMediaUrl").await;
        // What was typed is still there, and the field says it is the one in error.
        let text = b.find("#c-text").await.prop("value").await.unwrap();
        assert_eq!(text.as_deref(), Some("Hello from a real browser"));
        let invalid = b.find("#c-media").await.attr("aria-invalid").await.unwrap();
        assert_eq!(invalid.as_deref(), Some("true"), "{error}");
        b.shot("field-error").await;
        b.fill("#c-media", &sample_jpeg(b)).await;
        b.click("form.compose button[type=submit]").await;
        b.wait_text("#result-title", "Facebook").await;
        let post_id = b.text("code.post-id").await;
        assert!(!post_id.is_empty());
        b.shot("published").await;
        // The simulator holds that very post.
        let published: serde_json::Value =
            reqwest::get(format!("{}/_sim/published?platform=facebook", b.sim))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
        let items = published["items"].as_array().unwrap();
        assert!(
            items
                .iter()
                .any(|i| i["text"] == "Hello from a real browser" && i["id"] == post_id.as_str()),
            "{published}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn picked_files_upload_at_once_show_a_thumbnail_and_publish_in_the_post() {
    journey("picker", Js::On, async |b: &Browser| {
        // Real files on disk, for the file input: two photos and one file that is no medium.
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path.display().to_string()
        };
        let jpeg = service_sim::media::SAMPLE_JPG;
        let (first, second) = (file("first.jpg", jpeg), file("second.jpg", jpeg));
        let notes = file("notes.txt", b"words, not a picture\n");
        b.sign_in("demo@example.com").await;
        b.goto("/dashboard/compose").await;
        // From here on, any script error or blocked load (the CSP) is recorded.
        b.client
            .execute(
                "window.__problems = [];
                 window.addEventListener('error', (e) => window.__problems.push('error: ' + e.message));
                 document.addEventListener('securitypolicyviolation',
                   (e) => window.__problems.push('csp: ' + e.violatedDirective + ' ' + e.blockedURI));",
                vec![],
            )
            .await
            .unwrap();
        // With scripts on, files go as they are picked: a drop zone, no Upload button.
        assert!(b.find("#c-drop").await.is_displayed().await.unwrap());
        assert!(!b.find("form.upload button[type=submit]").await.is_displayed().await.unwrap());
        let facebook = b.demo_account("facebook")["account_id"].as_str().unwrap();
        b.select("#c-account", facebook).await;
        b.fill("#c-text", "Two photos picked, one kept").await;
        b.find("#c-file")
            .await
            .send_keys(&format!("{first}\n{second}"))
            .await
            .unwrap();
        let loaded = "img.upload-thumb[alt='{}']";
        for name in ["first.jpg", "second.jpg"] {
            let css = loaded.replace("{}", name);
            b.find(&format!(".upload-item.stored {css}")).await;
            // The thumbnail really shows: the page may load its own media URLs.
            b.wait_until(&format!("{name}'s thumbnail to load"), async || {
                let done = b
                    .client
                    .execute(
                        "const i = document.querySelector(arguments[0]);
                         return !!i && i.complete && i.naturalWidth > 0;",
                        vec![json!(css)],
                    )
                    .await
                    .ok()?;
                (done == json!(true)).then_some(())
            })
            .await;
        }
        let src = async |name: &str| {
            b.find(&loaded.replace("{}", name))
                .await
                .attr("src")
                .await
                .unwrap()
                .unwrap()
        };
        let (kept, removed) = (src("first.jpg").await, src("second.jpg").await);
        assert!(kept.starts_with(&b.url("/media/")), "{kept}");
        assert_ne!(kept, removed);
        // Both URLs are in the media field, in the order the files were picked.
        let media = async || b.find("#c-media").await.prop("value").await.unwrap().unwrap();
        assert_eq!(media().await, format!("{kept}\n{removed}"));
        assert!(b.text(".upload-item.stored .upload-status").await.contains("Uploaded"));
        b.shot("uploaded").await;

        // A file that is no medium: refused, with the service's reason next to it.
        b.find("#c-file").await.send_keys(&notes).await.unwrap();
        let refused = b.wait_text(".upload-item.failed .field-error", "InvalidMediaType").await;
        assert!(refused.starts_with("Not uploaded: "), "{refused}");
        b.shot("refused").await;
        b.click(".upload-item.failed button.upload-remove").await;

        // Removing the second photo takes its URL out of the post.
        let second_item = "//li[contains(@class, 'upload-item')][.//img[@alt='second.jpg']]//button";
        b.client
            .find(fantoccini::Locator::XPath(second_item))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        b.wait_until("one file left", async || {
            (b.find_all(".upload-item").await.len() == 1).then_some(())
        })
        .await;
        assert_eq!(media().await, kept);
        b.shot("one-left").await;
        let problems = b.client.execute("return window.__problems;", vec![]).await;
        assert_eq!(problems.unwrap(), json!([]), "script errors or blocked loads");

        b.click("form.compose button[type=submit]").await;
        b.wait_text("#result-title", "Facebook").await;
        let post_id = b.text("code.post-id").await;
        let published: serde_json::Value =
            reqwest::get(format!("{}/_sim/published?platform=facebook", b.sim))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
        let item = published["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == post_id.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{post_id} not in {published}"));
        assert_eq!(item["text"], "Two photos picked, one kept");
        assert_eq!(item["media"], json!([kept]), "{item}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_post_is_listed_in_both_zones_and_cancelled() {
    journey("schedule", Js::On, async |b: &Browser| {
        b.sign_in("demo@example.com").await;
        b.goto("/dashboard/compose").await;
        let x = b.demo_account("x")["account_id"].as_str().unwrap();
        b.select("#c-account", x).await;
        b.fill("#c-text", "Tomorrow, from Taipei").await;
        // Tomorrow 10:00 in Taipei; a date field takes its value in ISO form.
        let day = (Utc::now() + Days::days(1)).format("%Y-%m-%d").to_string();
        b.client
            .execute(
                "document.getElementById('c-at').value = arguments[0];",
                vec![json!(format!("{day}T10:00"))],
            )
            .await
            .unwrap();
        b.select("#c-tz", "Asia/Taipei").await;
        b.click("form.compose button[type=submit]").await;
        b.wait_text("#result-title", "").await;
        let id = b.text("code.scheduled-id").await;
        b.wait_text("main dl", "02:00 UTC").await;
        b.shot("scheduled").await;
        b.click("main a[href='/dashboard/scheduled']").await;
        b.wait_path("/dashboard/scheduled").await;
        let row = format!("#post-{id}");
        let local = b.text(&format!("{row} td.local-time")).await;
        assert!(local.contains(&format!("{day} 10:00")), "{local}");
        let utc = b.text(&format!("{row} td.utc-time")).await;
        assert!(utc.contains(&format!("{day} 02:00")), "{utc}");
        b.shot("listed").await;
        b.click(&format!("{row} td.actions a")).await;
        b.wait_path(&format!("/dashboard/scheduled/{id}/cancel"))
            .await;
        b.shot("confirm-cancel").await;
        b.click("main form button.danger").await;
        b.wait_path("/dashboard/scheduled").await;
        b.wait_text(&format!("{row} .badge"), "ancel").await;
        assert!(!b.exists(&format!("{row} td.actions a")).await);
        b.shot("cancelled").await;
        // The API agrees.
        let listed = b.api(Method::GET, "/api/scheduled-posts", None).await;
        let post = listed["posts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["scheduled_post_id"] == id.as_str())
            .cloned();
        assert_eq!(post.expect("the post is listed")["status"], "cancelled");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_post_opens_a_timeline_with_the_platforms_words() {
    journey("timeline", Js::On, async |b: &Browser| {
        // Instagram refuses the final call; the container step before it succeeds.
        b.fault(
            "instagram",
            json!({"error": "permission", "path_contains": "media_publish"}),
        )
        .await;
        b.sign_in("demo@example.com").await;
        b.goto("/dashboard/compose").await;
        let instagram = b.demo_account("instagram")["account_id"].as_str().unwrap();
        b.select("#c-account", instagram).await;
        b.fill("#c-text", "This one will fail").await;
        b.fill("#c-media", &sample_jpeg(b)).await;
        b.click("form.compose button[type=submit]").await;
        b.wait_text("#result-title", "").await;
        assert!(b.exists("#result-title.result-failed").await);
        b.shot("failed").await;
        b.click("nav.nav a[href='/dashboard/history']").await;
        b.wait_path("/dashboard/history").await;
        b.wait_text("main table .badge", "failed").await;
        b.shot("history").await;
        b.click("main table tbody tr a").await;
        // Why, in the platform's own words, and every step with its time.
        let words = b.text(".platform-words").await;
        assert!(words.contains("instagram_content_publish"), "{words}");
        assert_eq!(b.text("code.error-code").await, "InsufficientPermissions");
        let mut labels = vec![];
        for step in b.find_all("ol.timeline li .step-label").await {
            labels.push(step.text().await.unwrap());
        }
        assert_eq!(
            labels,
            [
                "Publish started",
                "Media container created",
                "Platform processing finished (status polled)",
                "Final publish call made",
                "Failed"
            ]
        );
        assert_eq!(b.find_all("ol.timeline li time").await.len(), 5);
        b.shot("timeline").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_performance_chart_shows_missing_days_as_a_gap_until_backfilled() {
    journey("performance", Js::On, async |b: &Browser| {
        // The demo's accounts were connected a week ago and it collected yesterday's snapshot
        // on start. Backfill two early days through the API: the days between stay missing.
        let facebook = b.demo_account("facebook")["account_id"]
            .as_str()
            .unwrap()
            .to_string();
        let day = |n: i64| (Utc::now() - Days::days(n)).format("%Y-%m-%d").to_string();
        b.api(
            Method::POST,
            "/api/cron/backfill",
            Some(json!({"account_id": facebook, "missing_dates": [day(7), day(6)]})),
        )
        .await;
        b.sign_in("demo@example.com").await;
        b.goto(&format!("/dashboard/performance?account_id={facebook}"))
            .await;
        let path = b
            .find("svg.chart path.line")
            .await
            .attr("d")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(path.matches('M').count(), 2, "two segments: {path}");
        for n in 2..=5 {
            b.wait_text("ul.dates", &day(n)).await;
        }
        assert!(!b.text("ul.dates").await.contains(&day(6)));
        b.shot("gap").await;
        b.click("form[action='/dashboard/performance/backfill'] button")
            .await;
        b.wait_text("p.notice", "").await;
        let path = b
            .find("svg.chart path.line")
            .await
            .attr("d")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(path.matches('M').count(), 1, "one line: {path}");
        b.shot("backfilled").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_watches_an_actor_turn_busy_without_reloading() {
    journey("operator", Js::On, async |b: &Browser| {
        b.sign_in("demo@example.com").await;
        b.click("nav.nav a[href='/dashboard/operator']").await;
        b.wait_path("/dashboard/operator").await;
        let tiktok = b.demo_account("tiktok")["account_id"]
            .as_str()
            .unwrap()
            .to_string();
        let row = format!("//div[@id='op-live']//tr[.//code[text()='{tiktok}']]");
        let state = async || {
            b.client
                .find(fantoccini::Locator::XPath(&row))
                .await
                .ok()?
                .find(fantoccini::Locator::Css(".badge"))
                .await
                .ok()?
                .text()
                .await
                .ok()
        };
        b.wait_until("tiktok idle", async || {
            state().await.filter(|s| s == "idle")
        })
        .await;
        b.shot("idle").await;
        // A mark on this very document: if the page were reloaded, it would be gone.
        b.client
            .execute("window.__stillHere = true;", vec![])
            .await
            .unwrap();
        // Every tiktok call now takes 8 s; publish one post through the API.
        b.fault("tiktok", json!({"latency_ms": 8000})).await;
        let body = json!({"post": {
            "accountId": tiktok,
            "content": {"text": "slow", "mediaUrls": [sample_jpeg(b)], "platform": "tiktok"},
            "target": {"targetType": "tiktok"},
        }});
        let (url, key) = (b.url("/v2/posts"), b.api_key.clone());
        let publish = tokio::spawn(async move {
            reqwest::Client::new()
                .post(url)
                .header("service-api-key", key)
                .json(&body)
                .send()
                .await
                .map(|r| r.status().as_u16())
        });
        b.wait_until("tiktok publishing", async || {
            state().await.filter(|s| s == "publishing")
        })
        .await;
        let same = b
            .client
            .execute("return window.__stillHere === true;", vec![])
            .await
            .unwrap();
        assert_eq!(same, json!(true), "the view refreshed in place");
        b.shot("busy").await;
        assert_eq!(publish.await.unwrap().unwrap(), 200);
        b.wait_until("tiktok idle again", async || {
            state().await.filter(|s| s == "idle")
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_operator_is_refused_the_operator_pages() {
    journey("not-operator", Js::On, async |b: &Browser| {
        b.sign_in("friend@example.com").await;
        assert!(!b.exists("nav.nav a[href='/dashboard/operator']").await);
        b.goto("/dashboard/operator").await;
        b.wait_path("/dashboard").await;
        b.wait_text("p.error", "operator").await;
        assert!(!b.exists("#op-live").await);
        b.shot("refused").await;
        // `/admin/actors` leads to the same refusal.
        b.goto("/admin/actors").await;
        b.wait_path("/dashboard").await;
        assert!(!b.exists("#op-live").await);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_pages_read_and_their_forms_work_with_javascript_off() {
    journey("no-js", Js::Off, async |b: &Browser| {
        b.sign_in("demo@example.com").await;
        b.wait_text("h1", "").await;
        b.shot("overview").await;
        // A key: shown once in a readonly field; the copy button needs a script, so it stays
        // hidden — the proof that scripts are really off in this browser.
        b.goto("/dashboard/keys").await;
        b.fill("#key-name", "no script").await;
        b.click("main form button[type=submit]").await;
        let key = b
            .find("#new-key")
            .await
            .prop("value")
            .await
            .unwrap()
            .unwrap();
        assert!(key.len() > 20);
        assert!(
            !b.find("button[data-copy]")
                .await
                .is_displayed()
                .await
                .unwrap()
        );
        b.shot("key").await;
        // Publish a threads text post.
        b.goto("/dashboard/compose").await;
        let threads = b.demo_account("threads")["account_id"].as_str().unwrap();
        b.select("#c-account", threads).await;
        b.fill("#c-text", "Written without a script").await;
        b.click("form.compose button[type=submit]").await;
        b.wait_text("#result-title", "Threads").await;
        b.shot("published").await;
        // A file through the upload form: back on Compose with its URL in the media field.
        let dir = tempfile::tempdir().unwrap();
        let photo = dir.path().join("photo.jpg");
        std::fs::write(&photo, service_sim::media::SAMPLE_JPG).unwrap();
        assert!(!b.find("#c-drop").await.is_displayed().await.unwrap());
        b.find("#c-file")
            .await
            .send_keys(&photo.display().to_string())
            .await
            .unwrap();
        b.click("form.upload button[type=submit]").await;
        b.wait_text("p.notice", "Uploaded 1 file(s)").await;
        let media = b.find("#c-media").await.prop("value").await.unwrap();
        let media = media.unwrap_or_default();
        assert!(
            media.starts_with(&b.url("/media/")) && media.ends_with(".jpg"),
            "{media}"
        );
        b.shot("uploaded").await;
        for (page, heading) in [
            ("/dashboard/accounts", "Accounts"),
            ("/dashboard/webhooks", "Webhooks"),
            ("/dashboard/scheduled", "Scheduled"),
            ("/dashboard/history", "History"),
            ("/dashboard/performance", "Performance"),
            ("/dashboard/operator", "Operator"),
        ] {
            b.goto(page).await;
            b.wait_text("h1", heading).await;
            b.shot(page.trim_start_matches("/dashboard/")).await;
        }
        // History lists the post; its timeline opens.
        b.goto("/dashboard/history").await;
        b.wait_text("main table", "Threads").await;
        b.click("main table tbody tr a").await;
        b.find("ol.timeline li").await;
        b.shot("timeline").await;
    })
    .await;
}
