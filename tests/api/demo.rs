//! `service serve --demo` as a newcomer runs it: the real binary, then the printed curl.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

struct Demo {
    child: Child,
    summary: Value,
    _dir: tempfile::TempDir,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_demo() -> Demo {
    let dir = tempfile::tempdir().unwrap();
    let demo_file = dir.path().join("demo.json");
    let child = Command::new(env!("CARGO_BIN_EXE_service"))
        .args(["serve", "--demo", "--demo-file"])
        .arg(&demo_file)
        .env("SERVICE__SERVER__BIND", "127.0.0.1:0")
        .env(
            "SERVICE__DATABASE__URL",
            format!("sqlite://{}/demo.db?mode=rwc", dir.path().display()),
        )
        .env_remove("DATABASE_URL")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Owned by `Demo` from here on, so it is killed and reaped even if the wait below fails.
    let mut demo = Demo {
        child,
        summary: Value::Null,
        _dir: dir,
    };
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&demo_file)
            && let Ok(summary) = serde_json::from_str::<Value>(&text)
        {
            demo.summary = summary;
            return demo;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "demo did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

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

    // login_url signs in as the demo user.
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let me: Value = browser
        .get(s["login_url"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["user"]["email"], "demo@example.com");
    assert_eq!(me["user"]["plan"], "ultra");
}
