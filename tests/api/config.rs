//! The `service` binary: configuration layering, refusing to start without secrets, port 0,
//! `migrate`, and the operator's `user set-plan` command.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::Duration,
};

use crate::helpers::TestApp;

pub(crate) fn service() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_service"));
    // Start from a clean slate: no inherited SERVICE__* or DATABASE_URL.
    for (key, _) in std::env::vars() {
        if key.starts_with("SERVICE__") || key == "DATABASE_URL" {
            command.env_remove(key);
        }
    }
    command.env("RUST_LOG", "info").env("NO_COLOR", "1");
    command
}

#[test]
fn serve_refuses_to_start_without_each_secret_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/s.db?mode=rwc", dir.path().display());
    let secrets = [
        ("SERVICE__SECRETS__SESSION_KEY", "x".repeat(40)),
        ("SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY", "00".repeat(32)),
        ("SERVICE__SECRETS__OPERATOR_TOKEN", "o".repeat(20)),
    ];
    for missing in 0..secrets.len() {
        let mut command = service();
        command
            .current_dir(dir.path())
            .args(["serve"])
            .env("SERVICE__DATABASE__URL", &db);
        for (i, (key, value)) in secrets.iter().enumerate() {
            if i != missing {
                command.env(key, value);
            }
        }
        let output = command.output().unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        let expected_key = secrets[missing]
            .0
            .to_lowercase()
            .replace("service__", "")
            .replace("__", ".");
        assert!(
            stderr.contains(&format!("missing secret `{expected_key}`")),
            "{stderr}"
        );
        assert!(
            stderr.contains(secrets[missing].0),
            "names the env variable: {stderr}"
        );
    }
}

#[test]
fn serve_refuses_zero_or_absurd_actor_arbiters_and_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/s.db?mode=rwc", dir.path().display());
    for (value, reason) in [("0", "must be at least 1"), ("257", "more than the 256")] {
        let output = service()
            .current_dir(dir.path())
            .args(["serve"])
            .env("SERVICE__DATABASE__URL", &db)
            .env("SERVICE__SERVER__BIND", "127.0.0.1:0")
            .env("SERVICE__SECRETS__SESSION_KEY", "x".repeat(40))
            .env("SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY", "00".repeat(32))
            .env("SERVICE__SECRETS__OPERATOR_TOKEN", "o".repeat(20))
            .env("SERVICE__PUBLISHING__ACTOR_ARBITERS", value)
            .output()
            .unwrap();
        assert!(!output.status.success(), "started with {value}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("invalid value for `publishing.actor_arbiters`"),
            "{value}: {stderr}"
        );
        assert!(stderr.contains(reason), "{value}: {stderr}");
    }
}

#[test]
fn serve_binds_port_zero_from_the_environment_and_a_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("custom.toml");
    std::fs::write(
        &config_path,
        format!(
            "[server]\nbind = \"127.0.0.1:1\"\n[database]\nurl = \"sqlite://{}/from-file.db?mode=rwc\"\n\
             [secrets]\nsession_key = \"{}\"\ntoken_encryption_key = \"{}\"\noperator_token = \"{}\"\n",
            dir.path().display(),
            "k".repeat(40),
            "11".repeat(32),
            "o".repeat(20)
        ),
    )
    .unwrap();
    // The environment overrides the file's (unusable) bind address.
    let mut child = service()
        .args(["--config", config_path.to_str().unwrap(), "serve"])
        .env("SERVICE__SERVER__BIND", "127.0.0.1:0")
        .env("SERVICE__SERVER__WORKERS", "1")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (found, address) = std::sync::mpsc::channel();
    // Keep draining the log so the server never blocks on (or fails writing to) a full pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("address=").nth(1) {
                let _ = found.send(rest.split_whitespace().next().unwrap_or("").to_string());
            }
        }
    });
    let address = address
        .recv_timeout(Duration::from_secs(30))
        .expect("the bound address is logged");
    assert!(!address.ends_with(":0"), "{address}");
    let response = reqwest::blocking_get(&format!("http://{address}/health"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(response, 200);
    assert!(
        dir.path().join("from-file.db").exists(),
        "the SQLite file is created on first run"
    );
}

mod reqwest {
    /// A tiny blocking GET returning the status (avoids pulling reqwest's blocking feature).
    pub fn blocking_get(url: &str) -> u16 {
        let url = url.trim_start_matches("http://");
        let (host, path) = url.split_once('/').unwrap();
        for _ in 0..50 {
            let status = attempt(host, path);
            if status != 0 {
                return status;
            }
            std::thread::sleep(super::Duration::from_millis(100));
        }
        0
    }

    fn attempt(host: &str, path: &str) -> u16 {
        let Ok(mut stream) = std::net::TcpStream::connect(host) else {
            return 0;
        };
        use std::io::{Read, Write};
        if write!(
            stream,
            "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .is_err()
        {
            return 0;
        }
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }
}

#[test]
fn migrate_creates_the_sqlite_database() {
    let dir = tempfile::tempdir().unwrap();
    let output = service()
        .current_dir(dir.path())
        .arg("migrate")
        .env(
            "DATABASE_URL",
            format!("sqlite://{}/nested/m.db?mode=rwc", dir.path().display()),
        )
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(dir.path().join("nested/m.db").exists());
}

#[actix_web::test]
async fn the_operator_command_sets_a_users_plan() {
    let app = TestApp::spawn().await;
    let Some(url) = app.sqlite_url.clone() else {
        return; // the CLI test needs the SQLite file; the HTTP operator path is tested everywhere
    };
    let dashboard = app.sign_in("cli@example.com").await;
    let output = service()
        .args([
            "user",
            "set-plan",
            "cli@example.com",
            "--plan",
            "ultra",
            "--plan-type",
            "annual",
        ])
        .env("SERVICE__DATABASE__URL", &url)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let user = app
        .state
        .store
        .find_user(dashboard.user_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (user.plan.as_str(), user.plan_type.as_deref()),
        ("ultra", Some("annual"))
    );
    let period = user.current_period_end.unwrap() - user.updated_at;
    assert!(period.num_days() >= 365, "annual plans default to a year");

    let output = service()
        .args(["user", "set-plan", "nobody@example.com", "--plan", "pro"])
        .env("SERVICE__DATABASE__URL", &url)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no user with e-mail"));
}

#[test]
fn serve_refuses_a_public_url_that_is_no_http_origin_and_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/p.db?mode=rwc", dir.path().display());
    for (value, reason) in [
        ("service.example.com", "not a URL"),
        ("javascript:alert(1)", "http:// or https://"),
        ("https://user:pw@service.example", "user name or password"),
        ("https://service.example/?next=x", "query or fragment"),
    ] {
        let output = service()
            .current_dir(dir.path())
            .args(["serve"])
            .env("SERVICE__DATABASE__URL", &db)
            .env("SERVICE__SERVER__BIND", "127.0.0.1:0")
            .env("SERVICE__SERVER__PUBLIC_URL", value)
            .env("SERVICE__SECRETS__SESSION_KEY", "x".repeat(40))
            .env("SERVICE__SECRETS__TOKEN_ENCRYPTION_KEY", "00".repeat(32))
            .env("SERVICE__SECRETS__OPERATOR_TOKEN", "o".repeat(20))
            .output()
            .unwrap();
        assert!(!output.status.success(), "started with {value}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("invalid value for `server.public_url`"),
            "{value}: {stderr}"
        );
        assert!(stderr.contains(reason), "{value}: {stderr}");
    }
}
