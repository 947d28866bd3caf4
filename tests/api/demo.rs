//! `service serve --demo` as a newcomer runs it: the real binary, then the printed curl.

use std::process::Stdio;

use serde_json::{Value, json};

use crate::helpers::sim_violations;

#[path = "../common/demo_process.rs"]
mod demo_process;
use demo_process::{start_demo, start_demo_with};

#[actix_web::test]
async fn the_demo_publishes_on_every_platform_and_describes_itself() {
    let demo = start_demo().await;
    let s = &demo.summary;
    let base = s["base_url"].as_str().unwrap();
    let key = s["api_key"].as_str().unwrap();
    for field in ["operator_token", "login_url", "simulator_url"] {
        assert!(s[field].as_str().is_some_and(|v| !v.is_empty()), "{field}");
    }
    let media = &s["sample_media"];
    for name in [
        "jpeg",
        "png",
        "webp",
        "mp4",
        "mov",
        "too_large",
        "wrong_content_type",
        "not_found",
    ] {
        assert!(media[name].as_str().is_some(), "sample_media.{name}");
    }
    let client = reqwest::Client::new();
    // The samples are what they say they are.
    let head = |url: &str| client.get(url.to_string()).send();
    assert_eq!(
        head(media["not_found"].as_str().unwrap())
            .await
            .unwrap()
            .status(),
        404
    );
    let large = head(media["too_large"].as_str().unwrap()).await.unwrap();
    assert!(large.content_length().unwrap() > 100 * 1024 * 1024);
    drop(large);

    let accounts = s["accounts"].as_array().unwrap();
    let mut platforms: Vec<&str> = accounts
        .iter()
        .map(|a| a["platform"].as_str().unwrap())
        .collect();
    platforms.sort();
    assert_eq!(
        platforms,
        ["facebook", "instagram", "threads", "tiktok", "x", "youtube"]
    );

    let jpg = media["jpeg"].as_str().unwrap();
    let mp4 = media["mp4"].as_str().unwrap();
    for account in accounts {
        let platform = account["platform"].as_str().unwrap();
        let content = match platform {
            "facebook" | "instagram" => json!({"text": "Hello from the demo", "mediaUrls": [jpg]}),
            "threads" | "x" => json!({"text": "Hello from the demo"}),
            "tiktok" => json!({"text": "Hello", "mediaUrls": [mp4]}),
            _ => json!({"text": "Demo video\n\nPublished from the demo", "mediaUrls": [mp4]}),
        };
        let mut content = content;
        content["platform"] = json!(platform);
        let response = client
            .post(format!("{base}/v2/posts"))
            .header("service-api-key", key)
            .json(&json!({"post": {
                "accountId": account["account_id"],
                "content": content,
                "target": {"targetType": platform},
            }}))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert_eq!(status, 200, "{platform}: {body}");
    }
    let published: Value = client
        .get(format!(
            "{}/_sim/published",
            s["simulator_url"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(published["count"], 6);

    // login_url signs in as the demo user and lands on the dashboard's overview page.
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let landing = browser
        .get(s["login_url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(landing.url().path(), "/dashboard");
    assert!(landing.text().await.unwrap().contains("demo@example.com"));
    let base = s["login_url"]
        .as_str()
        .unwrap()
        .split("/auth/login")
        .next()
        .unwrap()
        .to_string();
    let me: Value = browser
        .get(format!("{base}/auth/me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["user"]["email"], "demo@example.com");
    assert_eq!(me["user"]["plan"], "ultra");
    // The demo's adapters kept every platform's protocol.
    let violations = sim_violations(s["simulator_url"].as_str().unwrap()).await;
    assert_eq!(violations["count"], 0, "{violations:#}");
}

/// The demo registers its user's webhook endpoint at the simulator's receiver: a publish by
/// the demo key shows up there as a `post.published` delivery whose signature the receiver
/// checked with the endpoint's secret, in JSON and on the readable page.
#[actix_web::test]
async fn the_demo_delivers_a_signed_webhook_for_a_publish_to_its_inbox() {
    let demo = start_demo().await;
    let s = &demo.summary;
    let (base, key) = (
        s["base_url"].as_str().unwrap(),
        s["api_key"].as_str().unwrap(),
    );
    let sim = s["simulator_url"].as_str().unwrap();
    let inbox = s["webhook_inbox_url"].as_str().unwrap();
    assert_eq!(inbox, format!("{sim}/webhooks/inbox"));
    let client = reqwest::Client::new();
    let endpoints: Value = client
        .get(format!("{base}/api/webhooks"))
        .header("service-api-key", key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let urls: Vec<&str> = endpoints["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, [inbox], "{endpoints:#}");

    let facebook = s["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["platform"] == "facebook")
        .unwrap();
    let published: Value = client
        .post(format!("{base}/v2/posts"))
        .header("service-api-key", key)
        .json(&json!({"post": {
            "accountId": facebook["account_id"],
            "content": {"text": "Hello, webhooks", "platform": "facebook",
                        "mediaUrls": [s["sample_media"]["jpeg"]]},
            "target": {"targetType": "facebook"},
        }}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let submission = published["data"]["post_submission_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{published:#}"))
        .to_string();

    let mut deliveries = Value::Null;
    crate::helpers::eventually("the post.published delivery", async || {
        deliveries = client
            .get(inbox)
            .header("accept", "application/json")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        deliveries["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| {
                d["body"]["type"] == "post.published"
                    && d["body"]["data"]["post_submission_id"] == submission.as_str()
            })
    })
    .await;
    let delivery = deliveries["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["body"]["type"] == "post.published")
        .unwrap();
    assert_eq!(delivery["signature_verified"], true, "{delivery:#}");
    assert_eq!(delivery["body"]["data"]["status"], "published");
    assert!(
        delivery["webhook_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("msg_")),
        "{delivery:#}"
    );
    assert!(
        delivery["webhook_signature"]
            .as_str()
            .is_some_and(|sig| sig.starts_with("v1,")),
        "{delivery:#}"
    );

    let page = client.get(inbox).send().await.unwrap();
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = page.text().await.unwrap();
    assert!(page.contains("post.published") && page.contains(&submission));
    let violations = sim_violations(sim).await;
    assert_eq!(violations["count"], 0, "{violations:#}");
}

/// Splits a printed shell command into words: single quotes group, `\`+newline continues.
fn shell_words(command: &str) -> Vec<String> {
    let command = command.replace("\\\n", " ");
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in command.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Runs a printed `curl -s -X METHOD URL -H 'name: value'… -d 'body'` with reqwest (the test
/// machine need not have curl), returning the status and the JSON answer.
async fn run_printed_curl(command: &str) -> (u16, Value) {
    let words = shell_words(command);
    assert_eq!(words.first().map(String::as_str), Some("curl"), "{command}");
    let (mut method, mut url, mut headers, mut body) = ("GET".to_string(), None, vec![], None);
    let mut args = words.iter().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-s" => {}
            "-X" => method = args.next().unwrap().clone(),
            "-H" => headers.push(args.next().unwrap().clone()),
            "-d" => body = Some(args.next().unwrap().clone()),
            other if other.starts_with("http") => url = Some(other.to_string()),
            other => panic!("unexpected curl argument {other:?} in {command}"),
        }
    }
    let mut request = reqwest::Client::new().request(
        method.parse().unwrap(),
        url.unwrap_or_else(|| panic!("no URL in {command}")),
    );
    for header in headers {
        let (name, value) = header.split_once(':').unwrap();
        request = request.header(name.trim(), value.trim());
    }
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// The demo's first `curl` (publish a photo to the demo facebook page) works right after
/// start, every time: the background actors that call platforms start only once the
/// simulator knows the demo's accounts (a collector catch-up racing ahead would mark the
/// facebook page invalid, and the curl would answer 401).
#[actix_web::test]
async fn twenty_demo_starts_each_publish_with_the_printed_curl() {
    const STARTS: usize = 20;
    const AT_ONCE: usize = 4;
    let mut outcomes = Vec::new();
    for batch in 0..STARTS / AT_ONCE {
        let starts = (0..AT_ONCE).map(|i| async move {
            let run = batch * AT_ONCE + i;
            let mut demo = start_demo_with(Stdio::piped()).await;
            let mut stdout = demo.child.stdout.take().unwrap();
            // The banner is printed right after demo.json is written; read until its end.
            let printed = tokio::task::spawn_blocking(move || {
                use std::io::Read;
                let mut text = String::new();
                let mut buffer = [0u8; 4096];
                while !text.contains("list the accounts") {
                    let n = stdout.read(&mut buffer).unwrap();
                    assert!(
                        n > 0,
                        "the demo closed stdout before its banner ended: {text}"
                    );
                    text.push_str(&String::from_utf8_lossy(&buffer[..n]));
                }
                text
            })
            .await
            .unwrap();
            let start = printed
                .find("curl -s -X POST")
                .expect("printed publish curl");
            let end = start + printed[start..].find("\n\n").expect("end of the curl");
            let (status, body) = run_printed_curl(&printed[start..end]).await;
            let violations = sim_violations(demo.summary["simulator_url"].as_str().unwrap()).await;
            assert_eq!(violations["count"], 0, "{violations:#}");
            drop(demo);
            (run, status, body)
        });
        outcomes.extend(futures_util::future::join_all(starts).await);
    }
    let failed: Vec<_> = outcomes
        .iter()
        .filter(|(_, status, body)| *status != 200 || body["data"]["post_id"].as_str().is_none())
        .collect();
    assert!(
        failed.is_empty(),
        "starts whose printed curl failed: {failed:?}"
    );
    assert_eq!(outcomes.len(), STARTS);
}
